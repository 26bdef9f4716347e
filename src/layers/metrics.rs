//! RPC metrics under go-grpc-prometheus's names: `grpc_server_started_total` when a
//! call arrives, `grpc_server_handled_total` with its status code when it ends (in the
//! response headers of a trailers-only answer, else in the trailers, which the
//! response body is watched for; a body dropped before them is `Canceled`), and
//! `grpc_server_handling_seconds` from arrival to status. Long-polls and streams
//! (`kind`) are counted but left out of the histogram, where their waits would
//! drown the unary calls' times. Only the RPCs of the table are labelled (the
//! classify layer found one): a request for another path is not counted, so a
//! caller cannot mint series.

use std::{
    future::Future,
    pin::Pin,
    sync::Arc,
    task::{ready, Context, Poll},
    time::Instant,
};

use http_body::{Body, Frame, SizeHint};
use tonic::codegen::http;
use tower_layer::Layer;
use tower_service::Service;

use crate::{
    metrics::{HandledLabels, Metrics, RpcLabels, GRPC_CODES},
    rpc,
};

#[derive(Debug, Clone)]
pub(crate) struct MetricsLayer {
    metrics: Arc<Metrics>,
}

impl MetricsLayer {
    pub(crate) fn new(metrics: Arc<Metrics>) -> Self {
        MetricsLayer { metrics }
    }
}

impl<S> Layer<S> for MetricsLayer {
    type Service = Metered<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Metered {
            inner,
            metrics: self.metrics.clone(),
        }
    }
}

#[derive(Debug, Clone)]
pub(crate) struct Metered<S> {
    inner: S,
    metrics: Arc<Metrics>,
}

/// One call's labels and start, until its status is known.
struct Record {
    metrics: Arc<Metrics>,
    labels: RpcLabels,
    started: Instant,
    /// Observed in the histogram (not a long-poll or stream).
    timed: bool,
}

impl Record {
    fn finish(self, code: &'static str) {
        if self.timed {
            self.metrics
                .rpc_seconds
                .get_or_create(&self.labels)
                .observe(self.started.elapsed().as_secs_f64());
        }
        let RpcLabels {
            grpc_service,
            grpc_method,
        } = self.labels;
        self.metrics
            .rpc_handled
            .get_or_create(&HandledLabels {
                grpc_service,
                grpc_method,
                grpc_code: code,
            })
            .inc();
    }
}

/// The name of a `grpc-status` value, as gRPC's Go code spells it.
fn code_name(status: Option<&http::HeaderValue>) -> &'static str {
    status
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok())
        .and_then(|n| GRPC_CODES.get(n).copied())
        .unwrap_or("Unknown")
}

impl<S, B, R> Service<http::Request<B>> for Metered<S>
where
    S: Service<http::Request<B>, Response = http::Response<R>>,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
    R: Send + 'static,
{
    type Response = http::Response<MeteredBody<R>>;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        let record = rpc::of(request.extensions()).map(|rpc| {
            let labels = RpcLabels {
                grpc_service: rpc.service,
                grpc_method: rpc.method,
            };
            self.metrics.rpc_started.get_or_create(&labels).inc();
            Record {
                metrics: self.metrics.clone(),
                labels,
                started: Instant::now(),
                timed: !rpc.kind.is_long(),
            }
        });
        let call = self.inner.call(request);
        Box::pin(async move {
            let response = match call.await {
                Ok(response) => response,
                Err(error) => {
                    if let Some(record) = record {
                        record.finish("Unknown");
                    }
                    return Err(error);
                }
            };
            // A trailers-only answer (an error status) carries its status here.
            let mut record = record;
            if let Some(status) = response.headers().get("grpc-status") {
                if let Some(record) = record.take() {
                    record.finish(code_name(Some(status)));
                }
            }
            Ok(response.map(|inner| MeteredBody { inner, record }))
        })
    }
}

pin_project_lite::pin_project! {
    /// A response body that reports its call's status when its trailers pass.
    pub(crate) struct MeteredBody<B> {
        #[pin]
        inner: B,
        record: Option<Record>,
    }

    impl<B> PinnedDrop for MeteredBody<B> {
        fn drop(this: Pin<&mut Self>) {
            if let Some(record) = this.project().record.take() {
                record.finish("Canceled");
            }
        }
    }
}

impl<B: Body> Body for MeteredBody<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        let this = self.project();
        let polled = ready!(this.inner.poll_frame(cx));
        let code = match &polled {
            Some(Ok(frame)) => frame
                .trailers_ref()
                .map(|trailers| code_name(trailers.get("grpc-status"))),
            // The body failed, or ended without a status.
            Some(Err(_)) | None => Some("Unknown"),
        };
        if let Some(code) = code {
            if let Some(record) = this.record.take() {
                record.finish(code);
            }
        }
        Poll::Ready(polled)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_status_codes_as_grpc_go_does() {
        let value = |s: &'static str| http::HeaderValue::from_static(s);
        assert_eq!(code_name(Some(&value("0"))), "OK");
        assert_eq!(code_name(Some(&value("3"))), "InvalidArgument");
        assert_eq!(code_name(Some(&value("16"))), "Unauthenticated");
        assert_eq!(code_name(Some(&value("99"))), "Unknown");
        assert_eq!(code_name(None), "Unknown");
    }
}
