//! A small HTTP/1.0 client for the console's pages (no client in the build): one
//! connection per request, the answer read to its end; over TLS when asked.

use std::{net::SocketAddr, path::Path, sync::Arc};

use rustls_pki_types::{pem::PemObject, CertificateDer, ServerName};
use tokio::{
    io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt},
    net::TcpStream,
};
use tokio_rustls::TlsConnector;

use crate::common::within_patience;

/// An answer: status, headers (lower-case names) and body.
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Answer {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    }
}

/// The console at one address.
#[derive(Clone)]
pub struct Http {
    pub addr: SocketAddr,
    tls: Option<TlsConnector>,
}

trait Io: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Io for T {}

impl Http {
    pub fn plain(addr: SocketAddr) -> Http {
        Http { addr, tls: None }
    }

    /// Over TLS, trusting the CA in `ca` (PEM).
    pub fn tls(addr: SocketAddr, ca: &Path) -> Http {
        let mut roots = rustls::RootCertStore::empty();
        for cert in CertificateDer::pem_file_iter(ca).expect("read CA") {
            roots.add(cert.expect("a CA certificate")).expect("add CA");
        }
        let config = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .expect("protocol versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
        Http {
            addr,
            tls: Some(TlsConnector::from(Arc::new(config))),
        }
    }

    pub fn origin(&self) -> String {
        let scheme = if self.tls.is_some() { "https" } else { "http" };
        format!("{scheme}://{}", self.addr)
    }

    async fn connect(&self) -> Box<dyn Io> {
        let tcp = TcpStream::connect(self.addr)
            .await
            .expect("connect to the console");
        match &self.tls {
            None => Box::new(tcp),
            Some(connector) => {
                let name = ServerName::IpAddress(self.addr.ip().into());
                Box::new(connector.connect(name, tcp).await.expect("TLS handshake"))
            }
        }
    }

    /// Sends a request and returns the open connection, its answer still unread.
    async fn send(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &str,
    ) -> Box<dyn Io> {
        let mut head = format!("{method} {path} HTTP/1.0\r\nHost: {}\r\n", self.addr);
        for (name, value) in headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        if !body.is_empty() || method == "POST" {
            head.push_str(&format!("Content-Length: {}\r\n", body.len()));
        }
        head.push_str("\r\n");
        head.push_str(body);
        let mut io = self.connect().await;
        io.write_all(head.as_bytes()).await.expect("send a request");
        io.flush().await.expect("flush");
        io
    }

    pub async fn request(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &str,
    ) -> Answer {
        let what = format!("{method} {path}");
        within_patience(&what, async {
            let mut io = self.send(method, path, headers, body).await;
            let mut raw = Vec::new();
            io.read_to_end(&mut raw).await.expect("read the answer");
            parse(&raw)
        })
        .await
    }

    pub async fn get(&self, path: &str, cookie: Option<&str>) -> Answer {
        let headers: Vec<(&str, &str)> = cookie.map(|c| ("Cookie", c)).into_iter().collect();
        self.request("GET", path, &headers, "").await
    }

    /// A form POST as a console page sends it: same-origin, with `cookie`.
    pub async fn post_form(&self, path: &str, form: &str, cookie: Option<&str>) -> Answer {
        let origin = self.origin();
        let mut headers = vec![
            ("Origin", origin.as_str()),
            ("Sec-Fetch-Site", "same-origin"),
            ("Content-Type", "application/x-www-form-urlencoded"),
        ];
        if let Some(cookie) = cookie {
            headers.push(("Cookie", cookie));
        }
        self.request("POST", path, &headers, form).await
    }

    /// Opens a server-sent event stream at `path`.
    pub async fn events(&self, path: &str, cookie: Option<&str>) -> Events {
        let mut headers = vec![("Accept", "text/event-stream")];
        if let Some(cookie) = cookie {
            headers.push(("Cookie", cookie));
        }
        let io = self.send("GET", path, &headers, "").await;
        Events {
            io,
            buffer: Vec::new(),
            head_read: false,
        }
    }
}

fn parse(raw: &[u8]) -> Answer {
    let text = String::from_utf8_lossy(raw);
    let (head, body) = text.split_once("\r\n\r\n").expect("an HTTP answer");
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .and_then(|line| line.split(' ').nth(1))
        .and_then(|code| code.parse().ok())
        .expect("a status line");
    let headers = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    Answer {
        status,
        headers,
        body: body.to_owned(),
    }
}

/// A server-sent event stream (HTTP/1.0: the body is the events until the end).
pub struct Events {
    io: Box<dyn Io>,
    buffer: Vec<u8>,
    head_read: bool,
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

impl Events {
    /// The next event: (event name, data).
    pub async fn next(&mut self) -> (String, String) {
        within_patience("the next server-sent event", async {
            loop {
                if !self.head_read {
                    if let Some(end) = find(&self.buffer, b"\r\n\r\n") {
                        let head = String::from_utf8_lossy(&self.buffer[..end]).into_owned();
                        assert!(
                            head.starts_with("HTTP/1.0 200") || head.starts_with("HTTP/1.1 200"),
                            "the stream's answer: {head}"
                        );
                        self.buffer.drain(..end + 4);
                        self.head_read = true;
                        continue;
                    }
                } else if let Some(end) = find(&self.buffer, b"\n\n") {
                    let block: Vec<u8> = self.buffer.drain(..end + 2).collect();
                    let block = String::from_utf8_lossy(&block).into_owned();
                    let (mut event, mut data) = (String::new(), Vec::new());
                    for line in block.lines() {
                        if let Some(name) = line.strip_prefix("event:") {
                            event = name.trim().to_owned();
                        } else if let Some(line) = line.strip_prefix("data:") {
                            data.push(line.strip_prefix(' ').unwrap_or(line).to_owned());
                        }
                    }
                    if event.is_empty() && data.is_empty() {
                        continue; // a keep-alive comment
                    }
                    return (event, data.join("\n"));
                }
                let mut chunk = [0u8; 8192];
                let n = self.io.read(&mut chunk).await.expect("read the stream");
                assert!(
                    n > 0,
                    "the event stream ended; so far: {}",
                    String::from_utf8_lossy(&self.buffer)
                );
                self.buffer.extend_from_slice(&chunk[..n]);
            }
        })
        .await
    }
}
