//! Job use cases: enqueue, claim under a lease (long-polled), ack / fail / extend,
//! inspection. The API layer validates and translates; the store runs one script per
//! transition; this module fills in defaults, mints ids and tokens, supplies
//! randomness (jitter) and turns script answers into outcomes and errors. Retention
//! pruning is `retention`; grouping of concurrent Enqueues is `coalesce`.

mod bulk;
mod chunks;
mod claim_group;
mod coalesce;
mod console;
mod flow;
mod graph;
mod manage;
mod queues;
mod retention;
mod work;

use std::{
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc, Mutex,
    },
    time::Duration,
};

use tokio::time::Instant;

pub(crate) use bulk::BulkSelection;
pub(crate) use manage::DEFAULT_RELEASE_REASON;
pub(crate) use retention::{Pruner, Retention};
pub(crate) use work::{WorkInput, WorkOptions, WorkOutput};

use crate::{
    context::Context,
    domain::Namespace,
    domain::{
        limits::PageShape, EnqueueOutcome, Enqueued, Extended, Failed, Failure, JobFilter,
        JobRecord, JobSpec, JobState, LeaseCheck, NewJob, ProgressReport, StateCheck,
    },
    effects::{Effects, Ready},
    error::{Error, JobAction, LostLease, Missing},
    giveback,
    longpoll::{long_poll, Attempt},
    namespaces::{Entry, WaitingClaim, Work},
    store::ops::publish_workers::SessionKind,
    store::ops::{
        ack_job::AckJob,
        ack_jobs::{AckJobs, AckResults, Acked},
        cancel_job::CancelJob,
        claim_jobs::{ClaimJobs, ClaimedBatch},
        enqueue_jobs::EnqueueJobs,
        extend_lease::ExtendLease,
        fail_job::{FailJob, FailedJob},
        get_job::GetJob,
        list_jobs::ListJobs,
        release_claim::ReleaseClaim,
        release_jobs::{Release, ReleaseJobs},
        retry_job::RetryJob,
    },
    store::{StoreError, Unanswered},
    sync::lock,
    workers::Opening,
};

/// A lease to complete: (job id, lease token).
pub(crate) type Lease<'a> = (&'a str, &'a str);

/// What a claim handed out, and the outcome of each ack it carried (in order).
#[derive(Debug, Default)]
pub(crate) struct Claimed {
    pub(crate) jobs: Vec<JobRecord>,
    pub(crate) acked: Vec<Result<(), Error>>,
}

/// A page of jobs, the job number to continue after and the jobs examined.
pub(crate) type JobPage = crate::store::ops::list_jobs::ListedJobs;

/// What a claim asks for.
#[derive(Debug, Clone)]
pub(crate) struct ClaimRequest<'a> {
    /// Sorted, without duplicates.
    pub(crate) queues: &'a [String],
    pub(crate) worker: &'a str,
    pub(crate) lease_ms: Option<i64>,
    pub(crate) max_jobs: u32,
    pub(crate) wait: Duration,
    /// Most reply bytes the claimed jobs may take (at least one job is claimed).
    pub(crate) max_bytes: usize,
    /// Jobs to complete first, as AckJob would (issue 15), before any wait.
    pub(crate) acks: &'a [Lease<'a>],
    /// The results some of those acks carry: (index in `acks`, result), non-empty
    /// results only (issue 30).
    pub(crate) results: AckResults<'a>,
}

pub(crate) struct Jobs {
    cx: Context,
    /// Longest lease, which caps a job's default lease.
    max_lease_ms: i64,
    /// Most unfinished jobs a namespace may hold (`--max-jobs-per-namespace`, 0: no
    /// limit); enforced per job inside the enqueue script.
    max_jobs: u64,
}

fn random_unit() -> f64 {
    // The low 62 bits of a v4 UUID are random; take 53 for a double in [0, 1).
    let bits = uuid::Uuid::new_v4().as_u128() & ((1u128 << 53) - 1);
    bits as f64 / (1u64 << 53) as f64
}

fn lease_result<T>(id: &str, check: LeaseCheck<T>) -> Result<T, Error> {
    match check {
        LeaseCheck::Done(value) => Ok(value),
        LeaseCheck::Missing => Err(Error::NotFound(Missing::Job(id.to_owned()))),
        LeaseCheck::Lost(why) => Err(Error::LeaseLost(LostLease::Job {
            id: id.to_owned(),
            why,
        })),
    }
}

fn state_result(id: &str, check: StateCheck, action: JobAction) -> Result<JobRecord, Error> {
    match check {
        StateCheck::Done(record) => Ok(*record),
        StateCheck::Missing => Err(Error::NotFound(Missing::Job(id.to_owned()))),
        StateCheck::WrongState(state) => Err(Error::WrongState {
            id: id.to_owned(),
            state,
            action,
        }),
    }
}

impl Jobs {
    pub(crate) fn new(cx: Context, max_lease: Duration) -> Self {
        Self {
            cx,
            max_lease_ms: i64::try_from(max_lease.as_millis()).unwrap_or(i64::MAX),
            max_jobs: 0,
        }
    }

    /// Refuses creates beyond `max` unfinished jobs per namespace (0: no limit).
    pub(crate) fn with_quota(mut self, max: u64) -> Self {
        self.max_jobs = max;
        self
    }

    fn entry(&self, namespace: &Namespace) -> Arc<Entry> {
        self.cx.namespaces.entry(namespace)
    }

    /// Enqueues jobs in bounded script calls (`chunks`), one after another; results
    /// in input order, a job refused by the quota as its own error. A failure of a
    /// call stops the rest. When it is the first call, nothing was written and the
    /// call's error is the answer; after that, the chunks before it are stored and
    /// answered OK, and every job of the failed call and after it gets the call's
    /// error as its own result (issue 29: a batch at maxmemory stores what fitted and
    /// must say so, or a retry without job ids creates those jobs twice).
    pub(crate) async fn enqueue(
        &self,
        namespace: &Namespace,
        jobs: Vec<NewJob>,
    ) -> Result<Vec<Result<Enqueued, Error>>, Error> {
        let entry = self.entry(namespace);
        let specs: Vec<JobSpec> = jobs
            .into_iter()
            .map(|job| job.into_spec(self.max_lease_ms))
            .collect();
        let mut results = Vec::with_capacity(specs.len());
        for jobs in chunks::chunks(&specs) {
            let op = EnqueueJobs {
                namespace,
                jobs,
                max_jobs: self.max_jobs,
            };
            let stored = match self.cx.store.run(namespace, &op).await {
                Ok(stored) => stored,
                Err(error) if results.is_empty() => return Err(error.into()),
                Err(error) => {
                    let left = specs.len() - results.len();
                    results.extend((0..left).map(|_| Err(Error::from(error.clone()))));
                    break;
                }
            };
            let created = jobs
                .iter()
                .zip(&stored)
                .filter_map(|(spec, result)| match result {
                    Ok(result) => Some((spec.queue.as_str(), result)),
                    Err(_) => None,
                });
            self.cx.apply(&entry, enqueued(created)).await;
            results.extend(stored.into_iter().map(|r| r.map_err(Error::from)));
        }
        Ok(results)
    }

    /// Enqueues one job; concurrent calls for a namespace share script calls (see
    /// `coalesce`).
    pub(crate) async fn enqueue_one(
        &self,
        namespace: &Namespace,
        job: NewJob,
    ) -> Result<Enqueued, Error> {
        let entry = self.entry(namespace);
        let spec = job.into_spec(self.max_lease_ms);
        let queue = spec.queue.clone();
        let result = coalesce::enqueue(&self.cx.store, &entry, spec, self.max_jobs).await?;
        self.cx
            .apply(&entry, enqueued([(queue.as_str(), &result)]))
            .await;
        Ok(result)
    }

    /// Completes the claim's acks, then claims up to `max_jobs` jobs, waiting up to
    /// `wait` for one.
    pub(crate) async fn claim(
        &self,
        namespace: &Namespace,
        claim: &ClaimRequest<'_>,
    ) -> Result<Claimed, Error> {
        let entry = self.entry(namespace);
        let waiter =
            (!claim.wait.is_zero()).then(|| self.cx.wakers.job_waiter(&entry, claim.queues));
        let _waiting = (!claim.wait.is_zero()).then(|| self.cx.metrics.waiting("jobs"));
        let _session = (!claim.wait.is_zero()).then(|| {
            self.cx.sessions.open(
                namespace.as_str(),
                Opening {
                    kind: SessionKind::ClaimJob,
                    worker: claim.worker,
                    queues: claim.queues,
                    capacity: claim.max_jobs,
                },
            )
        });
        // The acks go with the first attempt only; their outcomes are kept for the reply.
        let first = AtomicBool::new(true);
        let acked = Mutex::new(Vec::new());
        let found = long_poll(
            waiter,
            Instant::now() + claim.wait,
            &self.cx.shutdown,
            || self.first_or_later_attempt(&entry, claim, &first, &acked),
        )
        .await?;
        let acked = std::mem::take(&mut *lock(&acked));
        Ok(Claimed {
            jobs: found.unwrap_or_default(),
            acked,
        })
    }

    async fn first_or_later_attempt(
        &self,
        entry: &Arc<Entry>,
        claim: &ClaimRequest<'_>,
        first: &AtomicBool,
        acked: &Mutex<Vec<Result<(), Error>>>,
    ) -> Result<Attempt<Vec<JobRecord>>, Error> {
        let (acks, results) = if first.swap(false, Ordering::AcqRel) {
            (claim.acks, claim.results)
        } else {
            (&[][..], &[][..])
        };
        match self.attempt(entry, claim, acks, results).await {
            Ok((attempt, outcomes)) => {
                if !acks.is_empty() {
                    *lock(acked) = outcomes;
                }
                Ok(attempt)
            }
            Err(Error::Store(StoreError::OutOfMemory { url })) if !acks.is_empty() => {
                // Redis refused the claim before it ran, acks and all: finishing work
                // frees memory, so the acks still go through, on their own; the call
                // answers the refusal (ClaimJobRequest.acks says so).
                self.ack_many(entry.name(), acks, results).await?;
                Err(StoreError::OutOfMemory { url }.into())
            }
            Err(error) => Err(error),
        }
    }

    /// One claim script call: the acks, then up to `claim.max_jobs` jobs.
    pub(crate) async fn attempt(
        &self,
        entry: &Arc<Entry>,
        claim: &ClaimRequest<'_>,
        acks: &[Lease<'_>],
        results: AckResults<'_>,
    ) -> Result<(Attempt<Vec<JobRecord>>, Vec<Result<(), Error>>), Error> {
        let token_base = uuid::Uuid::new_v4().simple().to_string();
        let batch = if self.cx.store.confirms_writes() {
            self.confirmed_attempt(entry, claim, acks, results, &token_base)
                .await?
        } else {
            // Grouped with concurrent attempts on the same queues (issue 35).
            let attempt = |reply| WaitingClaim {
                queues: claim.queues.to_vec(),
                worker: claim.worker.to_owned(),
                token_base,
                lease_ms: claim.lease_ms,
                max_jobs: claim.max_jobs,
                max_bytes: claim.max_bytes,
                acks: acks
                    .iter()
                    .map(|(id, token)| ((*id).to_owned(), (*token).to_owned()))
                    .collect(),
                results: results.iter().map(|(i, r)| (*i, r.to_vec())).collect(),
                reply,
            };
            claim_group::claim(&self.cx.store, entry, attempt).await?
        };
        Ok(self.claimed(entry, claim, acks, batch).await)
    }

    /// One claim call under `--redis-wait-replicas`, alone (a receipt names one
    /// token base): a claim the replicas did not confirm, or whose reply was lost, is
    /// given back.
    async fn confirmed_attempt(
        &self,
        entry: &Entry,
        claim: &ClaimRequest<'_>,
        acks: &[Lease<'_>],
        results: AckResults<'_>,
        token_base: &str,
    ) -> Result<ClaimedBatch, Error> {
        let op = ClaimJobs {
            queues: claim.queues,
            worker: claim.worker,
            lease_ms: claim.lease_ms,
            max_jobs: claim.max_jobs,
            token_base,
            max_bytes: claim.max_bytes,
            acks,
            results,
            receipt: true,
            group: &[],
        };
        // Until when a give-back of this claim can still give anything back.
        let lease_ms = claim.lease_ms.unwrap_or(self.max_lease_ms);
        let lease = Duration::from_millis(u64::try_from(lease_ms).unwrap_or_default());
        let held_until = Instant::now() + lease.min(giveback::RECEIPT);
        let confirmed = match self.cx.store.run_confirmed(entry.name(), &op).await {
            Ok(confirmed) => confirmed,
            Err(Unanswered { error, sent }) => {
                // The reply was lost (a timeout, a dropped connection): the claim may
                // have run, or may still run. One never sent did not.
                if sent && error.is_unavailable() {
                    self.release_unconfirmed(entry, token_base.to_owned(), false, held_until)
                        .await;
                }
                return Err(error.into());
            }
        };
        let batch = confirmed.output;
        if let Some(unconfirmed) = confirmed.unconfirmed {
            self.release_unconfirmed(entry, token_base.to_owned(), batch.register, held_until)
                .await;
            return Err(unconfirmed.into());
        }
        Ok(batch)
    }

    /// Applies one claim call's share (its effects) and makes the attempt's answer.
    async fn claimed(
        &self,
        entry: &Entry,
        claim: &ClaimRequest<'_>,
        acks: &[Lease<'_>],
        batch: ClaimedBatch,
    ) -> (Attempt<Vec<JobRecord>>, Vec<Result<(), Error>>) {
        let mut effects =
            Effects::finished(batch.register).and_ready(Work::Jobs, Ready::At(batch.next_ms));
        effects.expired = claim
            .queues
            .iter()
            .map(String::as_str)
            .zip(batch.expired.iter().copied())
            .collect();
        effects.throttled = claim
            .queues
            .iter()
            .zip(&batch.throttled)
            .flat_map(|(queue, met)| {
                met.iter()
                    .map(move |(reason, count)| (queue.as_str(), reason.as_str(), *count))
            })
            .collect();
        // The claim stamped each job's update time with Redis's now.
        effects.claimed = batch
            .jobs
            .iter()
            .map(|job| {
                let waited_ms = job.update_ms - job.run_at_ms.unwrap_or(job.update_ms);
                (job.queue.as_str(), waited_ms)
            })
            .collect();
        let acked = acked(acks, batch.acked, &mut effects);
        self.cx.apply(entry, effects).await;
        let attempt = Attempt {
            found: (!batch.jobs.is_empty()).then_some(batch.jobs),
            more: batch.more,
        };
        (attempt, acked)
    }

    /// Gives back the jobs of a claim `--redis-wait-replicas` could not confirm, or
    /// whose reply was lost (issue 29 item 11), by its token base: each job still
    /// leased under the claim's token is pending again at the head of its queue, its
    /// attempt not counted, as if never claimed, and a claim with that token base
    /// still on its way claims nothing (release_claim.lua). Not waited for: the
    /// replicas just did not answer. If this fails UNAVAILABLE too (the master is
    /// gone), it is tried again in the background until `held_until` (src/giveback.rs);
    /// given up, the leases run out as any lease does, and the attempt counts. The
    /// acks the claim carried stay applied. `register`: the claim's own reply asked
    /// for it.
    async fn release_unconfirmed(
        &self,
        entry: &Entry,
        token_base: String,
        register: bool,
        held_until: Instant,
    ) {
        let (cx, entry) = (self.cx.clone(), self.entry(entry.name()));
        let namespace = entry.name().clone();
        let give_back = move || {
            let (cx, entry, token_base) = (cx.clone(), entry.clone(), token_base.clone());
            async move {
                let op = ReleaseClaim {
                    token_base: &token_base,
                };
                let released = cx.store.run_unwaited(entry.name(), &op).await?;
                let effects = Effects::finished(register || released.register)
                    .and_ready(Work::Jobs, Ready::Now);
                cx.apply(&entry, effects).await;
                Ok(())
            }
        };
        let gave_back = self
            .cx
            .give_backs
            .give_back(&namespace, "claim", held_until, give_back)
            .await;
        if !gave_back {
            let entry = self.entry(&namespace);
            self.cx.apply(&entry, Effects::finished(register)).await;
        }
    }

    /// Completes up to 100 jobs in one script call, with the results some carry (by
    /// index in `leases`); an outcome per lease, in order.
    pub(crate) async fn ack_many(
        &self,
        namespace: &Namespace,
        leases: &[Lease<'_>],
        results: AckResults<'_>,
    ) -> Result<Vec<Result<(), Error>>, Error> {
        if leases.is_empty() {
            return Ok(Vec::new());
        }
        let batch = self
            .cx
            .store
            .run(namespace, &AckJobs { leases, results })
            .await?;
        let mut effects = Effects::finished(batch.register);
        if batch.woke {
            effects.ready = Some((Work::Jobs, Ready::Now));
        }
        let acked = acked(leases, batch.acked, &mut effects);
        self.cx.apply(&self.entry(namespace), effects).await;
        Ok(acked)
    }

    /// Makes the jobs a broken worker stream held claimable again at once, each
    /// attempt counted as a lease expiry counts it. Returns how many it released.
    pub(crate) async fn abandon(
        &self,
        namespace: &Namespace,
        leases: &[Lease<'_>],
    ) -> Result<i64, Error> {
        if leases.is_empty() {
            return Ok(0);
        }
        let op = ReleaseJobs {
            why: Release::Abandoned,
            leases,
        };
        let released = self.cx.store.run(namespace, &op).await?;
        let effects = Effects::finished(released.register).and_ready(Work::Jobs, Ready::Now);
        self.cx.apply(&self.entry(namespace), effects).await;
        Ok(released.count)
    }

    /// Gives back leases a claim took but its reply cannot carry: each job is pending
    /// again at the head of its queue, its attempt not counted. Returns how many were
    /// still leased and released.
    pub(crate) async fn release(
        &self,
        namespace: &Namespace,
        leases: &[(&str, &str)],
    ) -> Result<i64, Error> {
        if leases.is_empty() {
            return Ok(0);
        }
        let released = self
            .cx
            .store
            .run(
                namespace,
                &ReleaseJobs {
                    why: Release::Unsent,
                    leases,
                },
            )
            .await?;
        // A cancel-requested job among them ends cancelled (issue 30): finished.
        let effects = Effects::finished(released.register).and_ready(Work::Jobs, Ready::Now);
        self.cx.apply(&self.entry(namespace), effects).await;
        Ok(released.count)
    }

    /// Completes a job; a non-empty `result` is kept with it (issue 30).
    pub(crate) async fn ack(
        &self,
        namespace: &Namespace,
        id: &str,
        token: &str,
        result: &[u8],
    ) -> Result<(), Error> {
        let op = AckJob { id, token, result };
        let check = self.cx.store.run(namespace, &op).await?;
        let acked = lease_result(id, check)?;
        let mut effects = Effects::finished(acked.register);
        effects.completed.push(acked.queue);
        // A flow slot it freed may let a parked claim or Work stream run now.
        if acked.woke {
            effects.ready = Some((Work::Jobs, Ready::Now));
        }
        self.cx.apply(&self.entry(namespace), effects).await;
        Ok(())
    }

    pub(crate) async fn fail(
        &self,
        namespace: &Namespace,
        id: &str,
        token: &str,
        failure: &Failure,
    ) -> Result<Failed, Error> {
        let fail = FailJob {
            id,
            token,
            failure,
            random: random_unit(),
        };
        let FailedJob {
            failed,
            register: asked,
            queue,
        } = lease_result(id, self.cx.store.run(namespace, &fail).await?)?;
        // The fail ended a lease, which frees its flow slot (lib/flow.lua
        // `flow.finish`): work parked on the slot may be claimable now, whatever
        // becomes of this job.
        let mut effects = Effects::finished(asked).and_ready(Work::Jobs, Ready::Now);
        match failed.state {
            // A cancel was requested (issue 30): the job ends as a cancelled one,
            // which no failure counter counts.
            JobState::Cancelled => {}
            JobState::Dead => effects.failed = Some((queue, true)),
            _ => effects.failed = Some((queue, false)),
        }
        self.cx.apply(&self.entry(namespace), effects).await;
        Ok(failed)
    }

    /// Extends a lease to `lease_ms` from now (None: leaves its deadline) and stores
    /// a progress report, in one script call; returns the deadline and whether a
    /// cancel was requested.
    pub(crate) async fn extend(
        &self,
        namespace: &Namespace,
        id: &str,
        token: &str,
        lease_ms: Option<i64>,
        progress: Option<&ProgressReport>,
    ) -> Result<Extended, Error> {
        let extend = ExtendLease {
            id,
            token,
            lease_ms,
            progress,
        };
        lease_result(id, self.cx.store.run(namespace, &extend).await?)
    }

    pub(crate) async fn get(&self, namespace: &Namespace, id: &str) -> Result<JobRecord, Error> {
        self.cx
            .store
            .run(namespace, &GetJob { id })
            .await?
            .ok_or_else(|| Error::NotFound(Missing::Job(id.to_owned())))
    }

    /// Opens a watch of job `id` (WatchJob): NOT_FOUND when there is no such job,
    /// RESOURCE_EXHAUSTED when `--max-watches` streams are open.
    pub(crate) async fn watch(
        &self,
        namespace: &Namespace,
        id: &str,
    ) -> Result<crate::watch::Watcher, Error> {
        self.cx.hub.watch(namespace, id).await
    }

    pub(crate) async fn list(
        &self,
        namespace: &Namespace,
        queue: &str,
        after: Option<i64>,
        page: PageShape,
        state: Option<JobState>,
        filter: &JobFilter,
    ) -> Result<JobPage, Error> {
        let list = ListJobs {
            queue,
            after,
            page,
            state,
            filter,
        };
        Ok(self.cx.store.run(namespace, &list).await?)
    }

    pub(crate) async fn cancel(&self, namespace: &Namespace, id: &str) -> Result<JobRecord, Error> {
        let cancelled = self.cx.store.run(namespace, &CancelJob { id }).await?;
        let record = state_result(id, cancelled.check, JobAction::Cancel)?;
        let mut effects = Effects::finished(cancelled.register);
        // A cancelled node of a flow may have readied a dependent of rule run or a
        // skipped one's dependents (issue 34).
        if record.graph.is_some() {
            effects = effects.and_ready(Work::Jobs, Ready::Now);
        }
        self.cx.apply(&self.entry(namespace), effects).await;
        Ok(record)
    }

    pub(crate) async fn retry(&self, namespace: &Namespace, id: &str) -> Result<JobRecord, Error> {
        let retried = self.cx.store.run(namespace, &RetryJob { id }).await?;
        let record = state_result(id, retried.check, JobAction::Retry)?;
        let effects = Effects::finished(retried.register).and_ready(Work::Jobs, Ready::Now);
        self.cx.apply(&self.entry(namespace), effects).await;
        Ok(record)
    }
}

/// What an enqueue did: the jobs it created, by queue (a duplicate, replaced or
/// extended job is not new); the namespace stored something; work became claimable
/// when a created job is pending or delayed.
fn enqueued<'a>(results: impl IntoIterator<Item = (&'a str, &'a Enqueued)>) -> Effects<'a> {
    let mut effects = Effects::default().stored();
    for (queue, result) in results {
        if result.outcome != EnqueueOutcome::Created {
            continue;
        }
        effects.created.push(queue);
        if matches!(result.state, JobState::Pending | JobState::Delayed) {
            effects.ready = Some((Work::Jobs, Ready::Now));
        }
    }
    effects
}

/// The outcome of each ack, in order; the queues of the jobs it completed go to
/// `effects`.
fn acked(
    leases: &[Lease<'_>],
    outcomes: Vec<Acked>,
    effects: &mut Effects<'_>,
) -> Vec<Result<(), Error>> {
    leases
        .iter()
        .zip(outcomes)
        .map(|((id, _), outcome)| {
            let queue = lease_result(id, outcome?)?;
            effects.completed.push(queue);
            Ok(())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::{ClaimRequest, Jobs};
    use crate::testing::offline_context;

    /// As for schedules: a waiting ClaimJob must not carry the Redis call's multi-KB
    /// future through its wait.
    #[tokio::test]
    async fn an_idle_job_long_poll_is_small() {
        let jobs = Jobs::new(offline_context(), Duration::from_secs(60));
        let queues = vec!["q".to_owned()];
        let claim = ClaimRequest {
            queues: &queues,
            worker: "w",
            lease_ms: None,
            max_jobs: 1,
            wait: Duration::from_secs(30),
            max_bytes: 1 << 20,
            acks: &[],
            results: &[],
        };
        let namespace = crate::testing::namespace("ns");
        let wait = jobs.claim(&namespace, &claim);
        let size = std::mem::size_of_val(&wait);
        assert!(size < 2048, "a job long-poll's future is {size} bytes");
    }

    #[test]
    fn random_units_stay_in_range() {
        for _ in 0..1000 {
            let r = super::random_unit();
            assert!((0.0..1.0).contains(&r), "{r}");
        }
    }
}
