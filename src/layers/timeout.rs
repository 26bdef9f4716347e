//! A deadline on unary calls (`--request-timeout`): a call that has not been answered
//! by then (a slow Redis, a client that never finishes sending its request body) is
//! answered DEADLINE_EXCEEDED and its handler dropped. Long-polls and streams are
//! exempt (their kind in the RPC table): a claim keeps its own deadline handling (`api::deadline`,
//! bounded by `--max-wait`). tonic's `Server::timeout` would cut them too, and answers
//! CANCELLED.

use std::{
    future::Future,
    pin::Pin,
    task::{Context, Poll},
    time::Duration,
};

use tonic::{codegen::http, Status};
use tower_layer::Layer;
use tower_service::Service;

use crate::rpc;

#[derive(Debug, Clone, Copy)]
pub(crate) struct TimeoutLayer {
    /// `--request-timeout`.
    pub(crate) timeout: Duration,
}

impl<S> Layer<S> for TimeoutLayer {
    type Service = Timeout<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Timeout {
            inner,
            timeout: self.timeout,
        }
    }
}

#[derive(Debug, Clone)]
pub(crate) struct Timeout<S> {
    inner: S,
    timeout: Duration,
}

impl<S, B, R> Service<http::Request<B>> for Timeout<S>
where
    S: Service<http::Request<B>, Response = http::Response<R>> + Send,
    S::Future: Send + 'static,
    R: Default + Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<S::Response, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        let long = rpc::kind_of(request.extensions()).is_long();
        let call = self.inner.call(request);
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
