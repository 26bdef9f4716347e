//! The console's listener: HTTP/1.1, over TLS when the gRPC listener has it, with a
//! cap on connections and a deadline for a request's headers; and its routes.

use std::{sync::Arc, time::Duration};

use axum::{
    extract::{DefaultBodyLimit, Request},
    http::{header, HeaderValue},
    middleware::{self, Next},
    response::Response,
    routing::{get, post},
    Router,
};
use hyper::server::conn::http1;
use hyper_util::{
    rt::{TokioIo, TokioTimer},
    service::TowerToHyperService,
};
use tokio::{net::TcpListener, sync::Semaphore};
use tokio_util::sync::CancellationToken;

use super::{assets, csrf, pages, session, Console};
use crate::tls::Tls;

/// Most console connections open at once; more wait in the accept queue.
const MAX_CONNECTIONS: usize = 256;
/// A request's headers must arrive within this.
const HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// The largest form a console page posts.
const MAX_BODY: usize = 64 * 1024;

/// The listener for `--console-listen`.
pub(crate) async fn bind(listen: &str) -> Result<TcpListener, String> {
    TcpListener::bind(listen)
        .await
        .map_err(|error| format!("--console-listen {listen:?}: cannot listen: {error}"))
}

fn routes(console: Arc<Console>) -> Router {
    Router::new()
        .route("/", get(pages::overview::page))
        .route("/live", get(pages::overview::live))
        .route("/login", get(session::login_form).post(session::login))
        .route("/logout", post(session::logout))
        .route("/assets/{file}", get(assets::serve))
        .route("/ns/{ns}", get(pages::queues::page))
        .route("/ns/{ns}/live", get(pages::queues::live))
        .route("/ns/{ns}/queues/{queue}", get(pages::queues::queue))
        .route("/ns/{ns}/queues/{queue}/{action}", post(pages::queues::act))
        .route("/ns/{ns}/jobs", get(pages::jobs::list))
        .route("/ns/{ns}/jobs/{id}", get(pages::jobs::detail))
        .route("/ns/{ns}/jobs/{id}/{action}", post(pages::jobs::act))
        .route("/ns/{ns}/enqueue", post(pages::jobs::enqueue))
        .route("/ns/{ns}/bulk", post(pages::bulk::start))
        .route("/ns/{ns}/bulk/{id}", get(pages::bulk::show))
        .route("/ns/{ns}/bulk/{id}/live", get(pages::bulk::live))
        .route("/ns/{ns}/bulk/{id}/stop", post(pages::bulk::stop))
        .route("/ns/{ns}/dead", get(pages::dead::list))
        .route(
            "/ns/{ns}/dead/{queue}/{fingerprint}/{action}",
            post(pages::dead::act),
        )
        .route("/ns/{ns}/flows/{id}", get(pages::flows::detail))
        .route("/ns/{ns}/flows/{id}/{action}", post(pages::flows::act))
        .route("/ns/{ns}/workers", get(pages::ops::workers))
        .route("/ns/{ns}/audit", get(pages::ops::audit))
        .route("/ns/{ns}/schedules", get(pages::schedules::list))
        .route("/ns/{ns}/schedules/{id}", get(pages::schedules::detail))
        .route(
            "/ns/{ns}/schedules/{id}/{action}",
            post(pages::schedules::act),
        )
        .fallback(pages::not_found)
        .layer(middleware::from_fn(csrf::guard))
        .layer(middleware::from_fn(security_headers))
        .layer(DefaultBodyLimit::max(MAX_BODY))
        .with_state(console)
}

/// Headers on every answer: no framing, no sniffing, scripts and styles from this
/// console only, pages never cached (they hold a tenant's data).
async fn security_headers(request: Request, next: Next) -> Response {
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    let fixed = [
        (
            header::CONTENT_SECURITY_POLICY,
            "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
             frame-ancestors 'none'; form-action 'self'; base-uri 'none'",
        ),
        (header::X_FRAME_OPTIONS, "DENY"),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::REFERRER_POLICY, "same-origin"),
    ];
    for (name, value) in fixed {
        headers.insert(name, HeaderValue::from_static(value));
    }
    headers
        .entry(header::CACHE_CONTROL)
        .or_insert(HeaderValue::from_static("no-store"));
    response
}

/// Serves the console on `listener` until `cancel`.
pub(crate) async fn serve(
    listener: TcpListener,
    console: Arc<Console>,
    tls: Option<Arc<Tls>>,
    cancel: CancellationToken,
) {
    let router = routes(console);
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    loop {
        let Ok(slot) = slots.clone().acquire_owned().await else {
            return;
        };
        let (stream, _) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    tracing::debug!(%error, "console: accept failed");
                    // Backoff: real time for file descriptors to come free.
                    #[allow(clippy::disallowed_methods)]
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = cancel.cancelled() => return,
        };
        let _ = stream.set_nodelay(true);
        let (router, tls, cancel) = (router.clone(), tls.clone(), cancel.clone());
        tokio::spawn(async move {
            let _slot = slot;
            match tls {
                None => connection(stream, router, cancel).await,
                Some(tls) => {
                    let handshake = tls.acceptor().accept(stream);
                    match tokio::time::timeout(crate::tls::HANDSHAKE_TIMEOUT, handshake).await {
                        Ok(Ok(stream)) => connection(stream, router, cancel).await,
                        _ => tracing::debug!("console: TLS handshake failed or timed out"),
                    }
                }
            }
        });
    }
}

async fn connection<IO>(io: IO, router: Router, cancel: CancellationToken)
where
    IO: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let service = TowerToHyperService::new(router);
    let connection = http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_TIMEOUT)
        .keep_alive(true)
        .serve_connection(TokioIo::new(io), service);
    tokio::pin!(connection);
    tokio::select! {
        result = connection.as_mut() => {
            if let Err(error) = result {
                tracing::debug!(%error, "console: connection failed");
            }
        }
        _ = cancel.cancelled() => connection.as_mut().graceful_shutdown(),
    }
}
