//! A global cap on calls in flight, with load shedding: a call beyond the cap is
//! answered RESOURCE_EXHAUSTED at once, naming the flag, instead of queueing without
//! end (tower's ConcurrencyLimit + LoadShed, with a status a gRPC client understands:
//! tower's `Overloaded` error would reach the client as UNKNOWN). Unary calls share
//! `--max-in-flight`; long-polls, which hold their slot up to `--max-wait`, share
//! `--max-long-polls` (with streams, until their response starts), so waiting
//! workers cannot starve producers and a flood of quick calls cannot refuse the
//! workers.

use std::sync::Arc;

use tokio::sync::Semaphore;
use tonic::{codegen::http, Status};
use tower_service::Service;

use super::{Answer, Concern};
use crate::rpc;

#[derive(Debug, Clone)]
pub(crate) struct Shed {
    unary: Arc<Semaphore>,
    long: Arc<Semaphore>,
}

impl Shed {
    /// `max_unary`: `--max-in-flight`; `max_long`: `--max-long-polls`.
    pub(crate) fn new(max_unary: usize, max_long: usize) -> Self {
        Shed {
            unary: Arc::new(Semaphore::new(max_unary.min(Semaphore::MAX_PERMITS))),
            long: Arc::new(Semaphore::new(max_long.min(Semaphore::MAX_PERMITS))),
        }
    }
}

impl Concern for Shed {
    fn call<S, B, R>(&self, inner: &mut S, request: http::Request<B>) -> Answer<R, S::Error>
    where
        S: Service<http::Request<B>, Response = http::Response<R>> + Send,
        S::Future: Send + 'static,
        R: Default + Send + 'static,
    {
        let (semaphore, flag) = if rpc::kind_of(request.extensions()).is_long() {
            (&self.long, "--max-long-polls")
        } else {
            (&self.unary, "--max-in-flight")
        };
        let Ok(permit) = semaphore.clone().try_acquire_owned() else {
            let status = Status::resource_exhausted(format!(
                "server overloaded: {flag} calls are already in flight; retry with backoff"
            ));
            return Box::pin(async move { Ok(status.into_http()) });
        };
        let call = inner.call(request);
        Box::pin(async move {
            let response = call.await;
            // Held until the handler has answered (a stream's body may outlive it;
            // the stream's own limits bound that).
            drop(permit);
            response
        })
    }
}
