//! A namespace's lanes: the single Enqueues (`Lane`) and the ClaimJob attempts
//! (`ClaimLane`, issue 35) waiting for a grouped script call, and the calls in flight.
//! The namespace's entry owns them (a namespace with a busy lane is not evicted); the
//! grouping itself is `crate::jobs::coalesce` and `crate::jobs::claim_group`.

use tokio::sync::oneshot;

use crate::{
    domain::{Enqueued, JobSpec},
    store::{ops::claim_jobs::ClaimedBatch, StoreError},
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

/// The script calls of a lane in flight, which a flush slot counts.
pub(crate) trait InFlight {
    fn flushing(&mut self) -> &mut usize;
}

impl InFlight for Lane {
    fn flushing(&mut self) -> &mut usize {
        &mut self.flushing
    }
}

/// One ClaimJob attempt waiting for a grouped claim call: what the claim script
/// takes for one taker (lua/claim_jobs.lua), owned, and how it is answered (its own
/// share of the call's reply).
pub(crate) struct WaitingClaim {
    /// Sorted, without duplicates: only attempts on the same queues are grouped.
    pub(crate) queues: Vec<String>,
    pub(crate) worker: String,
    pub(crate) token_base: String,
    pub(crate) lease_ms: Option<i64>,
    pub(crate) max_jobs: u32,
    pub(crate) max_bytes: usize,
    /// (job id, lease token) of the jobs it completes first.
    pub(crate) acks: Vec<(String, String)>,
    /// (index in `acks`, result).
    pub(crate) results: Vec<(usize, Vec<u8>)>,
    pub(crate) reply: oneshot::Sender<Result<ClaimedBatch, StoreError>>,
}

/// One namespace's ClaimJob attempts waiting for a claim call.
#[derive(Default)]
pub(crate) struct ClaimLane {
    pub(crate) waiting: Vec<WaitingClaim>,
    pub(crate) flushing: usize,
}

impl ClaimLane {
    /// Nothing waits and nothing is in flight.
    pub(crate) fn is_idle(&self) -> bool {
        self.waiting.is_empty() && self.flushing == 0
    }
}

impl InFlight for ClaimLane {
    fn flushing(&mut self) -> &mut usize {
        &mut self.flushing
    }
}
