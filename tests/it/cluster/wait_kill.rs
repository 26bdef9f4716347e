//! A real failover under `--redis-wait-replicas 1` (issue 29 item 11): the master
//! of "ns" is killed (SIGKILL) while workers claim and ack jobs that allow a single
//! attempt, so any attempt spent on a claim no worker saw kills its job. The killed
//! node is brought back only once the workers have been refused a few claims by
//! the new master (it has no replica yet, so no WAIT can succeed): the window in
//! which every WAIT runs out its timeout, and in which each refused claim must give
//! its jobs back.

use std::{
    collections::HashMap,
    sync::{
        atomic::{AtomicBool, AtomicU64, Ordering},
        Arc, Mutex,
    },
    time::Duration,
};

use dueq::config::{RedisMode, ServeConfig};
use tokio::time::Instant;
use tonic::Code;

use crate::common::*;

/// A key of namespace "ns": its slot, its master.
const NS_KEY: &str = "dueq:{ns}:meta";
const JOBS: usize = 1500;
const WORKERS: usize = 8;
/// Jobs acked before the kill.
const BEFORE: u64 = 100;
/// Claims the new master refuses (no replica to confirm them) before the killed
/// node comes back.
const REFUSED_AFTER: u64 = 20;
/// The workers' lease: long enough for a give-back to be tried again until the
/// failover is over, short enough that a lease lost in it runs out within the
/// drain's patience.
const LEASE_MS: u64 = 15_000;

fn waiting(cluster: &Cluster) -> ServeConfig {
    let mut config = config(&cluster.url());
    config.redis_mode = RedisMode::Cluster;
    config.redis_wait_replicas = 1;
    // WAIT waits half of it.
    config.redis_timeout = Duration::from_secs(2);
    config
}

/// What the workers saw.
#[derive(Default)]
struct Seen {
    /// Hand-outs per job id: jobs a claim answered to a worker.
    handed: HashMap<String, u32>,
    /// Successful acks per job id.
    acked: HashMap<String, u32>,
}

/// Where the run is.
#[derive(Default)]
struct Progress {
    acks: AtomicU64,
    /// Set once a replica has taken over: refusals from then on are counted.
    failed_over: AtomicBool,
    /// Claims refused UNAVAILABLE naming --redis-wait-replicas after the failover.
    refused: AtomicU64,
    stop: AtomicBool,
}

/// Pins issue 29 item 11 against a real `kill -9` failover: no job goes DEAD that
/// no worker was handed, and every job ends completed, handed to a worker exactly
/// once (a job given back was never handed) and acked once. On main before this
/// test, claims whose WAIT failed on the new master gave their jobs back over a
/// connection held up behind other calls' WAITs, or while no master served the
/// slot; the give-back failed, the leases ran out, and the jobs died unhanded (4
/// in one of three runs) or handed (acks held up past their lease).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_kill_failover_under_wait_replicas_kills_no_job_no_worker_was_handed() {
    let mut cluster = Cluster::start().await;
    let service = Service::start_with(waiting(&cluster)).await;
    let client = service.client().await;
    enqueue_all(&client).await;
    let seen = Arc::new(Mutex::new(Seen::default()));
    let progress = Arc::new(Progress::default());
    let workers: Vec<_> = (0..WORKERS)
        .map(|w| tokio::spawn(work(w, client.clone(), seen.clone(), progress.clone())))
        .collect();

    let patience = Patience::new("acks before the kill");
    while progress.acks.load(Ordering::Relaxed) < BEFORE {
        patience.wait().await;
    }
    let killed = cluster.kill_master_of(NS_KEY).await;
    let patience = Patience::new("a replica to take over");
    while cluster.try_master_of(NS_KEY).await.unwrap_or(killed) == killed {
        patience.wait().await;
    }
    progress.failed_over.store(true, Ordering::Relaxed);
    let patience = Patience::new("the new master to refuse claims it cannot confirm");
    while progress.refused.load(Ordering::Relaxed) < REFUSED_AFTER {
        patience.wait().await;
    }
    let i = cluster.index_of(killed);
    cluster.nodes[i].restart().await;
    cluster.wait_healthy().await;

    // Drain: every job completed or dead (a lease lost in the failover runs out
    // and, at one attempt, kills its job).
    let mut c = client.clone();
    let patience = Patience::new("the workers to drain the queue");
    loop {
        let q = listed_queue(&mut c, "q").await;
        if q.pending + q.delayed + q.active == 0 {
            break;
        }
        patience.wait().await;
    }
    progress.stop.store(true, Ordering::Relaxed);
    for w in workers {
        w.await.expect("worker");
    }
    let seen = std::mem::take(&mut *seen.lock().unwrap());
    check(&mut c, &seen, progress.refused.load(Ordering::Relaxed)).await;
}

/// Enqueues JOBS jobs "j0".. in queue "q", one attempt each.
async fn enqueue_all(client: &Client) {
    let enqueuers: Vec<_> = (0..4)
        .map(|e| {
            let mut c = client.clone();
            tokio::spawn(async move {
                for i in (e..JOBS).step_by(4) {
                    let mut req = job("q", "f");
                    req.job_id = format!("j{i}");
                    req.max_attempts = Some(1);
                    enqueue(&mut c, req).await;
                }
            })
        })
        .collect();
    for e in enqueuers {
        e.await.expect("enqueuer");
    }
}

/// A worker: claims up to 4 jobs at a time and acks them (at once, each on its
/// own), trying an ack refused UNAVAILABLE again while its lease lasts.
async fn work(w: usize, mut c: Client, seen: Arc<Mutex<Seen>>, progress: Arc<Progress>) {
    while !progress.stop.load(Ordering::Relaxed) {
        let mut req = claim_req(&["q"], 200, Some(LEASE_MS));
        req.worker_id = format!("w{w}");
        req.max_jobs = 4;
        let lease_ends = Instant::now() + Duration::from_millis(LEASE_MS);
        let jobs = match c.claim_job(req).await {
            Ok(r) => r.into_inner().jobs,
            Err(status) => {
                let unconfirmed = status.code() == Code::Unavailable
                    && status.message().contains("--redis-wait-replicas");
                if unconfirmed && progress.failed_over.load(Ordering::Relaxed) {
                    progress.refused.fetch_add(1, Ordering::Relaxed);
                }
                back_off().await;
                continue;
            }
        };
        for j in &jobs {
            *seen
                .lock()
                .unwrap()
                .handed
                .entry(j.job_id.clone())
                .or_default() += 1;
        }
        let acks = jobs.into_iter().map(|j| {
            let mut c = c.clone();
            async move { ack(&mut c, &j, lease_ends).await.then_some(j.job_id) }
        });
        for id in futures::future::join_all(acks).await.into_iter().flatten() {
            *seen.lock().unwrap().acked.entry(id).or_default() += 1;
            progress.acks.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Acks `j`, again after UNAVAILABLE until its lease ends; whether an ack succeeded.
async fn ack(c: &mut Client, j: &proto::ClaimedJob, lease_ends: Instant) -> bool {
    loop {
        match ack_job(c, &j.job_id, &j.lease_token).await {
            Ok(_) => return true,
            Err(s) if s.code() == Code::Unavailable && Instant::now() < lease_ends => {
                back_off().await;
            }
            // The lease is gone: an ack refused UNAVAILABLE may have been made (the
            // job is completed), or the lease ran out.
            Err(_) => return false,
        }
    }
}

/// The assertions, on every job's final state.
async fn check(c: &mut Client, seen: &Seen, refused: u64) {
    let (mut completed, mut dead_handed, mut dead_unhanded) = (0, 0, Vec::new());
    for i in 0..JOBS {
        let id = format!("j{i}");
        let job = get_job(c, &id).await;
        let handed = seen.handed.get(&id).copied().unwrap_or_default();
        match state(&job) {
            proto::JobState::Completed => {
                completed += 1;
                assert_eq!(handed, 1, "{id} completed, handed {handed} times");
            }
            proto::JobState::Dead if handed == 0 => dead_unhanded.push(id),
            proto::JobState::Dead => dead_handed += 1,
            other => panic!("{id} is {other:?} after the drain"),
        }
    }
    eprintln!(
        "kill failover (cluster, --redis-wait-replicas 1, max_attempts 1): {JOBS} jobs, \
         {completed} completed, {} dead that no worker was handed, {dead_handed} dead after \
         a hand-out; {refused} claims refused unconfirmed after the failover",
        dead_unhanded.len()
    );
    assert!(
        dead_unhanded.is_empty(),
        "dead without ever being handed to a worker: {dead_unhanded:?}"
    );
    // A job handed out once (max_attempts 1) and acked within its lease is done.
    assert_eq!(dead_handed, 0, "jobs handed to a worker and dead");
    for (id, n) in &seen.handed {
        assert_eq!(*n, 1, "{id} handed to workers {n} times");
    }
    for (id, n) in &seen.acked {
        assert_eq!(*n, 1, "{id} acked {n} times");
    }
}

/// A pause before a worker retries a call the failover refused: real time for the
/// new master to take over (the load runs until stopped, not until a fact holds).
#[allow(clippy::disallowed_methods)]
async fn back_off() {
    tokio::time::sleep(Duration::from_millis(20)).await;
}
