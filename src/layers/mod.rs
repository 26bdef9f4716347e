//! Cross-cutting concerns, each a tower layer around every gRPC service (one concern
//! per layer, in the spirit of linkerd2-proxy): the classification of a request by
//! the RPC table (outermost: every other layer reads what it found), the per-RPC
//! tracing span, the caller's
//! authentication, the wording of an over-sized request, load shedding beyond the
//! in-flight caps, the unary timeout, and the RPC metrics here.

mod auth;
mod classify;
mod message_size;
mod metrics;
mod shed;
mod timeout;
mod trace;

pub(crate) use auth::AuthLayer;
pub(crate) use classify::ClassifyLayer;
pub(crate) use message_size::MessageSizeLayer;
pub(crate) use metrics::MetricsLayer;
pub(crate) use shed::ShedLayer;
pub(crate) use timeout::TimeoutLayer;
pub(crate) use trace::TraceLayer;
