//! A TLS connection as tonic serves it, and what it tells handlers about the peer.

use std::{
    io,
    net::SocketAddr,
    pin::Pin,
    sync::Arc,
    task::{ready, Context, Poll},
};

use rustls_pki_types::CertificateDer;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio_rustls::server::TlsStream;
use tonic::{
    codegen::http,
    transport::server::{Connected, TcpConnectInfo},
};
use x509_parser::{extensions::GeneralName, prelude::*};

use crate::connections::AwaitsPreface;

/// A connection after its TLS handshake, over the transport `IO` (a TCP connection
/// as the connection limits admitted it).
pub(crate) struct TlsConn<IO> {
    stream: TlsStream<IO>,
    info: TlsConnectInfo,
    /// Decrypted bytes still to read before the HTTP/2 preface is in; at 0 the
    /// transport's preface deadline is lifted (`connections::AwaitsPreface`).
    preface_left: usize,
}

/// `PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n`, what every HTTP/2 client sends first.
const PREFACE_LEN: usize = 24;

/// The connection info in every request's extensions on a TLS connection.
#[derive(Debug, Clone)]
pub(crate) struct TlsConnectInfo {
    // Kept for handlers and logs: on a TLS connection tonic has no TcpConnectInfo,
    // so `Request::remote_addr` is None and this is where the peer's address is.
    #[allow(dead_code)]
    pub(crate) remote_addr: Option<SocketAddr>,
    /// The client's certificate chain, leaf first, as rustls verified it against
    /// `--tls-client-ca`; None without mTLS.
    // Kept beside the names for an authorizer that wants more than the names.
    #[allow(dead_code)]
    pub(crate) client_certs: Option<Arc<[CertificateDer<'static>]>>,
    /// The leaf's SAN DNS, URI and email names, then its subject CN; parsed once
    /// per connection.
    pub(crate) client_names: Arc<[String]>,
}

impl<IO: Connected<ConnectInfo = TcpConnectInfo>> TlsConn<IO> {
    pub(super) fn new(stream: TlsStream<IO>) -> TlsConn<IO> {
        let (tcp, session) = stream.get_ref();
        let client_certs: Option<Arc<[CertificateDer<'static>]>> = session
            .peer_certificates()
            .map(|certs| certs.iter().map(|c| c.clone().into_owned()).collect());
        let client_names = client_certs
            .as_deref()
            .and_then(<[_]>::first)
            .map(|leaf| names_of(leaf))
            .unwrap_or_default()
            .into();
        let info = TlsConnectInfo {
            remote_addr: tcp.connect_info().remote_addr(),
            client_certs,
            client_names,
        };
        TlsConn {
            stream,
            info,
            preface_left: PREFACE_LEN,
        }
    }
}

/// The names the verified client certificate of `request`'s connection goes by (SAN
/// DNS, URI and email names, then the subject CN); empty without TLS, without mTLS,
/// or for a certificate with none.
pub(crate) fn client_cert_names(extensions: &http::Extensions) -> Vec<String> {
    extensions
        .get::<TlsConnectInfo>()
        .map(|info| info.client_names.to_vec())
        .unwrap_or_default()
}

/// The peer's address of the TLS connection a request came on; None off TLS.
pub(crate) fn remote_addr(extensions: &http::Extensions) -> Option<SocketAddr> {
    extensions
        .get::<TlsConnectInfo>()
        .and_then(|info| info.remote_addr)
}

/// A certificate's SAN DNS, URI and email names, then its subject CN.
fn names_of(cert: &CertificateDer<'_>) -> Vec<String> {
    let Ok((_, cert)) = X509Certificate::from_der(cert.as_ref()) else {
        return Vec::new();
    };
    let mut names = Vec::new();
    if let Ok(Some(san)) = cert.subject_alternative_name() {
        for name in &san.value.general_names {
            match name {
                GeneralName::DNSName(n) | GeneralName::URI(n) | GeneralName::RFC822Name(n) => {
                    names.push((*n).to_string())
                }
                _ => {}
            }
        }
    }
    for cn in cert.subject().iter_common_name() {
        if let Ok(cn) = cn.as_str() {
            names.push(cn.to_string());
        }
    }
    names
}

impl<IO> Connected for TlsConn<IO> {
    type ConnectInfo = TlsConnectInfo;

    fn connect_info(&self) -> TlsConnectInfo {
        self.info.clone()
    }
}

impl<IO: AsyncRead + AsyncWrite + AwaitsPreface + Unpin> AsyncRead for TlsConn<IO> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        ready!(Pin::new(&mut self.stream).poll_read(cx, buf))?;
        if self.preface_left > 0 {
            let read = buf.filled().len() - before;
            self.preface_left = self.preface_left.saturating_sub(read);
            if self.preface_left == 0 {
                self.stream.get_mut().0.preface_in();
            }
        }
        Poll::Ready(Ok(()))
    }
}

impl<IO: AsyncRead + AsyncWrite + AwaitsPreface + Unpin> AsyncWrite for TlsConn<IO> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use rcgen::{CertificateParams, DnType, KeyPair, SanType};
    use tonic::codegen::http;

    use super::{client_cert_names, names_of, TlsConnectInfo};

    /// The names authorization matches: SAN DNS, URI and email names, then the CN;
    /// none from a request without TLS connect info.
    #[test]
    fn client_names_are_the_sans_then_the_cn() {
        let mut params =
            CertificateParams::new(vec!["worker-1.example".to_string()]).expect("params");
        params.subject_alt_names.push(SanType::URI(
            "spiffe://dueq/worker-1".try_into().expect("uri"),
        ));
        params.subject_alt_names.push(SanType::Rfc822Name(
            "ops@example.com".try_into().expect("email"),
        ));
        params
            .subject_alt_names
            .push(SanType::IpAddress([10, 0, 0, 1].into()));
        params
            .distinguished_name
            .push(DnType::CommonName, "worker-1");
        let key = KeyPair::generate().expect("key");
        let cert = params.self_signed(&key).expect("cert");
        let names = names_of(cert.der());
        assert_eq!(
            names,
            [
                "worker-1.example",
                "spiffe://dueq/worker-1",
                "ops@example.com",
                "worker-1"
            ]
        );

        let mut extensions = http::Extensions::new();
        assert!(client_cert_names(&extensions).is_empty());
        extensions.insert(TlsConnectInfo {
            remote_addr: None,
            client_certs: Some(Arc::from([cert.der().clone()])),
            client_names: names.clone().into(),
        });
        assert_eq!(client_cert_names(&extensions), names);
    }
}
