//! Each job script, and claim_due, on its own (issue 35): N calls of one kind at a
//! time from one caller, at one item per call and at 32, so both the fixed cost of
//! a call and the cost per item show; then each single-item script's floor (the
//! same Redis commands sent raw: floor.rs).
//!
//! - `enqueue_jobs`: Enqueue (1 item) and EnqueueBatch of 32.
//! - `claim_jobs`: ClaimJob max_jobs 1 and max_jobs 32, no wait.
//! - `ack_job`: AckJob; its 32-item form is `ack_jobs` (AckJobs of 32 leases; a
//!   Work stream's or a claim's carried acks reach Redis in claim_jobs or ack_jobs).
//! - `claim_due`: ClaimDueSchedule with one schedule due (each call in its own
//!   namespace holding one due schedule) and with 32 or more due (one namespace,
//!   n + 31 due: every call examines a full window of 32 candidates); each call
//!   claims one occurrence.
//! - `extend_lease`, `fail_job`: one item per call.
//!
//! Per row: Redis CPU per script call (used_cpu_sys+user delta over the phase /
//! script calls, so it includes command dispatch), the script time INFO
//! commandstats counted for the script calls, both also per item.

use dueq::proto;

use crate::{
    claim_scaling,
    consume::{claim, job, ns},
    env::{Client, Env},
    floor,
    grpc::with_cpu,
    load::Stats,
    plan::Plan,
    redis_info::redis_now,
    report::{Report, Row},
    script_time, seed, Result,
};

const S: &str = "consume";
/// The queue of the one-item phases.
const ONE_QUEUE: &str = "cost";
/// The queue of the 32-item phases.
const MANY_QUEUE: &str = "cost32";
/// Items per call of the batch rows.
pub(crate) const ITEMS: usize = 32;

/// Calls per phase.
fn calls(plan: &Plan) -> u64 {
    if plan.smoke {
        50
    } else {
        2_000
    }
}

/// A claimed job's id and lease token.
type Lease = (String, String);

/// The script rows, then the floors.
pub(crate) async fn run(plan: &Plan, env: &Env, report: &mut Report) -> Result<()> {
    let n = calls(plan);
    let c = env.client().await?;
    enqueue(env, report, c.clone(), n, 1).await?;
    enqueue(env, report, c.clone(), n, ITEMS).await?;
    let mut leases = claim_jobs(env, report, c.clone(), n, 1).await?;
    let many = claim_jobs(env, report, c.clone(), n, ITEMS).await?;
    cost_extend(env, report, c.clone(), leases.clone()).await?;
    let to_fail = leases.split_off(leases.len() / 2);
    ack(env, report, c.clone(), leases, 1).await?;
    ack(env, report, c.clone(), many, ITEMS).await?;
    cost_fail(env, report, c.clone(), to_fail).await?;
    let tpl = seed::template(env).await?;
    claim_due(env, report, c, n, &tpl).await?;
    floor::run(env, report, n, &tpl.record).await?;
    report.note(
        S,
        format!(
            "script rows: {n} calls of one kind at a time from one caller, one item or {ITEMS} per call; Redis CPU per script call (used_cpu_sys+user delta / script calls, so it includes command dispatch) and the FCALL time INFO commandstats counted, each also per item; floor rows: the same commands raw in one MULTI/EXEC per call (floor.rs)"
        ),
    );
    Ok(())
}

/// The row name of `script` at `items` per call.
pub(crate) fn row_name(script: &str, items: usize) -> String {
    if items == 1 {
        format!("{script}, 1 item")
    } else {
        format!("{script}, {items} items")
    }
}

/// enqueue_jobs: `n` Enqueues of one job (`items` 1), or `n` EnqueueBatch calls of
/// `items` jobs, into the phase's queue.
async fn enqueue(
    env: &Env,
    report: &mut Report,
    mut c: Client,
    n: u64,
    items: usize,
) -> Result<()> {
    let queue = if items == 1 { ONE_QUEUE } else { MANY_QUEUE };
    let phase = async {
        for _ in 0..n {
            if items == 1 {
                c.enqueue(job(queue)).await?;
            } else {
                c.enqueue_batch(proto::EnqueueBatchRequest {
                    namespace: ns(),
                    jobs: (0..items).map(|_| job(queue)).collect(),
                })
                .await?;
            }
        }
        Ok(())
    };
    let what = if items == 1 {
        "Enqueue".to_string()
    } else {
        format!("EnqueueBatch of {items}")
    };
    let name = row_name("enqueue_jobs", items);
    cost(env, report, &name, "enqueue_jobs", &what, (n, items), phase).await
}

/// claim_jobs: `n` ClaimJobs of `items` jobs each from the phase's queue, no wait;
/// the leases, which must be `n * items`.
async fn claim_jobs(
    env: &Env,
    report: &mut Report,
    mut c: Client,
    n: u64,
    items: usize,
) -> Result<Vec<Lease>> {
    let queue = if items == 1 { ONE_QUEUE } else { MANY_QUEUE };
    let mut leases = Vec::with_capacity(n as usize * items);
    let phase = async {
        for _ in 0..n {
            let mut request = claim(queue, None);
            request.max_jobs = items as u32;
            let jobs = c.claim_job(request).await?.into_inner().jobs;
            leases.extend(jobs.into_iter().map(|j| (j.job_id, j.lease_token)));
        }
        Ok(())
    };
    let what = format!("ClaimJob max_jobs {items}, no wait");
    let name = row_name("claim_jobs", items);
    cost(env, report, &name, "claim_jobs", &what, (n, items), phase).await?;
    if leases.len() as u64 != n * items as u64 {
        return Err(format!("claimed {} of {} jobs", leases.len(), n * items as u64).into());
    }
    Ok(leases)
}

/// ack_job: one AckJob per lease (`items` 1); ack_jobs: one AckJobs per `items`
/// leases.
async fn ack(
    env: &Env,
    report: &mut Report,
    mut c: Client,
    leases: Vec<Lease>,
    items: usize,
) -> Result<()> {
    let n = leases.len().div_ceil(items) as u64;
    let phase = async {
        for chunk in leases.chunks(items) {
            if items == 1 {
                let (job_id, lease_token) = chunk[0].clone();
                c.ack_job(proto::AckJobRequest {
                    result: Vec::new(),
                    namespace: ns(),
                    job_id,
                    lease_token,
                })
                .await?;
                continue;
            }
            let acks = chunk
                .iter()
                .map(|(job_id, lease_token)| proto::JobLease {
                    result: Vec::new(),
                    job_id: job_id.clone(),
                    lease_token: lease_token.clone(),
                })
                .collect();
            let reply = c
                .ack_jobs(proto::AckJobsRequest {
                    namespace: ns(),
                    acks,
                })
                .await?
                .into_inner();
            if let Some(bad) = reply.results.iter().find(|a| a.code != 0) {
                return Err(format!("an ack was refused: {} {}", bad.code, bad.message).into());
            }
        }
        Ok(())
    };
    let (script, what) = if items == 1 {
        ("ack_job", "AckJob".to_string())
    } else {
        ("ack_jobs", format!("AckJobs of {items} leases"))
    };
    let name = row_name(script, items);
    cost(env, report, &name, script, &what, (n, items), phase).await
}

/// extend_lease: one ExtendLease (by 60 s) per lease.
async fn cost_extend(
    env: &Env,
    report: &mut Report,
    mut c: Client,
    leases: Vec<Lease>,
) -> Result<()> {
    let n = leases.len() as u64;
    let phase = async {
        for (job_id, lease_token) in leases {
            c.extend_lease(proto::ExtendLeaseRequest {
                progress: None,
                namespace: ns(),
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
    };
    let name = row_name("extend_lease", 1);
    cost(
        env,
        report,
        &name,
        "extend_lease",
        "ExtendLease by 60s",
        (n, 1),
        phase,
    )
    .await
}

/// fail_job: one FailJob per lease, retried after an hour (so each job becomes a
/// delayed one).
async fn cost_fail(
    env: &Env,
    report: &mut Report,
    mut c: Client,
    leases: Vec<Lease>,
) -> Result<()> {
    let n = leases.len() as u64;
    let phase = async {
        for (job_id, lease_token) in leases {
            c.fail_job(proto::FailJobRequest {
                namespace: ns(),
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
    };
    let what = "FailJob, retry after 1h (a delayed job)";
    let name = row_name("fail_job", 1);
    cost(env, report, &name, "fail_job", what, (n, 1), phase).await
}

/// claim_due: `n` ClaimDueSchedule calls with one schedule due (each in its own
/// namespace `cd1-{i}`, seeded with one due schedule), then `n` with at least 32
/// due (namespace `cd32`, n + 31 due); every call must claim one occurrence.
async fn claim_due(
    env: &Env,
    report: &mut Report,
    mut c: Client,
    n: u64,
    tpl: &seed::Template,
) -> Result<()> {
    let mut conn = env.conn().await?;
    let due = redis_now(&mut conn).await? - 1_000;
    let layout = seed::Layout::Current;
    for i in 0..n {
        seed::schedules(&mut conn, tpl, &format!("cd1-{i}"), 1, due, layout).await?;
    }
    let many = ITEMS as u64 - 1 + n;
    seed::schedules(&mut conn, tpl, "cd32", many, due, layout).await?;
    for items in [1, ITEMS] {
        let phase = async {
            for i in 0..n {
                let ns = if items == 1 {
                    format!("cd1-{i}")
                } else {
                    "cd32".to_string()
                };
                if claim_scaling::claim(&mut c, &ns).await?.is_none() {
                    return Err(format!("{ns}: no due schedule claimed").into());
                }
            }
            Ok(())
        };
        let (name, what) = if items == 1 {
            (
                "claim_due, 1 due".to_string(),
                "ClaimDueSchedule, one schedule due in the namespace".to_string(),
            )
        } else {
            (format!("claim_due, {ITEMS} due"), format!("ClaimDueSchedule, {ITEMS} or more schedules due in the namespace (a full candidate window); one claimed per call"))
        };
        // One occurrence per call either way: the items are the due candidates.
        cost(env, report, &name, "claim_due", &what, (n, 1), phase).await?;
    }
    Ok(())
}

/// One phase: `calls.0` gRPC calls of `calls.1` items each, each running `script`
/// (once, when the service does not split it); the row `name`.
async fn cost(
    env: &Env,
    report: &mut Report,
    name: &str,
    script: &str,
    what: &str,
    calls: (u64, usize),
    phase: impl std::future::Future<Output = Result<()>>,
) -> Result<()> {
    let (n, items) = calls;
    let mut conn = env.conn().await?;
    let started = std::time::Instant::now();
    let timed = with_cpu(env, async {
        phase.await?;
        Ok(Stats {
            items: n,
            calls: n,
            secs: started.elapsed().as_secs_f64(),
            ..Stats::default()
        })
    });
    let ((s, cpu), time) = script_time::timed(&mut conn, script, timed)
        .await
        .map_err(|e| format!("{name}: {e}"))?;
    // cpu is per RPC; a script call is what the floor compares with.
    let per_call = if cpu.script_calls > 0.0 {
        cpu.redis_us / cpu.script_calls
    } else {
        0.0
    };
    let per_item = cpu.redis_us / items as f64;
    let script_per_item = time.mean_us * cpu.script_calls / items as f64;
    let mut row = Row::new(S, name);
    row.ops_s = Some(s.ops_s());
    report.push(
        row.note(format!(
            "{what}: Redis CPU {per_call:.1} us/call, {per_item:.1} us/item; script time {:.1} us/call, {script_per_item:.1} us/item (commandstats), longest {:.2} ms; script calls per RPC {:.2}",
            time.mean_us,
            time.longest_us as f64 / 1000.0,
            cpu.script_calls
        ))
        .with("script", script)
        .with("calls", n)
        .with("items_per_call", items)
        .with("redis_cpu_us_per_call", per_call)
        .with("redis_cpu_us_per_item", per_item)
        .with("script_us_per_call", time.mean_us)
        .with("script_us_per_item", script_per_item)
        .with("script_longest_us", time.longest_us)
        .with("script_calls_per_rpc", cpu.script_calls),
    );
    Ok(())
}
