//! One tracing span per RPC, named after the gRPC service and method of its line in
//! the RPC table, so every log line a call produces carries them; the namespace is
//! added once it is validated (`api::authorize::namespace`). When the call ends, one debug event
//! says how long it took and, for calls answered with an error status in the headers
//! (tonic's trailers-only responses), which. With `--otlp-endpoint` the span is
//! exported (`crate::telemetry`), as a child of the caller's trace when the request's
//! metadata carries one (W3C `traceparent`), with the status of a call answered
//! trailers-only.

use std::{
    future::Future,
    pin::Pin,
    task::{Context, Poll},
    time::Instant,
};

use tonic::codegen::http;
use tower_layer::Layer;
use tower_service::Service;
use tracing::Instrument;

use crate::{rpc, telemetry};

#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct TraceLayer;

impl<S> Layer<S> for TraceLayer {
    type Service = Trace<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Trace { inner }
    }
}

#[derive(Debug, Clone)]
pub(crate) struct Trace<S> {
    inner: S,
}

impl<S, B, R> Service<http::Request<B>> for Trace<S>
where
    S: Service<http::Request<B>, Response = http::Response<R>> + Clone + Send + 'static,
    S::Future: Send + 'static,
    B: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<S::Response, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        let (service, method) = match rpc::of(request.extensions()) {
            Some(rpc) => (rpc.service, rpc.method),
            None => ("", request.uri().path()),
        };
        let span = tracing::info_span!(
            "rpc",
            service = %service,
            method = %method,
            namespace = tracing::field::Empty,
            otel.name = tracing::field::Empty,
            otel.kind = tracing::field::Empty,
            otel.status_code = tracing::field::Empty,
            rpc.grpc.status_code = tracing::field::Empty,
        );
        if telemetry::enabled() {
            // The exported span's name and kind, as OpenTelemetry's RPC conventions
            // have them; the caller's trace, if it sent one, is its parent.
            span.record("otel.name", format!("{service}/{method}"));
            span.record("otel.kind", "server");
            telemetry::continue_trace(&span, request.headers());
        }
        // The clone that was polled ready serves this call; the fresh one waits.
        let mut inner = self.inner.clone();
        std::mem::swap(&mut self.inner, &mut inner);
        let call = span.in_scope(|| inner.call(request));
        Box::pin(
            async move {
                let started = Instant::now();
                let result = call.await;
                let status = result.as_ref().ok().and_then(|response| {
                    response
                        .headers()
                        .get("grpc-status")
                        .and_then(|v| v.to_str().ok())
                        .map(str::to_owned)
                });
                if telemetry::enabled() {
                    telemetry::record_status(&tracing::Span::current(), status.as_deref());
                }
                tracing::debug!(
                    elapsed_ms = started.elapsed().as_secs_f64() * 1000.0,
                    grpc_status = status.as_deref().unwrap_or("0 or in trailers"),
                    "rpc finished"
                );
                result
            }
            .instrument(span),
        )
    }
}
