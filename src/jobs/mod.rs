//! Job use cases: enqueue, claim under a lease, ack / fail / extend, inspection,
//! and retention pruning. The API layer validates and translates; the store runs one
//! script per transition; this module mints tokens, supplies randomness (jitter) and
//! turns script answers into outcomes and errors.

mod coalesce;
pub mod model;

use std::{
    collections::HashSet,
    sync::{Arc, Mutex},
    time::Duration,
};

use tokio_util::sync::CancellationToken;

use coalesce::EnqueueCoalescer;

use crate::store::{
    jobs::{ClaimArgs, ClaimedBatch},
    Store, StoreError,
};
use model::{Enqueued, Failed, Failure, JobRecord, JobSpec, JobState, LeaseCheck, StateCheck};

/// Most expired leases re-handed and delayed jobs promoted per queue per claim call.
const CLAIM_BUDGET: u32 = 64;
/// Finished jobs deleted per prune script call.
const PRUNE_BATCH: u32 = 500;
/// Prune calls per namespace per tick (so one namespace cannot starve the others).
const PRUNE_ROUNDS: usize = 20;

#[derive(Debug, thiserror::Error)]
pub enum JobError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("job {0:?} not found")]
    NotFound(String),
    /// The caller's lease is not (or no longer) the job's: its token is stale, or
    /// its lease expired. Nothing was changed.
    #[error(
        "job {id:?}: {reason}; the job was or will be handed to another worker, drop this attempt"
    )]
    LeaseLost { id: String, reason: String },
    /// The job is not in a state this operation applies to.
    #[error("job {id:?} is {state}; {action} needs {needed}")]
    WrongState {
        id: String,
        state: &'static str,
        action: &'static str,
        needed: &'static str,
    },
}

/// Retention of finished jobs.
#[derive(Debug, Clone)]
pub struct Retention {
    pub max_age: Duration,
    pub max_count: u64,
    pub interval: Duration,
}

pub struct Jobs {
    store: Arc<Store>,
    coalescer: Arc<EnqueueCoalescer>,
    retention: Retention,
    /// Namespaces this instance has served job calls for: the pruner visits them.
    namespaces: Mutex<HashSet<String>>,
}

fn random_unit() -> f64 {
    // The low 62 bits of a v4 UUID are random; take 53 for a double in [0, 1).
    let bits = uuid::Uuid::new_v4().as_u128() & ((1u128 << 53) - 1);
    bits as f64 / (1u64 << 53) as f64
}

fn lease_result<T>(id: &str, check: LeaseCheck<T>) -> Result<T, JobError> {
    match check {
        LeaseCheck::Done(value) => Ok(value),
        LeaseCheck::Missing => Err(JobError::NotFound(id.to_owned())),
        LeaseCheck::Expired => Err(JobError::LeaseLost {
            id: id.to_owned(),
            reason: "the lease expired".into(),
        }),
        LeaseCheck::Stale(state) => Err(JobError::LeaseLost {
            id: id.to_owned(),
            reason: format!(
                "the lease token is not the current one (the job is {})",
                state.as_str()
            ),
        }),
    }
}

fn state_result(
    id: &str,
    check: StateCheck,
    action: &'static str,
    needed: &'static str,
) -> Result<JobRecord, JobError> {
    match check {
        StateCheck::Done(record) => Ok(*record),
        StateCheck::Missing => Err(JobError::NotFound(id.to_owned())),
        StateCheck::WrongState(state) => Err(JobError::WrongState {
            id: id.to_owned(),
            state: state.as_str(),
            action,
            needed,
        }),
    }
}

impl Jobs {
    pub fn new(store: Arc<Store>, retention: Retention) -> Self {
        Self {
            coalescer: EnqueueCoalescer::new(store.clone()),
            store,
            retention,
            namespaces: Mutex::new(HashSet::new()),
        }
    }

    fn touch(&self, namespace: &str) {
        let mut set = match self.namespaces.lock() {
            Ok(set) => set,
            Err(poisoned) => poisoned.into_inner(),
        };
        if !set.contains(namespace) {
            set.insert(namespace.to_owned());
        }
    }

    /// Enqueues validated jobs in one script call; results in input order.
    pub async fn enqueue(
        &self,
        namespace: &str,
        specs: &[JobSpec],
    ) -> Result<Vec<Enqueued>, JobError> {
        self.touch(namespace);
        Ok(self.store.enqueue_jobs(namespace, specs).await?)
    }

    /// Enqueues one validated job; concurrent calls for a namespace share script
    /// calls (see `coalesce`).
    pub async fn enqueue_one(&self, namespace: &str, spec: JobSpec) -> Result<Enqueued, JobError> {
        self.touch(namespace);
        Ok(self.coalescer.enqueue(namespace, spec).await?)
    }

    /// One claim attempt, without waiting.
    pub async fn claim_once(
        &self,
        namespace: &str,
        queues: &[String],
        worker: &str,
        lease_ms: Option<i64>,
        max_jobs: u32,
    ) -> Result<ClaimedBatch, JobError> {
        self.touch(namespace);
        let token_base = uuid::Uuid::new_v4().simple().to_string();
        Ok(self
            .store
            .claim_jobs(
                namespace,
                &ClaimArgs {
                    queues,
                    worker,
                    lease_ms,
                    max_jobs,
                    token_base: &token_base,
                    budget: CLAIM_BUDGET,
                },
            )
            .await?)
    }

    pub async fn ack(&self, namespace: &str, id: &str, token: &str) -> Result<(), JobError> {
        lease_result(id, self.store.ack_job(namespace, id, token).await?).map(|_| ())
    }

    pub async fn fail(
        &self,
        namespace: &str,
        id: &str,
        token: &str,
        failure: &Failure,
    ) -> Result<Failed, JobError> {
        let check = self
            .store
            .fail_job(namespace, id, token, failure, random_unit())
            .await?;
        lease_result(id, check)
    }

    /// Returns the new lease deadline.
    pub async fn extend(
        &self,
        namespace: &str,
        id: &str,
        token: &str,
        lease_ms: i64,
    ) -> Result<i64, JobError> {
        lease_result(
            id,
            self.store
                .extend_lease(namespace, id, token, lease_ms)
                .await?,
        )
    }

    pub async fn get(&self, namespace: &str, id: &str) -> Result<JobRecord, JobError> {
        self.store
            .get_job(namespace, id)
            .await?
            .ok_or_else(|| JobError::NotFound(id.to_owned()))
    }

    pub async fn list(
        &self,
        namespace: &str,
        queue: &str,
        after: Option<i64>,
        page_size: usize,
        state: Option<JobState>,
    ) -> Result<(Vec<JobRecord>, Option<i64>), JobError> {
        Ok(self
            .store
            .list_jobs(namespace, queue, after, page_size, state)
            .await?)
    }

    pub async fn cancel(&self, namespace: &str, id: &str) -> Result<JobRecord, JobError> {
        let check = self.store.cancel_job(namespace, id).await?;
        state_result(id, check, "CancelJob", "pending or delayed")
    }

    pub async fn retry(&self, namespace: &str, id: &str) -> Result<JobRecord, JobError> {
        let check = self.store.retry_job(namespace, id).await?;
        state_result(id, check, "RetryJob", "dead")
    }

    /// Prunes one namespace's finished jobs in bounded batches; returns how many.
    pub async fn prune(&self, namespace: &str) -> Result<u64, JobError> {
        let age_ms = i64::try_from(self.retention.max_age.as_millis()).unwrap_or(i64::MAX);
        let mut total = 0;
        for _ in 0..PRUNE_ROUNDS {
            let (deleted, more) = self
                .store
                .prune_jobs(namespace, age_ms, self.retention.max_count, PRUNE_BATCH)
                .await?;
            total += deleted;
            if !more {
                break;
            }
        }
        Ok(total)
    }

    /// The retention task: every interval, prunes each namespace this instance has
    /// served, off the request path. Every replica runs one; the script is atomic,
    /// so two replicas pruning one namespace only share the work.
    pub async fn run_pruner(self: Arc<Self>, shutdown: CancellationToken) {
        loop {
            tokio::select! {
                _ = tokio::time::sleep(self.retention.interval) => {}
                _ = shutdown.cancelled() => return,
            }
            let namespaces: Vec<String> = match self.namespaces.lock() {
                Ok(set) => set.iter().cloned().collect(),
                Err(poisoned) => poisoned.into_inner().iter().cloned().collect(),
            };
            for namespace in namespaces {
                match self.prune(&namespace).await {
                    Ok(0) => {}
                    Ok(deleted) => tracing::debug!(%namespace, deleted, "pruned finished jobs"),
                    Err(error) => tracing::debug!(%namespace, %error, "job pruning failed"),
                }
            }
        }
    }
}
