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
use tower_service::Service;

use super::{
    message_size::{percent_decode, percent_encode},
    Answer, Concern,
};
use crate::{rpc, wire::undecodable};

#[derive(Debug, Clone, Copy)]
pub(crate) struct Undecodable;

impl Concern for Undecodable {
    fn call<S, B, R>(&self, inner: &mut S, request: http::Request<B>) -> Answer<R, S::Error>
    where
        S: Service<http::Request<B>, Response = http::Response<R>> + Send,
        S::Future: Send + 'static,
        R: Default + Send + 'static,
    {
        let method = rpc::of(request.extensions()).map_or("this RPC", |rpc| rpc.method);
        let call = inner.call(request);
        Box::pin(async move {
            let mut response = call.await?;
            let headers = response.headers_mut();
            if headers.get("grpc-status").is_none_or(|s| s != "13") {
                return Ok(response);
            }
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
            Ok(response)
        })
    }
}
