//! The HTTP endpoint: `GET /metrics` on `--metrics-listen`, over HTTP/1.1. The
//! Prometheus text format (0.0.4) unless the scraper's Accept header asks for
//! OpenMetrics (Prometheus itself does). Anything else is 404 (or 405 for another
//! method on /metrics).

use std::{convert::Infallible, sync::Arc};

use bytes::Bytes;
use http_body_util::Full;
use hyper::{body::Incoming, header, server::conn::http1, service::service_fn, Method};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use super::{scrape::Sources, Metrics};

const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The listener for `--metrics-listen` (host:port; a host name resolves).
pub(crate) async fn bind(listen: &str) -> Result<TcpListener, String> {
    TcpListener::bind(listen)
        .await
        .map_err(|error| format!("--metrics-listen {listen:?}: cannot listen: {error}"))
}

/// Serves /metrics on `listener` until `cancel`.
pub(crate) async fn serve(
    listener: TcpListener,
    metrics: Arc<Metrics>,
    sources: Sources,
    cancel: CancellationToken,
) {
    loop {
        let (stream, _) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    tracing::debug!(%error, "metrics: accept failed");
                    // Backoff: real time for file descriptors to come free.
                    #[allow(clippy::disallowed_methods)]
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = cancel.cancelled() => return,
        };
        let (metrics, sources, cancel) = (metrics.clone(), sources.clone(), cancel.clone());
        tokio::spawn(async move {
            let service = service_fn(move |request| {
                let (metrics, sources) = (metrics.clone(), sources.clone());
                async move { Ok::<_, Infallible>(answer(request, &metrics, &sources).await) }
            });
            let connection = http1::Builder::new()
                .keep_alive(true)
                .serve_connection(TokioIo::new(stream), service);
            tokio::pin!(connection);
            tokio::select! {
                result = connection.as_mut() => {
                    if let Err(error) = result {
                        tracing::debug!(%error, "metrics: connection failed");
                    }
                }
                _ = cancel.cancelled() => connection.as_mut().graceful_shutdown(),
            }
        });
    }
}

type Response = hyper::Response<Full<Bytes>>;

fn plain(status: hyper::StatusCode, text: &'static str) -> Response {
    let mut response = hyper::Response::new(Full::new(Bytes::from_static(text.as_bytes())));
    *response.status_mut() = status;
    response
}

async fn answer(
    request: hyper::Request<Incoming>,
    metrics: &Metrics,
    sources: &Sources,
) -> Response {
    if request.uri().path() != "/metrics" {
        return plain(hyper::StatusCode::NOT_FOUND, "not found: try /metrics\n");
    }
    if request.method() != Method::GET && request.method() != Method::HEAD {
        return plain(hyper::StatusCode::METHOD_NOT_ALLOWED, "GET /metrics\n");
    }
    let openmetrics = request
        .headers()
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .any(|accept| accept.contains("application/openmetrics-text"));
    let body = metrics.render(sources, openmetrics).await;
    let content_type = if openmetrics {
        OPENMETRICS
    } else {
        prometheus_client::encoding::prometheus_text::CONTENT_TYPE
    };
    let mut response = hyper::Response::new(Full::new(Bytes::from(body)));
    if let Ok(value) = header::HeaderValue::from_str(content_type) {
        response.headers_mut().insert(header::CONTENT_TYPE, value);
    }
    response
}
