//! The gRPC edge: validates requests, calls the use cases, maps errors to statuses.

mod convert;
mod deadline;
mod error;
mod job_convert;
mod jobs;
mod schedules;
pub mod validate;

use std::{sync::Arc, time::Duration};

use tokio_util::sync::CancellationToken;

pub use error::ApiError;

use crate::{jobs::Jobs, schedules::Schedules, wake::Wakers};

/// Limits the API enforces, from the service configuration.
#[derive(Debug, Clone)]
pub struct Limits {
    pub max_payload_size: usize,
    pub max_wait: Duration,
    /// Most jobs per EnqueueBatch.
    pub max_batch: u32,
    /// Longest lease a claim or an Enqueue may ask for.
    pub max_lease: Duration,
}

/// Implements `dueq.v1.QueueService`.
pub struct QueueApi {
    schedules: Arc<Schedules>,
    jobs: Arc<Jobs>,
    wakers: Arc<Wakers>,
    limits: Limits,
    shutdown: CancellationToken,
}

impl QueueApi {
    pub fn new(
        schedules: Arc<Schedules>,
        jobs: Arc<Jobs>,
        wakers: Arc<Wakers>,
        limits: Limits,
        shutdown: CancellationToken,
    ) -> Self {
        Self {
            schedules,
            jobs,
            wakers,
            limits,
            shutdown,
        }
    }
}
