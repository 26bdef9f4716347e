//! The console family's side of HTTP: a second `dueq serve` with `--console-listen`,
//! pages fetched and timed over HTTP/1.1 (hyper-util's client, keep-alive on
//! loopback), and live tabs: SSE streams whose `update` events are counted.

use std::{ffi::OsString, net::SocketAddr, time::Duration, time::Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper_util::{
    client::legacy::{connect::HttpConnector, Client},
    rt::TokioExecutor,
};
use tokio::{sync::watch, task::JoinHandle};
use tonic_health::pb::{
    health_check_response::ServingStatus, health_client::HealthClient, HealthCheckRequest,
};

use crate::{
    env::{free_port, Env},
    service::Service,
    Result,
};

/// Longest a live tab may go without an update before the bench gives up.
const UPDATE_WAIT: Duration = Duration::from_secs(60);

type Http = Client<HttpConnector, Empty<Bytes>>;

/// A `dueq serve` with its console listening, beside the env's service (the same
/// Redis); stopped on drop.
pub(crate) struct ConsoleService {
    service: Option<Service>,
    base: String,
    http: Http,
}

impl ConsoleService {
    pub(crate) async fn start(env: &Env) -> Result<ConsoleService> {
        let grpc: SocketAddr = format!("127.0.0.1:{}", free_port()?).parse()?;
        let console: SocketAddr = format!("127.0.0.1:{}", free_port()?).parse()?;
        let extra: Vec<OsString> = vec!["--console-listen".into(), console.to_string().into()];
        let service = Service::start_with(&env.dueq_bin, grpc, &env.redis_url, &extra)?;
        let mut this = ConsoleService {
            service: Some(service),
            base: format!("http://{console}"),
            http: Client::builder(TokioExecutor::new()).build_http(),
        };
        this.wait_serving(grpc).await?;
        Ok(this)
    }

    /// Polls the gRPC health check, then the console (any answer to /login).
    async fn wait_serving(&mut self, grpc: SocketAddr) -> Result<()> {
        let endpoint = format!("http://{grpc}");
        for _ in 0..500 {
            if let Some(status) = self.service.as_mut().and_then(Service::exited) {
                return Err(format!("the console's service exited: {status}").into());
            }
            let channel = tonic::transport::Channel::from_shared(endpoint.clone())?
                .connect()
                .await;
            if let Ok(channel) = channel {
                let check = HealthClient::new(channel)
                    .check(HealthCheckRequest {
                        service: "dueq.v1.QueueService".into(),
                    })
                    .await;
                let serving =
                    check.is_ok_and(|r| r.get_ref().status == ServingStatus::Serving as i32);
                if serving && self.status("/login").await.is_ok() {
                    return Ok(());
                }
            }
            crate::local::pause(Duration::from_millis(20)).await;
        }
        Err("the console's service did not become SERVING".into())
    }

    async fn status(&self, path: &str) -> Result<u16> {
        let uri: hyper::Uri = format!("{}{path}", self.base).parse()?;
        let response = self.http.get(uri).await?;
        let status = response.status().as_u16();
        response.into_body().collect().await?;
        Ok(status)
    }

    /// GET `path`, read to the end; the time it took and the body's bytes. Anything
    /// but 200 is an error (a page that failed is not a page served).
    pub(crate) async fn page(&self, path: &str) -> Result<(Duration, usize)> {
        let uri: hyper::Uri = format!("{}{path}", self.base).parse()?;
        let started = Instant::now();
        let response = self.http.get(uri).await?;
        let status = response.status();
        let body = response.into_body().collect().await?.to_bytes();
        let took = started.elapsed();
        if status != hyper::StatusCode::OK {
            let text = String::from_utf8_lossy(&body[..body.len().min(300)]).into_owned();
            return Err(format!("GET {path}: {status}: {text}").into());
        }
        Ok((took, body.len()))
    }

    /// Opens a live tab: the page, then its SSE stream, read in a task that counts
    /// the `update` events.
    pub(crate) async fn open_tab(&self, page: &str, live: &str) -> Result<Tab> {
        self.page(page).await?;
        let uri: hyper::Uri = format!("{}{live}", self.base).parse()?;
        let response = self.http.get(uri).await?;
        if response.status() != hyper::StatusCode::OK {
            return Err(format!("GET {live}: {}", response.status()).into());
        }
        let (tx, updates) = watch::channel(0u64);
        let task = tokio::spawn(async move {
            let mut body = response.into_body();
            // The end of the previous frame, so an event name split across two
            // frames is still found.
            let mut tail: Vec<u8> = Vec::new();
            while let Some(Ok(frame)) = body.frame().await {
                let Ok(data) = frame.into_data() else {
                    continue;
                };
                let mut seen = tail.clone();
                seen.extend_from_slice(&data);
                let found = count(&seen, b"event: update\n") - count(&tail, b"event: update\n");
                if found > 0 {
                    tx.send_modify(|n| *n += found as u64);
                }
                tail = seen[seen.len().saturating_sub(16)..].to_vec();
            }
        });
        Ok(Tab { updates, task })
    }
}

impl Drop for ConsoleService {
    fn drop(&mut self) {
        if let Some(service) = self.service.take() {
            service.stop();
        }
    }
}

fn count(haystack: &[u8], needle: &[u8]) -> usize {
    haystack
        .windows(needle.len())
        .filter(|w| *w == needle)
        .count()
}

/// One open live tab: its stream's update count.
pub(crate) struct Tab {
    updates: watch::Receiver<u64>,
    task: JoinHandle<()>,
}

impl Tab {
    /// Updates received so far.
    pub(crate) fn seen(&self) -> u64 {
        *self.updates.borrow()
    }

    /// Waits until the stream has received `n` updates in all.
    pub(crate) async fn until(&mut self, n: u64) -> Result<()> {
        let wait = self.updates.wait_for(|seen| *seen >= n);
        match tokio::time::timeout(UPDATE_WAIT, wait).await {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(_)) => Err("a live tab's stream ended".into()),
            Err(_) => Err(format!("a live tab got no update for {UPDATE_WAIT:?}").into()),
        }
    }
}

impl Drop for Tab {
    fn drop(&mut self) {
        self.task.abort();
    }
}
