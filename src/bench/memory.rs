//! Redis memory per stored record: INFO memory used_memory before and after writing
//! `records` schedules (seeded, API layout) and `records` jobs (through EnqueueBatch).

use deadpool_redis::redis::{self, aio::MultiplexedConnection};

use super::{
    env::{info_field, redis_now, Env},
    report::{Report, Row},
    seed, Plan, Result,
};
use crate::proto;

const S: &str = "memory";

async fn used_now(conn: &mut MultiplexedConnection) -> Result<f64> {
    let info: String = redis::cmd("INFO").arg("memory").query_async(conn).await?;
    info_field(&info, "used_memory")
        .and_then(|v| v.parse::<f64>().ok())
        .ok_or_else(|| "INFO memory has no used_memory".into())
}

/// used_memory once it has settled: after a burst of writes Redis may still be
/// rehashing its main dict incrementally, with the old and the new table both
/// allocated, which would count tens of bytes per record that go away on their own.
async fn used(conn: &mut MultiplexedConnection) -> Result<f64> {
    let mut last = used_now(conn).await?;
    for _ in 0..20 {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        let now = used_now(conn).await?;
        if now == last {
            break;
        }
        last = now;
    }
    Ok(last)
}

/// `MEMORY USAGE` of one key (exact: every element sampled).
async fn usage(conn: &mut MultiplexedConnection, key: &str) -> Result<f64> {
    let bytes: Option<u64> = redis::cmd("MEMORY")
        .arg("USAGE")
        .arg(key)
        .arg("SAMPLES")
        .arg(0)
        .query_async(conn)
        .await?;
    Ok(bytes.unwrap_or(0) as f64)
}

/// Mean `MEMORY USAGE` of up to 50 keys matching `pattern` (the record hashes).
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
async fn listing_per_entry(conn: &mut MultiplexedConnection, base: &str, n: u64) -> Result<f64> {
    let top = format!("{base}lt");
    let boundaries: Vec<Vec<u8>> = redis::cmd("ZRANGE")
        .arg(&top)
        .arg(0)
        .arg(-1)
        .query_async(conn)
        .await?;
    let mut total = usage(conn, &top).await?;
    for b in &boundaries {
        let mut leaf = format!("{base}lk:").into_bytes();
        leaf.extend_from_slice(b);
        let used: Option<u64> = redis::cmd("MEMORY")
            .arg("USAGE")
            .arg(&leaf)
            .arg("SAMPLES")
            .arg(0)
            .query_async(conn)
            .await?;
        total += used.unwrap_or(0) as f64;
    }
    Ok(total / n.max(1) as f64)
}

/// A 199-byte JSON payload: over Redis's default listpack value limit (64 B).
fn payload_200() -> Vec<u8> {
    format!("{{\"blob\":\"{}\"}}", "x".repeat(188)).into_bytes()
}

/// Empties the bench's own Redis before a row, so every row grows the keyspace from
/// nothing: a row measured on top of another's keys would also pay (or not) for the
/// main dict doubling at a power of two, tens of bytes per record either way.
/// The flush is ASYNC (freed on Redis's lazyfree thread): a synchronous flush of
/// hundreds of MB makes the allocator purge on the main thread for a while after,
/// which showed up as a 38 ms Migrate script in the family that runs next.
async fn fresh(env: &Env, conn: &mut MultiplexedConnection) -> Result<()> {
    if !env.own_redis() {
        return Ok(());
    }
    let _: () = redis::cmd("FLUSHALL")
        .arg("ASYNC")
        .query_async(conn)
        .await?;
    for _ in 0..300 {
        let info: String = redis::cmd("INFO").arg("memory").query_async(conn).await?;
        if info_field(&info, "lazyfree_pending_objects").is_none_or(|v| v == "0") {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    Ok(())
}

/// Redis bytes per job for `n` pending jobs with `payload` (used_memory delta).
async fn bytes_per_job(
    env: &Env,
    conn: &mut MultiplexedConnection,
    queue: &str,
    payload: &[u8],
    n: u64,
) -> Result<f64> {
    fresh(env, conn).await?;
    let before = used(conn).await?;
    enqueue_jobs(env, queue, payload, n).await?;
    Ok((used(conn).await? - before) / n as f64)
}

/// Enqueues `n` pending jobs with `payload` into `queue` of namespace "mem".
async fn enqueue_jobs(env: &Env, queue: &str, payload: &[u8], n: u64) -> Result<()> {
    let mut client = env.client().await?;
    let mut left = n;
    while left > 0 {
        let k = left.min(1000);
        let jobs = (0..k)
            .map(|_| proto::EnqueueRequest {
                namespace: "mem".into(),
                queue: queue.into(),
                name: "bench".into(),
                payload: payload.to_vec(),
                ..Default::default()
            })
            .collect();
        client
            .enqueue_batch(proto::EnqueueBatchRequest {
                namespace: "mem".into(),
                jobs,
            })
            .await?;
        left -= k;
    }
    Ok(())
}

pub async fn run(plan: &Plan, env: &Env, report: &mut Report) -> Result<()> {
    let n = plan.records;
    let tpl = seed::template(env).await?;
    let mut conn = env.conn().await?;
    fresh(env, &mut conn).await?;
    let before = used(&mut conn).await?;
    let now = redis_now(&mut conn).await?;
    seed::schedules(
        &mut conn,
        &tpl,
        "mem",
        n,
        now + 3_600_000,
        seed::Layout::Current,
    )
    .await?;
    let after = used(&mut conn).await?;
    let per = (after - before) / n as f64;
    let base = seed::base("mem");
    let record = mean_record(&mut conn, &format!("{base}s:*")).await?;
    let ids = listing_per_entry(&mut conn, &base, n).await?;
    let due = per_entry(&mut conn, &format!("{base}due"), n).await?;
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

    let payloads: [(&str, &str, Vec<u8>); 2] = [
        ("per job", "work", b"{\"n\":1}".to_vec()),
        ("per job, 200 B payload", "work200", payload_200()),
    ];
    for (name, queue, payload) in payloads {
        let per = bytes_per_job(env, &mut conn, queue, &payload, n).await?;
        // A listing bucket from the middle of the queue names 64 typical jobs (the
        // first ones have smaller job numbers, which pack into fewer bytes).
        let middle = n / 2 / 64;
        let first: Vec<(String, String)> = redis::cmd("HGETALL")
            .arg(format!("{base}lb:{middle}:{queue}"))
            .query_async(&mut conn)
            .await?;
        let mut total = 0.0;
        for (_, id) in first.iter().take(50) {
            total += usage(&mut conn, &format!("{base}j:{id}")).await?;
        }
        let record = total / first.len().clamp(1, 50) as f64;
        let ready = per_entry(&mut conn, &format!("{base}rl:0:{queue}"), n).await?;
        let listing = usage(&mut conn, &format!("{base}lb:{middle}:{queue}")).await? / 64.0;
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
    }
    report.note(
        S,
        "used_memory delta / records, each row from an empty Redis when the bench runs its own; schedule payload as seed::every_1h, job name \"bench\"; records are packed strings, so hash-max-listpack-* settings do not change them",
    );
    Ok(())
}
