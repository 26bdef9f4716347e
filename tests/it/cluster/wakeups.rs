//! Cross-replica wake-ups on Redis Cluster (issue 29 item 6): a replica's
//! announcement, published through whichever node its connection reaches, wakes
//! waiters on another replica whose one subscription is on one node, for
//! namespaces whose slots live on every master.

use std::{collections::BTreeSet, time::Duration};

use crate::{cluster::basics::cluster_config, common::*};

const HOUR: Duration = Duration::from_secs(3600);

/// Pins: with the safety net off, a job enqueued through replica B reaches a
/// ClaimJob long-polling on replica A, in namespaces spread over every master.
#[tokio::test]
async fn an_enqueue_through_another_replica_wakes_waiters_on_every_master() {
    let cluster = Cluster::start().await;
    let quiet = || {
        let mut config = cluster_config(&cluster);
        config.check_interval = HOUR;
        config.job_prune_interval = HOUR;
        config.worker_refresh_interval = HOUR;
        config
    };
    let mut ca = quiet();
    ca.recheck_interval = HOUR;
    let a = Service::start_with(ca).await;
    let b = Service::start_with(quiet()).await;
    let (client_a, mut cb) = (a.client().await, b.client().await);
    let namespaces: Vec<String> = (0..8).map(|i| format!("tenant-{i}")).collect();
    let mut masters = BTreeSet::new();
    for ns in &namespaces {
        let master = cluster.master_of(&format!("dueq:{{{ns}}}:meta")).await;
        masters.insert(master);
        let mut conn = cluster.conn_to(master).await;
        let before = script_calls(&mut conn).await;
        let mut c = client_a.clone();
        let mut claim = claim_req(&["q"], 20_000, None);
        claim.namespace = ns.clone();
        let waiter = tokio::spawn(async move { c.claim_job(claim).await });
        // Parked (its claim and its timer's peek ran on the namespace's master);
        // only B's announcement can wake it before its 20 s wait ends.
        wait_parked(&mut conn, before, 1).await;
        let mut req = job("q", "w");
        req.namespace = ns.clone();
        let id = enqueue(&mut cb, req).await.job_id;
        let got = waiter.await.expect("task").expect("claim").into_inner();
        assert_eq!(
            got.jobs.first().map(|j| j.job_id.clone()),
            Some(id),
            "{ns}: woken with B's job"
        );
    }
    assert!(masters.len() > 1, "the namespaces span several masters");
}
