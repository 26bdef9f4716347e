//! A request whose bytes are not a message is answered INVALID_ARGUMENT saying it
//! could not be decoded. tonic decodes a unary or server-streaming request before
//! any handler runs and refuses one it cannot decode with INTERNAL (gRPC's code for
//! a peer's malformed protobuf), which reads as dueq's fault; no handler sees the
//! request, so the status is rewritten here, on tonic's trailers-only answer
//! (`crate::wire` says which answers are tonic's decoding failures).

use tonic::{
    codegen::http::{self, HeaderValue},
    Code,
};

use super::message_size::{percent_decode, percent_encode};
use crate::{rpc::Rpc, wire::undecodable};

/// Rewrites tonic's INTERNAL for a request it could not decode.
pub(super) fn reword<R>(rpc: Option<&Rpc>, response: &mut http::Response<R>) {
    let headers = response.headers_mut();
    if headers.get("grpc-status").is_none_or(|s| s != "13") {
        return;
    }
    let method = rpc.map_or("this RPC", |rpc| rpc.method);
    let message = headers
        .get("grpc-message")
        .and_then(|v| v.to_str().ok())
        .map(percent_decode)
        .unwrap_or_default();
    if let Some(status) = undecodable(method, Code::Internal, &message) {
        headers.insert("grpc-status", HeaderValue::from_static("3"));
        if let Ok(value) = HeaderValue::from_str(&percent_encode(status.message())) {
            headers.insert("grpc-message", value);
        }
    }
}
