//! A deadline on unary calls (`--request-timeout`): a call that has not been answered
//! by then (a slow Redis) is answered DEADLINE_EXCEEDED and its handler dropped. It
//! runs once the request is in: the request itself has `--body-timeout`
//! (`super::shed`). Long-polls and streams are
//! exempt (their kind in the RPC table): a claim keeps its own deadline handling (`api::deadline`,
//! bounded by `--max-wait`). tonic's `Server::timeout` would cut them too, and answers
//! CANCELLED.

use std::{future::Future, time::Duration};

use futures_util::future::Either;

use tonic::{body::Body, codegen::http, Status};

#[derive(Debug, Clone, Copy)]
pub(super) struct Timeout {
    /// `--request-timeout`.
    pub(super) timeout: Duration,
}

impl Timeout {
    /// The answer of `call`, or DEADLINE_EXCEEDED once the timeout has passed; a
    /// `long` call (a long-poll or a stream) is exempt.
    pub(super) fn within<F>(self, long: bool, call: F) -> Either<F, impl Future<Output = F::Output>>
    where
        F: Future<Output = http::Response<Body>>,
    {
        if long {
            return Either::Left(call);
        }
        let timeout = self.timeout;
        let limited = tokio::time::timeout(timeout, call);
        Either::Right(async move {
            match limited.await {
                Ok(response) => response,
                Err(_) => Status::deadline_exceeded(format!(
                    "the call took longer than the server's --request-timeout of {}; it \
                     may or may not have taken effect (retry a write with the same \
                     job_id, or read it back)",
                    humantime::format_duration(timeout)
                ))
                .into_http(),
            }
        })
    }
}
