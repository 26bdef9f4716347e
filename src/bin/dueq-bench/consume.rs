//! The consume side: how fast workers drain a queue, what each job costs Redis, how
//! soon a waiting worker gets a new job, and what each job script costs on its own.
//!
//! - `ClaimJob+AckJob`: `plan.prefill` jobs are enqueued first (not measured), then
//!   `plan.concurrency` workers each ClaimJob `max_jobs 1` and AckJob until the queue
//!   is empty: the same pre-fill and concurrency as the `bullmq Worker` peer row, so
//!   the two compare (no target since issue 35: two RPCs per job cannot beat one
//!   Redis round trip per job on two cores; the row stays).
//! - `ClaimJob+acks`: the same pre-fill drained again by `plan.concurrency` unary
//!   workers whose every ClaimJob carries the ack of the job before it (one RPC and
//!   one script per job, as BullMQ's moveToFinished fetches the next job; targets
//!   `ClaimJob+acks >= 0.75x BullMQ Worker` and `... Redis CPU/job <= 1x ...`).
//! - `worker fast path`: the same pre-fill drained by Work streams (`--work-streams`,
//!   default one: one worker process, as the peer is one BullMQ Worker), their
//!   capacities adding up to `plan.concurrency` (the BullMQ Worker's concurrency);
//!   each job is acked on its stream as soon as it arrives.
//! - `claim latency`: while each drain runs, one worker waits on another queue (a
//!   long-polling ClaimJob for the unary drains, a Work stream of capacity 1 for the
//!   fast path) and a prober enqueues one job there every PROBE_GAP; the delay from
//!   the prober's Enqueue being acknowledged to the worker receiving the job.
//! - `empty RPC` and `bare tonic health`: rpc_floor.rs.
//! - `<script>, 1 item` / `<script>, 32 items` and `<script> floor`: each script on
//!   its own and the floor of its Redis commands (script_rows.rs, floor.rs).

use std::{
    collections::HashMap,
    sync::{
        atomic::{AtomicBool, AtomicU64, Ordering},
        Arc, Mutex,
    },
    time::{Duration, Instant},
};

use dueq::proto::{self, work_request::Request as WorkIn, work_response::Response as WorkOut};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tokio_util::sync::CancellationToken;

use crate::{
    env::{Client, Env},
    grpc::{clients, with_cpu},
    load::{drive, Stats},
    plan::Plan,
    report::{Report, Row},
    Result,
};

const S: &str = "consume";
/// The namespace of the drains and script rows: `consume` and the number of flushes
/// so far. The service's namespace monitor remembers each namespace's job sequence
/// and refuses one whose sequence went backwards (a store rolled back under it,
/// until Migrate); a namespace filled again after a FLUSHALL would look exactly
/// like that, so each flush starts a namespace of a new name.
pub(crate) fn ns() -> String {
    format!("consume{}", crate::local::resets())
}
/// The pre-filled queue the workers drain.
pub(crate) const QUEUE: &str = "work";
/// The queue of the latency probe's jobs.
const PROBE_QUEUE: &str = "probe";
/// Pause between probes: few enough that the probe's own jobs hardly count in the
/// drain's Redis CPU (one probe job per 10 ms against thousands of jobs/s).
const PROBE_GAP: Duration = Duration::from_millis(10);
/// Jobs per EnqueueBatch call while pre-filling.
const FILL_BATCH: u64 = 1_000;

pub(crate) async fn run(plan: &Plan, env: &Env, report: &mut Report) -> Result<()> {
    prefill(env, plan.prefill).await?;
    drain(plan, env, report).await?;
    // Each drain starts from the same keyspace: the finished jobs of the one before
    // would otherwise make the next one's sets larger.
    env.reset().await?;
    prefill(env, plan.prefill).await?;
    drain_carried(plan, env, report).await?;
    env.reset().await?;
    prefill(env, plan.prefill).await?;
    drain_fast(plan, env, report).await?;
    env.reset().await?;
    crate::rpc_floor::run(plan, env, report).await?;
    crate::script_rows::run(plan, env, report).await?;
    Ok(())
}

/// A cap on a drain, not the measure: a drain ends when the queue is empty.
pub(crate) fn drain_cap(plan: &Plan) -> Duration {
    if plan.smoke {
        Duration::from_secs(60)
    } else {
        Duration::from_secs(600)
    }
}

fn ack_of(job: &proto::ClaimedJob) -> proto::JobLease {
    proto::JobLease {
        result: Vec::new(),
        job_id: job.job_id.clone(),
        lease_token: job.lease_token.clone(),
    }
}

/// The Work stream's first message, for `queue` and `capacity` jobs at once.
fn work_start(queue: &str, capacity: usize) -> proto::WorkRequest {
    proto::WorkRequest {
        request: Some(WorkIn::Start(proto::WorkStart {
            namespace: ns(),
            queues: vec![queue.into()],
            worker_id: "bench".into(),
            lease: None,
            capacity: capacity as u32,
        })),
    }
}

pub(crate) fn job(queue: &str) -> proto::EnqueueRequest {
    proto::EnqueueRequest {
        namespace: ns(),
        queue: queue.into(),
        name: "bench".into(),
        payload: b"{\"n\":1}".to_vec(),
        ..Default::default()
    }
}

pub(crate) fn claim(queue: &str, wait: Option<Duration>) -> proto::ClaimJobRequest {
    proto::ClaimJobRequest {
        namespace: ns(),
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
pub(crate) async fn prefill(env: &Env, n: u64) -> Result<()> {
    let mut client = env.client().await?;
    let mut done = 0;
    while done < n {
        let k = FILL_BATCH.min(n - done);
        client
            .enqueue_batch(proto::EnqueueBatchRequest {
                namespace: ns(),
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
    let cap = drain_cap(plan);
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
                    result: Vec::new(),
                    namespace: ns(),
                    job_id: j.job_id,
                    lease_token: j.lease_token,
                })
                .await?;
                Ok(1)
            }
        }
    });
    let probe = Probe::start(env, Waiter::ClaimJob).await?;
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

/// Drains the pre-filled queue with unary workers whose claims carry the previous
/// job's ack: one ClaimJob per job; the last claim (which finds nothing) carries the
/// last ack.
async fn drain_carried(plan: &Plan, env: &Env, report: &mut Report) -> Result<()> {
    let callers = clients(env, plan.concurrency).await?;
    let cap = drain_cap(plan);
    let phase = drive(plan.concurrency, cap, |i| {
        let c = callers[i].clone();
        // The job this worker finished and has not acked yet.
        let previous: Arc<Mutex<Option<proto::JobLease>>> = Arc::default();
        move || {
            let mut c = c.clone();
            let previous = previous.clone();
            async move {
                let acks: Vec<proto::JobLease> = previous
                    .lock()
                    .map_err(|_| "poisoned")?
                    .take()
                    .into_iter()
                    .collect();
                let mut request = claim(QUEUE, None);
                request.acks = acks;
                let reply = c.claim_job(request).await?.into_inner();
                if let Some(bad) = reply.acks.iter().find(|a| a.code != 0) {
                    return Err(
                        format!("a carried ack was refused: {} {}", bad.code, bad.message).into(),
                    );
                }
                let Some(j) = reply.jobs.first() else {
                    return Ok(0);
                };
                *previous.lock().map_err(|_| "poisoned")? = Some(ack_of(j));
                Ok(1)
            }
        }
    });
    let probe = Probe::start(env, Waiter::ClaimJob).await?;
    let result = with_cpu(env, phase).await;
    let delays = probe.stop().await;
    let (s, cpu) = result?;
    let (delays, lost) = delays?;
    let claim = Stats::from_latencies(delays, 0, 0.0);
    report.push(
        consume_row("ClaimJob+acks", &s, &cpu, plan, &claim, lost).and_note(format!(
            "{} workers drain {} pre-filled jobs; each ClaimJob max_jobs 1 carries the previous job's ack; ops = jobs",
            plan.concurrency, plan.prefill
        )),
    );
    if s.items < plan.prefill {
        report.note(
            S,
            format!(
                "ClaimJob+acks stopped at the {cap:?} cap: {} of {} jobs",
                s.items, plan.prefill
            ),
        );
    }
    Ok(())
}

/// A drain row: throughput, CPU per job, and the claim latency measured under it.
fn consume_row(
    name: &str,
    s: &Stats,
    cpu: &crate::cpu::CpuPerOp,
    plan: &Plan,
    claim: &Stats,
    lost: u64,
) -> Row {
    Row::stats(S, name, s)
        .note(format!(
            "CPU/job: Redis {:.0} us, service {:.0} us, bench client {:.0} us; script calls/job {:.2}; claim latency under this load p50 {:.2} ms, p99 {:.2} ms ({} probes{})",
            cpu.redis_us,
            cpu.service_us,
            cpu.bench_us,
            cpu.script_calls,
            claim.p50_ms,
            claim.p99_ms,
            claim.calls,
            if lost > 0 { format!(", {lost} lost") } else { String::new() }
        ))
        .with("prefill", plan.prefill)
        .with("drained", s.items)
        .with("service_cpu_us_per_job", cpu.service_us)
        .with("redis_cpu_us_per_job", cpu.redis_us)
        .with("bench_cpu_us_per_job", cpu.bench_us)
        .with("script_calls_per_job", cpu.script_calls)
        .with("claim_p50_ms", claim.p50_ms)
        .with("claim_p99_ms", claim.p99_ms)
        .with("claim_samples", claim.calls)
        .with("claim_lost", lost)
}

/// Drains the pre-filled queue with Work streams (`--work-streams`, default one, as
/// the peer is one BullMQ Worker; more spreads them over connections, as a fleet of
/// worker processes would), capacities adding up to `plan.concurrency`; every job is acked on its stream as it arrives.
/// The row's p50/p99 are per job, from the job's arrival to its ack's answer (how
/// long it held a slot).
async fn drain_fast(plan: &Plan, env: &Env, report: &mut Report) -> Result<()> {
    let streams = fast_streams(plan);
    let callers = clients(env, streams).await?;
    let cap = drain_cap(plan);
    let probe = Probe::start(env, Waiter::Work).await?;
    let result = with_cpu(env, fast_phase(plan, callers)).await;
    let delays = probe.stop().await;
    let (s, cpu) = result?;
    let (delays, lost) = delays?;
    let n = delays.len() as u64;
    let claim = Stats::from_latencies(delays, n, 0.0);
    report.push(
        consume_row("worker fast path", &s, &cpu, plan, &claim, lost)
            .with("streams", streams)
            .and_note(format!(
                "{streams} Work streams, total capacity {}, drain {} pre-filled jobs, each acked on its stream on arrival; ops = jobs; p50/p99: a job's arrival to its ack's answer",
                plan.concurrency, plan.prefill
            )),
    );
    if s.items < plan.prefill {
        report.note(
            S,
            format!(
                "worker fast path stopped at the {cap:?} cap: {} of {} jobs",
                s.items, plan.prefill
            ),
        );
    }
    report.push(
        Row::latency(S, "claim latency, worker fast path", &claim)
            .with("samples", n)
            .with("lost", lost)
            .note(format!(
                "Enqueue acknowledged -> a waiting Work stream (capacity 1) receives it, while the fast path drains; {n} probes, one per {}ms",
                PROBE_GAP.as_millis()
            )),
    );
    Ok(())
}

/// One fast-path drain for the peers' paired rounds (peers.rs): a fresh keyspace,
/// the pre-fill, then the drain without the latency probe (BullMQ's drain has none).
/// Returns jobs/s and Redis CPU per job.
pub(crate) async fn fast_round(plan: &Plan, env: &Env) -> Result<(f64, f64)> {
    env.reset().await?;
    prefill(env, plan.prefill).await?;
    let callers = clients(env, fast_streams(plan)).await?;
    let (s, cpu) = with_cpu(env, fast_phase(plan, callers)).await?;
    env.reset().await?;
    Ok((s.ops_s(), cpu.redis_us))
}

/// Work streams of the fast-path drain (`--work-streams`, default one).
fn fast_streams(plan: &Plan) -> usize {
    plan.work_streams.unwrap_or(1).clamp(1, plan.concurrency)
}

/// One fast-path drain of the pre-filled queue: Work streams whose capacities add
/// up to `plan.concurrency`, each acking every job on arrival, until `plan.prefill`
/// jobs are acked (or the cap). Stats per job, latencies from a job's arrival to
/// its ack's answer. One caller per stream.
async fn fast_phase(plan: &Plan, callers: Vec<Client>) -> Result<Stats> {
    let streams = callers.len();
    let cap = drain_cap(plan);
    let target = plan.prefill;
    let acked = Arc::new(AtomicU64::new(0));
    let done = CancellationToken::new();
    let started = Instant::now();
    let mut tasks = Vec::with_capacity(streams);
    for (i, client) in callers.into_iter().enumerate() {
        // Capacities differ by at most one and add up to the concurrency.
        let capacity = plan.concurrency / streams + usize::from(i < plan.concurrency % streams);
        let (acked, done) = (acked.clone(), done.clone());
        tasks.push(tokio::spawn(async move {
            let out = fast_worker(client, capacity, target, acked, done.clone()).await;
            // A failed stream ends the phase rather than leaving it to the cap.
            if out.is_err() {
                done.cancel();
            }
            out
        }));
    }
    let timer = done.clone();
    let capped = tokio::spawn(async move {
        // The phase's cap: real time it may run.
        #[allow(clippy::disallowed_methods)]
        let cap = tokio::time::sleep(cap);
        tokio::select! {
            _ = cap => timer.cancel(),
            _ = timer.cancelled() => {}
        }
    });
    let mut lat = Vec::new();
    let mut failed = None;
    for task in tasks {
        match task.await {
            Ok(Ok(l)) => lat.extend(l),
            Ok(Err(e)) => failed = Some(e),
            Err(e) => failed = Some(e.into()),
        }
    }
    let secs = started.elapsed().as_secs_f64();
    // Every stream is done: stop the cap's timer too.
    done.cancel();
    let _ = capped.await;
    if let Some(e) = failed {
        return Err(e);
    }
    Ok(Stats::from_latencies(
        lat,
        acked.load(Ordering::Relaxed),
        secs,
    ))
}

/// One Work stream of the fast-path drain: acks each job on arrival until `target`
/// jobs are acked across all streams (or `done` is cancelled, at the cap); returns
/// each job's arrival-to-answered time in ns.
async fn fast_worker(
    mut client: Client,
    capacity: usize,
    target: u64,
    acked: Arc<AtomicU64>,
    done: CancellationToken,
) -> Result<Vec<u64>> {
    let (tx, rx) = mpsc::channel(capacity + 16);
    tx.send(work_start(QUEUE, capacity)).await?;
    let mut replies = client.work(ReceiverStream::new(rx)).await?.into_inner();
    let mut arrived: HashMap<String, Instant> = HashMap::with_capacity(capacity);
    let mut lat = Vec::with_capacity(4096);
    loop {
        let reply = tokio::select! {
            _ = done.cancelled() => break,
            reply = replies.message() => reply?,
        };
        let Some(reply) = reply.and_then(|r| r.response) else {
            return Err("a Work stream ended before the queue was drained".into());
        };
        match reply {
            WorkOut::Job(job) => {
                arrived.insert(job.job_id.clone(), Instant::now());
                tx.send(proto::WorkRequest {
                    request: Some(WorkIn::Ack(ack_of(&job))),
                })
                .await?;
            }
            WorkOut::Ack(result) => {
                if result.code != 0 {
                    return Err(format!(
                        "ack of {} refused: {} {}",
                        result.job_id, result.code, result.message
                    )
                    .into());
                }
                if let Some(at) = arrived.remove(&result.job_id) {
                    lat.push(at.elapsed().as_nanos() as u64);
                }
                if acked.fetch_add(1, Ordering::Relaxed) + 1 >= target {
                    done.cancel();
                }
            }
            other => return Err(format!("unexpected Work reply {other:?}").into()),
        }
    }
    // Closing our side ends the stream; it holds nothing by now.
    drop(tx);
    Ok(lat)
}

/// How the probe's worker waits for its job.
#[derive(Debug, Clone, Copy)]
enum Waiter {
    /// A long-polling ClaimJob (5 s wait), then AckJob.
    ClaimJob,
    /// A Work stream of capacity 1, acking on the stream.
    Work,
}

/// The claim-latency probe: one waiting worker on PROBE_QUEUE, one enqueuer.
struct Probe {
    stop: Arc<AtomicBool>,
    prober: tokio::task::JoinHandle<Result<(Vec<u64>, u64)>>,
    waiter: tokio::task::JoinHandle<Result<()>>,
}

impl Probe {
    /// Starts the waiting worker (of `kind`) and the prober that enqueues for it.
    async fn start(env: &Env, kind: Waiter) -> Result<Probe> {
        let stop = Arc::new(AtomicBool::new(false));
        let (tx, rx) = mpsc::unbounded_channel::<(String, Instant)>();
        let worker = env.client().await?;
        let waiter = match kind {
            Waiter::ClaimJob => tokio::spawn(wait_by_claims(worker, tx)),
            Waiter::Work => tokio::spawn(wait_on_stream(worker, tx)),
        };
        let enqueuer = env.client().await?;
        let prober = tokio::spawn(enqueue_probes(enqueuer, rx, stop.clone()));
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

/// What the probe's worker tells the prober: a job's id and when it arrived.
type Arrivals = mpsc::UnboundedSender<(String, Instant)>;

/// The probe's worker as a [`Waiter::ClaimJob`]: long-polls PROBE_QUEUE (5 s) and
/// acks each job it receives, reporting its arrival; runs until aborted or failed.
async fn wait_by_claims(mut worker: Client, arrivals: Arrivals) -> Result<()> {
    loop {
        let jobs = worker
            .claim_job(claim(PROBE_QUEUE, Some(Duration::from_secs(5))))
            .await?
            .into_inner()
            .jobs;
        let at = Instant::now();
        for j in jobs {
            let _ = arrivals.send((j.job_id.clone(), at));
            worker
                .ack_job(proto::AckJobRequest {
                    result: Vec::new(),
                    namespace: ns(),
                    job_id: j.job_id,
                    lease_token: j.lease_token,
                })
                .await?;
        }
    }
}

/// The probe's worker as a [`Waiter::Work`]: a Work stream of capacity 1 on
/// PROBE_QUEUE that acks each job on the stream, reporting its arrival; runs until
/// aborted or failed (the stream ending is a failure).
async fn wait_on_stream(mut worker: Client, arrivals: Arrivals) -> Result<()> {
    let (acks, rx_acks) = mpsc::channel(16);
    acks.send(work_start(PROBE_QUEUE, 1)).await?;
    let mut replies = worker
        .work(ReceiverStream::new(rx_acks))
        .await?
        .into_inner();
    while let Some(reply) = replies.message().await? {
        if let Some(WorkOut::Job(j)) = reply.response {
            let _ = arrivals.send((j.job_id.clone(), Instant::now()));
            acks.send(proto::WorkRequest {
                request: Some(WorkIn::Ack(ack_of(&j))),
            })
            .await?;
        }
    }
    Err("the probe's Work stream ended".into())
}

/// The prober: until `stop`, enqueues one job on PROBE_QUEUE every PROBE_GAP and
/// waits (5 s at most) for the worker to report it; the delays from each Enqueue's
/// answer to the job's arrival in ns, and the probes never received.
async fn enqueue_probes(
    mut enqueuer: Client,
    mut arrivals: mpsc::UnboundedReceiver<(String, Instant)>,
    stop: Arc<AtomicBool>,
) -> Result<(Vec<u64>, u64)> {
    let mut delays = Vec::new();
    let mut lost = 0u64;
    while !stop.load(Ordering::Relaxed) {
        let id = enqueuer
            .enqueue(job(PROBE_QUEUE))
            .await?
            .into_inner()
            .job_id;
        let acked = Instant::now();
        // The worker may receive the job before the ack reaches the prober:
        // then the delay is 0.
        let got = tokio::time::timeout(Duration::from_secs(5), async {
            while let Some((got, at)) = arrivals.recv().await {
                if got == id {
                    return Some(at);
                }
            }
            None
        })
        .await;
        match got {
            Ok(Some(at)) => delays.push(at.saturating_duration_since(acked).as_nanos() as u64),
            Ok(None) => return Err("the probe's worker stopped".into()),
            Err(_) => lost += 1,
        }
        // The probe rate: one probe per PROBE_GAP of real time.
        #[allow(clippy::disallowed_methods)]
        tokio::time::sleep(PROBE_GAP).await;
    }
    Ok((delays, lost))
}
