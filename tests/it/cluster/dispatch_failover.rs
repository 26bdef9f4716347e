//! Schedules that enqueue jobs (issue 30) on Redis Cluster, and across a Redis
//! failover: the Sentinel master is killed (SIGKILL) while target schedules fire every
//! second and workers claim and ack their jobs, with `--redis-wait-replicas 1`. A slot
//! enqueued twice would show as its job claimed again after it was acked (re-created
//! by a dispatch the failover lost and the new master replayed), or as two job ids for
//! one slot.

use std::{
    collections::{HashMap, HashSet},
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc, Mutex,
    },
    time::Duration,
};

use dueq::config::RedisMode;

use crate::common::*;

const SCHEDULES: usize = 10;
const WORKERS: usize = 4;
/// Slots acked before the kill, and after the failover before the load stops.
const BEFORE: usize = 30;
const AFTER: usize = 30;

#[derive(Default)]
struct Seen {
    /// Job ids acked (successfully), with the slot each came from.
    acked: HashMap<String, (String, i64)>,
    /// Claims of a job id after it was acked.
    claimed_after_ack: Vec<String>,
    /// Job ids per slot (schedule id, due ms).
    ids_per_slot: HashMap<(String, i64), HashSet<String>>,
}

/// A pause before a worker retries a call the failover refused: real time for the new
/// master to take over (the load runs until stopped, not until a fact holds).
#[allow(clippy::disallowed_methods)]
async fn back_off() {
    tokio::time::sleep(Duration::from_millis(20)).await;
}

fn worker(c: Client, seen: Arc<Mutex<Seen>>, stop: Arc<AtomicBool>) -> tokio::task::JoinHandle<()> {
    let mut c = c;
    tokio::spawn(async move {
        while !stop.load(Ordering::Relaxed) {
            let jobs = match c.claim_job(claim_req(&["tick"], 200, Some(2000))).await {
                Ok(r) => r.into_inner().jobs,
                Err(_) => {
                    back_off().await;
                    continue;
                }
            };
            for j in jobs {
                let slot = j.schedule.clone().expect("a target job names its slot");
                let key = (slot.schedule_id, ms(&slot.due_time));
                {
                    let mut seen = seen.lock().unwrap();
                    if seen.acked.contains_key(&j.job_id) {
                        seen.claimed_after_ack.push(j.job_id.clone());
                    }
                    seen.ids_per_slot
                        .entry(key.clone())
                        .or_default()
                        .insert(j.job_id.clone());
                }
                if ack_job(&mut c, &j.job_id, &j.lease_token).await.is_ok() {
                    seen.lock().unwrap().acked.insert(j.job_id, key);
                }
            }
        }
    })
}

async fn wait_acked(seen: &Arc<Mutex<Seen>>, n: usize, what: &str) {
    let patience = Patience::new(what);
    while seen.lock().unwrap().acked.len() < n {
        patience.wait().await;
    }
}

/// Pins: with --redis-wait-replicas 1, a Sentinel failover under firing target
/// schedules enqueues no slot twice, and dispatching goes on by itself afterwards.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn no_slot_is_enqueued_twice_across_a_failover_with_wait_replicas() {
    let mut setup = Sentinels::start().await;
    let mut config = config(&setup.url());
    config.redis_mode = RedisMode::Sentinel;
    config.redis_sentinel_master = Some(SENTINEL_MASTER.into());
    config.redis_wait_replicas = 1;
    config.redis_timeout = Duration::from_secs(2);
    let service = Service::start_with(config).await;
    let mut c = service.client().await;
    for i in 0..SCHEDULES {
        let s = proto::Schedule {
            target: Some(proto::schedule::Target::Enqueue(proto::EnqueueTarget {
                queue: "tick".into(),
                ..Default::default()
            })),
            ..every(&format!("t{i}"), 1)
        };
        upsert(&mut c, "ns", s).await;
    }
    let seen = Arc::new(Mutex::new(Seen::default()));
    let stop = Arc::new(AtomicBool::new(false));
    let workers: Vec<_> = (0..WORKERS)
        .map(|_| worker(c.clone(), seen.clone(), stop.clone()))
        .collect();
    wait_acked(&seen, BEFORE, "slots acked before the kill").await;

    let killed = setup.master_port().await;
    if setup.master.port == killed {
        setup.master.kill();
    } else {
        setup.replica.kill();
    }
    let patience = Patience::new("a replica to take over");
    while setup.master_port_agreed().await.unwrap_or(killed) == killed {
        patience.wait().await;
    }
    let node = if setup.master.port == killed {
        &mut setup.master
    } else {
        &mut setup.replica
    };
    node.restart().await;
    setup.wait_healthy().await;
    let after = seen.lock().unwrap().acked.len() + AFTER;
    wait_acked(&seen, after, "slots acked after the failover").await;
    stop.store(true, Ordering::Relaxed);
    for w in workers {
        w.await.expect("worker");
    }

    let seen = seen.lock().unwrap();
    assert!(
        seen.claimed_after_ack.is_empty(),
        "jobs claimed again after their ack (a slot enqueued twice): {:?}",
        seen.claimed_after_ack
    );
    let split: Vec<_> = seen
        .ids_per_slot
        .iter()
        .filter(|(_, ids)| ids.len() > 1)
        .collect();
    assert!(split.is_empty(), "slots with two jobs: {split:?}");
    let acked_slots: HashSet<&(String, i64)> = seen.acked.values().collect();
    assert_eq!(
        acked_slots.len(),
        seen.acked.len(),
        "one acked job per slot"
    );
}

/// Pins: on Redis Cluster a target schedule's slot becomes its job (the dispatch
/// due-set, a global key, and the namespace's keys live on different masters).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_target_schedule_dispatches_on_a_cluster() {
    let cluster = Cluster::start().await;
    let mut config = config(&cluster.url());
    config.redis_mode = RedisMode::Cluster;
    let service = Service::start_with(config).await;
    let mut c = service.client().await;
    let s = proto::Schedule {
        target: Some(proto::schedule::Target::Enqueue(proto::EnqueueTarget {
            queue: "q".into(),
            ..Default::default()
        })),
        ..every("s", 3600)
    };
    upsert(&mut c, "ns", s).await;
    let t = c
        .trigger_schedule(proto::TriggerScheduleRequest {
            namespace: "ns".into(),
            id: "s".into(),
            ignore_overlap: false,
        })
        .await
        .expect("trigger")
        .into_inner();
    let job = claim_job(&mut c, &["q"], LONG_POLL_MS, None)
        .await
        .expect("the triggered slot's job");
    assert_eq!(job.job_id, t.occurrence_id);
}
