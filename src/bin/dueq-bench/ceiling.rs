//! The ceiling: the very scripts dueq runs (enqueue_jobs, claim_due), called straight
//! on Redis with FCALL at the same concurrency, one call in flight per connection
//! (unpipelined) or `batch` calls per pipeline. The denominators of the gRPC ratios.

use deadpool_redis::redis::{self, Cmd};
use dueq::probe::{claim_due, enqueue_jobs, load_scripts};

use crate::{
    env::{Env, PREFIX},
    load::{drive, Stats},
    plan::Plan,
    report::{Report, Row},
    seed, Result,
};

const S: &str = "ceiling";
/// Namespace the ceiling enqueues into.
const ENQUEUE_NS: &str = "ceil";
/// Namespace the ceiling claims from: one schedule, not due for an hour.
const CLAIM_NS: &str = "ceilclaim";

/// Ceiling throughputs, in items per second.
#[derive(Debug, Default, Clone)]
pub(crate) struct Ceiling {
    pub(crate) enqueue: f64,
    pub(crate) enqueue_pipelined: f64,
    pub(crate) claim: f64,
    pub(crate) claim_pipelined: f64,
}

fn enqueue_cmd(jobs: usize) -> Cmd {
    enqueue_jobs(PREFIX, ENQUEUE_NS, "ceil", jobs)
}

fn claim_cmd() -> Cmd {
    claim_due(PREFIX, CLAIM_NS)
}

/// `concurrency` callers, each on a connection of its own with one call in flight:
/// what a gRPC caller waiting for its answer costs Redis.
async fn unpipelined(
    plan: &Plan,
    env: &Env,
    items: u64,
    make: impl Fn() -> Cmd + Clone + Send + 'static,
) -> Result<Stats> {
    let mut conns = Vec::new();
    for _ in 0..plan.concurrency {
        conns.push(env.conn().await?);
    }
    drive(plan.concurrency, plan.duration, |i| {
        let conn = conns[i].clone();
        let make = make.clone();
        move || {
            let mut conn = conn.clone();
            let cmd = make();
            async move {
                cmd.query_async::<redis::Value>(&mut conn).await?;
                Ok(items)
            }
        }
    })
    .await
}

/// As `unpipelined`, with `batch` calls per round trip: Redis's own limit for them.
// Pipelines the service's exact script calls (dueq::probe): Redis's own ceiling.
#[allow(clippy::disallowed_methods)]
async fn pipelined(
    plan: &Plan,
    env: &Env,
    make: impl Fn() -> Cmd + Clone + Send + 'static,
) -> Result<Stats> {
    let mut conns = Vec::new();
    for _ in 0..plan.concurrency {
        conns.push(env.conn().await?);
    }
    let batch = plan.batch;
    drive(plan.concurrency, plan.duration, |i| {
        let conn = conns[i].clone();
        let make = make.clone();
        move || {
            let mut conn = conn.clone();
            let mut pipe = redis::pipe();
            for _ in 0..batch {
                pipe.add_command(make()).ignore();
            }
            async move {
                pipe.query_async::<()>(&mut conn).await?;
                Ok(batch as u64)
            }
        }
    })
    .await
}

pub(crate) async fn run(plan: &Plan, env: &Env, report: &mut Report) -> Result<Ceiling> {
    // Loaded up front, so that no measured FCALL misses its function.
    load_scripts(&mut env.conn().await?).await?;
    seed::ensure_namespace(&mut env.client().await?, CLAIM_NS).await?;
    let mut c = Ceiling::default();

    let s = unpipelined(plan, env, 1, || enqueue_cmd(1)).await?;
    c.enqueue = s.ops_s();
    report.push(Row::stats(S, "FCALL enqueue_jobs x1", &s).note("one job per call"));

    let s = pipelined(plan, env, || enqueue_cmd(1)).await?;
    c.enqueue_pipelined = s.ops_s();
    report.push(
        Row::stats(S, "FCALL enqueue_jobs x1, pipelined", &s).note(format!(
            "{} calls per pipeline; latency per pipeline",
            plan.batch
        )),
    );

    let batch = plan.batch;
    let s = unpipelined(plan, env, batch as u64, move || enqueue_cmd(batch)).await?;
    report.push(
        Row::stats(S, format!("FCALL enqueue_jobs x{batch} (one call)"), &s)
            .note("what EnqueueBatch runs; ops = jobs"),
    );

    let s = unpipelined(plan, env, 1, claim_cmd).await?;
    c.claim = s.ops_s();
    report.push(Row::stats(S, "FCALL claim_due (nothing due)", &s));

    let s = pipelined(plan, env, claim_cmd).await?;
    c.claim_pipelined = s.ops_s();
    report.push(
        Row::stats(S, "FCALL claim_due (nothing due), pipelined", &s)
            .note(format!("{} calls per pipeline", plan.batch)),
    );
    report.note(
        S,
        format!(
            "concurrency {}: one connection per caller, as many callers as the gRPC phases",
            plan.concurrency
        ),
    );
    Ok(c)
}
