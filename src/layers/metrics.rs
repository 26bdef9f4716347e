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
    pin::Pin,
    sync::Arc,
    task::{ready, Context, Poll},
    time::Instant,
};

use http_body::{Frame, SizeHint};
use prometheus_client::metrics::{counter::Counter, histogram::Histogram};
use tonic::{body::Body, codegen::http};

use crate::{
    metrics::{HandledLabels, Metrics, RpcLabels, GRPC_CODES},
    rpc::Catalogue,
};

/// The series of every RPC of the table, looked up once when the server starts
/// (which also creates them at zero, as go-grpc-prometheus does): a call counts
/// itself through handles, with no label hashing or family lock per call.
#[derive(Debug)]
pub(super) struct Meters {
    /// By the RPC's index in the table (`rpc::Line::index`).
    by_rpc: Vec<Arc<Meter>>,
}

/// One RPC's series.
#[derive(Debug)]
struct Meter {
    started: Counter,
    /// Long-polls and streams are not timed.
    seconds: Option<Histogram>,
    /// By status code, in the order of [`GRPC_CODES`].
    handled: [Counter; GRPC_CODES.len()],
}

impl Meters {
    pub(super) fn new(metrics: &Metrics, catalogue: &Catalogue) -> Self {
        let by_rpc = catalogue
            .lines()
            .iter()
            .map(|rpc| {
                let labels = RpcLabels {
                    grpc_service: rpc.service,
                    grpc_method: rpc.method,
                };
                Arc::new(Meter {
                    started: metrics.rpc_started.get_or_create(&labels).clone(),
                    seconds: (!rpc.kind.is_long())
                        .then(|| metrics.rpc_seconds.get_or_create(&labels).clone()),
                    handled: GRPC_CODES.map(|grpc_code| {
                        let labels = HandledLabels {
                            grpc_service: rpc.service,
                            grpc_method: rpc.method,
                            grpc_code,
                        };
                        metrics.rpc_handled.get_or_create(&labels).clone()
                    }),
                })
            })
            .collect();
        Meters { by_rpc }
    }

    /// Counts the call to the RPC at `index` as started; its record until its
    /// status is known.
    pub(super) fn start(&self, index: usize, started: Instant) -> Option<Record> {
        let meter = self.by_rpc.get(index)?;
        meter.started.inc();
        Some(Record {
            meter: meter.clone(),
            started,
        })
    }
}

/// One call's series and start, until its status is known.
#[derive(Debug)]
pub(super) struct Record {
    meter: Arc<Meter>,
    started: Instant,
}

impl Record {
    fn finish(self, code: usize) {
        if let Some(seconds) = &self.meter.seconds {
            seconds.observe(self.started.elapsed().as_secs_f64());
        }
        if let Some(handled) = self.meter.handled.get(code) {
            handled.inc();
        }
    }
}

/// `Canceled`, in [`GRPC_CODES`].
const CANCELED: usize = 1;
/// `Unknown`, in [`GRPC_CODES`].
const UNKNOWN: usize = 2;

/// The code of a `grpc-status` value, as an index of [`GRPC_CODES`] (the names
/// gRPC's Go code gives them).
fn code_of(status: Option<&http::HeaderValue>) -> usize {
    status
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok())
        .filter(|&n| n < GRPC_CODES.len())
        .unwrap_or(UNKNOWN)
}

/// Finishes the call's record if its answer carries its status in the headers (a
/// trailers-only answer: an error status); otherwise the response body reports it
/// when its trailers pass.
pub(super) fn watch(
    record: Option<Record>,
    response: http::Response<Body>,
) -> http::Response<Body> {
    let Some(record) = record else {
        return response;
    };
    if let Some(status) = response.headers().get("grpc-status") {
        record.finish(code_of(Some(status)));
        return response;
    }
    response.map(|inner| {
        Body::new(MeteredBody {
            inner,
            record: Some(record),
        })
    })
}

pin_project_lite::pin_project! {
    /// A response body that reports its call's status when its trailers pass.
    struct MeteredBody<B> {
        #[pin]
        inner: B,
        record: Option<Record>,
    }

    impl<B> PinnedDrop for MeteredBody<B> {
        fn drop(this: Pin<&mut Self>) {
            if let Some(record) = this.project().record.take() {
                record.finish(CANCELED);
            }
        }
    }
}

impl<B: http_body::Body> http_body::Body for MeteredBody<B> {
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
                .map(|trailers| code_of(trailers.get("grpc-status"))),
            // The body failed, or ended without a status.
            Some(Err(_)) | None => Some(UNKNOWN),
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
        fn name(status: Option<&http::HeaderValue>) -> &'static str {
            GRPC_CODES[code_of(status)]
        }
        assert_eq!(name(Some(&value("0"))), "OK");
        assert_eq!(name(Some(&value("3"))), "InvalidArgument");
        assert_eq!(name(Some(&value("16"))), "Unauthenticated");
        assert_eq!(name(Some(&value("99"))), "Unknown");
        assert_eq!(name(None), "Unknown");
        assert_eq!(GRPC_CODES[CANCELED], "Canceled");
        assert_eq!(GRPC_CODES[UNKNOWN], "Unknown");
    }
}
