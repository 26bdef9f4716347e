//! The flow family (issue 32): what flow control costs and how it behaves under
//! load. Each part lives in its own file and pushes its rows to section `flow`:
//!
//! - `throughput`: a Work stream drains keyed jobs under a policy whose limits never
//!   bind, against the same jobs with no policy, in paired rounds (target `flow
//!   limits not binding >= 0.9x unlimited`); keyed against keyless jobs and
//!   queue-wide limits against none, so every cost shows.
//! - `slot`: concurrency keys at their limit with backlogs; an ack frees a slot and a
//!   waiting worker receives the key's next job (target `flow slot freed -> dispatch
//!   p99 <= 5 ms`, with the Work stream fast path's script calls per job).
//! - `fairness`: round-robin between one key with a huge backlog and many small ones
//!   (target `flow fairness Jain >= 0.99`), and weighted shares.
//! - `memory`: Redis bytes per active key and what idle keys leave behind (targets
//!   `flow active key <= 200 B`, `flow idle keys 0 bytes`).

pub(crate) mod fairness;
pub(crate) mod memory;
pub(crate) mod slot;
pub(crate) mod throughput;

use std::{
    collections::HashMap,
    sync::Arc,
    time::{Duration, Instant},
};

use dueq::proto::{self, work_request::Request as WorkIn, work_response::Response as WorkOut};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;

use crate::{
    env::{Client, Env},
    plan::Plan,
    report::Report,
    Result,
};

/// The report section.
pub(crate) const S: &str = "flow";
/// The namespace every part writes in.
const NS: &str = "flow";
/// Jobs per EnqueueBatch call while seeding.
const BATCH: u64 = 1_000;
/// Longest a Work stream may go without a message before its drain is a failure.
pub(crate) const STALL: Duration = Duration::from_secs(2);

pub(crate) async fn run(plan: &Plan, env: &Env, report: &mut Report) -> Result<()> {
    throughput::run(plan, env, report).await?;
    env.reset().await?;
    slot::run(plan, env, report).await?;
    env.reset().await?;
    fairness::run(plan, env, report).await?;
    env.reset().await?;
    memory::run(plan, env, report).await
}

/// A job of NS for `queue` named `name` (the parts read the name back from the
/// claimed job to tell its key), without flow keys.
fn job(queue: &str, name: &str) -> proto::EnqueueRequest {
    proto::EnqueueRequest {
        namespace: NS.into(),
        queue: queue.into(),
        name: name.into(),
        payload: b"{\"n\":1}".to_vec(),
        ..Default::default()
    }
}

/// A rate limit of `limit` per second, with `burst`.
fn per_second(limit: u32, burst: u32) -> proto::RateLimit {
    proto::RateLimit {
        limit,
        period: Some(prost_types::Duration {
            seconds: 1,
            nanos: 0,
        }),
        burst,
    }
}

/// Stores `policy` for `queue` (None: no policy).
async fn set_policy(env: &Env, queue: &str, policy: Option<proto::QueuePolicy>) -> Result<()> {
    env.client()
        .await?
        .set_queue_policy(proto::SetQueuePolicyRequest {
            namespace: NS.into(),
            queue: queue.into(),
            policy,
        })
        .await?;
    Ok(())
}

/// The job `make(i)` builds, for every i below `n`.
type MakeJob = Arc<dyn Fn(u64) -> proto::EnqueueRequest + Send + Sync>;

/// Enqueues jobs 0..n of `make`, BATCH per EnqueueBatch call, `lanes` calls at once
/// (in order within a lane); an item the service refuses is an error.
async fn enqueue_all(env: &Env, n: u64, lanes: usize, make: MakeJob) -> Result<()> {
    let batches = n.div_ceil(BATCH);
    let lanes = lanes.clamp(1, 8) as u64;
    let mut tasks = Vec::new();
    for lane in 0..lanes {
        let mut client = env.client().await?;
        let make = make.clone();
        tasks.push(tokio::spawn(async move {
            for b in (lane..batches).step_by(lanes as usize) {
                let jobs = (b * BATCH..((b + 1) * BATCH).min(n))
                    .map(|i| make(i))
                    .collect();
                let reply = client
                    .enqueue_batch(proto::EnqueueBatchRequest {
                        namespace: NS.into(),
                        jobs,
                    })
                    .await?
                    .into_inner();
                let refused = reply.results.into_iter().find_map(|r| match r.result {
                    Some(proto::enqueue_batch_result::Result::Error(e)) => Some(e.message),
                    _ => None,
                });
                if let Some(message) = refused {
                    return Err(format!("EnqueueBatch refused a job: {message}").into());
                }
            }
            Ok::<(), crate::BenchError>(())
        }));
    }
    for task in tasks {
        task.await??;
    }
    Ok(())
}

/// The Work stream's first message, for `queue` and `capacity` jobs at once.
fn work_start(queue: &str, capacity: usize) -> proto::WorkRequest {
    proto::WorkRequest {
        request: Some(WorkIn::Start(proto::WorkStart {
            namespace: NS.into(),
            queues: vec![queue.into()],
            worker_id: "bench".into(),
            lease: None,
            capacity: capacity as u32,
        })),
    }
}

fn lease_of(job: &proto::ClaimedJob) -> proto::JobLease {
    proto::JobLease {
        job_id: job.job_id.clone(),
        lease_token: job.lease_token.clone(),
        result: Vec::new(),
    }
}

/// What a drain did: the seconds from the stream's start to the last ack's answer,
/// the jobs acked, and whether it stalled (no message for STALL) before the target.
#[derive(Debug, Clone, Copy)]
struct Drained {
    secs: f64,
    acked: u64,
    stalled: bool,
}

impl Drained {
    /// The drain reached its target, else an error naming where it stopped.
    fn complete(self, queue: &str, target: u64) -> Result<f64> {
        if self.stalled {
            return Err(format!(
                "{queue}: the Work stream stalled (no message for {STALL:?}) at {}/{target} jobs acked",
                self.acked
            )
            .into());
        }
        Ok(self.secs)
    }
}

/// One Work stream of `capacity` on `queue`, acking each job on the stream as it
/// arrives (the fastest worker path: the ack rides in the stream's next claim) until
/// `target` jobs are acked, or until it stalls. `seen(name, arrived)` is told of
/// each job before its ack goes out.
async fn drain(
    mut client: Client,
    queue: &str,
    capacity: usize,
    target: u64,
    mut seen: impl FnMut(&str, Instant),
) -> Result<Drained> {
    let (tx, rx) = mpsc::channel(capacity + 16);
    tx.send(work_start(queue, capacity)).await?;
    let started = Instant::now();
    let mut replies = client.work(ReceiverStream::new(rx)).await?.into_inner();
    let mut acked = 0u64;
    while acked < target {
        let Ok(reply) = tokio::time::timeout(STALL, replies.message()).await else {
            return Ok(Drained {
                secs: started.elapsed().as_secs_f64(),
                acked,
                stalled: true,
            });
        };
        let Some(reply) = reply?.and_then(|r| r.response) else {
            return Err(format!("{queue}: the Work stream ended at {acked}/{target}").into());
        };
        match reply {
            WorkOut::Job(job) => {
                seen(&job.name, Instant::now());
                tx.send(proto::WorkRequest {
                    request: Some(WorkIn::Ack(lease_of(&job))),
                })
                .await?;
            }
            WorkOut::Ack(result) if result.code != 0 => {
                return Err(format!("ack refused: {} {}", result.code, result.message).into());
            }
            WorkOut::Ack(_) => acked += 1,
            other => return Err(format!("unexpected Work reply {other:?}").into()),
        }
    }
    Ok(Drained {
        secs: started.elapsed().as_secs_f64(),
        acked,
        stalled: false,
    })
}

/// The median of `values` (0 for none).
fn median(values: &[f64]) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => 0.0,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// Jain's fairness index of the allocations `x`: (sum x)^2 / (n * sum x^2), 1 when
/// all are equal, 1/n when one takes everything.
fn jain(x: &[f64]) -> f64 {
    let sum: f64 = x.iter().sum();
    let squares: f64 = x.iter().map(|v| v * v).sum();
    if squares == 0.0 {
        return 0.0;
    }
    sum * sum / (x.len() as f64 * squares)
}

/// Claims counted per job name.
fn count_names<'a>(names: impl IntoIterator<Item = &'a str>) -> HashMap<String, u64> {
    let mut counts = HashMap::new();
    for name in names {
        *counts.entry(name.to_owned()).or_insert(0) += 1;
    }
    counts
}
