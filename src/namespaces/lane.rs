//! A namespace's Enqueue lane: the single Enqueues waiting for a grouped script call
//! and the calls in flight. The namespace's entry owns it (a namespace with a busy lane
//! is not evicted); the grouping itself is `crate::jobs::coalesce`.

use tokio::sync::oneshot;

use crate::{
    domain::{Enqueued, JobSpec},
    store::StoreError,
};

/// How a waiting Enqueue is answered.
pub(crate) type Reply = oneshot::Sender<Result<Enqueued, StoreError>>;

/// One namespace's queue of single Enqueues waiting for a script call.
#[derive(Default)]
pub(crate) struct Lane {
    pub(crate) waiting: Vec<(JobSpec, Reply)>,
    pub(crate) flushing: usize,
}

impl Lane {
    /// Nothing waits and nothing is in flight.
    pub(crate) fn is_idle(&self) -> bool {
        self.waiting.is_empty() && self.flushing == 0
    }
}
