//! Redis memory per stored record: INFO memory used_memory before and after writing
//! `records` schedules (seeded, API layout) and `records` jobs (through EnqueueBatch).
//!
//! Every row starts from an emptied Redis when the bench runs its own: a row
//! measured on top of another's keys would also pay (or not) for the main dict
//! doubling at a power of two, tens of bytes per record either way.

use deadpool_redis::redis::{self, aio::MultiplexedConnection};
use dueq::proto;

use crate::{
    env::Env,
    plan::Plan,
    redis_info::{info, info_field, redis_now},
    report::{Report, Row},
    seed::{self, keys},
    Result,
};

const S: &str = "memory";
const NS: &str = "mem";
/// Jobs per listing bucket (lua/lib/job.lua).
const BUCKET: u64 = 64;

pub(crate) async fn run(plan: &Plan, env: &Env, report: &mut Report) -> Result<()> {
    let mut conn = env.conn().await?;
    per_schedule(env, &mut conn, plan.records, report).await?;
    let payloads: [(&str, &str, Vec<u8>); 2] = [
        ("per job", "work", b"{\"n\":1}".to_vec()),
        ("per job, 200 B payload", "work200", payload_200()),
    ];
    for (name, queue, payload) in payloads {
        per_job(env, &mut conn, plan.records, name, queue, &payload, report).await?;
    }
    report.note(
        S,
        "used_memory delta / records, each row from an empty Redis when the bench runs its own; schedule payload as seed::every_1h, job name \"bench\"; records are packed strings, so hash-max-listpack-* settings do not change them",
    );
    Ok(())
}

async fn used_now(conn: &mut MultiplexedConnection) -> Result<f64> {
    info_field(&info(conn, "memory").await?, "used_memory")
        .and_then(|v| v.parse::<f64>().ok())
        .ok_or_else(|| "INFO memory has no used_memory".into())
}

/// used_memory once it has settled: after a burst of writes Redis may still be
/// rehashing its main dict incrementally, with the old and the new table both
/// allocated, which would count tens of bytes per record that go away on their own.
pub(crate) async fn used(conn: &mut MultiplexedConnection) -> Result<f64> {
    let mut last = used_now(conn).await?;
    for _ in 0..20 {
        crate::local::pause(std::time::Duration::from_millis(100)).await;
        let now = used_now(conn).await?;
        if now == last {
            break;
        }
        last = now;
    }
    Ok(last)
}

/// `MEMORY USAGE` of one key (exact: every element sampled).
// Measures what a key costs Redis (MEMORY USAGE).
#[allow(clippy::disallowed_methods)]
async fn usage(conn: &mut MultiplexedConnection, key: impl redis::ToRedisArgs) -> Result<f64> {
    let bytes: Option<u64> = redis::cmd("MEMORY")
        .arg("USAGE")
        .arg(key)
        .arg("SAMPLES")
        .arg(0)
        .query_async(conn)
        .await?;
    Ok(bytes.unwrap_or(0) as f64)
}

/// Mean `MEMORY USAGE` of up to 50 keys matching `pattern` (the records).
// Samples records (SCAN) to measure what each costs Redis.
#[allow(clippy::disallowed_methods)]
async fn mean_record(conn: &mut MultiplexedConnection, pattern: &str) -> Result<f64> {
    let (_, keys): (u64, Vec<String>) = redis::cmd("SCAN")
        .arg(0)
        .arg("MATCH")
        .arg(pattern)
        .arg("COUNT")
        .arg(2000)
        .query_async(conn)
        .await?;
    let keys: Vec<String> = keys.into_iter().take(50).collect();
    let mut total = 0.0;
    for k in &keys {
        total += usage(conn, k).await?;
    }
    Ok(total / keys.len().max(1) as f64)
}

/// Bytes per element of an index zset.
async fn per_entry(conn: &mut MultiplexedConnection, key: &str, n: u64) -> Result<f64> {
    Ok(usage(conn, key).await? / n.max(1) as f64)
}

/// Bytes per listed id of schema 3's listing: every leaf plus the boundaries.
// Reads the listing's buckets to measure what each entry costs Redis.
#[allow(clippy::disallowed_methods)]
async fn listing_per_entry(conn: &mut MultiplexedConnection, n: u64) -> Result<f64> {
    let top = keys(NS).listing_top();
    let boundaries: Vec<Vec<u8>> = redis::cmd("ZRANGE")
        .arg(&top)
        .arg(0)
        .arg(-1)
        .query_async(conn)
        .await?;
    let mut total = usage(conn, &top).await?;
    for b in &boundaries {
        total += usage(conn, keys(NS).listing_leaf(b)).await?;
    }
    Ok(total / n.max(1) as f64)
}

/// A 199-byte JSON payload: over Redis's default listpack value limit (64 B).
fn payload_200() -> Vec<u8> {
    format!("{{\"blob\":\"{}\"}}", "x".repeat(188)).into_bytes()
}

/// Redis bytes per schedule over `n` seeded schedules, with MEMORY USAGE of the
/// record and of each index entry.
async fn per_schedule(
    env: &Env,
    conn: &mut MultiplexedConnection,
    n: u64,
    report: &mut Report,
) -> Result<()> {
    let tpl = seed::template(env).await?;
    env.reset().await?;
    let before = used(conn).await?;
    let now = redis_now(conn).await?;
    seed::schedules(conn, &tpl, NS, n, now + 3_600_000, seed::Layout::Current).await?;
    let per = (used(conn).await? - before) / n as f64;
    let record = mean_record(conn, &keys(NS).schedules_pattern()).await?;
    let ids = listing_per_entry(conn, n).await?;
    let due = per_entry(conn, &keys(NS).due(), n).await?;
    report.push(
        Row::new(S, "per schedule")
            .with("bytes", per)
            .with("records", n)
            .with("record_bytes", record)
            .with("listing_entry_bytes", ids)
            .with("due_entry_bytes", due)
            .note(format!(
                "{per:.0} B over {n} schedules; MEMORY USAGE: record {record:.0} B, listing entry {ids:.0} B, :due entry {due:.0} B"
            )),
    );
    Ok(())
}

/// Redis bytes per job over `n` pending jobs with `payload` in `queue`, with MEMORY
/// USAGE of the record, the ready-list entry and the listing-bucket entry.
// Reads a job bucket to measure what each job costs Redis.
#[allow(clippy::disallowed_methods)]
async fn per_job(
    env: &Env,
    conn: &mut MultiplexedConnection,
    n: u64,
    name: &str,
    queue: &str,
    payload: &[u8],
    report: &mut Report,
) -> Result<()> {
    env.reset().await?;
    let before = used(conn).await?;
    enqueue_jobs(env, queue, payload, n).await?;
    let per = (used(conn).await? - before) / n as f64;
    // A listing bucket from the middle of the queue names 64 typical jobs (the
    // first ones have smaller job numbers, which pack into fewer bytes).
    let bucket = keys(NS).listing_bucket(queue, n / 2);
    let listed: Vec<(String, String)> =
        redis::cmd("HGETALL").arg(&bucket).query_async(conn).await?;
    let mut total = 0.0;
    for (_, id) in listed.iter().take(50) {
        total += usage(conn, keys(NS).job(id)).await?;
    }
    let record = total / listed.len().clamp(1, 50) as f64;
    let ready = per_entry(conn, &keys(NS).ready_list(queue, 0), n).await?;
    let listing = usage(conn, &bucket).await? / BUCKET as f64;
    report.push(
        Row::new(S, name)
            .with("bytes", per)
            .with("records", n)
            .with("payload_bytes", payload.len() as u64)
            .with("record_bytes", record)
            .with("ready_entry_bytes", ready)
            .with("listing_entry_bytes", listing)
            .note(format!(
                "{per:.0} B over {n} pending jobs ({} B payload); MEMORY USAGE: record {record:.0} B, ready-list entry {ready:.0} B, listing-bucket entry {listing:.0} B",
                payload.len()
            )),
    );
    Ok(())
}

/// Enqueues `n` pending jobs with `payload` into `queue`, 1,000 per EnqueueBatch.
async fn enqueue_jobs(env: &Env, queue: &str, payload: &[u8], n: u64) -> Result<()> {
    let mut client = env.client().await?;
    let mut left = n;
    while left > 0 {
        let k = left.min(1000);
        let jobs = (0..k)
            .map(|_| proto::EnqueueRequest {
                namespace: NS.into(),
                queue: queue.into(),
                name: "bench".into(),
                payload: payload.to_vec(),
                ..Default::default()
            })
            .collect();
        client
            .enqueue_batch(proto::EnqueueBatchRequest {
                namespace: NS.into(),
                jobs,
            })
            .await?;
        left -= k;
    }
    Ok(())
}
