//! Throughput and latency through gRPC, at the same concurrency as the ceiling.

use super::{
    ceiling::Ceiling,
    env::{Client, CpuPerOp, Env},
    load::drive,
    report::{Report, Row},
    seed, Plan, Result,
};
use crate::proto;

const S: &str = "grpc";
const NS: &str = "grpc";

fn job(queue: &str) -> proto::EnqueueRequest {
    proto::EnqueueRequest {
        namespace: NS.into(),
        queue: queue.into(),
        name: "bench".into(),
        payload: b"{\"n\":1}".to_vec(),
        ..Default::default()
    }
}

async fn clients(env: &Env, n: usize) -> Result<Vec<Client>> {
    // A few HTTP/2 connections shared by the callers, as a client fleet would.
    let mut conns = Vec::new();
    for _ in 0..n.clamp(1, 8) {
        conns.push(env.client().await?);
    }
    Ok((0..n).map(|i| conns[i % conns.len()].clone()).collect())
}

fn ratio(a: f64, b: f64) -> Option<f64> {
    (b > 0.0).then(|| a / b)
}

/// Adds where the CPU went per operation: what bounds throughput on a shared box.
fn with_cpu(row: Row, cpu: CpuPerOp) -> Row {
    row.with("service_cpu_us_per_op", cpu.service_us)
        .with("redis_cpu_us_per_op", cpu.redis_us)
        .with("bench_cpu_us_per_op", cpu.bench_us)
        .with("script_calls_per_op", cpu.script_calls)
        .and_note(format!(
            "CPU/op: service {:.0} us, Redis {:.0} us, bench client {:.0} us; script calls/op {:.2}",
            cpu.service_us, cpu.redis_us, cpu.bench_us, cpu.script_calls
        ))
}

pub async fn run(plan: &Plan, env: &Env, ceiling: &Ceiling, report: &mut Report) -> Result<()> {
    let cs = clients(env, plan.concurrency).await?;

    let cpu0 = env.cpu().await?;
    let s = drive(plan.concurrency, plan.duration, |i| {
        let c = cs[i].clone();
        move || {
            let mut c = c.clone();
            async move {
                c.enqueue(job("work")).await?;
                Ok(1)
            }
        }
    })
    .await?;
    let cpu = cpu0.per_op(&env.cpu().await?, s.items);
    let mut row = Row::stats(S, "Enqueue", &s);
    row.ratio = ratio(s.ops_s(), ceiling.enqueue);
    report.push(with_cpu(
        row.note("ratio to EVALSHA enqueue_jobs x1 (unpipelined)"),
        cpu,
    ));

    let batch = plan.batch;
    let cpu0 = env.cpu().await?;
    let s = drive(plan.concurrency, plan.duration, |i| {
        let c = cs[i].clone();
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
    })
    .await?;
    let cpu = cpu0.per_op(&env.cpu().await?, s.items);
    let mut row = Row::stats(S, "EnqueueBatch", &s);
    row.ratio = ratio(s.ops_s(), ceiling.enqueue_pipelined);
    report.push(with_cpu(
        row.note(format!(
            "{batch} jobs per call; ops = jobs; ratio to pipelined EVALSHA x1"
        )),
        cpu,
    ));

    // Claim + ack the jobs the Enqueue phase left in queue "work".
    let cpu0 = env.cpu().await?;
    let s = drive(plan.concurrency, plan.duration, |i| {
        let c = cs[i].clone();
        move || {
            let mut c = c.clone();
            async move {
                let claimed = c
                    .claim_job(proto::ClaimJobRequest {
                        namespace: NS.into(),
                        queues: vec!["work".into()],
                        worker_id: "bench".into(),
                        wait: None,
                        lease: None,
                        max_jobs: 1,
                    })
                    .await?
                    .into_inner()
                    .jobs;
                let Some(j) = claimed.into_iter().next() else {
                    return Ok(0);
                };
                c.ack_job(proto::AckJobRequest {
                    namespace: NS.into(),
                    job_id: j.job_id,
                    lease_token: j.lease_token,
                })
                .await?;
                Ok(1)
            }
        }
    })
    .await?;
    let cpu = cpu0.per_op(&env.cpu().await?, s.items);
    report.push(with_cpu(
        Row::stats(S, "ClaimJob+AckJob", &s)
            .note("one claim and one ack per op; ends early if the queue runs dry"),
        cpu,
    ));

    let cpu0 = env.cpu().await?;
    let s = drive(plan.concurrency, plan.duration, |i| {
        let c = cs[i].clone();
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
    })
    .await?;
    let cpu = cpu0.per_op(&env.cpu().await?, s.items);
    report.push(with_cpu(
        Row::stats(S, "UpsertSchedule", &s).note("new schedule per call, every 1h"),
        cpu,
    ));

    let mut c0 = env.client().await?;
    seed::ensure_namespace(&mut c0, "grpcclaim").await?;
    let cpu0 = env.cpu().await?;
    let s = drive(plan.concurrency, plan.duration, |i| {
        let c = cs[i].clone();
        move || {
            let mut c = c.clone();
            async move {
                c.claim_due_schedule(proto::ClaimDueScheduleRequest {
                    namespace: "grpcclaim".into(),
                    worker_id: "bench".into(),
                    wait: None,
                    lease: None,
                })
                .await?;
                Ok(1)
            }
        }
    })
    .await?;
    let cpu = cpu0.per_op(&env.cpu().await?, s.items);
    let mut row = Row::stats(S, "ClaimDueSchedule", &s);
    row.ratio = ratio(s.ops_s(), ceiling.claim);
    report.push(with_cpu(
        row.note("nothing due, no wait; ratio to EVALSHA claim_due"),
        cpu,
    ));
    report.note(
        S,
        format!(
            "concurrency {}, {} HTTP/2 connections, dueq serve as a child process (pool_size 4)",
            plan.concurrency,
            plan.concurrency.clamp(1, 8)
        ),
    );
    Ok(())
}
