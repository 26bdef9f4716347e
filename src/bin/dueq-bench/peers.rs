//! Peers on the same Redis: BullMQ (Queue.add, Queue.addBulk, a Worker draining a
//! pre-filled queue) and @boringnode/queue
//! 0.6 (claimDueSchedule with 1k/10k/100k schedules), installed with npm into a temp
//! folder and driven by the small Node scripts in peers/; each prints one JSON line.
//! A peer that cannot run (no node, npm offline) is a note, never a failure.

mod node;

use std::{path::Path, time::Duration};

use serde_json::Value;

use crate::{
    binaries::on_path,
    env::Env,
    plan::Plan,
    report::{Report, Row},
    Result,
};

const S: &str = "peers";

pub(crate) async fn run(plan: &Plan, env: &Env, report: &mut Report) -> Result<()> {
    if !plan.peers {
        report.note(S, "skipped (run with --peers)");
        return Ok(());
    }
    if on_path("node").is_none() || on_path("npm").is_none() {
        report.note(S, "skipped: node or npm not found on PATH");
        return Ok(());
    }
    let dir = std::env::temp_dir().join(format!("dueq-bench-peers-{}", std::process::id()));
    tokio::fs::create_dir_all(&dir).await?;
    let result = run_in(plan, env, report, &dir).await;
    let _ = tokio::fs::remove_dir_all(&dir).await;
    if let Err(e) = result {
        report.note(S, format!("peers failed: {e}"));
    }
    Ok(())
}

async fn run_in(plan: &Plan, env: &Env, report: &mut Report, dir: &Path) -> Result<()> {
    node::install(dir).await?;
    bullmq(plan, env, report, dir).await?;
    env.reset().await?;
    boringnode(plan, env, report, dir).await?;
    env.reset().await?;
    Ok(())
}

/// BullMQ's Queue.add and Queue.addBulk at the bench's concurrency and duration.
async fn bullmq(plan: &Plan, env: &Env, report: &mut Report, dir: &Path) -> Result<()> {
    let v = node::run_script(
        dir,
        "bullmq.mjs",
        &[
            ("REDIS_URL", env.redis_url.clone()),
            ("CONCURRENCY", plan.concurrency.to_string()),
            ("DURATION_MS", plan.duration.as_millis().to_string()),
            ("BATCH", plan.batch.to_string()),
            ("PREFILL", plan.prefill.to_string()),
        ],
        Duration::from_secs(120),
    )
    .await?;
    if let Some(add) = v.get("add") {
        report
            .push(peer_row("bullmq Queue.add", add, true).and_note("same concurrency, same Redis"));
    }
    if let Some(bulk) = v.get("bulk") {
        report.push(
            peer_row("bullmq Queue.addBulk", bulk, true)
                .and_note(format!("{} jobs per call; ops = jobs", plan.batch)),
        );
    }
    if let Some(worker) = v.get("worker") {
        let jobs = number(worker, &["jobs"]).unwrap_or(0.0) as u64;
        let mut row = peer_row("bullmq Worker", worker, true).and_note(format!(
            "Worker concurrency {}, no-op processor, removeOnComplete; drains {jobs} of {} pre-filled jobs; ops = jobs",
            plan.concurrency, plan.prefill
        ));
        if let Some(us) = number(worker, &["redis_cpu_us_per_op"]) {
            row = row.with("redis_cpu_us_per_job", us);
        }
        report.push(row.with("prefill", plan.prefill).with("drained", jobs));
    }
    Ok(())
}

/// @boringnode/queue's claimDueSchedule, nothing due and one due, per peer size.
async fn boringnode(plan: &Plan, env: &Env, report: &mut Report, dir: &Path) -> Result<()> {
    let sizes: Vec<String> = plan.peer_sizes.iter().map(u64::to_string).collect();
    let v = node::run_script(
        dir,
        "boringnode.mjs",
        &[
            ("REDIS_URL", env.redis_url.clone()),
            ("SIZES", sizes.join(",")),
            ("SAMPLES", plan.samples.min(200).to_string()),
        ],
        Duration::from_secs(1200),
    )
    .await?;
    let claims = v.get("claims").and_then(Value::as_array);
    for c in claims.into_iter().flatten() {
        let size = number(c, &["size"]).unwrap_or(0.0) as u64;
        let seed = number(c, &["seed_s"]).unwrap_or(0.0);
        if let Some(none) = c.get("none") {
            report.push(
                peer_row(
                    &format!("boringnode claimDueSchedule, nothing due, {size}"),
                    none,
                    false,
                )
                .with("stored", size)
                .note(format!("seeded through its adapter in {seed:.1}s")),
            );
        }
        if let Some(one) = c.get("one") {
            report.push(
                peer_row(
                    &format!("boringnode claimDueSchedule, one due, {size}"),
                    one,
                    false,
                )
                .with("stored", size),
            );
        }
    }
    Ok(())
}

/// The number at `path` in a script's JSON.
fn number(v: &Value, path: &[&str]) -> Option<f64> {
    let mut v = v;
    for p in path {
        v = v.get(*p)?;
    }
    v.as_f64()
}

fn peer_row(name: &str, v: &Value, with_ops: bool) -> Row {
    let mut row = Row::new(S, name);
    if with_ops {
        row.ops_s = number(v, &["ops_per_s"]);
    }
    if let Some((redis, client)) =
        number(v, &["redis_cpu_us_per_op"]).zip(number(v, &["client_cpu_us_per_op"]))
    {
        row = row
            .with("redis_cpu_us_per_op", redis)
            .with("client_cpu_us_per_op", client)
            .and_note(format!(
                "CPU/op: Redis {redis:.0} us, Node client {client:.0} us"
            ));
    }
    row.p50_ms = number(v, &["p50_ms"]);
    row.p99_ms = number(v, &["p99_ms"]);
    row.p999_ms = number(v, &["p999_ms"]);
    row
}
