//! `lua/claim_jobs.lua`: lease up to `max_jobs` claimable jobs from a set of queues.

use super::{
    ack_jobs::{decode_acks, push_results, AckResults, Acked},
    job_head,
    prelude::*,
};
use crate::{
    domain::{Dependency, JobRecord},
    store::packed_job::{read_job, state_of_code},
};

script!(ClaimJobs<'_>: "claim_jobs", Job, Arity::AtLeast(2), Arity::AtLeast(17));

/// Most expired leases re-handed and delayed jobs promoted per queue per call, and
/// most stale ready entries dropped.
const CLAIM_BUDGET: u32 = 64;

pub(crate) struct ClaimJobs<'a> {
    /// Sorted, without duplicates.
    pub(crate) queues: &'a [String],
    pub(crate) worker: &'a str,
    /// Overrides each job's own lease.
    pub(crate) lease_ms: Option<i64>,
    pub(crate) max_jobs: u32,
    /// Random; the i-th claimed job's token is `<base>.<i>`.
    pub(crate) token_base: &'a str,
    /// Most reply bytes the claimed jobs may take (the first job is always claimed).
    pub(crate) max_bytes: usize,
    /// (job id, lease token) of jobs to complete first, as AckJob would (issue 15).
    pub(crate) acks: &'a [(&'a str, &'a str)],
    /// The results some of those acks carry (issue 30).
    pub(crate) results: AckResults<'a>,
    /// Keep a receipt of the claimed ids under the token base, so the claim can be
    /// given back by it (`--redis-wait-replicas`; release_claim.lua). Never with
    /// `group`: a receipt names one token base.
    pub(crate) receipt: bool,
    /// Further takers served in this call after the first (the fields above), in
    /// order (issue 35: concurrent ClaimJobs grouped into one script call). Their
    /// acks are in `acks`, after the first taker's.
    pub(crate) group: &'a [Taker<'a>],
}

/// One further taker of a grouped claim: the jobs it takes carry its worker, lease
/// and a token of its base, and fit its byte budget (its first job always).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Taker<'a> {
    pub(crate) token_base: &'a str,
    pub(crate) lease_ms: Option<i64>,
    pub(crate) max_jobs: u32,
    pub(crate) worker: &'a str,
    pub(crate) max_bytes: usize,
}

/// What one claim call returned.
#[derive(Debug)]
pub(crate) struct ClaimedBatch {
    /// Earliest future delayed run or lease deadline in the claimed queues.
    pub(crate) next_ms: Option<i64>,
    /// Claimable jobs may be left in these queues.
    pub(crate) more: bool,
    /// A job went dead: the namespace must be put in the prune due-set.
    pub(crate) register: bool,
    pub(crate) jobs: Vec<JobRecord>,
    /// Leases that expired and were taken back in this call, per queue (in the
    /// order of `ClaimJobs::queues`).
    pub(crate) expired: Vec<u64>,
    /// One outcome per carried ack, in order.
    pub(crate) acked: Vec<Acked>,
    /// How many of `jobs` are each further taker's (`ClaimJobs::group`, in order):
    /// the first taker's jobs come first, then each further taker's.
    pub(crate) shares: Vec<usize>,
    /// The flow limits this call met, per queue (in the order of
    /// `ClaimJobs::queues`): each reason with how many times (lib/flow.lua).
    pub(crate) throttled: Vec<Vec<(FlowReason, u64)>>,
}

/// Why a claim passed over work (issue 32; lib/flow.lua): a lane parked on a key's
/// concurrency, rate or throttle, or a queue at its own max_running or rate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum FlowReason {
    Concurrency,
    Rate,
    Throttled,
    QueueRunning,
    QueueRate,
}

impl FlowReason {
    /// Its word in the script's reply and in the metric's `reason` label.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            FlowReason::Concurrency => "concurrency",
            FlowReason::Rate => "rate",
            FlowReason::Throttled => "throttled",
            FlowReason::QueueRunning => "queue_running",
            FlowReason::QueueRate => "queue_rate",
        }
    }

    fn parse(word: &str) -> Option<Self> {
        [
            FlowReason::Concurrency,
            FlowReason::Rate,
            FlowReason::Throttled,
            FlowReason::QueueRunning,
            FlowReason::QueueRate,
        ]
        .into_iter()
        .find(|r| r.as_str() == word)
    }
}

/// A claimed node's dependencies (lib/graph.lua `graph.deps_of`): msgpack
/// `{ { ref, job id, state code, result | false }, ... }`.
fn dependencies(id: &str, blob: &[u8]) -> Result<Vec<Dependency>, StoreError> {
    use rmpv::Value;
    let corrupt = |detail: &str| StoreError::corrupt(format!("dependencies of job {id}"), detail);
    let value = rmpv::decode::read_value(&mut &blob[..]).map_err(|_| corrupt("not msgpack"))?;
    let text = |v: &Value| -> Result<String, StoreError> {
        match v {
            Value::String(s) => s.as_str().map(str::to_owned).ok_or_else(|| corrupt("not UTF-8")),
            _ => Err(corrupt("not text")),
        }
    };
    let items = match &value {
        Value::Array(items) => items.as_slice(),
        // cjson-less cmsgpack packs an empty table as a map.
        Value::Map(map) if map.is_empty() => &[],
        _ => return Err(corrupt("not an array")),
    };
    items
        .iter()
        .map(|item| {
            let parts = item.as_array().filter(|p| p.len() == 4).ok_or_else(|| corrupt("an entry is not 4 items"))?;
            let result = match &parts[3] {
                Value::Boolean(false) | Value::Nil => None,
                Value::String(s) => Some(s.as_bytes().to_vec()),
                Value::Binary(b) => Some(b.clone()),
                _ => return Err(corrupt("a result is not bytes")),
            };
            Ok(Dependency {
                reference: text(&parts[0])?,
                job_id: text(&parts[1])?,
                state: parts[2].as_i64().and_then(state_of_code),
                result,
            })
        })
        .collect()
}

/// One queue's "reason=count reason=count" ('' none).
fn read_reasons(reply: &mut Reply) -> Result<Vec<(FlowReason, u64)>, StoreError> {
    let text = reply.text()?;
    text.split_whitespace()
        .map(|item| {
            item.split_once('=')
                .and_then(|(word, n)| Some((FlowReason::parse(word)?, n.parse().ok()?)))
                .ok_or_else(|| {
                    StoreError::corrupt("claim_jobs reply", format!("flow limits {text:?}"))
                })
        })
        .collect()
}

impl Operation for ClaimJobs<'_> {
    type Output = ClaimedBatch;

    fn encode(&self, keys: &NamespaceKeys, call: &mut Call) {
        job_head(keys, call);
        if self.receipt {
            call.key(keys.claim_receipt(self.token_base));
        }
        call.arg("token_base", self.token_base)
            .opt("lease_ms", self.lease_ms)
            .arg("max_jobs", self.max_jobs)
            .arg("worker", self.worker)
            .arg("budget", CLAIM_BUDGET)
            .arg("max_bytes", self.max_bytes)
            .arg("ack_count", self.acks.len())
            .arg("result_count", self.results.len())
            .arg("group_count", self.group.len());
        for taker in self.group {
            call.arg("group", taker.token_base)
                .opt("group", taker.lease_ms)
                .arg("group", taker.max_jobs)
                .arg("group", taker.worker)
                .arg("group", taker.max_bytes);
        }
        for (id, token) in self.acks {
            call.arg("acks", *id).arg("acks", *token);
        }
        push_results(call, self.results);
        for queue in self.queues {
            call.arg("queues", queue);
        }
    }

    fn decode(&self, mut reply: Reply) -> Result<Self::Output, StoreError> {
        reply.int()?; // Redis now
        let next_ms = reply.opt_int()?;
        let more = reply.flag()?;
        let register = reply.flag()?;
        let count = reply.count()?;
        let mut jobs = Vec::new();
        for _ in 0..count {
            jobs.push(read_job(&mut reply)?);
        }
        let expired = self
            .queues
            .iter()
            .map(|_| reply.count())
            .collect::<Result<_, _>>()?;
        let acked = decode_acks(&mut reply, self.acks.len())?;
        let throttled = self
            .queues
            .iter()
            .map(|_| read_reasons(&mut reply))
            .collect::<Result<_, _>>()?;
        for _ in 0..reply.count()? {
            let place = usize::try_from(reply.count()?).unwrap_or(usize::MAX);
            let blob = reply.bytes()?;
            let job = place
                .checked_sub(1)
                .and_then(|i| jobs.get_mut(i))
                .ok_or_else(|| StoreError::corrupt("claim_jobs reply", "dependencies of no job"))?;
            job.dependencies = dependencies(&job.id, &blob)?;
        }
        let shares = self
            .group
            .iter()
            .map(|_| reply.count().map(|n| usize::try_from(n).unwrap_or(usize::MAX)))
            .collect::<Result<Vec<_>, _>>()?;
        if shares.iter().try_fold(0usize, |sum, n| sum.checked_add(*n)).is_none_or(|sum| sum > jobs.len()) {
            return Err(StoreError::corrupt("claim_jobs reply", "takers' shares exceed the jobs"));
        }
        reply.finish()?;
        Ok(ClaimedBatch {
            next_ms,
            more,
            register,
            jobs,
            expired,
            acked,
            shares,
            throttled,
        })
    }
}

#[cfg(test)]
pub(crate) fn sample() -> ClaimJobs<'static> {
    use std::sync::LazyLock;
    static QUEUES: LazyLock<Vec<String>> = LazyLock::new(|| vec!["a".into(), "b".into()]);
    ClaimJobs {
        queues: &QUEUES,
        worker: "w",
        lease_ms: None,
        max_jobs: 1,
        token_base: "t",
        max_bytes: 1 << 20,
        acks: &[("j", "t")],
        results: &[(0, b"r")],
        // (A grouped call never keeps a receipt: the service sends one or the other.)
        receipt: false,
        group: &[Taker {
            token_base: "u",
            lease_ms: Some(1000),
            max_jobs: 2,
            worker: "v",
            max_bytes: 1 << 20,
        }],
    }
}

#[cfg(test)]
mod tests {
    use super::{ClaimJobs, Taker};
    use crate::{
        domain::{JobSpec, JobState, LeaseCheck, RunAt},
        store::{
            ops::{ack_jobs::AckJobs, enqueue_jobs, get_job::GetJob, queue_stats::QueueStatsPage},
            keys, Store, StoreError,
        },
        testing::TestRedis,
    };

    fn spec(id: &str, queue: &str, priority: i32) -> JobSpec {
        JobSpec {
            id: id.into(),
            queue: queue.into(),
            priority,
            run_at: RunAt::Now,
            ..enqueue_jobs::sample().jobs[0].clone()
        }
    }

    async fn enqueue(store: &Store, jobs: &[JobSpec]) {
        let enqueued = store
            .run("ns", &enqueue_jobs::EnqueueJobs { namespace: "ns", jobs, max_jobs: 0 })
            .await
            .unwrap_or_else(|e| panic!("enqueue: {e}"));
        assert!(enqueued.iter().all(Result::is_ok), "{enqueued:?}");
    }

    async fn claim(store: &Store, queues: &[String], max_jobs: u32, acks: &[(&str, &str)]) -> super::ClaimedBatch {
        claim_leased(store, queues, max_jobs, acks, None).await
    }

    async fn claim_leased(
        store: &Store,
        queues: &[String],
        max_jobs: u32,
        acks: &[(&str, &str)],
        lease_ms: Option<i64>,
    ) -> super::ClaimedBatch {
        let claim = ClaimJobs {
            queues,
            worker: "w",
            lease_ms,
            max_jobs,
            token_base: "t",
            max_bytes: 1 << 20,
            acks,
            results: &[],
            receipt: false,
            group: &[],
        };
        store.run("ns", &claim).await.unwrap_or_else(|e| panic!("claim: {e}"))
    }

    /// A claim pops each queue's list ahead and pushes back what it did not take:
    /// small claims across queues, then one that takes the rest, hand out every job
    /// once, by priority then enqueue order, and the pending counts follow.
    /// Pins issue 35's grouped claim: one call serves its takers in order, each up to
    /// its own max jobs and byte budget (its first job always), each job leased with
    /// the taker's worker, lease and token base; every taker's acks go first, with
    /// outcomes in order; the reply says each further taker's share.
    #[tokio::test]
    async fn a_grouped_claim_serves_each_taker_as_its_own_call_would() {
        let redis = TestRedis::start().await;
        let store = redis.store();
        let queues = ["q".to_owned()];
        let jobs: Vec<JobSpec> = (0..8).map(|i| spec(&format!("j{i}"), "q", 0)).collect();
        enqueue(&store, &jobs).await;
        // Two jobs leased by two callers, acked by the grouped call below.
        let held_a = claim(&store, &queues, 1, &[]).await.jobs;
        let held_b = claim_leased(&store, &queues, 1, &[], None).await.jobs;
        let (a, b) = (&held_a[0], &held_b[0]);
        let takers = [
            Taker { token_base: "u", lease_ms: Some(5_000), max_jobs: 2, worker: "v", max_bytes: 1 << 20 },
            // A byte budget below one job: it still gets its first job, and only that.
            Taker { token_base: "x", lease_ms: None, max_jobs: 3, worker: "y", max_bytes: 1 },
            // It gets what is left after the others (2 of the 8 were held above).
            Taker { token_base: "z", lease_ms: None, max_jobs: 9, worker: "zz", max_bytes: 1 << 20 },
        ];
        let acks = [(a.id.as_str(), a.lease_token.as_str()), ("nope", "t.1"), (b.id.as_str(), b.lease_token.as_str())];
        let grouped = ClaimJobs {
            queues: &queues,
            worker: "w",
            lease_ms: None,
            max_jobs: 1,
            token_base: "t2",
            max_bytes: 1 << 20,
            acks: &acks,
            results: &[(2, b"done")],
            receipt: false,
            group: &takers,
        };
        let batch = store.run("ns", &grouped).await.unwrap_or_else(|e| panic!("claim: {e}"));
        // The acks, in order: both held jobs completed, the unknown one missing.
        assert!(matches!(batch.acked[0], Ok(LeaseCheck::Done(_))), "{:?}", batch.acked);
        assert!(matches!(batch.acked[1], Ok(LeaseCheck::Missing)), "{:?}", batch.acked);
        assert!(matches!(batch.acked[2], Ok(LeaseCheck::Done(_))), "{:?}", batch.acked);
        // Of the 6 jobs left: 1 for the first taker, then 2, 1, and the last 2.
        assert_eq!(batch.shares, vec![2, 1, 2]);
        let seen: Vec<(&str, &str)> =
            batch.jobs.iter().map(|j| (j.worker.as_str(), j.lease_token.as_str())).collect();
        assert_eq!(
            seen,
            vec![("w", "t2.1"), ("v", "u.1"), ("v", "u.2"), ("y", "x.1"), ("zz", "z.1"), ("zz", "z.2")]
        );
        let mut ids: Vec<&str> = batch.jobs.iter().map(|j| j.id.as_str()).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), 6, "every job handed out once: {ids:?}");
        // Taker v's lease is its own; the others keep the jobs' own (30 s).
        for job in &batch.jobs {
            let lease = job.lease_until_ms.unwrap_or(0) - job.update_ms;
            let expected = if job.worker == "v" { 5_000 } else { 30_000 };
            assert_eq!(lease, expected, "{}", job.worker);
        }
        let done = store.run("ns", &GetJob { id: &b.id }).await.unwrap_or_else(|e| panic!("{e}"));
        let done = done.unwrap_or_else(|| panic!("{} is gone", b.id));
        assert_eq!((done.state, done.result.as_slice()), (JobState::Completed, &b"done"[..]));
    }

    #[tokio::test]
    async fn what_a_claim_pops_and_does_not_take_is_claimed_next_in_order() {
        let redis = TestRedis::start().await;
        let store = redis.store();
        let jobs: Vec<JobSpec> = (0..12)
            .map(|i| {
                let queue = if i % 2 == 0 { "a" } else { "b" };
                let priority = if i % 3 == 0 { 5 } else { 0 };
                spec(&format!("j{i:02}"), queue, priority)
            })
            .collect();
        enqueue(&store, &jobs).await;
        let queues = ["a".to_owned(), "b".to_owned()];
        let mut order = Vec::new();
        for max_jobs in [1, 2, 3] {
            let batch = claim(&store, &queues, max_jobs, &[]).await;
            assert_eq!(batch.jobs.len(), max_jobs as usize);
            assert!(batch.more);
            order.extend(batch.jobs.into_iter().map(|j| j.id));
        }
        let rest = claim(&store, &queues, 100, &[]).await;
        assert!(!rest.more);
        order.extend(rest.jobs.into_iter().map(|j| j.id));
        let mut expected: Vec<&JobSpec> = jobs.iter().collect();
        expected.sort_by_key(|j| -j.priority); // stable: enqueue order within a priority
        let expected: Vec<String> = expected.iter().map(|j| j.id.clone()).collect();
        assert_eq!(order, expected);
        let page = store
            .run("ns", &QueueStatsPage { after: "", limit: 10 })
            .await
            .unwrap_or_else(|e| panic!("stats: {e}"));
        let counts: Vec<(&str, u64, u64)> = page
            .queues
            .iter()
            .map(|q| (q.queue.as_str(), q.pending, q.active))
            .collect();
        assert_eq!(counts, [("a", 0, 6), ("b", 0, 6)]);
    }

    /// ZRANGEBYSCORE calls Redis ran since the last CONFIG RESETSTAT (a script's own
    /// commands count too).
    async fn walks(conn: &mut deadpool_redis::redis::aio::MultiplexedConnection) -> u64 {
        let stats: String = deadpool_redis::redis::cmd("INFO")
            .arg("commandstats")
            .query_async(conn)
            .await
            .unwrap_or_else(|e| panic!("info: {e}"));
        stats
            .lines()
            .find_map(|l| l.strip_prefix("cmdstat_zrangebyscore:calls="))
            .and_then(|rest| rest.split(',').next())
            .map_or(0, |n| n.parse().unwrap_or_else(|e| panic!("calls {n}: {e}")))
    }

    async fn reset_stats(conn: &mut deadpool_redis::redis::aio::MultiplexedConnection) {
        let _: () = deadpool_redis::redis::cmd("CONFIG")
            .arg("RESETSTAT")
            .query_async(conn)
            .await
            .unwrap_or_else(|e| panic!("resetstat: {e}"));
    }

    /// Issue 15: with no lease expired and no delayed job due, a claim reads each
    /// set's earliest entry and walks neither, and its next_ms is still the earliest
    /// of a delayed run, an older lease and the leases this very claim made. Once a
    /// lease is due, the walk runs and takes the job back.
    #[tokio::test]
    async fn a_claim_walks_leases_and_delayed_jobs_only_when_one_is_due() {
        let redis = TestRedis::start().await;
        let store = redis.store();
        let mut conn = redis.conn().await;
        let hour = 3_600_000;
        let mut delayed = spec("later", "a", 0);
        delayed.run_at = RunAt::DelayMs(3 * hour);
        enqueue(&store, &[delayed, spec("first", "a", 0), spec("second", "a", 0)]).await;
        let queues = ["a".to_owned()];
        let first = claim_leased(&store, &queues, 1, &[], Some(2 * hour)).await;
        let old_lease = first.jobs[0].lease_until_ms.unwrap_or_else(|| panic!("no lease"));

        reset_stats(&mut conn).await;
        let second = claim_leased(&store, &queues, 1, &[], Some(hour)).await;
        assert_eq!(walks(&mut conn).await, 0, "nothing was due: no walk");
        let new_lease = second.jobs[0].lease_until_ms.unwrap_or_else(|| panic!("no lease"));
        assert!(new_lease < old_lease);
        assert_eq!(second.next_ms, Some(new_lease), "the lease this claim made is the soonest");
        let third = claim_leased(&store, &queues, 1, &[], None).await;
        assert!(third.jobs.is_empty());
        assert_eq!(third.next_ms, Some(new_lease), "earliest of the stored leases and the delayed run");

        // A lease of 1 ms is due at once: the next claim walks and takes the job back.
        enqueue(&store, &[spec("short", "b", 0)]).await;
        let both = ["a".to_owned(), "b".to_owned()];
        let short = claim_leased(&store, &both, 1, &[], Some(1)).await;
        assert_eq!(short.jobs[0].id, "short");
        let until = short.jobs[0].lease_until_ms.unwrap_or_else(|| panic!("no lease"));
        // Wait until Redis's clock is past the lease (behaviour, not a time bound).
        loop {
            let (secs, micros): (i64, i64) = deadpool_redis::redis::cmd("TIME")
                .query_async(&mut conn)
                .await
                .unwrap_or_else(|e| panic!("time: {e}"));
            if secs * 1000 + micros / 1000 > until {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(2)).await;
        }
        reset_stats(&mut conn).await;
        let again = claim_leased(&store, &both, 1, &[], None).await;
        assert!(walks(&mut conn).await >= 1, "a due lease is walked");
        assert_eq!(again.expired, [0, 1]);
        assert_eq!(again.jobs[0].id, "short", "the expired job is claimable again");
    }

    /// Acks applied in one call register the namespace for pruning exactly when one
    /// of them alone would have: the finished set passing a power of two or a
    /// multiple of 512.
    #[tokio::test]
    async fn batched_acks_register_for_pruning_when_the_finished_set_passes_the_rule() {
        let redis = TestRedis::start().await;
        let store = redis.store();
        let jobs: Vec<JobSpec> = (0..7).map(|i| spec(&format!("j{i}"), "a", 0)).collect();
        enqueue(&store, &jobs).await;
        let queues = ["a".to_owned()];
        let claimed = claim(&store, &queues, 7, &[]).await.jobs;
        let leases: Vec<(&str, &str)> = claimed
            .iter()
            .map(|j| (j.id.as_str(), j.lease_token.as_str()))
            .collect();
        // Sizes 1..=3 pass 1 and 2; 4..=4 passes 4; 5..=7 pass no power of two.
        for (range, registers) in [(0..3, true), (3..4, true), (4..7, false)] {
            let acked = store
                .run("ns", &AckJobs { leases: &leases[range.clone()], results: &[] })
                .await
                .unwrap_or_else(|e| panic!("ack: {e}"));
            assert_eq!(acked.register, registers, "acks {range:?}");
            assert!(acked.acked.iter().all(|a| matches!(a, Ok(LeaseCheck::Done(_)))));
        }
        // The same rule for acks a claim carries.
        let more: Vec<JobSpec> = (7..9).map(|i| spec(&format!("j{i}"), "a", 0)).collect();
        enqueue(&store, &more).await;
        let batch = claim(&store, &queues, 2, &[]).await;
        let leases: Vec<(&str, &str)> = batch
            .jobs
            .iter()
            .map(|j| (j.id.as_str(), j.lease_token.as_str()))
            .collect();
        let carried = claim(&store, &queues, 1, &leases).await;
        assert!(carried.register, "sizes 8 and 9 pass 8");
        assert_eq!(carried.acked.len(), 2);
    }

    /// A record is read past its array header (lib/job.lua packed_load): one whose
    /// items disagree with the count its header gives (an item missing, or bytes
    /// left over) is corrupt where it is read, and a claim skips it for the next job,
    /// while records that agree load as they were stored.
    #[tokio::test]
    async fn a_record_that_disagrees_with_its_header_is_corrupt() {
        use deadpool_redis::redis::AsyncCommands;

        let redis = TestRedis::start().await;
        let store = redis.store();
        let mut conn = redis.conn().await;
        let keys = keys::NamespaceKeys::new("dueq", "ns");
        let jobs: Vec<JobSpec> = ["short", "long", "fine"]
            .iter()
            .map(|id| spec(id, "q", 0))
            .collect();
        enqueue(&store, &jobs).await;
        let stored: Vec<u8> = conn.get(keys.job("fine")).await.unwrap_or_else(|e| panic!("get: {e}"));
        assert_eq!(stored[0], 0xdc, "an array16 header: {stored:?}");
        let count = u16::from_be_bytes([stored[1], stored[2]]);
        let mut short = stored.clone();
        short[1..3].copy_from_slice(&(count + 1).to_be_bytes());
        let mut long = stored.clone();
        long.push(0x01);
        for (id, bytes) in [("short", short), ("long", long)] {
            let () = conn
                .set(keys.job(id), bytes)
                .await
                .unwrap_or_else(|e| panic!("set: {e}"));
        }
        for id in ["short", "long"] {
            match store.run("ns", &GetJob { id }).await {
                Err(StoreError::Corrupt { what, detail }) => {
                    assert!(what.contains(id), "{id}: {what}: {detail}")
                }
                other => panic!("{id}: {other:?}"),
            }
        }
        let queues = ["q".to_owned()];
        let batch = claim(&store, &queues, 3, &[]).await;
        let claimed: Vec<&str> = batch.jobs.iter().map(|j| j.id.as_str()).collect();
        assert_eq!(claimed, ["fine"]);
        let read = store
            .run("ns", &GetJob { id: "fine" })
            .await
            .unwrap_or_else(|e| panic!("get: {e}"))
            .unwrap_or_else(|| panic!("fine is gone"));
        assert_eq!(read, batch.jobs[0]);
    }

    /// The consume loop a Work stream runs, as script calls: 3,200 jobs drained by
    /// claims of 16 (or DUEQ_PROFILE_BATCH) that each carry the previous claim's
    /// acks. Every job is handed out once and acked once, and ends completed.
    /// `tools/profile/claim_ack.sh` runs this loop against a redis-server under
    /// callgrind (docs/DESIGN.md, "The worker fast path"): with DUEQ_PROFILE_REDIS
    /// set, the test uses that Redis and brackets the drain with
    /// `callgrind_control -z` and `-d`, so the dump counts the drain alone.
    #[tokio::test]
    async fn a_drain_with_carried_acks_hands_out_and_acks_each_job_once() {
        use std::collections::HashSet;

        const JOBS: usize = 3_200;
        let profiled = std::env::var("DUEQ_PROFILE_REDIS").ok();
        // Jobs per claim: 16 unless the profile asks for another (1 shows a call's
        // fixed cost).
        let per_claim: u32 = std::env::var("DUEQ_PROFILE_BATCH")
            .ok()
            .and_then(|b| b.parse().ok())
            .filter(|b| (1..=100).contains(b))
            .unwrap_or(16);
        // The Redis to drain: the profiled one, or a test Redis kept alive here.
        let (_own, store) = match &profiled {
            Some(url) => {
                let store = Store::new(url, &Default::default(), "dueq", 1, std::time::Duration::from_secs(600))
                    .unwrap_or_else(|e| panic!("store: {e}"));
                (None, store)
            }
            None => {
                let redis = TestRedis::start().await;
                let store = redis.store();
                (Some(redis), store)
            }
        };
        let jobs: Vec<JobSpec> = (0..JOBS)
            .map(|_| JobSpec {
                name: "bench".into(),
                payload: b"{\"n\":1}".to_vec(),
                ..spec(&uuid::Uuid::new_v4().to_string(), "work", 0)
            })
            .collect();
        for chunk in jobs.chunks(500) {
            enqueue(&store, chunk).await;
        }
        let callgrind = |flag: &str| {
            if profiled.is_some() {
                let status = std::process::Command::new("callgrind_control").arg(flag).status();
                assert!(matches!(status, Ok(s) if s.success()), "callgrind_control {flag}: {status:?}");
            }
        };
        callgrind("-z");
        let queues = ["work".to_owned()];
        let (mut held, mut seen, mut acked) = (Vec::new(), HashSet::new(), 0);
        loop {
            let leases: Vec<(&str, &str)> = held.iter().map(|(i, t): &(String, String)| (i.as_str(), t.as_str())).collect();
            let token = uuid::Uuid::new_v4().simple().to_string();
            let claim = ClaimJobs {
                queues: &queues,
                worker: "bench",
                lease_ms: None,
                max_jobs: per_claim,
                token_base: &token,
                max_bytes: 4 << 20,
                acks: &leases,
                results: &[],
                receipt: false,
                group: &[],
            };
            let batch = store.run("ns", &claim).await.unwrap_or_else(|e| panic!("claim: {e}"));
            assert_eq!(batch.acked.len(), held.len());
            assert!(batch.acked.iter().all(|a| matches!(a, Ok(LeaseCheck::Done(_)))), "{:?}", batch.acked);
            acked += batch.acked.len();
            held = batch.jobs.into_iter().map(|j| (j.id, j.lease_token)).collect();
            for (id, _) in &held {
                assert!(seen.insert(id.clone()), "{id} handed out twice");
            }
            if held.is_empty() {
                assert!(!batch.more);
                break;
            }
        }
        callgrind("-d");
        assert_eq!((seen.len(), acked), (JOBS, JOBS));
        for job in jobs.iter().step_by(97) {
            let read = store
                .run("ns", &GetJob { id: &job.id })
                .await
                .unwrap_or_else(|e| panic!("get: {e}"))
                .unwrap_or_else(|| panic!("{} is gone", job.id));
            assert_eq!(read.state, JobState::Completed, "{}", job.id);
        }
    }
}
