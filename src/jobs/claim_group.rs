//! Group commit for ClaimJob attempts (issue 35).
//!
//! A claim script call for one job pays a fixed cost far larger than its job's own
//! work: the call, its arguments, the layout guard, Redis's clock, each queue's
//! pause flag, policy and lease and delayed heads, and the writes of each index once
//! per call (docs/performance.md, "Where a job's Redis time goes": about 296,000
//! Redis instructions per call on top of each job's own). Concurrent
//! ClaimJob attempts on the same queues of one namespace therefore queue in a lane,
//! as single Enqueues do (`coalesce`): at most `MAX_IN_FLIGHT` claim calls per
//! namespace are outstanding, and each serves, in arrival order, every attempt that
//! arrived while the previous one ran (up to `MAX_TAKERS`). A lone attempt never
//! waits for company.
//!
//! Grouping changes no outcome: lua/claim_jobs.lua applies every taker's acks first,
//! then serves the takers one after another, each up to its own `max_jobs` and reply
//! byte budget (its first job always), every job leased with the taker's own worker
//! id, lease and a token of the taker's own random base, as separate calls in that
//! order would. Each taker gets its own share of the reply; what the call reports for
//! the namespace as a whole (expired leases, flow limits met, the next wake-up, the
//! prune registration) goes to the first taker only, so it is counted once.
//!
//! Under `--redis-wait-replicas` claims are not grouped: a claim's receipt, by which
//! an unconfirmed claim is given back, names one token base.
//!
//! An attempt whose caller gave up while it waited in the lane is dropped before the
//! call is sent. One whose caller gives up while its call is in flight loses its jobs'
//! leases as a lost reply does (they run out and count the attempt). A leader that
//! gives up mid-flight still answers the rest of its group (`coalesce::Detached`). A
//! group that fails UNAVAILABLE answers every attempt waiting in the lane with that
//! error, as the Enqueue lane does (issue 29 item 12).

use std::sync::Arc;

use tokio::sync::oneshot;
use tracing::Instrument;

use super::coalesce::{answered, join, Detached, FlushSlot};
use crate::{
    namespaces::{ClaimLane, Entry, WaitingClaim},
    store::{
        ops::claim_jobs::{ClaimJobs, ClaimedBatch, Taker},
        Store, StoreError,
    },
    sync::lock,
};

/// How a waiting attempt is answered: its share of the call, or the call's error.
pub(crate) type Answer = oneshot::Sender<Result<ClaimedBatch, StoreError>>;

/// Claim calls per namespace in flight at once (as `coalesce`).
const MAX_IN_FLIGHT: usize = 2;
/// Most attempts served by one call, so one call stays well under a millisecond of
/// Redis time for one-job attempts.
const MAX_TAKERS: usize = 32;
/// Most jobs all the takers of one call may ask for together (beyond the first
/// taker's own): a call's reply stays bounded.
const MAX_JOBS_PER_CALL: u64 = 256;

/// Runs one claim attempt, grouped with concurrent attempts on the same queues of the
/// entry's namespace; returns the attempt's own share of the call. `attempt` makes
/// the waiting attempt around the reply channel it is answered on.
pub(crate) async fn claim(
    store: &Arc<Store>,
    entry: &Arc<Entry>,
    attempt: impl FnOnce(Answer) -> WaitingClaim,
) -> Result<ClaimedBatch, StoreError> {
    let (reply, answer) = oneshot::channel();
    if let Some(slot) = join(&entry.claims, MAX_IN_FLIGHT, |lane| {
        lane.waiting.push(attempt(reply));
    }) {
        Detached::new(lead_flush(store.clone(), entry.clone(), slot)).await;
    }
    answered(answer, "claim").await
}

/// The leader's flush: one group, then the lane goes to a task of its own if more
/// attempts wait.
async fn lead_flush(store: Arc<Store>, entry: Arc<Entry>, mut slot: FlushSlot<ClaimLane>) {
    let Some(group) = take_group(&entry, &mut slot) else {
        return;
    };
    send_group(&store, &entry, group).await;
    let more = {
        let mut lane = lock(&entry.claims);
        if lane.waiting.is_empty() {
            slot.release(&mut lane);
        }
        !slot.released
    };
    if more {
        tokio::spawn(flush(store, entry, slot));
    }
}

/// Sends the lane's waiting attempts in groups until none are left.
async fn flush(store: Arc<Store>, entry: Arc<Entry>, mut slot: FlushSlot<ClaimLane>) {
    while let Some(group) = take_group(&entry, &mut slot) {
        send_group(&store, &entry, group).await;
    }
}

/// The next group: the first waiting attempt and, in arrival order, the others on
/// the same queues, within `MAX_TAKERS` and `MAX_JOBS_PER_CALL`. `None` (the slot
/// given back) when none wait.
fn take_group(entry: &Entry, slot: &mut FlushSlot<ClaimLane>) -> Option<Vec<WaitingClaim>> {
    let mut lane = lock(&entry.claims);
    if lane.waiting.is_empty() {
        slot.release(&mut lane);
        return None;
    }
    let first = lane.waiting.remove(0);
    let mut jobs = 0u64;
    let mut group = vec![first];
    let mut rest = Vec::new();
    for attempt in lane.waiting.drain(..) {
        let fits = group.len() < MAX_TAKERS
            && attempt.queues == group[0].queues
            && jobs + u64::from(attempt.max_jobs) <= MAX_JOBS_PER_CALL;
        if fits {
            jobs += u64::from(attempt.max_jobs);
            group.push(attempt);
        } else {
            rest.push(attempt);
        }
    }
    lane.waiting = rest;
    Some(group)
}

/// Sends one group in one claim call and answers each attempt with its share.
async fn send_group(store: &Store, entry: &Entry, group: Vec<WaitingClaim>) {
    // An attempt whose caller gave up while it waited is not served: its jobs would
    // be leased to nobody.
    let group: Vec<WaitingClaim> = group.into_iter().filter(|a| !a.reply.is_closed()).collect();
    let Some(first) = group.first() else {
        return;
    };
    let takers: Vec<Taker<'_>> = group[1..]
        .iter()
        .map(|a| Taker {
            token_base: &a.token_base,
            lease_ms: a.lease_ms,
            max_jobs: a.max_jobs,
            worker: &a.worker,
            max_bytes: a.max_bytes,
        })
        .collect();
    let acks: Vec<(&str, &str)> = group
        .iter()
        .flat_map(|a| {
            a.acks
                .iter()
                .map(|(id, token)| (id.as_str(), token.as_str()))
        })
        .collect();
    let mut results = Vec::new();
    let mut offset = 0;
    for attempt in &group {
        results.extend(
            attempt
                .results
                .iter()
                .map(|(i, r)| (offset + i, r.as_slice())),
        );
        offset += attempt.acks.len();
    }
    let op = ClaimJobs {
        queues: &first.queues,
        worker: &first.worker,
        lease_ms: first.lease_ms,
        max_jobs: first.max_jobs,
        token_base: &first.token_base,
        max_bytes: first.max_bytes,
        acks: &acks,
        results: &results,
        receipt: false,
        group: &takers,
    };
    let namespace = entry.name();
    let span = tracing::debug_span!("claim_group", %namespace, takers = group.len());
    let result = store.run(namespace, &op).instrument(span).await;
    match result {
        Ok(batch) => answer(group, batch),
        Err(error) => {
            if error.is_unavailable() {
                let waiting = std::mem::take(&mut lock(&entry.claims).waiting);
                for attempt in waiting {
                    let _ = attempt.reply.send(Err(error.clone()));
                }
            }
            for attempt in group {
                let _ = attempt.reply.send(Err(error.clone()));
            }
        }
    }
}

/// Splits a grouped call's reply into each taker's share and answers each: the
/// first taker's jobs and acks come first in the reply, then each further taker's.
fn answer(group: Vec<WaitingClaim>, batch: ClaimedBatch) {
    let mut shares = split(&group, batch).into_iter();
    for attempt in group {
        if let Some(share) = shares.next() {
            let _ = attempt.reply.send(Ok(share));
        }
    }
}

/// Each taker's share of `batch`, in the group's order. The first carries what the
/// call reports for the namespace (expired leases, flow limits, the next wake-up, the
/// prune registration); the others carry their jobs, their acks and `more`.
fn split(group: &[WaitingClaim], batch: ClaimedBatch) -> Vec<ClaimedBatch> {
    let ClaimedBatch {
        next_ms,
        more,
        register,
        jobs,
        expired,
        acked,
        shares,
        throttled,
    } = batch;
    let first_jobs = jobs.len().saturating_sub(shares.iter().sum::<usize>());
    let (queues, mut expired, mut throttled) = (expired.len(), Some(expired), Some(throttled));
    let mut jobs = jobs.into_iter();
    let mut acked = acked.into_iter();
    let mut out = Vec::with_capacity(group.len());
    for (i, attempt) in group.iter().enumerate() {
        let n = if i == 0 {
            first_jobs
        } else {
            shares.get(i - 1).copied().unwrap_or(0)
        };
        let share = ClaimedBatch {
            next_ms: if i == 0 { next_ms } else { None },
            more,
            register: i == 0 && register,
            jobs: jobs.by_ref().take(n).collect(),
            expired: expired.take().unwrap_or_else(|| vec![0; queues]),
            acked: acked.by_ref().take(attempt.acks.len()).collect(),
            shares: Vec::new(),
            throttled: throttled.take().unwrap_or_else(|| vec![Vec::new(); queues]),
        };
        out.push(share);
    }
    out
}

#[cfg(test)]
mod tests {
    use tokio_util::sync::CancellationToken;

    use super::*;
    use crate::{
        namespaces::Namespaces,
        store::ops::enqueue_jobs::EnqueueJobs,
        testing::{namespace, TestRedis},
    };

    fn attempt(
        worker: &str,
        queues: &[&str],
    ) -> (
        WaitingClaim,
        oneshot::Receiver<Result<ClaimedBatch, StoreError>>,
    ) {
        let (reply, answer) = oneshot::channel();
        let waiting = WaitingClaim {
            queues: queues.iter().map(|q| (*q).to_owned()).collect(),
            worker: worker.to_owned(),
            token_base: format!("{worker}-base"),
            lease_ms: None,
            max_jobs: 1,
            max_bytes: 1 << 20,
            acks: Vec::new(),
            results: Vec::new(),
            reply,
        };
        (waiting, answer)
    }

    async fn enqueue(store: &Store, queue: &str, n: usize) {
        let jobs: Vec<_> = (0..n)
            .map(|i| crate::domain::JobSpec {
                id: format!("{queue}-{i}"),
                queue: queue.to_owned(),
                name: "n".into(),
                payload: b"{}".to_vec(),
                headers: Default::default(),
                priority: 0,
                run_at: crate::domain::RunAt::Now,
                max_attempts: 3,
                backoff: Default::default(),
                lease_ms: 30_000,
                dedup: None,
                retention: Default::default(),
                flow: Default::default(),
            })
            .collect();
        let stored = store
            .run(
                "ns",
                &EnqueueJobs {
                    namespace: "ns",
                    jobs: &jobs,
                    max_jobs: 0,
                },
            )
            .await
            .unwrap_or_else(|e| panic!("enqueue: {e}"));
        assert!(stored.iter().all(Result::is_ok), "{stored:?}");
    }

    /// Pins issue 35: attempts on the same queues that wait while none is in flight
    /// go out as one claim call, each answered with its own job, leased to its own
    /// worker under its own token base; an attempt on other queues waits for a call
    /// of its own.
    #[tokio::test]
    async fn attempts_waiting_together_share_one_claim_call() {
        let redis = TestRedis::start().await;
        let store = Arc::new(redis.store());
        enqueue(&store, "q", 3).await;
        enqueue(&store, "r", 1).await;
        let entry = Namespaces::new(CancellationToken::new()).entry(&namespace("ns"));
        let (a, answer_a) = attempt("a", &["q"]);
        let (other, answer_other) = attempt("o", &["r"]);
        let (b, answer_b) = attempt("b", &["q"]);
        lock(&entry.claims).waiting.extend([a, other, b]);
        redis.reset_stats().await;
        let (leader, _) = attempt("c", &["q"]);
        let mine = claim(&store, &entry, |reply| WaitingClaim { reply, ..leader }).await;
        let answers = [answer_a.await, answer_b.await, answer_other.await];
        let mut seen = Vec::new();
        for (worker, answer) in ["a", "b", "o"].into_iter().zip(answers) {
            let batch = match answer {
                Ok(Ok(batch)) => batch,
                other => panic!("{worker}: {other:?}"),
            };
            assert_eq!(batch.jobs.len(), 1, "{worker}");
            let job = &batch.jobs[0];
            assert_eq!(job.worker, worker);
            assert_eq!(job.lease_token, format!("{worker}-base.1"));
            seen.push(job.id.clone());
        }
        // The leader came last in its group: the third job of "q".
        let mine = mine.unwrap_or_else(|e| panic!("leader: {e}"));
        assert_eq!(mine.jobs.len(), 1);
        assert_eq!(mine.jobs[0].lease_token, "c-base.1");
        assert_eq!(mine.expired.len(), 1);
        seen.push(mine.jobs[0].id.clone());
        seen.sort_unstable();
        assert_eq!(seen, ["q-0", "q-1", "q-2", "r-0"]);
        // One call for a, b and the leader on "q", one for "o" on "r".
        assert_eq!(redis.calls("fcall").await, 2);
        assert!(
            lock(&entry.claims).is_idle(),
            "the lane gave its slots back"
        );
    }

    /// An attempt whose caller gave up while it waited is not served: no job is
    /// leased to nobody.
    #[tokio::test]
    async fn an_attempt_given_up_while_waiting_takes_no_job() {
        let redis = TestRedis::start().await;
        let store = Arc::new(redis.store());
        enqueue(&store, "q", 2).await;
        let entry = Namespaces::new(CancellationToken::new()).entry(&namespace("ns"));
        let (gone, answer_gone) = attempt("gone", &["q"]);
        drop(answer_gone);
        lock(&entry.claims).waiting.push(gone);
        let (leader, _) = attempt("c", &["q"]);
        let mine = claim(&store, &entry, |reply| WaitingClaim { reply, ..leader })
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(mine.jobs.len(), 1);
        assert_eq!(mine.jobs[0].worker, "c");
        let (next, _) = attempt("d", &["q"]);
        let next = claim(&store, &entry, |reply| WaitingClaim { reply, ..next })
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            next.jobs.len(),
            1,
            "the job the gone caller would have taken is left"
        );
    }

    /// A leader whose caller gives up while its group is in flight still answers the
    /// attempts grouped with it.
    #[tokio::test]
    async fn a_leader_that_gives_up_mid_flight_still_answers_its_group() {
        let redis = TestRedis::start().await;
        let store = Arc::new(redis.store());
        enqueue(&store, "q", 2).await;
        let entry = Namespaces::new(CancellationToken::new()).entry(&namespace("ns"));
        let (other, answer) = attempt("o", &["q"]);
        lock(&entry.claims).waiting.push(other);
        let (lead, _) = attempt("c", &["q"]);
        let mut leader = Box::pin(claim(&store, &entry, |reply| WaitingClaim {
            reply,
            ..lead
        }));
        assert!(futures::poll!(leader.as_mut()).is_pending());
        assert!(lock(&entry.claims).waiting.is_empty(), "both are in flight");
        drop(leader);
        match answer.await {
            Ok(Ok(batch)) => assert_eq!(batch.jobs.len(), 1),
            other => panic!("{other:?}"),
        }
    }
}
