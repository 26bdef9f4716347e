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
    clients, consume,
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
    paired(plan, env, report, dir).await?;
    clients::run(plan, env, report, dir).await?;
    boringnode(plan, env, report, dir).await?;
    env.reset().await?;
    Ok(())
}

/// BullMQ's Queue.add and Queue.addBulk at the bench's concurrency and duration.
async fn bullmq(plan: &Plan, env: &Env, report: &mut Report, dir: &Path) -> Result<()> {
    let v = run_bullmq(plan, env, dir, "add,bulk,worker").await?;
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

/// Rounds of the paired comparison (one with --smoke): issue 35 asks for medians of
/// at least 5.
const PAIRED_ROUNDS: usize = 5;

/// The worker fast path and BullMQ's Worker drained back to back, the same pre-fill
/// and concurrency, PAIRED_ROUNDS times, alternating which goes first. This VM's
/// speed drifts by up to 2x over minutes, and the consume family runs minutes
/// before this one, so the two consume targets compare each drain with the peer's
/// drain beside it: each round gives a ratio, and the targets take the median.
async fn paired(plan: &Plan, env: &Env, report: &mut Report, dir: &Path) -> Result<()> {
    if plan.prefill == 0 {
        return Ok(());
    }
    let rounds = if plan.smoke { 1 } else { PAIRED_ROUNDS };
    let (mut jobs_ratios, mut cpu_ratios) = (Vec::new(), Vec::new());
    for round in 1..=rounds {
        let peer_first = round % 2 == 1;
        let ((fast, fast_cpu), (peer, peer_cpu)) = if peer_first {
            let peer = bullmq_worker(plan, env, dir).await?;
            (consume::fast_round(plan, env).await?, peer)
        } else {
            let fast = consume::fast_round(plan, env).await?;
            (fast, bullmq_worker(plan, env, dir).await?)
        };
        let (jobs, cpu) = (fast / peer, fast_cpu / peer_cpu);
        jobs_ratios.push(jobs);
        cpu_ratios.push(cpu);
        report.push(
            Row::new(S, format!("paired round {round}"))
                .note(format!(
                    "{} first: worker fast path {fast:.0} jobs/s, Redis {fast_cpu:.0} us/job; bullmq Worker {peer:.0} jobs/s, Redis {peer_cpu:.0} us/job: {jobs:.2}x jobs/s, {cpu:.2}x Redis CPU/job",
                    if peer_first { "bullmq Worker" } else { "worker fast path" }
                ))
                .with("fast_jobs_s", fast)
                .with("fast_redis_cpu_us_per_job", fast_cpu)
                .with("bullmq_jobs_s", peer)
                .with("bullmq_redis_cpu_us_per_job", peer_cpu),
        );
    }
    let listed = |v: &[f64]| {
        v.iter()
            .map(|r| format!("{r:.2}x"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    report.push(
        Row::new(S, "paired: worker fast path / bullmq Worker")
            .note(format!(
                "median of {rounds} rounds: {:.2}x jobs/s ({}), {:.2}x Redis CPU/job ({})",
                median(&jobs_ratios),
                listed(&jobs_ratios),
                median(&cpu_ratios),
                listed(&cpu_ratios)
            ))
            .with("rounds", rounds)
            .with("jobs_s_ratio_median", median(&jobs_ratios))
            .with("redis_cpu_ratio_median", median(&cpu_ratios))
            .with("jobs_s_ratios", listed(&jobs_ratios))
            .with("redis_cpu_ratios", listed(&cpu_ratios)),
    );
    Ok(())
}

/// The middle value (the mean of the two middle ones for an even count).
fn median(values: &[f64]) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// BullMQ's Worker draining `plan.prefill` jobs alone: jobs/s and Redis CPU per job.
pub(crate) async fn bullmq_worker(plan: &Plan, env: &Env, dir: &Path) -> Result<(f64, f64)> {
    let v = run_bullmq(plan, env, dir, "worker").await?;
    env.reset().await?;
    let worker = v
        .get("worker")
        .ok_or("bullmq.mjs printed no worker drain")?;
    let jobs_s = number(worker, &["ops_per_s"]).ok_or("bullmq Worker: no ops_per_s")?;
    let cpu = number(worker, &["redis_cpu_us_per_op"]).ok_or("bullmq Worker: no CPU")?;
    Ok((jobs_s, cpu))
}

/// Runs peers/bullmq.mjs's `phases` (comma-separated: add, bulk, worker) at the
/// bench's sizes; its one JSON line.
async fn run_bullmq(plan: &Plan, env: &Env, dir: &Path, phases: &str) -> Result<Value> {
    node::run_script(
        dir,
        "bullmq.mjs",
        &[
            ("REDIS_URL", env.redis_url.clone()),
            ("CONCURRENCY", plan.concurrency.to_string()),
            ("DURATION_MS", plan.duration.as_millis().to_string()),
            ("BATCH", plan.batch.to_string()),
            ("PREFILL", plan.prefill.to_string()),
            ("PHASES", phases.to_string()),
        ],
        Duration::from_secs(120),
    )
    .await
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
