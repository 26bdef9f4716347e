//! Throughput and latency through gRPC, at the same concurrency as the ceiling, with
//! the CPU each operation cost in the service, in Redis and in the bench client.

use std::future::Future;

use dueq::proto;

use crate::{
    ceiling::Ceiling,
    cpu::CpuPerOp,
    env::{Client, Env},
    load::{drive, Stats},
    plan::Plan,
    report::{Report, Row},
    script_time, seed, Result,
};

const S: &str = "grpc";
const NS: &str = "grpc";
/// Namespace of the ClaimDueSchedule phase: one schedule, not due for an hour.
const CLAIM_NS: &str = "grpcclaim";
/// Queue the Enqueue phase fills and the ClaimJob+AckJob phase drains.
const WORK_QUEUE: &str = "work";

pub(crate) async fn run(
    plan: &Plan,
    env: &Env,
    ceiling: &Ceiling,
    report: &mut Report,
) -> Result<()> {
    let callers = clients(env, plan.concurrency).await?;
    enqueue(plan, env, &callers, ceiling, report).await?;
    enqueue_batch(plan, env, &callers, ceiling, report).await?;
    claim_and_ack(plan, env, &callers, report).await?;
    upsert_schedule(plan, env, &callers, report).await?;
    claim_due_schedule(plan, env, &callers, ceiling, report).await?;
    report.note(
        S,
        format!(
            "concurrency {}, {} HTTP/2 connections, dueq serve as a child process (pool_size 4)",
            plan.concurrency,
            connections(plan.concurrency)
        ),
    );
    Ok(())
}

/// HTTP/2 connections the callers share, as a client fleet would: a few, not one
/// per caller.
pub(crate) fn connections(callers: usize) -> usize {
    callers.clamp(1, 8)
}

/// One client per caller, over `connections(n)` connections.
pub(crate) async fn clients(env: &Env, n: usize) -> Result<Vec<Client>> {
    spread(n, env.client().await?, || env.client()).await
}

/// One client per caller over `connections(n)` connections: `first`, then more
/// made by `more`.
pub(crate) async fn spread<C, F, Fut>(n: usize, first: C, mut more: F) -> Result<Vec<C>>
where
    C: Clone,
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<C>>,
{
    let mut shared = vec![first];
    while shared.len() < connections(n) {
        shared.push(more().await?);
    }
    Ok((0..n).map(|i| shared[i % shared.len()].clone()).collect())
}

/// Runs one load phase and measures the CPU it cost per item.
pub(crate) async fn with_cpu(
    env: &Env,
    phase: impl Future<Output = Result<Stats>>,
) -> Result<(Stats, CpuPerOp)> {
    let before = env.cpu().await?;
    let stats = phase.await?;
    let cpu = before.per_op(&env.cpu().await?, stats.items);
    Ok((stats, cpu))
}

/// The row for a phase, with where the CPU went per operation: what bounds
/// throughput on a shared box.
fn row(name: &str, stats: &Stats, cpu: CpuPerOp, ratio_to: Option<f64>, note: &str) -> Row {
    let mut row = Row::stats(S, name, stats);
    row.ratio = ratio_to
        .filter(|&ceiling| ceiling > 0.0)
        .map(|ceiling| stats.ops_s() / ceiling);
    row.note(note)
        .with("service_cpu_us_per_op", cpu.service_us)
        .with("redis_cpu_us_per_op", cpu.redis_us)
        .with("bench_cpu_us_per_op", cpu.bench_us)
        .with("script_calls_per_op", cpu.script_calls)
        .and_note(format!(
            "CPU/op: service {:.0} us, Redis {:.0} us, bench client {:.0} us; script calls/op {:.2}",
            cpu.service_us, cpu.redis_us, cpu.bench_us, cpu.script_calls
        ))
}

fn job(queue: &str) -> proto::EnqueueRequest {
    proto::EnqueueRequest {
        namespace: NS.into(),
        queue: queue.into(),
        name: "bench".into(),
        payload: b"{\"n\":1}".to_vec(),
        ..Default::default()
    }
}

async fn enqueue(
    plan: &Plan,
    env: &Env,
    callers: &[Client],
    ceiling: &Ceiling,
    report: &mut Report,
) -> Result<()> {
    let phase = drive(plan.concurrency, plan.duration, |i| {
        let c = callers[i].clone();
        move || {
            let mut c = c.clone();
            async move {
                c.enqueue(job(WORK_QUEUE)).await?;
                Ok(1)
            }
        }
    });
    let (s, cpu) = with_cpu(env, phase).await?;
    report.push(row(
        "Enqueue",
        &s,
        cpu,
        Some(ceiling.enqueue),
        "ratio to FCALL enqueue_jobs x1 (unpipelined)",
    ));
    Ok(())
}

async fn enqueue_batch(
    plan: &Plan,
    env: &Env,
    callers: &[Client],
    ceiling: &Ceiling,
    report: &mut Report,
) -> Result<()> {
    let batch = plan.batch;
    let phase = drive(plan.concurrency, plan.duration, |i| {
        let c = callers[i].clone();
        move || {
            let mut c = c.clone();
            async move {
                let jobs = (0..batch).map(|_| job("batch")).collect();
                c.enqueue_batch(proto::EnqueueBatchRequest {
                    namespace: NS.into(),
                    jobs,
                })
                .await?;
                Ok(batch as u64)
            }
        }
    });
    let mut conn = env.conn().await?;
    let ((s, cpu), script) =
        script_time::timed(&mut conn, "enqueue_jobs", with_cpu(env, phase)).await?;
    report.push(
        row(
            "EnqueueBatch",
            &s,
            cpu,
            Some(ceiling.enqueue_pipelined),
            &format!("{batch} jobs per call; ops = jobs; ratio to pipelined FCALL x1"),
        )
        .with("script_mean_us", script.mean_us)
        .with("script_longest_us", script.longest_us)
        .with("scripts_over_10ms", script.over_10ms)
        .and_note(format!(
            "script time: mean {:.0} us per script call, longest enqueue_jobs {:.2} ms (SLOWLOG), {} over 10 ms",
            script.mean_us,
            script.longest_us as f64 / 1000.0,
            script.over_10ms
        )),
    );
    Ok(())
}

/// Claims and acks the jobs the Enqueue phase left in the work queue.
async fn claim_and_ack(
    plan: &Plan,
    env: &Env,
    callers: &[Client],
    report: &mut Report,
) -> Result<()> {
    let phase = drive(plan.concurrency, plan.duration, |i| {
        let c = callers[i].clone();
        move || {
            let mut c = c.clone();
            async move {
                let claimed = c
                    .claim_job(proto::ClaimJobRequest {
                        namespace: NS.into(),
                        queues: vec![WORK_QUEUE.into()],
                        worker_id: "bench".into(),
                        wait: None,
                        lease: None,
                        max_jobs: 1,
                        acks: vec![],
                    })
                    .await?
                    .into_inner()
                    .jobs;
                let Some(j) = claimed.into_iter().next() else {
                    return Ok(0);
                };
                c.ack_job(proto::AckJobRequest {
                    result: Vec::new(),
                    namespace: NS.into(),
                    job_id: j.job_id,
                    lease_token: j.lease_token,
                })
                .await?;
                Ok(1)
            }
        }
    });
    let (s, cpu) = with_cpu(env, phase).await?;
    report.push(row(
        "ClaimJob+AckJob",
        &s,
        cpu,
        None,
        "one claim and one ack per op; ends early if the queue runs dry; see [consume] for the drain of a pre-filled queue",
    ));
    Ok(())
}

async fn upsert_schedule(
    plan: &Plan,
    env: &Env,
    callers: &[Client],
    report: &mut Report,
) -> Result<()> {
    let phase = drive(plan.concurrency, plan.duration, |i| {
        let c = callers[i].clone();
        let mut n = 0u64;
        move || {
            let mut c = c.clone();
            n += 1;
            let id = format!("u{i}-{n}");
            async move {
                c.upsert_schedule(proto::UpsertScheduleRequest {
                    namespace: NS.into(),
                    schedule: Some(seed::every_1h(&id)),
                })
                .await?;
                Ok(1)
            }
        }
    });
    let (s, cpu) = with_cpu(env, phase).await?;
    report.push(row(
        "UpsertSchedule",
        &s,
        cpu,
        None,
        "new schedule per call, every 1h",
    ));
    Ok(())
}

async fn claim_due_schedule(
    plan: &Plan,
    env: &Env,
    callers: &[Client],
    ceiling: &Ceiling,
    report: &mut Report,
) -> Result<()> {
    seed::ensure_namespace(&mut env.client().await?, CLAIM_NS).await?;
    let phase = drive(plan.concurrency, plan.duration, |i| {
        let c = callers[i].clone();
        move || {
            let mut c = c.clone();
            async move {
                c.claim_due_schedule(proto::ClaimDueScheduleRequest {
                    namespace: CLAIM_NS.into(),
                    worker_id: "bench".into(),
                    wait: None,
                    lease: None,
                })
                .await?;
                Ok(1)
            }
        }
    });
    let (s, cpu) = with_cpu(env, phase).await?;
    report.push(row(
        "ClaimDueSchedule",
        &s,
        cpu,
        Some(ceiling.claim),
        "nothing due, no wait; ratio to FCALL claim_due",
    ));
    Ok(())
}
