//! A concurrency slot freed -> the key's next job dispatched. Keys at their limit
//! (per_key_max_running 1) with backlogs, two ways:
//!
//! - another worker waiting: a holder leases one job of every key (all keys at their
//!   limit, nothing else claimable) and a second worker long-polls the queue
//!   (ClaimJob, POLL_WAIT). One sample at a time (1,000; --smoke: 40): the holder
//!   acks one key's job (AckJob) and the sample is the time from sending that ack to
//!   the waiting worker receiving the key's next job; the holder then holds that
//!   one. A wake-up that never comes shows as a sample of about POLL_WAIT (the job
//!   came with the waiter's next poll), counted apart. Script calls per sample from
//!   INFO commandstats (the AckJob's and the waiting claim's, plus any claim a
//!   wake-up made for nothing).
//! - the Work stream fast path: one stream whose capacity is over the keys' total
//!   slots drains `plan.prefill` jobs of 8 keys, acking each on arrival, so every ack rides in the
//!   stream's next claim, which frees the slot and hands out the key's next job in
//!   one script call. Its script calls per job are the issue's "<= 1 on the fast
//!   path"; its latencies are from a job's arrival (its ack sent at once) to the
//!   arrival of its key's next job.

use std::{
    collections::{BTreeMap, HashMap},
    ops::Bound::{Excluded, Unbounded},
    sync::Arc,
    time::{Duration, Instant},
};

use dueq::proto;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::{drain, enqueue_all, job, set_policy, NS, S};
use crate::{
    env::{Client, Env},
    grpc::with_cpu,
    load::Stats,
    plan::Plan,
    report::{Report, Row},
    Result,
};

/// The rows the target reads.
pub(crate) const SLOT_ROW: &str = "slot freed -> dispatch, another worker waiting";
pub(crate) const FAST_ROW: &str = "keys at their limit, Work stream fast path";

const QUEUE: &str = "s";
const FAST_QUEUE: &str = "sf";
/// Keys of the fast-path drain.
const FAST_KEYS: u64 = 8;
/// Samples slower than this waited for something other than a wake-up (the waiting
/// worker's next long-poll).
const MISSED_WAKE: Duration = Duration::from_millis(100);

/// The waiting worker's long-poll wait: a wake-up that never comes costs a sample
/// this long (and the run as much), where a real worker would wait its whole wait.
const POLL_WAIT: Duration = Duration::from_millis(200);

pub(super) async fn run(plan: &Plan, env: &Env, report: &mut Report) -> Result<()> {
    waiting_worker(plan, env, report).await?;
    env.reset().await?;
    fast_path(plan, env, report).await
}

fn one_per_key() -> Option<proto::QueuePolicy> {
    Some(proto::QueuePolicy {
        per_key_max_running: 1,
        ..Default::default()
    })
}

/// Jobs of `queue`, job i with concurrency key (and name) "k{i % keys}".
fn keyed(queue: &'static str, keys: u64) -> super::MakeJob {
    Arc::new(move |i| {
        let key = format!("k{}", i % keys);
        proto::EnqueueRequest {
            concurrency_key: key.clone(),
            ..job(queue, &key)
        }
    })
}

fn claim(max_jobs: u32, wait: Option<Duration>) -> proto::ClaimJobRequest {
    let duration = |d: Duration| prost_types::Duration {
        seconds: d.as_secs() as i64,
        nanos: d.subsec_nanos() as i32,
    };
    proto::ClaimJobRequest {
        namespace: NS.into(),
        queues: vec![QUEUE.into()],
        worker_id: "bench".into(),
        wait: wait.map(duration),
        lease: Some(duration(Duration::from_secs(600))),
        max_jobs,
        acks: vec![],
    }
}

/// A job the waiting worker received: its name (key), lease and arrival.
type Received = (String, proto::JobLease, Instant);

/// The waiting worker: long-polls QUEUE (`wait`) and reports each job until
/// cancelled.
async fn wait_for_jobs(
    mut client: Client,
    wait: Duration,
    got: mpsc::UnboundedSender<Received>,
    cancel: CancellationToken,
) -> Result<()> {
    loop {
        let reply = tokio::select! {
            r = client.claim_job(claim(1, Some(wait))) => r?,
            _ = cancel.cancelled() => return Ok(()),
        };
        let at = Instant::now();
        for j in reply.into_inner().jobs {
            let lease = super::lease_of(&j);
            let _ = got.send((j.name, lease, at));
        }
    }
}

/// The holder's side: the job it holds of each key, and what the waiting worker
/// reports.
struct Holder {
    client: Client,
    held: BTreeMap<String, proto::JobLease>,
    arrivals: mpsc::UnboundedReceiver<Received>,
    /// How long a sample may wait for its job before it is lost.
    give_up: Duration,
}

impl Holder {
    /// One sample: acks the job of the first key held after `after` (in key order,
    /// wrapping) and waits for that key's next job; any other key's job that
    /// arrives meanwhile (a sample lost before) is held again. The key and the
    /// delay, None when lost.
    async fn sample(&mut self, after: &str) -> Result<(String, Option<Duration>)> {
        if self.held.is_empty() {
            self.take_arrival(Instant::now() + self.give_up).await?;
        }
        let key = self
            .held
            .range::<str, _>((Excluded(after), Unbounded))
            .chain(self.held.iter())
            .map(|(k, _)| k.clone())
            .next()
            .ok_or("the holder holds no job: every sample was lost")?;
        let lease = self.held.remove(&key).ok_or("held")?;
        let sent = Instant::now();
        self.client.ack_job(ack(lease)).await?;
        let deadline = sent + self.give_up;
        while let Some((name, at)) = self.take_arrival(deadline).await? {
            if name == key {
                return Ok((key, Some(at.saturating_duration_since(sent))));
            }
        }
        Ok((key, None))
    }

    /// Waits until `deadline` for the waiting worker's next job and holds it: its
    /// name and arrival, None at the deadline.
    async fn take_arrival(&mut self, deadline: Instant) -> Result<Option<(String, Instant)>> {
        let wait = deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(wait, self.arrivals.recv()).await {
            Ok(Some((name, lease, at))) => {
                self.held.insert(name.clone(), lease);
                Ok(Some((name, at)))
            }
            Ok(None) => Err("the waiting worker stopped".into()),
            Err(_) => Ok(None),
        }
    }
}

async fn waiting_worker(plan: &Plan, env: &Env, report: &mut Report) -> Result<()> {
    let (keys, samples): (u64, u64) = if plan.smoke { (5, 40) } else { (20, 1_000) };
    set_policy(env, QUEUE, one_per_key()).await?;
    enqueue_all(env, keys * (samples / keys + 2), 1, keyed(QUEUE, keys)).await?;
    let mut client = env.client().await?;
    let held = client
        .claim_job(claim(keys as u32, None))
        .await?
        .into_inner()
        .jobs;
    let held: BTreeMap<String, proto::JobLease> = held
        .iter()
        .map(|j| (j.name.clone(), super::lease_of(j)))
        .collect();
    if held.len() as u64 != keys {
        return Err(format!("the holder got {} keys' jobs, not {keys}", held.len()).into());
    }
    let (tx, arrivals) = mpsc::unbounded_channel();
    let cancel = CancellationToken::new();
    let wait = POLL_WAIT;
    let waiter = tokio::spawn(wait_for_jobs(env.client().await?, wait, tx, cancel.clone()));
    let mut holder = Holder {
        client,
        held,
        arrivals,
        give_up: wait + Duration::from_secs(2),
    };
    let before = env.cpu().await?;
    let (mut lat, mut lost, mut key) = (Vec::with_capacity(samples as usize), 0u64, String::new());
    for _ in 0..samples {
        let (acked, delay) = holder.sample(&key).await?;
        key = acked;
        match delay {
            Some(d) => lat.push(d.as_nanos() as u64),
            None => lost += 1,
        }
    }
    let cpu = before.per_op(&env.cpu().await?, lat.len() as u64);
    cancel.cancel();
    waiter.await??;
    let missed = lat
        .iter()
        .filter(|&&ns| ns > MISSED_WAKE.as_nanos() as u64)
        .count() as u64;
    report.push(slot_row(keys, &lat, lost, missed, wait, cpu.script_calls));
    Ok(())
}

fn slot_row(keys: u64, lat: &[u64], lost: u64, missed: u64, wait: Duration, calls: f64) -> Row {
    let n = lat.len() as u64;
    let s = Stats::from_latencies(lat.to_vec(), n, 0.0);
    Row::latency(S, SLOT_ROW, &s)
        .with("samples", n)
        .with("lost", lost)
        .with("missed_wakes", missed)
        .with("keys", keys)
        .with("script_calls_per_job", calls)
        .note(format!(
            "{keys} keys at per_key_max_running 1, each with a backlog; AckJob sent -> a long-polling ClaimJob ({wait:?} wait) receives the key's next job; {n} samples one at a time, {missed} over {MISSED_WAKE:?} (the wake-up missed: the job came with the waiter's next poll){}; script calls per job {calls:.2} (AckJob + the waiting claim)",
            if lost > 0 { format!(", {lost} not received at all") } else { String::new() },
        ))
}

fn ack(lease: proto::JobLease) -> proto::AckJobRequest {
    proto::AckJobRequest {
        namespace: NS.into(),
        job_id: lease.job_id,
        lease_token: lease.lease_token,
        result: Vec::new(),
    }
}

/// The fast path: FAST_KEYS keys at per_key_max_running 1, `plan.prefill` jobs, one
/// Work stream of capacity twice the keys' slots (at least `plan.concurrency`).
async fn fast_path(plan: &Plan, env: &Env, report: &mut Report) -> Result<()> {
    let n = plan.prefill;
    let capacity = plan.concurrency.max(2 * FAST_KEYS as usize);
    set_policy(env, FAST_QUEUE, one_per_key()).await?;
    enqueue_all(env, n, 4, keyed(FAST_QUEUE, FAST_KEYS)).await?;
    let client = env.client().await?;
    let mut last: HashMap<String, Instant> = HashMap::new();
    let mut lat = Vec::with_capacity(n as usize);
    let phase = async {
        let d = drain(client, FAST_QUEUE, capacity, n, |name, at| {
            if let Some(prev) = last.insert(name.to_owned(), at) {
                lat.push(at.saturating_duration_since(prev).as_nanos() as u64);
            }
        })
        .await?;
        Ok(Stats {
            items: d.acked,
            calls: d.acked,
            secs: if d.stalled { 0.0 } else { d.secs },
            ..Stats::default()
        })
    };
    let (s, cpu) = with_cpu(env, phase).await?;
    let samples = lat.len() as u64;
    let l = Stats::from_latencies(lat, samples, 0.0);
    let stalled = s.items < n;
    let mut row = Row::stats(S, FAST_ROW, &l)
        .with("samples", samples)
        .with("jobs", n)
        .with("acked", s.items)
        .with("stalled", stalled)
        .with("script_calls_per_job", cpu.script_calls)
        .with("redis_cpu_us_per_job", cpu.redis_us)
        .note(format!(
            "{FAST_KEYS} keys at per_key_max_running 1, {n} jobs, one Work stream of capacity {capacity} acking each job on arrival; script calls/job {:.2}, Redis CPU/job {:.0} us; p50/p99: a job's arrival (its ack sent at once) -> its key's next job's arrival",
            cpu.script_calls, cpu.redis_us
        ));
    if stalled {
        row = row.and_note(format!(
            "STALLED: no job for {:?} after {} of {n} acked (the keys' next jobs never came)",
            super::STALL,
            s.items
        ));
    }
    row.ops_s = (!stalled).then(|| s.ops_s());
    if samples == 0 {
        (row.p50_ms, row.p99_ms, row.p999_ms) = (None, None, None);
    }
    report.push(row);
    Ok(())
}
