//! The dispatch family (issue 30): schedules that enqueue jobs. `run` pushes this
//! file's rows; the family's other rows (WatchJob) come from their own file.
//!
//! Schedule target dispatch: 10,000 target schedules (50 with --smoke) whose first
//! slots fall within the same minute (6 ms apart), feeding one queue that workers
//! long-poll. Per slot: its job's create_time (the moment it became claimable, Redis's
//! clock in the script that enqueued it) minus the slot's due time, and the waiting
//! worker's receipt minus the due time. Then the burst: as many due at the same
//! millisecond (no target: it shows what a burst costs).

use std::{
    sync::Arc,
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use dueq::proto;
use tokio::sync::Mutex;
use tokio_util::sync::CancellationToken;

use crate::{
    env::{Client, Env},
    load::Stats,
    plan::Plan,
    redis_info::redis_now,
    report::{Report, Row},
    seed, Result,
};

const S: &str = "dispatch";
const QUEUE: &str = "feed";
/// Workers long-polling the queue.
const WORKERS: usize = 32;
/// How long after the last slot the jobs may take to arrive in all.
const BUDGET: Duration = Duration::from_secs(30);

/// (claimable - due, received - due), in µs, per slot.
type Sample = (i64, i64);

/// Runs the schedule target dispatch measurements and pushes their rows.
pub(crate) async fn run(plan: &Plan, env: &Env, report: &mut Report) -> Result<()> {
    let count: usize = if plan.smoke { 50 } else { 10_000 };
    let spacing_ms: i64 = if plan.smoke { 20 } else { 6 };
    let spread = measure(plan, env, "dispatch", count, spacing_ms, report).await?;
    push_row(
        report,
        "schedule target dispatch",
        &spread,
        count,
        &format!("target schedules due {spacing_ms} ms apart within a minute"),
    );
    let burst = measure(plan, env, "dispatchburst", count, 0, report).await?;
    push_row(
        report,
        "schedule target dispatch, all due at once",
        &burst,
        count,
        "target schedules due at the same millisecond",
    );
    Ok(())
}

/// `count` target schedules in namespace `ns` due `spacing_ms` apart: each slot's
/// delays.
async fn measure(
    plan: &Plan,
    env: &Env,
    ns: &'static str,
    count: usize,
    spacing_ms: i64,
    report: &mut Report,
) -> Result<Vec<Sample>> {
    let mut conn = env.conn().await?;
    // Far enough ahead for the upserts to land first (checked below).
    let lead_ms = if plan.smoke { 3_000 } else { 15_000 };
    let first_ms = redis_now(&mut conn).await? + lead_ms;
    let upserted_by = upsert_fleet(env, ns, plan.concurrency, count, first_ms, spacing_ms).await?;
    let samples = Arc::new(Mutex::new(Vec::with_capacity(count)));
    let cancel = CancellationToken::new();
    let mut tasks = Vec::new();
    for _ in 0..WORKERS {
        let client = env.client().await?;
        tasks.push(tokio::spawn(work(
            client,
            ns,
            cancel.clone(),
            samples.clone(),
        )));
    }
    let last_ms = first_ms + spacing_ms * (count as i64 - 1);
    let give_up = tokio::time::Instant::now()
        + Duration::from_millis(u64::try_from(last_ms - redis_now(&mut conn).await?).unwrap_or(0))
        + BUDGET;
    while samples.lock().await.len() < count && tokio::time::Instant::now() < give_up {
        crate::local::pause(Duration::from_millis(20)).await;
    }
    cancel.cancel();
    for task in tasks {
        let _ = task.await;
    }
    let samples = samples.lock().await.clone();
    if upserted_by > first_ms {
        report.note(
            S,
            format!(
                "{ns}: the upserts ended {} ms after the first slot was due: its lateness is in the figures",
                upserted_by - first_ms
            ),
        );
    }
    Ok(samples)
}

/// Upserts `count` hourly target schedules whose first slots are `spacing_ms` apart
/// from `first_ms`; returns Redis's time when the last one was stored.
async fn upsert_fleet(
    env: &Env,
    ns: &'static str,
    concurrency: usize,
    count: usize,
    first_ms: i64,
    spacing_ms: i64,
) -> Result<i64> {
    let lanes = concurrency.clamp(1, 32);
    let mut tasks = Vec::new();
    for lane in 0..lanes {
        let mut client = env.client().await?;
        tasks.push(tokio::spawn(async move {
            for k in (lane..count).step_by(lanes) {
                let at = first_ms + k as i64 * spacing_ms;
                let schedule = proto::Schedule {
                    start_time: Some(prost_types::Timestamp {
                        seconds: at.div_euclid(1000),
                        nanos: (at.rem_euclid(1000) * 1_000_000) as i32,
                    }),
                    target: Some(proto::schedule::Target::Enqueue(proto::EnqueueTarget {
                        queue: QUEUE.into(),
                        ..Default::default()
                    })),
                    ..seed::every_1h(&format!("t{k}"))
                };
                let request = proto::UpsertScheduleRequest {
                    namespace: ns.into(),
                    schedule: Some(schedule),
                };
                client.upsert_schedule(request).await?;
            }
            Ok::<(), tonic::Status>(())
        }));
    }
    for task in tasks {
        task.await??;
    }
    let mut conn = env.conn().await?;
    redis_now(&mut conn).await
}

// The host clock against the service's timestamps on the same host: a measured
// delay, not a decision of what is due.
#[allow(clippy::disallowed_methods)]
fn now_us() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_micros() as i64)
        .unwrap_or(0)
}

fn ts_us(ts: &Option<prost_types::Timestamp>) -> Option<i64> {
    ts.as_ref()
        .map(|t| t.seconds * 1_000_000 + i64::from(t.nanos) / 1_000)
}

/// A worker: long-polls the queue, acks each job in its next claim, and records each
/// job's delays after its slot's due time.
async fn work(
    mut client: Client,
    ns: &'static str,
    cancel: CancellationToken,
    samples: Arc<Mutex<Vec<Sample>>>,
) {
    let mut acks = Vec::new();
    loop {
        let req = proto::ClaimJobRequest {
            namespace: ns.into(),
            queues: vec![QUEUE.into()],
            worker_id: "bench".into(),
            wait: Some(prost_types::Duration {
                seconds: 5,
                nanos: 0,
            }),
            max_jobs: 10,
            acks: std::mem::take(&mut acks),
            ..Default::default()
        };
        let got = tokio::select! {
            r = client.claim_job(req) => r,
            _ = cancel.cancelled() => return,
        };
        let received = now_us();
        let Ok(reply) = got else { continue };
        for job in reply.into_inner().jobs {
            let due = job.schedule.as_ref().and_then(|s| ts_us(&s.due_time));
            if let (Some(due), Some(created)) = (due, ts_us(&job.create_time)) {
                samples.lock().await.push((created - due, received - due));
            }
            acks.push(proto::JobLease {
                job_id: job.job_id,
                lease_token: job.lease_token,
                ..Default::default()
            });
        }
    }
}

fn push_row(report: &mut Report, name: &str, samples: &[Sample], count: usize, how: &str) {
    let ns_of = |us: i64| us.max(0) as u64 * 1_000;
    let claimable: Vec<u64> = samples.iter().map(|&(c, _)| ns_of(c)).collect();
    let received: Vec<u64> = samples.iter().map(|&(_, r)| ns_of(r)).collect();
    let n = claimable.len() as u64;
    let s = Stats::from_latencies(claimable, n, 0.0);
    let r = Stats::from_latencies(received, n, 0.0);
    report.push(
        Row::latency(S, name, &s)
            .with("jobs", n)
            .with("schedules", count as u64)
            .with("received_p50_ms", r.p50_ms)
            .with("received_p99_ms", r.p99_ms)
            .note(format!(
                "job create_time - slot due_time; {n}/{count} {how}; a long-polling worker \
                 received them after p50 {:.1} p99 {:.1} ms",
                r.p50_ms, r.p99_ms
            )),
    );
}
