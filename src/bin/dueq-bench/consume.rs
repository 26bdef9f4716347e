//! The consume side: how fast workers drain a queue, what each job costs Redis, how
//! soon a waiting worker gets a new job, and what each job script costs on its own.
//!
//! - `ClaimJob+AckJob`: `plan.prefill` jobs are enqueued first (not measured), then
//!   `plan.concurrency` workers each ClaimJob `max_jobs 1` and AckJob until the queue
//!   is empty: the same pre-fill and concurrency as the `bullmq Worker` peer row, so
//!   the two compare (target `ClaimJob+AckJob >= 1x BullMQ Worker`).
//! - `claim latency`: while those workers drain, one worker long-polls another queue
//!   and a prober enqueues one job there every PROBE_GAP; the delay from the
//!   prober's Enqueue being acknowledged to the worker receiving the job.
//! - `script <name>`: N calls of one job script in isolation (one caller, one kind at
//!   a time): Redis CPU per script call and the script time INFO commandstats
//!   counts for EVALSHA over the phase (only that script ran).

use std::{
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc,
    },
    time::{Duration, Instant},
};

use dueq::proto;
use tokio::sync::mpsc;

use crate::{
    env::Env,
    grpc::{clients, with_cpu},
    load::{drive, Stats},
    plan::Plan,
    report::{Report, Row},
    script_time, Result,
};

const S: &str = "consume";
const NS: &str = "consume";
/// The pre-filled queue the workers drain.
const QUEUE: &str = "work";
/// The queue of the latency probe's jobs.
const PROBE_QUEUE: &str = "probe";
/// The queue of the per-script phases.
const COST_QUEUE: &str = "cost";
/// Pause between probes: few enough that the probe's own jobs hardly count in the
/// drain's Redis CPU (one probe job per 10 ms against thousands of jobs/s).
const PROBE_GAP: Duration = Duration::from_millis(10);
/// Jobs per EnqueueBatch call while pre-filling.
const FILL_BATCH: u64 = 1_000;

pub(crate) async fn run(plan: &Plan, env: &Env, report: &mut Report) -> Result<()> {
    prefill(env, plan.prefill).await?;
    drain(plan, env, report).await?;
    script_costs(plan, env, report).await?;
    Ok(())
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

fn claim(queue: &str, wait: Option<Duration>) -> proto::ClaimJobRequest {
    proto::ClaimJobRequest {
        namespace: NS.into(),
        queues: vec![queue.into()],
        worker_id: "bench".into(),
        wait: wait.map(|w| prost_types::Duration {
            seconds: w.as_secs() as i64,
            nanos: w.subsec_nanos() as i32,
        }),
        lease: None,
        max_jobs: 1,
        acks: vec![],
    }
}

/// Enqueues `n` jobs into QUEUE in batches, before anything is measured.
async fn prefill(env: &Env, n: u64) -> Result<()> {
    let mut client = env.client().await?;
    let mut done = 0;
    while done < n {
        let k = FILL_BATCH.min(n - done);
        client
            .enqueue_batch(proto::EnqueueBatchRequest {
                namespace: NS.into(),
                jobs: (0..k).map(|_| job(QUEUE)).collect(),
            })
            .await?;
        done += k;
    }
    Ok(())
}

/// Drains the pre-filled queue with ClaimJob+AckJob workers while the probe runs.
async fn drain(plan: &Plan, env: &Env, report: &mut Report) -> Result<()> {
    let callers = clients(env, plan.concurrency).await?;
    // A cap, not the measure: the phase ends when the queue is empty.
    let cap = if plan.smoke {
        Duration::from_secs(60)
    } else {
        Duration::from_secs(600)
    };
    let phase = drive(plan.concurrency, cap, |i| {
        let c = callers[i].clone();
        move || {
            let mut c = c.clone();
            async move {
                let claimed = c.claim_job(claim(QUEUE, None)).await?.into_inner().jobs;
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
    });
    let probe = Probe::start(env).await?;
    let result = with_cpu(env, phase).await;
    let delays = probe.stop().await;
    let (s, cpu) = result?;
    let drained = s.items;
    report.push(
        Row::stats(S, "ClaimJob+AckJob", &s)
            .note(format!(
                "{} workers drain {} pre-filled jobs; claim max_jobs 1, then ack; ops = jobs",
                plan.concurrency, plan.prefill
            ))
            .with("prefill", plan.prefill)
            .with("drained", drained)
            .with("service_cpu_us_per_job", cpu.service_us)
            .with("redis_cpu_us_per_job", cpu.redis_us)
            .with("bench_cpu_us_per_job", cpu.bench_us)
            .with("script_calls_per_job", cpu.script_calls)
            .and_note(format!(
                "CPU/job: Redis {:.0} us, service {:.0} us, bench client {:.0} us; script calls/job {:.2}",
                cpu.redis_us, cpu.service_us, cpu.bench_us, cpu.script_calls
            )),
    );
    if drained < plan.prefill {
        report.note(
            S,
            format!(
                "ClaimJob+AckJob stopped at the {cap:?} cap: {drained} of {} jobs",
                plan.prefill
            ),
        );
    }
    let (delays, lost) = delays?;
    let n = delays.len() as u64;
    let s = Stats::from_latencies(delays, n, 0.0);
    report.push(
        Row::latency(S, "claim latency", &s)
            .with("samples", n)
            .with("lost", lost)
            .note(format!(
                "Enqueue acknowledged -> a long-polling ClaimJob receives it, while the workers drain; {n} probes, one per {}ms{}",
                PROBE_GAP.as_millis(),
                if lost > 0 { format!(", {lost} not received within 5s") } else { String::new() }
            )),
    );
    Ok(())
}

/// The claim-latency probe: one long-polling worker on PROBE_QUEUE, one enqueuer.
struct Probe {
    stop: Arc<AtomicBool>,
    prober: tokio::task::JoinHandle<Result<(Vec<u64>, u64)>>,
    waiter: tokio::task::JoinHandle<Result<()>>,
}

impl Probe {
    async fn start(env: &Env) -> Result<Probe> {
        let stop = Arc::new(AtomicBool::new(false));
        let (tx, mut rx) = mpsc::unbounded_channel::<(String, Instant)>();
        let mut worker = env.client().await?;
        let waiter = tokio::spawn(async move {
            loop {
                let jobs = worker
                    .claim_job(claim(PROBE_QUEUE, Some(Duration::from_secs(5))))
                    .await?
                    .into_inner()
                    .jobs;
                let at = Instant::now();
                for j in jobs {
                    let _ = tx.send((j.job_id.clone(), at));
                    worker
                        .ack_job(proto::AckJobRequest {
                            namespace: NS.into(),
                            job_id: j.job_id,
                            lease_token: j.lease_token,
                        })
                        .await?;
                }
            }
        });
        let mut enqueuer = env.client().await?;
        let flag = stop.clone();
        let prober = tokio::spawn(async move {
            let mut delays = Vec::new();
            let mut lost = 0u64;
            while !flag.load(Ordering::Relaxed) {
                let id = enqueuer
                    .enqueue(job(PROBE_QUEUE))
                    .await?
                    .into_inner()
                    .job_id;
                let acked = Instant::now();
                // The worker may receive the job before the ack reaches the prober:
                // then the delay is 0.
                let got = tokio::time::timeout(Duration::from_secs(5), async {
                    while let Some((got, at)) = rx.recv().await {
                        if got == id {
                            return Some(at);
                        }
                    }
                    None
                })
                .await;
                match got {
                    Ok(Some(at)) => {
                        delays.push(at.saturating_duration_since(acked).as_nanos() as u64)
                    }
                    Ok(None) => return Err("the probe's worker stopped".into()),
                    Err(_) => lost += 1,
                }
                tokio::time::sleep(PROBE_GAP).await;
            }
            Ok((delays, lost))
        });
        Ok(Probe {
            stop,
            prober,
            waiter,
        })
    }

    /// Stops probing; the delays in ns and the probes never received.
    async fn stop(self) -> Result<(Vec<u64>, u64)> {
        self.stop.store(true, Ordering::Relaxed);
        let out = self.prober.await;
        self.waiter.abort();
        if let Ok(Err(e)) = self.waiter.await {
            return Err(format!("probe worker: {e}").into());
        }
        out?
    }
}

/// Calls per script phase.
fn calls(plan: &Plan) -> u64 {
    if plan.smoke {
        50
    } else {
        2_000
    }
}

/// Each job script on its own: N Enqueues, N claims, N lease extensions, then half
/// acked and half failed, one caller, one kind at a time.
async fn script_costs(plan: &Plan, env: &Env, report: &mut Report) -> Result<()> {
    let n = calls(plan);
    let mut c = env.client().await?;
    let cc = c.clone();
    cost(
        env,
        report,
        "enqueue_jobs",
        "Enqueue, one job per call",
        n,
        async {
            let mut c = cc;
            for _ in 0..n {
                c.enqueue(job(COST_QUEUE)).await?;
            }
            Ok(())
        },
    )
    .await?;
    let mut leases = Vec::with_capacity(n as usize);
    cost(
        env,
        report,
        "claim_jobs",
        "ClaimJob max_jobs 1, no wait",
        n,
        async {
            for _ in 0..n {
                let jobs = c
                    .claim_job(claim(COST_QUEUE, None))
                    .await?
                    .into_inner()
                    .jobs;
                leases.extend(jobs.into_iter().map(|j| (j.job_id, j.lease_token)));
            }
            Ok(())
        },
    )
    .await?;
    if leases.len() as u64 != n {
        return Err(format!("claimed {} of {n} jobs", leases.len()).into());
    }
    let mut c = env.client().await?;
    let ls = leases.clone();
    cost(
        env,
        report,
        "extend_lease",
        "ExtendLease by 60s",
        n,
        async {
            for (job_id, lease_token) in ls {
                c.extend_lease(proto::ExtendLeaseRequest {
                    namespace: NS.into(),
                    job_id,
                    lease_token,
                    lease: Some(prost_types::Duration {
                        seconds: 60,
                        nanos: 0,
                    }),
                })
                .await?;
            }
            Ok(())
        },
    )
    .await?;
    let half = leases.split_off(leases.len() / 2);
    let (to_ack, to_fail) = (leases, half);
    let mut c = env.client().await?;
    let k = to_ack.len() as u64;
    cost(env, report, "ack_job", "AckJob", k, async {
        for (job_id, lease_token) in to_ack {
            c.ack_job(proto::AckJobRequest {
                namespace: NS.into(),
                job_id,
                lease_token,
            })
            .await?;
        }
        Ok(())
    })
    .await?;
    let mut c = env.client().await?;
    let k = to_fail.len() as u64;
    cost(
        env,
        report,
        "fail_job",
        "FailJob, retry after 1h (a delayed job)",
        k,
        async {
            for (job_id, lease_token) in to_fail {
                c.fail_job(proto::FailJobRequest {
                    namespace: NS.into(),
                    job_id,
                    lease_token,
                    error: "bench".into(),
                    retry_after: Some(prost_types::Duration {
                        seconds: 3600,
                        nanos: 0,
                    }),
                    non_retryable: false,
                })
                .await?;
            }
            Ok(())
        },
    )
    .await?;
    report.note(
        S,
        format!(
            "script rows: {n} calls of one kind at a time from one caller; Redis CPU per script call (used_cpu_sys+user delta / EVALSHA calls, so it includes command dispatch) and the EVALSHA time INFO commandstats counted"
        ),
    );
    Ok(())
}

/// One script's phase: `n` gRPC calls that each run `script` once.
async fn cost(
    env: &Env,
    report: &mut Report,
    script: &str,
    what: &str,
    n: u64,
    phase: impl std::future::Future<Output = Result<()>>,
) -> Result<()> {
    let mut conn = env.conn().await?;
    let started = Instant::now();
    let timed = with_cpu(env, async {
        phase.await?;
        Ok(Stats {
            items: n,
            calls: n,
            secs: started.elapsed().as_secs_f64(),
            ..Stats::default()
        })
    });
    let ((s, cpu), time) = script_time::timed(&mut conn, script, timed).await?;
    let redis_per_call = if cpu.script_calls > 0.0 {
        cpu.redis_us / cpu.script_calls
    } else {
        0.0
    };
    let mut row = Row::new(S, format!("script {script}"));
    row.ops_s = Some(s.ops_s());
    report.push(
        row.note(format!(
            "{what}: Redis CPU {redis_per_call:.0} us/call, script time {:.0} us/call (commandstats), longest {:.2} ms; script calls per RPC {:.2}",
            time.mean_us,
            time.longest_us as f64 / 1000.0,
            cpu.script_calls
        ))
        .with("calls", n)
        .with("redis_cpu_us_per_call", redis_per_call)
        .with("script_us_per_call", time.mean_us)
        .with("script_longest_us", time.longest_us)
        .with("script_calls_per_rpc", cpu.script_calls),
    );
    Ok(())
}
