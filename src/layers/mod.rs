//! Cross-cutting concerns, each a tower layer around every gRPC service (one concern
//! per layer, in the spirit of linkerd2-proxy): the per-RPC tracing span, the caller's
//! authentication and the wording of an over-sized request here; limits and metrics
//! join them as layers of their own.

mod auth;
mod message_size;
mod trace;

pub(crate) use auth::AuthLayer;
pub(crate) use message_size::MessageSizeLayer;
pub(crate) use trace::TraceLayer;
