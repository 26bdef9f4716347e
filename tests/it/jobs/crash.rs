//! Crash safety under load: two service instances, 64 workers, 10,000 jobs, and
//! workers that randomly ack, fail, abandon (never ack: a crash) or extend. Every job
//! must end completed or dead exactly once, and the counts must add up. The jobs,
//! the wait and the checks are shared with the same test over the Work stream
//! (work_stream.rs).

use std::{
    collections::{HashMap, HashSet},
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc, Mutex,
    },
    time::Duration,
};

use tonic::Code;

use crate::common::*;

const JOBS: usize = 10_000;
const WORKERS: usize = 64;
const MAX_ATTEMPTS: u32 = 4;
/// The queue the jobs are in.
pub(crate) const QUEUE: &str = "crash";

#[derive(Default)]
pub(crate) struct Seen {
    /// (job id, attempt) of every claim a worker received.
    pub(crate) claims: Vec<(String, u32)>,
    /// Jobs whose ack succeeded.
    pub(crate) acked: Vec<String>,
    /// Jobs a FailJob reported dead.
    pub(crate) failed_dead: Vec<String>,
}

pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// A slow worker's work: real time it holds a job while its lease (300 ms) runs, so
/// extends and acks race the lease's expiry as a real worker's would.
#[allow(clippy::disallowed_methods)]
pub(crate) async fn work_for(ms: u64) {
    tokio::time::sleep(Duration::from_millis(ms)).await;
}

fn lost(status: &tonic::Status) -> bool {
    // A lease that ran out under load (the job goes to another worker) is expected.
    status.code() == Code::Aborted
}

/// Pins: under crashing, failing and slow workers on two instances, every job ends
/// completed or dead exactly once and every handed-out attempt is accounted for.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_job_ends_completed_or_dead_exactly_once() {
    let redis = Redis::start().await;
    let conn = redis.conn().await;
    crash_test(config(&redis.url()), conn, JOBS).await;
}

/// The test above over any Redis with `jobs` jobs: two instances of `config`, and
/// `conn` a direct connection to the Redis (or cluster master) that holds "ns".
pub async fn crash_test(
    config: dueq::config::ServeConfig,
    mut conn: deadpool_redis::redis::aio::MultiplexedConnection,
    jobs: usize,
) {
    let a = Service::start_with(config.clone()).await;
    let b = Service::start_with(config).await;
    let clients = [a.client().await, b.client().await];

    enqueue_jobs(&mut clients[0].clone(), jobs).await;

    let seen = Arc::new(Mutex::new(Seen::default()));
    let stop = Arc::new(AtomicBool::new(false));
    let workers: Vec<_> = (0..WORKERS)
        .map(|w| {
            let mut c = clients[w % 2].clone();
            let (seen, stop) = (seen.clone(), stop.clone());
            tokio::spawn(async move {
                let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ ((w as u64 + 1) * 0x1234_5679));
                while !stop.load(Ordering::Relaxed) {
                    let mut req = claim_req(&[QUEUE], 300, Some(300));
                    req.worker_id = format!("w{w}");
                    req.max_jobs = 1 + (rng.next() % 3) as u32;
                    let jobs = c.claim_job(req).await.expect("claim").into_inner().jobs;
                    for j in jobs {
                        seen.lock()
                            .unwrap()
                            .claims
                            .push((j.job_id.clone(), j.attempt));
                        match rng.next() % 100 {
                            0..=64 => match ack_job(&mut c, &j.job_id, &j.lease_token).await {
                                Ok(_) => seen.lock().unwrap().acked.push(j.job_id),
                                Err(s) if lost(&s) => {}
                                Err(s) => panic!("ack: {s:?}"),
                            },
                            65..=82 => {
                                match fail_job(&mut c, &j.job_id, &j.lease_token, "random").await {
                                    Ok(r) if r.state == proto::JobState::Dead as i32 => {
                                        seen.lock().unwrap().failed_dead.push(j.job_id)
                                    }
                                    Ok(_) => {}
                                    Err(s) if lost(&s) => {}
                                    Err(s) => panic!("fail: {s:?}"),
                                }
                            }
                            83..=92 => {} // abandon: the worker "crashed" holding it
                            _ => {
                                // Extend past the first deadline, then ack.
                                work_for(150).await;
                                let extended = c
                                    .extend_lease(proto::ExtendLeaseRequest {
                                        progress: None,
                                        namespace: "ns".into(),
                                        job_id: j.job_id.clone(),
                                        lease_token: j.lease_token.clone(),
                                        lease: Some(dur(400)),
                                    })
                                    .await;
                                match extended {
                                    Ok(_) => {}
                                    Err(s) if lost(&s) => continue,
                                    Err(s) => panic!("extend: {s:?}"),
                                }
                                work_for(200).await;
                                match ack_job(&mut c, &j.job_id, &j.lease_token).await {
                                    Ok(_) => seen.lock().unwrap().acked.push(j.job_id),
                                    Err(s) if lost(&s) => {}
                                    Err(s) => panic!("ack after extend: {s:?}"),
                                }
                            }
                        }
                    }
                }
            })
        })
        .collect();

    wait_finished(&mut conn, jobs).await;
    stop.store(true, Ordering::Relaxed);
    for w in workers {
        w.await.expect("worker");
    }

    let seen = std::mem::take(&mut *seen.lock().unwrap());
    check_outcome(&mut clients[1].clone(), seen, jobs, 0).await;
}

/// Enqueues `jobs` jobs (a multiple of 1,000) in QUEUE of "ns", each with MAX_ATTEMPTS
/// and a short backoff.
pub(crate) async fn enqueue_jobs(c: &mut Client, jobs: usize) {
    for batch in 0..jobs / 1000 {
        let jobs = (0..1000)
            .map(|i| {
                let mut r = job(QUEUE, &format!("job-{}", batch * 1000 + i));
                r.max_attempts = Some(MAX_ATTEMPTS);
                r.backoff = Some(proto::Backoff {
                    kind: proto::BackoffKind::Fixed as i32,
                    base: Some(dur(20)),
                    cap: None,
                    jitter: 0.5,
                });
                r
            })
            .collect();
        let results = c
            .enqueue_batch(proto::EnqueueBatchRequest {
                namespace: "ns".into(),
                jobs,
            })
            .await
            .expect("batch")
            .into_inner()
            .results;
        assert!(results
            .iter()
            .all(|r| matches!(r.result, Some(proto::enqueue_batch_result::Result::Ok(_)))));
    }
}

/// Waits until every job is finished (completed or dead), as Redis sees it. A slow
/// box takes longer; only a stall (no job finishing for a while) fails.
pub(crate) async fn wait_finished(
    conn: &mut deadpool_redis::redis::aio::MultiplexedConnection,
    jobs: usize,
) {
    let mut done = 0;
    let mut patience = Patience::new(format!("more than {done} of {jobs} jobs to finish"));
    while done < jobs {
        patience.wait().await;
        let now_done = zcard(conn, "dueq:{ns}:jdone").await as usize;
        if now_done > done {
            done = now_done;
            patience = Patience::new(format!("more than {done} of {jobs} jobs to finish"));
        }
    }
}

/// Checks what the workers saw against the jobs' end states: every job completed (and
/// acked, once) or dead (after MAX_ATTEMPTS), no attempt handed out twice, and the
/// attempts the jobs counted are the claims the workers received, plus at most
/// `unseen` handed out that no worker read (a stream dropped with jobs in flight).
pub(crate) async fn check_outcome(c: &mut Client, seen: Seen, jobs: usize, unseen: u64) {
    let acked: HashSet<&String> = seen.acked.iter().collect();
    assert_eq!(acked.len(), seen.acked.len(), "no job acked twice");
    let claims: HashSet<&(String, u32)> = seen.claims.iter().collect();
    assert_eq!(
        claims.len(),
        seen.claims.len(),
        "no attempt handed out twice"
    );

    let mut attempts_by_job: HashMap<String, u32> = HashMap::new();
    let (mut completed, mut dead) = (0, 0);
    for j in list_all_jobs(c, "ns", QUEUE, 1000).await {
        match state(&j) {
            proto::JobState::Completed => {
                completed += 1;
                assert!(
                    acked.contains(&j.job_id),
                    "completed but never acked: {}",
                    j.job_id
                );
                assert_eq!(j.errors.len() as u32, j.attempts - 1, "{j:?}");
            }
            proto::JobState::Dead => {
                dead += 1;
                assert!(!acked.contains(&j.job_id), "dead but acked: {}", j.job_id);
                assert_eq!(j.attempts, MAX_ATTEMPTS, "{j:?}");
                assert_eq!(j.errors.len() as u32, MAX_ATTEMPTS, "{j:?}");
            }
            other => panic!("job {} ended {other:?}", j.job_id),
        }
        attempts_by_job.insert(j.job_id, j.attempts);
    }
    assert_eq!(attempts_by_job.len(), jobs);
    assert_eq!(completed + dead, jobs);
    assert_eq!(completed, acked.len());
    // Every claim a job's attempt counter recorded reached a worker (but the unseen
    // ones), and vice versa.
    let total_attempts: u64 = attempts_by_job.values().map(|&a| u64::from(a)).sum();
    let claimed = seen.claims.len() as u64;
    assert!(
        (claimed..=claimed + unseen).contains(&total_attempts),
        "{total_attempts} attempts counted, {claimed} claims received, at most {unseen} unseen"
    );
    assert!(seen.failed_dead.len() <= dead);
    eprintln!(
        "{completed} completed, {dead} dead, {} claims",
        seen.claims.len()
    );
}
