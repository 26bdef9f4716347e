//! What flow control costs a worker when its limits never bind: one Work stream
//! (capacity `plan.concurrency`, every job acked on arrival, the fastest worker
//! path) drains `plan.prefill` jobs of one queue, four ways, in rounds that take
//! the four in turn (each round from an empty Redis, the order rotated every round):
//!
//! - keyed jobs (a fairness key of 100, a concurrency and a rate key of 1,000 each)
//!   under a policy whose limits never bind: max_running 10,000 and per-key
//!   max_running 1,000 against a stream holding at most `plan.concurrency` jobs,
//!   rates of 1,000,000/s against a drain of tens of thousands a second;
//! - the same jobs with no policy (the target's baseline);
//! - keyless jobs with no policy (what the keys cost without any limit);
//! - keyless jobs under queue-wide max_running and rate that never bind.
//!
//! Each row is the median of its rounds; its ratio is to the median of its baseline
//! (target `flow limits not binding >= 0.9x unlimited` on the first).

use std::sync::Arc;

use dueq::proto;
use serde_json::json;

use super::{drain, enqueue_all, job, median, per_second, set_policy, MakeJob, S};
use crate::{
    env::Env,
    grpc::with_cpu,
    load::Stats,
    plan::Plan,
    report::{Report, Row},
    Result,
};

const QUEUE: &str = "t";

/// The row the target reads.
pub(crate) const TARGET_ROW: &str = "keyed jobs, limits not binding";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    KeyedPolicy,
    Keyed,
    Plain,
    PlainQueueLimits,
}

const KINDS: [Kind; 4] = [
    Kind::KeyedPolicy,
    Kind::Keyed,
    Kind::Plain,
    Kind::PlainQueueLimits,
];

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::KeyedPolicy => TARGET_ROW,
            Kind::Keyed => "keyed jobs, no policy",
            Kind::Plain => "keyless jobs, no policy",
            Kind::PlainQueueLimits => "keyless jobs, queue limits not binding",
        }
    }

    fn keyed(self) -> bool {
        matches!(self, Kind::KeyedPolicy | Kind::Keyed)
    }

    /// What the row's ratio divides by.
    fn baseline(self) -> Option<Kind> {
        match self {
            Kind::KeyedPolicy => Some(Kind::Keyed),
            Kind::Keyed | Kind::PlainQueueLimits => Some(Kind::Plain),
            Kind::Plain => None,
        }
    }

    fn policy(self) -> Option<proto::QueuePolicy> {
        let queue_wide = proto::QueuePolicy {
            max_running: 10_000,
            rate: Some(per_second(1_000_000, 1_000_000)),
            ..Default::default()
        };
        match self {
            Kind::KeyedPolicy => Some(proto::QueuePolicy {
                per_key_max_running: 1_000,
                per_key_rate: Some(per_second(1_000_000, 1_000)),
                ..queue_wide
            }),
            Kind::PlainQueueLimits => Some(queue_wide),
            Kind::Keyed | Kind::Plain => None,
        }
    }

    fn make(self) -> MakeJob {
        let keyed = self.keyed();
        Arc::new(move |i| {
            let mut j = job(QUEUE, "bench");
            if keyed {
                j.fairness_key = format!("t{}", i % 100);
                j.concurrency_key = format!("c{}", i % 1_000);
                j.rate_key = format!("r{}", i % 1_000);
            }
            j
        })
    }
}

/// One drain's jobs/s, script calls and Redis CPU per job.
#[derive(Debug, Clone, Copy)]
struct Round {
    jobs_s: f64,
    script_calls: f64,
    redis_us: f64,
}

pub(super) async fn run(plan: &Plan, env: &Env, report: &mut Report) -> Result<()> {
    let rounds = if plan.smoke { 2 } else { 5 };
    let mut got: Vec<Vec<Round>> = vec![Vec::new(); KINDS.len()];
    for r in 0..rounds {
        for k in 0..KINDS.len() {
            let i = (k + r) % KINDS.len();
            got[i].push(round(plan, env, KINDS[i]).await?);
        }
    }
    for (i, kind) in KINDS.iter().enumerate() {
        let base = kind
            .baseline()
            .and_then(|b| KINDS.iter().position(|&k| k == b));
        report.push(row(
            plan,
            *kind,
            &got[i],
            base.map(|b| (KINDS[b], &got[b][..])),
        ));
    }
    Ok(())
}

/// One drain of `kind`, from an empty Redis.
async fn round(plan: &Plan, env: &Env, kind: Kind) -> Result<Round> {
    env.reset().await?;
    if let Some(policy) = kind.policy() {
        set_policy(env, QUEUE, Some(policy)).await?;
    }
    let n = plan.prefill;
    enqueue_all(env, n, 4, kind.make()).await?;
    let client = env.client().await?;
    let phase = async {
        let secs = drain(client, QUEUE, plan.concurrency, n, |_, _| {})
            .await?
            .complete(QUEUE, n)?;
        Ok(Stats {
            items: n,
            calls: n,
            secs,
            ..Stats::default()
        })
    };
    let (s, cpu) = with_cpu(env, phase).await?;
    Ok(Round {
        jobs_s: s.ops_s(),
        script_calls: cpu.script_calls,
        redis_us: cpu.redis_us,
    })
}

/// A kind's row: medians of its rounds; with its ratio to `base`'s median and
/// each round's ratio to the baseline's drain of the same round.
fn row(plan: &Plan, kind: Kind, got: &[Round], base: Option<(Kind, &[Round])>) -> Row {
    let pick = |f: fn(&Round) -> f64| median(&got.iter().map(f).collect::<Vec<_>>());
    let (jobs_s, calls, redis) = (
        pick(|d| d.jobs_s),
        pick(|d| d.script_calls),
        pick(|d| d.redis_us),
    );
    let each: Vec<String> = got.iter().map(|d| format!("{:.0}", d.jobs_s)).collect();
    let mut row = Row::new(S, kind.name())
        .with("jobs_s_rounds", json!(got.iter().map(|d| d.jobs_s).collect::<Vec<_>>()))
        .with("script_calls_per_job", calls)
        .with("redis_cpu_us_per_job", redis)
        .with("jobs", plan.prefill)
        .note(format!(
            "median of {} rounds ({} jobs/s); {} jobs, one Work stream of capacity {}; script calls/job {calls:.2}, Redis CPU/job {redis:.0} us",
            got.len(),
            each.join(", "),
            plan.prefill,
            plan.concurrency
        ));
    row.ops_s = Some(jobs_s);
    if let Some((b, rounds)) = base {
        let b_jobs_s = median(&rounds.iter().map(|d| d.jobs_s).collect::<Vec<_>>());
        let each: Vec<String> = got
            .iter()
            .zip(rounds)
            .map(|(a, b)| format!("{:.2}", a.jobs_s / b.jobs_s.max(f64::MIN_POSITIVE)))
            .collect();
        row.ratio = (b_jobs_s > 0.0).then(|| jobs_s / b_jobs_s);
        row = row.with("ratio_to", b.name()).and_note(format!(
            "ratio: to \"{}\", median / median (round by round: {})",
            b.name(),
            each.join(", ")
        ));
    }
    row
}
