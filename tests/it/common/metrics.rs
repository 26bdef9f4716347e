//! Scraping the service's /metrics over a plain HTTP/1.1 GET, and reading samples.

use std::collections::BTreeMap;

use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::TcpStream,
};

use super::patience::within_patience;

/// One scrape: the response's status line, headers and samples.
#[derive(Debug)]
pub struct Scrape {
    pub status: u16,
    pub content_type: String,
    pub body: String,
    /// `name{labels}` (as printed) -> value.
    pub samples: BTreeMap<String, f64>,
}

impl Scrape {
    /// The value of the sample printed as `series` (`name{a="x",b="y"}`), 0 if absent.
    pub fn value(&self, series: &str) -> f64 {
        self.samples.get(series).copied().unwrap_or(0.0)
    }

    /// The series of the metric `name` (exactly that name, any labels).
    pub fn series_of(&self, name: &str) -> Vec<(&str, f64)> {
        self.samples
            .iter()
            .filter(|(series, _)| series.split('{').next() == Some(name))
            .map(|(series, value)| (series.as_str(), *value))
            .collect()
    }
}

/// `GET path` on `addr` with the given Accept header (none if empty).
pub async fn http_get(addr: &str, path: &str, accept: &str) -> Scrape {
    within_patience("scraping /metrics", async {
        let mut stream = TcpStream::connect(addr).await.expect("connect to metrics");
        let accept = if accept.is_empty() {
            String::new()
        } else {
            format!("Accept: {accept}\r\n")
        };
        let request =
            format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\n{accept}Connection: close\r\n\r\n");
        stream.write_all(request.as_bytes()).await.expect("send");
        let mut raw = Vec::new();
        stream.read_to_end(&mut raw).await.expect("read");
        parse(&String::from_utf8(raw).expect("utf-8 response"))
    })
    .await
}

/// Scrapes /metrics in the Prometheus text format.
pub async fn scrape(addr: &str) -> Scrape {
    let scrape = http_get(addr, "/metrics", "").await;
    assert_eq!(scrape.status, 200, "{}", scrape.body);
    scrape
}

fn parse(response: &str) -> Scrape {
    let (head, body) = response.split_once("\r\n\r\n").expect("headers end");
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|line| line.split(' ').nth(1))
        .and_then(|code| code.parse().ok())
        .expect("status line");
    let content_type = lines
        .filter_map(|line| line.split_once(':'))
        .find(|(name, _)| name.eq_ignore_ascii_case("content-type"))
        .map(|(_, value)| value.trim().to_owned())
        .unwrap_or_default();
    // hyper sends small bodies with a content-length, not chunked.
    let samples = body
        .lines()
        .filter(|line| !line.starts_with('#') && !line.is_empty())
        .filter_map(|line| {
            let (series, value) = line.rsplit_once(' ')?;
            Some((series.to_owned(), value.parse().ok()?))
        })
        .collect();
    Scrape {
        status,
        content_type,
        body: body.to_owned(),
        samples,
    }
}
