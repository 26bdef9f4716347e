//! The deps family (issue 34): what job dependencies cost. Every phase drains with
//! one worker whose ClaimJob calls (up to 100 jobs) carry the acks of the jobs before
//! (one script call per claim, as a fast worker does), so script calls per job
//! compare between a flow and plain jobs.
//!
//! - `fan-in`: FAN - 1 roots and one sink after all of them (the fan-in),
//!   drained, against the same number of plain jobs drained the same way right
//!   after: script calls and Redis CPU per job (target `deps fan-in extra script
//!   calls/job <= 1`), and the sink's claim carries FAN - 1 dependencies.
//! - `fan-out`: one root and FAN - 1 dependents: the time from the root's ack to
//!   every dependent claimed (the ack readies graph.INLINE of them itself, the
//!   graph work queue and the pruner's nudge the rest).
//! - `chain`: CHAIN nodes one after another: per hop, the time from a node's ack to
//!   its successor's claim by a long-polling worker.
//! - `enqueue`: EnqueueFlow of FAN-node flows, stored in parts and committed.
//!
//! Every phase watches its graph scripts with SLOWLOG: target `deps script <= 10 ms`
//! (the longest call of enqueue_flow, drain_graph, claim_jobs, ack_job in any phase).

use std::time::{Duration, Instant};

use dueq::proto;

use crate::{
    env::{Client, Env},
    load::Stats,
    plan::Plan,
    report::{Report, Row},
    script_time::{self, ScriptTime},
    Result,
};

pub(crate) const S: &str = "deps";
const NS: &str = "deps";
pub(crate) const FAN_IN_ROW: &str = "fan-in 999 -> 1, drained";
pub(crate) const PLAIN_ROW: &str = "plain jobs, drained the same way";
pub(crate) const FAN_OUT_ROW: &str = "fan-out 1 -> 999: root ack -> all claimed";
pub(crate) const CHAIN_ROW: &str = "chain: ack -> successor claimed";
pub(crate) const ENQUEUE_ROW: &str = "EnqueueFlow, 1,000 nodes";
/// The extra key every row carries: its phase's longest graph script call, µs.
pub(crate) const LONGEST: &str = "longest_script_us";

const FAN: usize = 1_000;
const CHAIN: usize = 100;
/// Longest a drain may go without a claimed job before it is a failure.
const STALL: Duration = Duration::from_secs(10);

pub(crate) async fn run(plan: &Plan, env: &Env, report: &mut Report) -> Result<()> {
    fan_in(env, report).await?;
    env.reset().await?;
    fan_out(env, report).await?;
    env.reset().await?;
    chain(plan, env, report).await?;
    env.reset().await?;
    enqueue(plan, env, report).await
}

fn job(queue: &str, name: &str) -> proto::EnqueueRequest {
    proto::EnqueueRequest {
        namespace: NS.into(),
        queue: queue.into(),
        name: name.into(),
        payload: b"{\"n\":1}".to_vec(),
        ..Default::default()
    }
}

fn node(reference: String, queue: &str, after: Vec<String>) -> proto::FlowNode {
    proto::FlowNode {
        job: Some(job(queue, &reference)),
        r#ref: reference,
        after,
        on_dependency_failure: 0,
    }
}

async fn enqueue_flow(client: &mut Client, nodes: Vec<proto::FlowNode>) -> Result<()> {
    client
        .enqueue_flow(proto::EnqueueFlowRequest {
            namespace: NS.into(),
            nodes,
            flow_id: String::new(),
        })
        .await?;
    Ok(())
}

/// Roots r0..r{n-2} and a sink after all of them.
fn fan_in_nodes(queue: &str) -> Vec<proto::FlowNode> {
    let mut nodes: Vec<_> = (0..FAN - 1)
        .map(|i| node(format!("r{i}"), queue, Vec::new()))
        .collect();
    let all = nodes.iter().map(|n| n.r#ref.clone()).collect();
    nodes.push(node("sink".into(), queue, all));
    nodes
}

/// One root and FAN - 1 dependents.
fn fan_out_nodes(queue: &str) -> Vec<proto::FlowNode> {
    let mut nodes = vec![node("root".into(), queue, Vec::new())];
    nodes.extend((1..FAN).map(|i| node(format!("d{i}"), queue, vec!["root".into()])));
    nodes
}

fn claim(queue: &str, acks: Vec<proto::JobLease>, wait_ms: i32) -> proto::ClaimJobRequest {
    proto::ClaimJobRequest {
        namespace: NS.into(),
        queues: vec![queue.into()],
        worker_id: "bench".into(),
        wait: Some(prost_types::Duration {
            seconds: i64::from(wait_ms / 1_000),
            nanos: (wait_ms % 1_000) * 1_000_000,
        }),
        lease: Some(prost_types::Duration {
            seconds: 600,
            nanos: 0,
        }),
        max_jobs: 100,
        acks,
    }
}

fn lease(job: &proto::ClaimedJob) -> proto::JobLease {
    proto::JobLease {
        job_id: job.job_id.clone(),
        lease_token: job.lease_token.clone(),
        result: Vec::new(),
    }
}

/// Claims and acks `target` jobs of `queue`, each claim carrying the acks of the
/// jobs before; the most dependencies one claimed job carried.
async fn drain(client: &mut Client, queue: &str, target: usize) -> Result<usize> {
    let (mut done, mut acks, mut most) = (0, Vec::new(), 0);
    let mut last = Instant::now();
    while done < target {
        let jobs = client
            .claim_job(claim(queue, std::mem::take(&mut acks), 200))
            .await?
            .into_inner()
            .jobs;
        if jobs.is_empty() && last.elapsed() > STALL {
            return Err(format!("{queue}: stalled at {done}/{target} jobs").into());
        }
        if !jobs.is_empty() {
            last = Instant::now();
        }
        for j in &jobs {
            most = most.max(j.dependencies.len());
        }
        done += jobs.len();
        acks = jobs.iter().map(lease).collect();
    }
    client.claim_job(claim(queue, acks, 0)).await?;
    Ok(most)
}

/// The scripts a flow's work runs in.
const GRAPH_SCRIPTS: &[&str] = &[
    "enqueue_flow",
    "drain_graph",
    "claim_jobs",
    "ack_job",
    "prune_jobs",
];

/// Runs `phase` with the Redis CPU and script calls it took per `items`, and its
/// longest call of a graph script.
async fn measured<T>(
    env: &Env,
    items: u64,
    phase: impl std::future::Future<Output = Result<T>>,
) -> Result<(T, crate::cpu::CpuPerOp, ScriptTime, f64)> {
    let mut conn = env.conn().await?;
    let before = env.cpu().await?;
    let started = Instant::now();
    let (out, time) = script_time::timed_any(&mut conn, GRAPH_SCRIPTS, phase).await?;
    let secs = started.elapsed().as_secs_f64();
    let cpu = before.per_op(&env.cpu().await?, items);
    Ok((out, cpu, time, secs))
}

fn cost_row(
    name: &str,
    items: usize,
    cpu: crate::cpu::CpuPerOp,
    time: ScriptTime,
    secs: f64,
) -> Row {
    let mut row = Row::new(S, name);
    row.ops_s = Some(items as f64 / secs.max(1e-9));
    row.with("script_calls_per_job", cpu.script_calls)
        .with("redis_cpu_us_per_job", cpu.redis_us)
        .with(LONGEST, time.longest_us as f64)
        .and_note(format!(
            "per job: {:.2} script calls, Redis CPU {:.0} us; longest graph script {} us",
            cpu.script_calls, cpu.redis_us, time.longest_us
        ))
}

async fn fan_in(env: &Env, report: &mut Report) -> Result<()> {
    let mut client = env.client().await?;
    enqueue_flow(&mut client, fan_in_nodes("fi")).await?;
    let (most, cpu, time, secs) = measured(env, FAN as u64, drain(&mut client, "fi", FAN)).await?;
    if most != FAN - 1 {
        return Err(format!(
            "the sink's claim carried {most} dependencies, not {}",
            FAN - 1
        )
        .into());
    }
    report.push(cost_row(FAN_IN_ROW, FAN, cpu, time, secs));
    // The same number of plain jobs, drained the same way.
    for chunk in (0..FAN).collect::<Vec<_>>().chunks(500) {
        let jobs = chunk
            .iter()
            .map(|i| job("plain", &format!("p{i}")))
            .collect();
        client
            .enqueue_batch(proto::EnqueueBatchRequest {
                namespace: NS.into(),
                jobs,
            })
            .await?;
    }
    let (_, cpu, time, secs) = measured(env, FAN as u64, drain(&mut client, "plain", FAN)).await?;
    report.push(cost_row(PLAIN_ROW, FAN, cpu, time, secs));
    Ok(())
}

async fn fan_out(env: &Env, report: &mut Report) -> Result<()> {
    let mut client = env.client().await?;
    enqueue_flow(&mut client, fan_out_nodes("fo")).await?;
    let root = client
        .claim_job(claim("fo", Vec::new(), 0))
        .await?
        .into_inner()
        .jobs;
    let root = root.first().ok_or("the root was not claimable")?;
    let phase = async {
        let started = Instant::now();
        // The root's ack rides the first claim, which may already take dependents
        // the ack readied.
        let mut acks = vec![lease(root)];
        let mut got = 0;
        while got < FAN - 1 {
            let jobs = client
                .claim_job(claim("fo", std::mem::take(&mut acks), 200))
                .await?
                .into_inner()
                .jobs;
            if jobs.is_empty() && started.elapsed() > STALL {
                return Err(format!("fan-out: {got}/{} dependents claimed", FAN - 1).into());
            }
            got += jobs.len();
            acks = jobs.iter().map(lease).collect();
        }
        let all = started.elapsed();
        client.claim_job(claim("fo", acks, 0)).await?;
        Ok(all)
    };
    let (all, _, time, _) = measured(env, FAN as u64, phase).await?;
    let mut row = Row::new(S, FAN_OUT_ROW);
    row.p50_ms = Some(all.as_secs_f64() * 1e3);
    report.push(
        row.with(LONGEST, time.longest_us as f64)
            .and_note(format!("longest graph script {} us", time.longest_us)),
    );
    Ok(())
}

async fn chain(plan: &Plan, env: &Env, report: &mut Report) -> Result<()> {
    let hops = if plan.smoke { 20 } else { CHAIN };
    let mut client = env.client().await?;
    let nodes = (0..hops)
        .map(|i| {
            let after = if i == 0 {
                Vec::new()
            } else {
                vec![format!("c{}", i - 1)]
            };
            node(format!("c{i}"), "ch", after)
        })
        .collect();
    enqueue_flow(&mut client, nodes).await?;
    let phase = async {
        let mut lat = Vec::with_capacity(hops);
        let mut held = client
            .claim_job(claim("ch", Vec::new(), 0))
            .await?
            .into_inner()
            .jobs;
        for _ in 1..hops {
            let acks = held.iter().map(lease).collect();
            let sent = Instant::now();
            // The ack rides the claim; a successor readied by it is claimed at once or
            // by the long-poll's wake-up.
            held = client
                .claim_job(claim("ch", acks, 2_000))
                .await?
                .into_inner()
                .jobs;
            if held.is_empty() {
                return Err("chain: a successor was not claimed within 2 s".into());
            }
            lat.push(sent.elapsed().as_nanos() as u64);
        }
        client
            .claim_job(claim("ch", held.iter().map(lease).collect(), 0))
            .await?;
        Ok(lat)
    };
    let (lat, _, time, secs) = measured(env, hops as u64, phase).await?;
    let stats = Stats::from_latencies(lat, hops as u64 - 1, secs);
    report.push(
        Row::stats(S, CHAIN_ROW, &stats)
            .with(LONGEST, time.longest_us as f64)
            .and_note(format!("{hops} nodes, one long-polling worker")),
    );
    Ok(())
}

async fn enqueue(plan: &Plan, env: &Env, report: &mut Report) -> Result<()> {
    let flows = if plan.smoke { 2 } else { 10 };
    let mut client = env.client().await?;
    let phase = async {
        let mut lat = Vec::with_capacity(flows);
        for i in 0..flows {
            let nodes = if i % 2 == 0 {
                fan_in_nodes("e")
            } else {
                fan_out_nodes("e")
            };
            let started = Instant::now();
            enqueue_flow(&mut client, nodes).await?;
            lat.push(started.elapsed().as_nanos() as u64);
        }
        Ok(lat)
    };
    let (lat, cpu, time, secs) = measured(env, flows as u64, phase).await?;
    let stats = Stats::from_latencies(lat, flows as u64, secs);
    report.push(
        Row::stats(S, ENQUEUE_ROW, &stats)
            .with(LONGEST, time.longest_us as f64)
            .with("script_calls_per_flow", cpu.script_calls)
            .and_note(format!(
                "fan-in and fan-out flows; {:.0} script calls and {:.1} ms Redis CPU per flow; \
                 longest graph script {} us",
                cpu.script_calls,
                cpu.redis_us / 1e3,
                time.longest_us
            )),
    );
    Ok(())
}
