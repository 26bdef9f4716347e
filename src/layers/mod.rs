//! Cross-cutting concerns, each a tower layer around every gRPC service (one concern
//! per layer, in the spirit of linkerd2-proxy): the per-RPC tracing span here; auth,
//! limits and metrics join them as layers of their own.

mod trace;

pub(crate) use trace::TraceLayer;
