//! Flow control (issue 32): queue policies, jobs that carry flow keys, the Redis keys
//! flow control keeps, and the checkers the flow tests share (tests/it/flow/).

use std::collections::HashMap;

use deadpool_redis::redis::aio::MultiplexedConnection;
use dueq::proto;

use super::{
    jobs::job,
    raw::cmd,
    schedules::{dur, wait},
    service::Client,
    store::query,
};

/// A rate: `limit` starts per `period_ms`, plus `burst`.
pub fn rate(limit: u32, period_ms: u64, burst: u32) -> proto::RateLimit {
    proto::RateLimit {
        limit,
        period: Some(dur(period_ms)),
        burst,
    }
}

/// A job of "ns" in `queue` with the given flow keys ("" for none).
pub fn keyed_job(
    queue: &str,
    name: &str,
    fairness: &str,
    concurrency: &str,
    rate: &str,
) -> proto::EnqueueRequest {
    proto::EnqueueRequest {
        fairness_key: fairness.into(),
        concurrency_key: concurrency.into(),
        rate_key: rate.into(),
        ..job(queue, name)
    }
}

/// A job of "ns" in `queue` whose concurrency key is `key`.
pub fn concurrency_job(queue: &str, name: &str, key: &str) -> proto::EnqueueRequest {
    keyed_job(queue, name, "", key, "")
}

/// Sets `queue`'s policy in "ns"; returns it as stored (none for a policy with
/// nothing in it).
pub async fn set_policy(
    c: &mut Client,
    queue: &str,
    policy: proto::QueuePolicy,
) -> Option<proto::QueuePolicy> {
    c.set_queue_policy(proto::SetQueuePolicyRequest {
        namespace: "ns".into(),
        queue: queue.into(),
        policy: Some(policy),
    })
    .await
    .expect("SetQueuePolicy")
    .into_inner()
    .policy
}

/// A policy with only `per_key_max_running`.
pub fn per_key_max_running(n: u32) -> proto::QueuePolicy {
    proto::QueuePolicy {
        per_key_max_running: n,
        ..Default::default()
    }
}

/// Enqueues `jobs` (any number) in batches of at most 1,000; their ids, in order.
pub async fn enqueue_all(c: &mut Client, jobs: Vec<proto::EnqueueRequest>) -> Vec<String> {
    let mut ids = Vec::with_capacity(jobs.len());
    let mut jobs = jobs.into_iter().peekable();
    while jobs.peek().is_some() {
        let batch: Vec<_> = jobs.by_ref().take(1000).collect();
        let results = c
            .enqueue_batch(proto::EnqueueBatchRequest {
                namespace: "ns".into(),
                jobs: batch,
            })
            .await
            .expect("EnqueueBatch")
            .into_inner()
            .results;
        for r in results {
            match r.result {
                Some(proto::enqueue_batch_result::Result::Ok(ok)) => ids.push(ok.job_id),
                other => panic!("an item was refused: {other:?}"),
            }
        }
    }
    ids
}

/// Claims up to `max_jobs` from `queue` without waiting, with a lease no test
/// outlasts.
pub async fn claim_many(c: &mut Client, queue: &str, max_jobs: u32) -> Vec<proto::ClaimedJob> {
    c.claim_job(proto::ClaimJobRequest {
        namespace: "ns".into(),
        queues: vec![queue.into()],
        worker_id: "flow-worker".into(),
        wait: wait(0),
        lease: Some(dur(600_000)),
        max_jobs,
        acks: vec![],
    })
    .await
    .expect("claim")
    .into_inner()
    .jobs
}

/// The most of `intervals` (half-open [start, end), any one unit) that hold at one
/// instant: a sweep over the sorted endpoints, an end before a start at the same
/// instant.
pub fn max_overlap(intervals: &[(i64, i64)]) -> usize {
    let mut points: Vec<(i64, i32)> = intervals
        .iter()
        .flat_map(|&(start, end)| [(start, 1), (end, -1)])
        .collect();
    points.sort_unstable();
    let (mut open, mut most) = (0i32, 0i32);
    for (_, step) in points {
        open += step;
        most = most.max(open);
    }
    most as usize
}

/// Per group (a key), the most intervals that hold at one instant.
pub fn max_overlap_by_key(intervals: &HashMap<String, Vec<(i64, i64)>>) -> HashMap<&str, usize> {
    intervals
        .iter()
        .map(|(key, list)| (key.as_str(), max_overlap(list)))
        .collect()
}

/// The host clock in epoch µs. The over-admission checker places what a worker sees
/// (a claim's reply arriving, an ack being sent) on the clock of the lease deadlines
/// the service hands out: Redis runs on this host, so its TIME is this same clock.
#[allow(clippy::disallowed_methods)]
pub fn host_us() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970")
        .as_micros() as i64
}

/// A timestamp in epoch µs.
pub fn ts_us(ts: &Option<prost_types::Timestamp>) -> i64 {
    let ts = ts.as_ref().expect("timestamp set");
    ts.seconds * 1_000_000 + i64::from(ts.nanos) / 1000
}

/// The flow-control keys of namespace "ns" Redis holds (lib/flow.lua flow.key:
/// meta .. ":f" .. kind .. ...), found by SCAN.
pub async fn flow_keys(conn: &mut MultiplexedConnection) -> Vec<String> {
    let mut keys = Vec::new();
    let mut cursor: u64 = 0;
    loop {
        let (next, page): (u64, Vec<String>) = query(
            conn,
            cmd("SCAN")
                .arg(cursor)
                .arg("MATCH")
                .arg("dueq:{ns}:meta:f*")
                .arg("COUNT")
                .arg(1000),
        )
        .await;
        keys.extend(page);
        if next == 0 {
            keys.sort();
            keys.dedup();
            return keys;
        }
        cursor = next;
    }
}

/// Jain's fairness index of `shares`: 1 when all are equal, 1/n when one has all.
pub fn jain(shares: &[f64]) -> f64 {
    let sum: f64 = shares.iter().sum();
    let squares: f64 = shares.iter().map(|x| x * x).sum();
    sum * sum / (shares.len() as f64 * squares)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sweep_counts_overlaps_and_lets_an_end_meet_a_start() {
        assert_eq!(max_overlap(&[]), 0);
        assert_eq!(max_overlap(&[(0, 10), (10, 20), (20, 30)]), 1);
        assert_eq!(max_overlap(&[(0, 10), (5, 15), (9, 12)]), 3);
        assert_eq!(max_overlap(&[(0, 10), (5, 15), (10, 12)]), 2);
        assert!((jain(&[1.0, 1.0, 1.0]) - 1.0).abs() < 1e-9);
        assert!((jain(&[1.0, 0.0]) - 0.5).abs() < 1e-9);
    }
}
