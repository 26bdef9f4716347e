//! One tracing span per RPC, named after the gRPC service and method of its line in
//! the RPC table, so every log line a call produces carries them; the namespace is
//! added once it is validated (`api::authorize::namespace`). When the call ends, one debug event
//! says how long it took and, for calls answered with an error status in the headers
//! (tonic's trailers-only responses), which. With `--otlp-endpoint` the span is
//! exported (`crate::telemetry`), as a child of the caller's trace when the request's
//! metadata carries one (W3C `traceparent`), with the status of a call answered
//! trailers-only.

use std::time::Instant;

use tonic::codegen::http;

use crate::{rpc::Rpc, telemetry};

/// The span the rest of the call runs in.
pub(super) fn span<B>(rpc: Option<&'static Rpc>, request: &http::Request<B>) -> tracing::Span {
    let (service, method) = match rpc {
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
    span
}

/// Records how the call ended, in its span (the current one).
pub(super) fn finished<R>(started: Instant, response: &http::Response<R>) {
    // Borrowed from the headers: nothing is copied per call.
    let status = response
        .headers()
        .get("grpc-status")
        .and_then(|v| v.to_str().ok());
    if telemetry::enabled() {
        telemetry::record_status(&tracing::Span::current(), status);
    }
    tracing::debug!(
        elapsed_ms = started.elapsed().as_secs_f64() * 1000.0,
        grpc_status = status.unwrap_or("0 or in trailers"),
        "rpc finished"
    );
}
