//! The gRPC edge: validates requests, calls the use cases, maps errors to statuses.

pub mod admin;
mod convert;
mod deadline;
mod error;
mod job_convert;
mod jobs;
mod schedules;
pub mod validate;

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use tokio_util::sync::CancellationToken;
use tonic::Status;

pub use error::ApiError;

use crate::{jobs::Jobs, monitor::NamespaceMonitor, schedules::Schedules, wake::Wakers};

/// Limits the API enforces, from the service configuration.
#[derive(Debug, Clone)]
pub struct Limits {
    pub max_payload_size: usize,
    pub max_wait: Duration,
    /// Where operators reach this service, for the Migrate command in errors.
    pub address: String,
    /// Most jobs per EnqueueBatch.
    pub max_batch: u32,
    /// Longest lease a claim or an Enqueue may ask for.
    pub max_lease: Duration,
}

/// A namespace that needs Migrate is logged at most this often.
const MIGRATE_NOTICE_EVERY: Duration = Duration::from_secs(60);

/// Implements `dueq.v1.QueueService`.
pub struct QueueApi {
    schedules: Arc<Schedules>,
    jobs: Arc<Jobs>,
    wakers: Arc<Wakers>,
    limits: Limits,
    shutdown: CancellationToken,
    migrate_notices: Mutex<HashMap<String, Instant>>,
    monitor: Arc<NamespaceMonitor>,
}

impl QueueApi {
    pub fn new(
        schedules: Arc<Schedules>,
        jobs: Arc<Jobs>,
        wakers: Arc<Wakers>,
        limits: Limits,
        shutdown: CancellationToken,
        monitor: Arc<NamespaceMonitor>,
    ) -> Self {
        Self {
            schedules,
            jobs,
            wakers,
            limits,
            shutdown,
            migrate_notices: Mutex::new(HashMap::new()),
            monitor,
        }
    }

    /// The status for an error, with the Migrate command attached to a needs-migrate
    /// refusal, which is also logged (rate-limited per namespace).
    fn status(&self, error: impl Into<ApiError>) -> Status {
        let error = error.into().with_migrate_address(&self.limits.address);
        if let ApiError::NeedsMigrate { namespace, .. }
        | ApiError::JobsNeedMigrate { namespace, .. } = &error
        {
            let mut seen = match self.migrate_notices.lock() {
                Ok(seen) => seen,
                Err(poisoned) => poisoned.into_inner(),
            };
            let due = seen
                .get(namespace)
                .is_none_or(|at| at.elapsed() >= MIGRATE_NOTICE_EVERY);
            if due {
                seen.insert(namespace.clone(), Instant::now());
                tracing::warn!(%namespace, %error, "namespace refused until it is migrated");
            }
        }
        error.into()
    }
}

/// A QueueApi over a Redis that is never contacted (constructing one connects to
/// nothing), for tests of the API layer's own properties.
#[cfg(test)]
pub(crate) fn offline_api() -> QueueApi {
    use crate::{clock::Clock, jobs::Retention, store::Store};
    let store = Arc::new(
        Store::new("redis://127.0.0.1:1", "dueq", 1, Duration::from_millis(100))
            .unwrap_or_else(|e| panic!("store: {e}")),
    );
    let clock = Arc::new(Clock::new());
    let cancel = CancellationToken::new();
    QueueApi::new(
        Arc::new(Schedules::new(store.clone(), clock.clone())),
        Arc::new(Jobs::new(
            store.clone(),
            Retention {
                max_age: Duration::from_secs(60),
                max_count: 10,
                interval: Duration::from_secs(60),
            },
        )),
        Wakers::new(store.clone(), clock, Duration::from_secs(1), cancel.clone()),
        Limits {
            max_payload_size: 1024,
            max_wait: Duration::from_secs(60),
            address: "127.0.0.1:50051".into(),
            max_batch: 10,
            max_lease: Duration::from_secs(60),
        },
        cancel,
        NamespaceMonitor::new(store),
    )
}
