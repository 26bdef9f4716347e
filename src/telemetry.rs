//! OpenTelemetry traces (off unless `--otlp-endpoint` names a receiver): the per-RPC
//! spans (`layers::trace`) go out over OTLP/HTTP (protobuf), a caller's W3C trace
//! context (`traceparent`, `tracestate` in the gRPC metadata) is their parent, and a
//! job enqueued under a trace keeps that trace's context in its `traceparent` header,
//! which the claim that hands it out links to.
//!
//! Without `--otlp-endpoint` no OpenTelemetry layer is installed: spans have no
//! trace context, nothing is stamped on a job and nothing is sent.

use std::{
    collections::BTreeMap,
    future::Future,
    pin::Pin,
    sync::atomic::{AtomicBool, Ordering},
    time::Duration,
};

use opentelemetry::{
    propagation::{Extractor, Injector, TextMapPropagator},
    trace::{TraceContextExt, TracerProvider as _},
};
use opentelemetry_http::{hyper::HyperClient, Bytes, HttpClient, HttpError, Request, Response};
use opentelemetry_otlp::{WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::{propagation::TraceContextPropagator, trace::SdkTracerProvider, Resource};
use tonic::codegen::http::HeaderMap;
use tracing::Span;
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// The job header a job's enqueue trace context is kept under: the W3C name, so a
/// worker can hand a job's headers to its OpenTelemetry propagator as they are.
pub const TRACEPARENT: &str = "traceparent";
/// The path OTLP/HTTP receivers take traces on.
const TRACES_PATH: &str = "/v1/traces";
/// How long one export may take, and how long shutdown waits for the last spans.
const EXPORT_TIMEOUT: Duration = Duration::from_secs(5);

/// Whether spans are exported (set once, by [`Traces::start`]).
static ENABLED: AtomicBool = AtomicBool::new(false);

/// Whether this process exports traces.
pub(crate) fn enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

/// `--otlp-endpoint`: an http:// URL of an OTLP/HTTP receiver. A bare base URL
/// (`http://collector:4318`) gets the traces path `/v1/traces`; a URL already ending
/// in it is taken as written.
pub fn endpoint(text: &str) -> Result<String, String> {
    let url = url::Url::parse(text).map_err(|e| format!("not a URL ({e})"))?;
    if url.scheme() != "http" || url.host_str().is_none_or(str::is_empty) {
        return Err(
            "must be an http://host:port URL of an OTLP/HTTP receiver (https is not supported)"
                .into(),
        );
    }
    if url.path().ends_with(TRACES_PATH) {
        return Ok(url.to_string());
    }
    let mut url = url;
    let path = format!("{}{TRACES_PATH}", url.path().trim_end_matches('/'));
    url.set_path(&path);
    Ok(url.to_string())
}

/// The span exporter of a process started with `--otlp-endpoint`.
pub struct Traces {
    provider: SdkTracerProvider,
}

impl Traces {
    /// Builds the exporter for `endpoint` (as [`endpoint`] returns it): spans are
    /// batched and sent from a thread of their own, so a slow or unreachable receiver
    /// never holds up a call (a full batch queue drops spans instead). Must be called
    /// within the Tokio runtime, which carries the HTTP requests.
    pub fn start(endpoint: &str) -> Result<Traces, String> {
        let runtime = tokio::runtime::Handle::try_current()
            .map_err(|e| format!("--otlp-endpoint: no runtime ({e})"))?;
        let client = OnRuntime {
            client: HyperClient::with_default_connector(EXPORT_TIMEOUT, None),
            runtime,
        };
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_http_client(client)
            .with_endpoint(endpoint)
            .with_timeout(EXPORT_TIMEOUT)
            .build()
            .map_err(|e| format!("--otlp-endpoint {endpoint}: {e}"))?;
        let provider = SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_resource(Resource::builder().with_service_name("dueq").build())
            .build();
        ENABLED.store(true, Ordering::Relaxed);
        Ok(Traces { provider })
    }

    /// The tracing layer that turns spans into OpenTelemetry spans for the exporter.
    pub(crate) fn layer<S>(&self) -> impl tracing_subscriber::Layer<S> + Send + Sync
    where
        S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a> + Send + Sync,
    {
        tracing_opentelemetry::layer()
            .with_tracer(self.provider.tracer("dueq"))
            .with_location(false)
            .with_threads(false)
            .with_level(false)
    }

    /// Sends the spans still queued, waiting at most [`EXPORT_TIMEOUT`]; at shutdown.
    pub async fn shutdown(self) {
        let provider = self.provider;
        let flushed =
            tokio::task::spawn_blocking(move || provider.shutdown_with_timeout(EXPORT_TIMEOUT))
                .await;
        match flushed {
            Ok(Ok(())) => {}
            Ok(Err(error)) => tracing::warn!(%error, "the last spans could not be exported"),
            Err(error) => tracing::warn!(%error, "the last spans could not be exported"),
        }
    }
}

/// Runs the exporter's HTTP requests on the service's Tokio runtime: the batch
/// processor exports from a thread of its own, where hyper has no runtime.
#[derive(Debug)]
struct OnRuntime {
    client: HyperClient,
    runtime: tokio::runtime::Handle,
}

type Sent<'a> = Pin<Box<dyn Future<Output = Result<Response<Bytes>, HttpError>> + Send + 'a>>;

impl HttpClient for OnRuntime {
    fn send_bytes<'s, 'a>(&'s self, request: Request<Bytes>) -> Sent<'a>
    where
        's: 'a,
        Self: 'a,
    {
        let client = self.client.clone();
        let task = self
            .runtime
            .spawn(async move { client.send_bytes(request).await });
        Box::pin(async move { task.await.map_err(|e| Box::new(e) as HttpError)? })
    }
}

/// Makes the caller's trace (W3C `traceparent`/`tracestate` in the request's
/// metadata) the parent of `span`, the call's span; nothing without one.
pub(crate) fn continue_trace(span: &Span, headers: &HeaderMap) {
    if !enabled() || !headers.contains_key(TRACEPARENT) {
        return;
    }
    let parent =
        TraceContextPropagator::new().extract(&opentelemetry_http::HeaderExtractor(headers));
    if parent.span().span_context().is_valid() {
        // Fails only for a span no layer records (then there is nothing to export).
        let _ = span.set_parent(parent);
    }
}

/// The gRPC status of a call answered trailers-only (an error, as tonic answers
/// them) on its span, as `rpc.grpc.status_code`; the span's status is an error for
/// the codes OpenTelemetry's gRPC conventions count as the server's fault (UNKNOWN,
/// DEADLINE_EXCEEDED, UNIMPLEMENTED, INTERNAL, UNAVAILABLE, DATA_LOSS).
pub(crate) fn record_status(span: &Span, grpc_status: Option<&str>) {
    let Some(code) = grpc_status.and_then(|s| s.parse::<i64>().ok()) else {
        return;
    };
    span.record("rpc.grpc.status_code", code);
    if matches!(code, 2 | 4 | 12 | 13 | 14 | 15) {
        span.record("otel.status_code", "error");
    }
}

/// Stamps the current span's trace context (the Enqueue call's) on a new job's
/// headers as `traceparent` (and `tracestate` if any), unless traces are off, the
/// caller set a `traceparent` of its own (theirs is kept), or the headers are full.
pub(crate) fn stamp(headers: &mut BTreeMap<String, String>, max_headers: usize) {
    if !enabled() || headers.contains_key(TRACEPARENT) {
        return;
    }
    let context = Span::current().context();
    if !context.span().span_context().is_valid() {
        return;
    }
    let mut fields = Fields::default();
    TraceContextPropagator::new().inject_context(&context, &mut fields);
    if headers.len() + fields.0.len() <= max_headers {
        headers.extend(fields.0);
    }
}

/// A span per job handed out, under the claim's span `parent`, linked to the trace
/// context the job was enqueued under (its `traceparent` header); none for a job
/// without one, or with traces off.
pub(crate) fn handed_out(parent: &Span, job_id: &str, headers: &BTreeMap<String, String>) {
    if !enabled() || !headers.contains_key(TRACEPARENT) {
        return;
    }
    let enqueued = TraceContextPropagator::new().extract(&FieldsRef(headers));
    let link = enqueued.span().span_context().clone();
    if link.is_valid() {
        let span = tracing::info_span!(parent: parent, "job handed out", job_id = %job_id);
        span.add_link(link);
    }
}

/// Headers a propagator writes.
#[derive(Default)]
struct Fields(BTreeMap<String, String>);

impl Injector for Fields {
    fn set(&mut self, key: &str, value: String) {
        self.0.insert(key.to_owned(), value);
    }
}

/// A job's headers, as a propagator reads them.
struct FieldsRef<'a>(&'a BTreeMap<String, String>);

impl Extractor for FieldsRef<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).map(String::as_str)
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(String::as_str).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::endpoint;

    #[test]
    fn an_endpoint_is_an_http_url_and_gets_the_traces_path() {
        assert_eq!(
            endpoint("http://collector:4318").as_deref(),
            Ok("http://collector:4318/v1/traces")
        );
        assert_eq!(
            endpoint("http://127.0.0.1:4318/otlp/").as_deref(),
            Ok("http://127.0.0.1:4318/otlp/v1/traces")
        );
        assert_eq!(
            endpoint("http://c:4318/v1/traces").as_deref(),
            Ok("http://c:4318/v1/traces")
        );
        for bad in [
            "collector:4318",
            "not a url",
            "https://c:4318",
            "ftp://c/x",
            "",
        ] {
            assert!(endpoint(bad).is_err(), "{bad}");
        }
    }
}
