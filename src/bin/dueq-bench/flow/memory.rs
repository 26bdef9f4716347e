//! Redis memory of flow keys. Twice from an empty Redis, the same queue and policy
//! (per_key_max_running 1), 1,000,000 ready jobs (--smoke: 10,000) removed as they
//! complete: once without keys, once each with its own concurrency key (12 bytes,
//! "acct:0000042"), so every key is active with one ready job.
//!
//! - bytes per active key: the keyed jobs' used_memory delta minus the keyless
//!   jobs', per key (the key's flow structures and the key stored in its job's
//!   record), with MEMORY USAGE of the flow keys found (SCAN of the namespace's
//!   flow keys: every one counted, a sample of lanes sized) (target `flow active
//!   key <= 200 B`).
//! - idle keys: once every job was claimed and acked (one Work stream), no flow key
//!   is left and used_memory is back where the keyless run ends (target `flow idle
//!   keys 0 bytes`: no flow key left).

use std::{collections::BTreeMap, sync::Arc};

use deadpool_redis::redis::{self, aio::MultiplexedConnection};
use dueq::proto;

use super::{drain, enqueue_all, job, set_policy, S};
use crate::{
    env::Env,
    memory::used,
    plan::Plan,
    report::{Report, Row},
    seed::keys,
    Result,
};

/// The rows the targets read.
pub(crate) const ACTIVE_ROW: &str = "per active key";
pub(crate) const IDLE_ROW: &str = "idle keys after drain";

const QUEUE: &str = "m";
/// Lane keys whose MEMORY USAGE is sampled.
const LANE_SAMPLE: usize = 100;

/// used_memory at the three points of one run, and the flow keys found.
#[derive(Debug, Default)]
struct Run {
    empty: f64,
    seeded: f64,
    drained: f64,
    flow: FlowKeys,
    flow_after: u64,
}

/// The flow keys of the namespace: how many of each kind (the letter after ":f"),
/// with their MEMORY USAGE (lanes: estimated from a sample).
#[derive(Debug, Default)]
struct FlowKeys {
    count: u64,
    bytes: BTreeMap<char, (u64, f64)>,
}

impl FlowKeys {
    fn total_bytes(&self) -> f64 {
        self.bytes.values().map(|&(_, b)| b).sum()
    }

    fn describe(&self) -> String {
        let parts: Vec<String> = self
            .bytes
            .iter()
            .map(|(kind, (n, b))| format!("{n} '{kind}' {b:.0} B"))
            .collect();
        parts.join(", ")
    }
}

pub(super) async fn run(plan: &Plan, env: &Env, report: &mut Report) -> Result<()> {
    let n: u64 = if plan.smoke { 10_000 } else { 1_000_000 };
    let plain = measure(plan, env, n, false).await?;
    env.reset().await?;
    let keyed = measure(plan, env, n, true).await?;
    let per_key = ((keyed.seeded - keyed.empty) - (plain.seeded - plain.empty)) / n as f64;
    let flow_per_key = keyed.flow.total_bytes() / n as f64;
    report.push(
        Row::new(S, ACTIVE_ROW)
            .with("bytes", per_key)
            .with("keys", n)
            .with("flow_key_bytes", flow_per_key)
            .with("flow_keys", keyed.flow.count)
            .note(format!(
                "{per_key:.0} B: used_memory of {n} ready jobs each with its own 12-byte concurrency key minus the same jobs without; the flow keys' MEMORY USAGE {flow_per_key:.0} B per key ({}; lanes from a sample of {LANE_SAMPLE}), the rest in the job records and the allocator",
                keyed.flow.describe()
            )),
    );
    let left = (keyed.drained - keyed.empty) - (plain.drained - plain.empty);
    report.push(
        Row::new(S, IDLE_ROW)
            .with("flow_keys", keyed.flow_after)
            .with("bytes_vs_keyless", left)
            .note(format!(
                "after all {n} keyed jobs were claimed and acked (removed on completion): {} flow keys left; used_memory {left:+.0} B against the keyless run's end ({:.0} B and {:.0} B above the empty start)",
                keyed.flow_after,
                keyed.drained - keyed.empty,
                plain.drained - plain.empty
            )),
    );
    Ok(())
}

/// One run: `n` jobs (each with its own concurrency key when `keyed`), memory before,
/// seeded and drained.
async fn measure(plan: &Plan, env: &Env, n: u64, keyed: bool) -> Result<Run> {
    let mut conn = env.conn().await?;
    set_policy(
        env,
        QUEUE,
        Some(proto::QueuePolicy {
            per_key_max_running: 1,
            ..Default::default()
        }),
    )
    .await?;
    let mut run = Run {
        empty: used(&mut conn).await?,
        ..Run::default()
    };
    enqueue_all(env, n, 4, Arc::new(move |i| removed_job(i, keyed))).await?;
    run.seeded = used(&mut conn).await?;
    run.flow = flow_keys(&mut conn).await?;
    let capacity = plan.concurrency.max(32);
    drain(env.client().await?, QUEUE, capacity, n, |_, _| {})
        .await?
        .complete(QUEUE, n)?;
    run.drained = used(&mut conn).await?;
    run.flow_after = flow_keys(&mut conn).await?.count;
    Ok(run)
}

/// Job i of QUEUE, removed as it completes; with concurrency key "acct:{i:07}".
fn removed_job(i: u64, keyed: bool) -> proto::EnqueueRequest {
    let mut j = job(QUEUE, "bench");
    j.retention = Some(proto::JobRetention {
        on_complete: Some(proto::RetentionRule {
            rule: Some(proto::retention_rule::Rule::Remove(true)),
        }),
        on_fail: None,
    });
    if keyed {
        j.concurrency_key = format!("acct:{i:07}");
    }
    j
}

/// Every flow key of the namespace (lib/flow.lua: meta .. ':f' .. kind ..), counted
/// by kind and sized with MEMORY USAGE (lanes, 'l': from a sample).
// SCAN and MEMORY USAGE: the bench inspects what flow control left in Redis.
#[allow(clippy::disallowed_methods)]
async fn flow_keys(conn: &mut MultiplexedConnection) -> Result<FlowKeys> {
    let meta = keys(super::NS).meta();
    let pattern = format!("{meta}:f*");
    let at = meta.len() + 2;
    let mut found = FlowKeys::default();
    let mut lanes: Vec<String> = Vec::new();
    let mut cursor = 0u64;
    loop {
        let (next, batch): (u64, Vec<String>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("MATCH")
            .arg(&pattern)
            .arg("COUNT")
            .arg(10_000)
            .query_async(conn)
            .await?;
        for key in batch {
            found.count += 1;
            let kind = key[at..].chars().next().unwrap_or('?');
            let entry = found.bytes.entry(kind).or_insert((0, 0.0));
            entry.0 += 1;
            if kind == 'l' {
                if lanes.len() < LANE_SAMPLE {
                    lanes.push(key);
                }
            } else {
                entry.1 += usage(conn, &key).await?;
            }
        }
        if next == 0 {
            break;
        }
        cursor = next;
    }
    let mut sampled = 0.0;
    for key in &lanes {
        sampled += usage(conn, key).await?;
    }
    if let Some(entry) = found.bytes.get_mut(&'l') {
        entry.1 = sampled / lanes.len().max(1) as f64 * entry.0 as f64;
    }
    Ok(found)
}

/// MEMORY USAGE of `key`, every element counted.
// MEMORY USAGE: what a flow key costs Redis.
#[allow(clippy::disallowed_methods)]
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
