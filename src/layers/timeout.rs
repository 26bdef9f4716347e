//! A deadline on unary calls (`--request-timeout`): a call that has not been answered
//! by then (a slow Redis) is answered DEADLINE_EXCEEDED and its handler dropped. It
//! runs once the request is in: the request itself has `--body-timeout`
//! (`super::shed`). Long-polls and streams are
//! exempt (their kind in the RPC table): a claim keeps its own deadline handling (`api::deadline`,
//! bounded by `--max-wait`). tonic's `Server::timeout` would cut them too, and answers
//! CANCELLED.

use std::time::Duration;

use tonic::{codegen::http, Status};
use tower_service::Service;

use super::{Answer, Concern};
use crate::rpc;

#[derive(Debug, Clone, Copy)]
pub(crate) struct Timeout {
    /// `--request-timeout`.
    pub(crate) timeout: Duration,
}

impl Concern for Timeout {
    fn call<S, B, R>(&self, inner: &mut S, request: http::Request<B>) -> Answer<R, S::Error>
    where
        S: Service<http::Request<B>, Response = http::Response<R>> + Send,
        S::Future: Send + 'static,
        R: Default + Send + 'static,
    {
        let long = rpc::kind_of(request.extensions()).is_long();
        let call = inner.call(request);
        if long {
            return Box::pin(call);
        }
        let timeout = self.timeout;
        Box::pin(async move {
            match tokio::time::timeout(timeout, call).await {
                Ok(response) => response,
                Err(_) => Ok(Status::deadline_exceeded(format!(
                    "the call took longer than the server's --request-timeout of {}; it \
                     may or may not have taken effect (retry a write with the same \
                     job_id, or read it back)",
                    humantime::format_duration(timeout)
                ))
                .into_http()),
            }
        })
    }
}
