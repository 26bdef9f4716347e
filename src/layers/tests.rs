//! One call through the concerns: the size of its one future, pinned where a
//! regression would be silent (issue 35), and the metrics it counts through the
//! handles looked up when the server starts.

use std::{
    convert::Infallible,
    future::{ready, Ready},
    sync::Arc,
    task::{Context, Poll},
    time::Duration,
};

use http_body::Frame;
use http_body_util::BodyExt;
use tonic::{body::Body, codegen::http, Status};
use tower_layer::Layer;
use tower_service::Service;

use super::{Caps, Layers, Settings};
use crate::metrics::{HandledLabels, Metrics, RpcLabels};

/// Answers at once with a body that ends in trailers saying OK, as a unary handler
/// does.
#[derive(Clone)]
struct Answers;

impl Service<http::Request<Body>> for Answers {
    type Response = http::Response<Body>;
    type Error = Infallible;
    type Future = Ready<Result<http::Response<Body>, Infallible>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, _: http::Request<Body>) -> Self::Future {
        let mut trailers = http::HeaderMap::new();
        trailers.insert("grpc-status", http::HeaderValue::from_static("0"));
        let body = http_body_util::StreamBody::new(futures_util::stream::iter([Ok::<_, Status>(
            Frame::trailers(trailers),
        )]));
        ready(Ok(http::Response::new(Body::new(body))))
    }
}

fn layers(metrics: Arc<Metrics>) -> Layers {
    Layers::new(Settings {
        metrics,
        principals: None,
        owners: None,
        caps: Caps {
            unary: 10,
            long: 10,
            open: 10,
            body_timeout: Duration::from_secs(10),
            max_message: 4 << 20,
        },
        request_timeout: Duration::from_secs(10),
    })
}

/// A health check, the empty RPC of the bench: one message of zero bytes.
fn health_check() -> http::Request<Body> {
    http::Request::builder()
        .uri("/grpc.health.v1.Health/Check")
        .body(Body::new(http_body_util::Full::new(
            bytes::Bytes::from_static(&[0; 5]),
        )))
        .expect("request")
}

#[tokio::test]
async fn one_call_is_one_small_future() {
    let layers = layers(Metrics::new(100, Duration::from_secs(60)));
    let future = layers.concerns.serve(Answers, health_check());
    let size = std::mem::size_of_val(&future);
    // Every concern's state lives in this one future, allocated once per call and
    // moved into place whole: 2,608 bytes in the test (debug) build when written.
    assert!(size <= 2816, "the stack's future is {size} bytes");
}

/// What the metrics endpoint shows of the health check's series.
fn health_series(metrics: &Metrics) -> (u64, u64) {
    let labels = RpcLabels {
        grpc_service: "grpc.health.v1.Health",
        grpc_method: "Check",
    };
    let handled = HandledLabels {
        grpc_service: labels.grpc_service,
        grpc_method: labels.grpc_method,
        grpc_code: "OK",
    };
    (
        metrics.rpc_started.get_or_create(&labels).get(),
        metrics.rpc_handled.get_or_create(&handled).get(),
    )
}

#[tokio::test]
async fn a_call_counts_in_the_registrys_series() {
    let metrics = Metrics::new(100, Duration::from_secs(60));
    let mut service = layers(metrics.clone()).layer(Answers);
    let Ok(response) = service.call(health_check()).await;
    assert_eq!(health_series(&metrics), (1, 0), "started, not yet handled");
    let mut body = response.into_body();
    while let Some(frame) = body.frame().await {
        drop(frame.expect("frame"));
    }
    drop(body);
    assert_eq!(
        health_series(&metrics),
        (1, 1),
        "handled once its trailers passed"
    );
}
