//! A Sentinel failover with --redis-wait-replicas 1 while flows run: no node is
//! stranded (every flow completes) and none completes twice or runs before its
//! dependencies completed.

use std::{
    collections::HashMap,
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc, Mutex,
    },
    time::Duration,
};

use dueq::config::RedisMode;

use super::*;

#[derive(Default)]
struct Record {
    acks: HashMap<String, u32>,
    violations: Vec<String>,
}

/// Claims from "q" and acks until `stop`, through every error of the failover.
async fn work(mut c: Client, record: Arc<Mutex<Record>>, stop: Arc<AtomicBool>) {
    while !stop.load(Ordering::Acquire) {
        let claimed = c
            .claim_job(proto::ClaimJobRequest {
                max_jobs: 4,
                ..claim_req(&["q"], 200, Some(1_000))
            })
            .await;
        let Ok(claimed) = claimed else {
            Patience::new("the failover").wait().await;
            continue;
        };
        for job in claimed.into_inner().jobs {
            let early: Vec<String> = job
                .dependencies
                .iter()
                .filter(|d| d.state != proto::JobState::Completed as i32)
                .map(|d| format!("{} claimed before {} completed", job.flow_ref, d.r#ref))
                .collect();
            record.lock().expect("lock").violations.extend(early);
            if ack_job(&mut c, &job.job_id, &job.lease_token).await.is_ok() {
                *record
                    .lock()
                    .expect("lock")
                    .acks
                    .entry(job.job_id)
                    .or_default() += 1;
            }
        }
    }
}

/// Pins: flows running across a Sentinel failover (master killed, replica promoted,
/// the old master back as a replica) with --redis-wait-replicas 1 all complete: no
/// node stranded, none completed twice, none claimed before its dependencies.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_sentinel_failover_neither_strands_nor_double_runs_a_node() {
    let mut setup = Sentinels::start().await;
    let mut config = config(&setup.url());
    config.redis_mode = RedisMode::Sentinel;
    config.redis_sentinel_master = Some(SENTINEL_MASTER.into());
    config.redis_wait_replicas = 1;
    config.redis_timeout = Duration::from_secs(2);
    config.job_prune_interval = Duration::from_millis(100);
    let service = Service::start_with(config).await;
    let mut c = service.client().await;
    let mut flows = Vec::new();
    for f in 0..6 {
        let id = format!("fo-{f}");
        let mut nodes = super::refusals::chain(30, &id);
        for n in &mut nodes {
            n.job.as_mut().expect("job").max_attempts = Some(50);
        }
        nodes.push(node_id(
            "fan",
            "q",
            &["n29", "n10", "n20"],
            &format!("{id}-fan"),
        ));
        enqueue_flow(&mut c, &id, nodes).await.expect("EnqueueFlow");
        flows.push(id);
    }
    let record: Arc<Mutex<Record>> = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let workers: Vec<_> = (0..3)
        .map(|_| {
            let c = c.clone();
            tokio::spawn(work(c, record.clone(), stop.clone()))
        })
        .collect();
    let patience = Patience::new("some nodes acked before the kill");
    while record.lock().expect("lock").acks.len() < 40 {
        patience.wait().await;
    }
    let killed = setup.master_port().await;
    let was_master = setup.master.port == killed;
    if was_master {
        setup.master.kill();
    } else {
        setup.replica.kill();
    }
    let patience = Patience::new("the replica to take over");
    while setup.master_port_agreed().await.unwrap_or(killed) == killed {
        patience.wait().await;
    }
    if was_master {
        setup.master.restart().await;
    } else {
        setup.replica.restart().await;
    }
    setup.wait_healthy().await;
    for id in &flows {
        let patience = Patience::new(format!("flow {id} to complete"));
        loop {
            match get_flow(&mut c, id).await {
                Ok(flow) if flow.state == proto::FlowState::Completed as i32 => break,
                Ok(flow) => assert_eq!(flow.state, proto::FlowState::Running as i32, "{id}"),
                Err(_) => {}
            }
            patience.wait().await;
        }
    }
    stop.store(true, Ordering::Release);
    for w in workers {
        w.await.expect("worker");
    }
    let record = record.lock().expect("lock");
    assert!(record.violations.is_empty(), "{:?}", record.violations);
    let twice: Vec<_> = record.acks.iter().filter(|(_, n)| **n > 1).collect();
    assert!(twice.is_empty(), "completed twice: {twice:?}");
    // (an ack whose WAIT failed may have completed its node unreported: not counted)
    assert!(record.acks.len() <= 6 * 31);
}
