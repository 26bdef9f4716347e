//! dueq on a 3-master Redis Cluster: namespaces spread over the masters, each
//! namespace's keys in one slot, the global keys working, long-polls woken across
//! instances, Migrate's `all_namespaces` finding namespaces on every master, and
//! password-protected clusters.

use std::collections::{BTreeMap, BTreeSet};

use dueq::config::RedisMode;
use tonic::Code;

use crate::common::*;

/// The service's test config in cluster mode over `cluster`'s seed nodes.
pub fn cluster_config(cluster: &Cluster) -> dueq::config::ServeConfig {
    let mut config = config(&cluster.url());
    config.redis_mode = RedisMode::Cluster;
    config
}

/// The namespace of a dueq key: `dueq:{ns}:...` -> `ns`; `None` for a global key.
pub(super) fn namespace_of(key: &str) -> Option<&str> {
    let rest = key.strip_prefix("dueq:{")?;
    rest.split_once('}').map(|(ns, _)| ns)
}

/// Pins: 50 namespaces used through a cluster-mode dueq (a schedule and a job each,
/// claimed and acked) land on at least two masters, every namespace's keys on one
/// master (its slot), GetNamespaceStatus reads each one, and the global keys
/// (instance id, prune due-set) are written.
#[tokio::test]
async fn fifty_namespaces_spread_over_the_masters_each_in_one_slot() {
    let cluster = Cluster::start().await;
    let service = Service::start_with(cluster_config(&cluster)).await;
    let mut c = service.client().await;
    let namespaces: Vec<String> = (0..50).map(|i| format!("tenant-{i}")).collect();
    for ns in &namespaces {
        upsert(&mut c, ns, every("s", 3600)).await;
        let mut req = job("q", "j");
        req.namespace = ns.clone();
        let id = enqueue(&mut c, req).await.job_id;
        let mut claim = claim_req(&["q"], 0, None);
        claim.namespace = ns.clone();
        let claimed = c
            .claim_job(claim)
            .await
            .expect("claim")
            .into_inner()
            .jobs
            .pop()
            .expect("the job");
        assert_eq!(claimed.job_id, id);
        c.ack_job(proto::AckJobRequest {
            result: Vec::new(),
            namespace: ns.clone(),
            job_id: id,
            lease_token: claimed.lease_token,
        })
        .await
        .expect("ack");
    }
    let mut admin = admin(&service).await;
    for ns in &namespaces {
        let st = status(&mut admin, ns).await;
        assert_eq!((st.index_size, st.index_damaged), (1, false), "{st:?}");
    }
    let by_master = cluster.keys_by_master().await;
    let mut home: BTreeMap<&str, BTreeSet<u16>> = BTreeMap::new();
    let mut globals = Vec::new();
    for (port, keys) in &by_master {
        for key in keys {
            match namespace_of(key) {
                Some(ns) => {
                    home.entry(ns).or_default().insert(*port);
                }
                None => globals.push(key.clone()),
            }
        }
    }
    let counts: BTreeMap<u16, usize> = by_master.iter().map(|(p, k)| (*p, k.len())).collect();
    eprintln!("keys per master: {counts:?}");
    assert_eq!(home.len(), 50, "every namespace has keys: {home:?}");
    assert!(
        home.values().all(|masters| masters.len() == 1),
        "a namespace's keys on more than one master: {home:?}"
    );
    let used: BTreeSet<u16> = home.values().flatten().copied().collect();
    assert!(used.len() >= 2, "all namespaces on one master: {used:?}");
    assert!(
        globals.iter().any(|k| k == "dueq:instance"),
        "the instance id is stored: {globals:?}"
    );
    assert!(
        globals.iter().any(|k| k == "dueq:prune-due"),
        "acked jobs registered their namespaces for pruning: {globals:?}"
    );
}

/// Pins: a ClaimJob long-polling on one instance gets the job enqueued through the
/// other instance, both on the same cluster.
#[tokio::test]
async fn a_long_poll_is_woken_by_an_enqueue_through_the_other_instance() {
    let cluster = Cluster::start().await;
    let a = Service::start_with(cluster_config(&cluster)).await;
    let b = Service::start_with(cluster_config(&cluster)).await;
    let mut ca = a.client().await;
    let mut cb = b.client().await;
    // The claim parks before the enqueue (an enqueue before it would be claimed at
    // once, without a wake-up): on the master of namespace "ns"'s slot, its claim
    // and its timer's peek have run.
    let mut conn = cluster
        .conn_to(cluster.master_of("dueq:{ns}:meta").await)
        .await;
    let before = script_calls(&mut conn).await;
    let waiter = tokio::spawn(async move { claim_job(&mut ca, &["q"], LONG_POLL_MS, None).await });
    wait_parked(&mut conn, before, 1).await;
    let id = enqueue(&mut cb, job("q", "wake")).await.job_id;
    let claimed = within_patience("the long-poll", waiter)
        .await
        .expect("task")
        .expect("woken with the job");
    assert_eq!(claimed.job_id, id);
}

/// Pins: Migrate with `all_namespaces` over a cluster finds the namespaces on every
/// master (SCAN runs on each), and reports each one done.
#[tokio::test]
async fn migrate_all_namespaces_finds_namespaces_on_every_master() {
    let cluster = Cluster::start().await;
    let service = Service::start_with(cluster_config(&cluster)).await;
    let mut c = service.client().await;
    let namespaces: BTreeSet<String> = (0..12).map(|i| format!("m{i}")).collect();
    for ns in &namespaces {
        upsert(&mut c, ns, every("s", 3600)).await;
    }
    let masters: BTreeSet<u16> = {
        let mut m = BTreeSet::new();
        for ns in &namespaces {
            m.insert(cluster.master_of(&format!("dueq:{{{ns}}}:meta")).await);
        }
        m
    };
    assert!(
        masters.len() >= 2,
        "the namespaces span masters: {masters:?}"
    );
    let mut admin = admin(&service).await;
    let msgs = migrate(
        &mut admin,
        proto::MigrateRequest {
            all_namespaces: true,
            ..Default::default()
        },
    )
    .await
    .expect("migrate all_namespaces");
    let done: BTreeSet<String> = msgs
        .iter()
        .filter(|m| m.phase == DONE)
        .map(|m| m.namespace.clone())
        .collect();
    assert_eq!(done, namespaces, "{msgs:?}");
}

/// Pins: a cluster whose nodes require a password is used with the password in the
/// seed URLs (every node discovered later gets it too), and refused without it.
#[tokio::test]
async fn a_password_protected_cluster_works_with_the_password_in_the_url() {
    let cluster = Cluster::start_with_password(Some("s3cret")).await;
    let service = Service::start_with(cluster_config(&cluster)).await;
    let mut c = service.client().await;
    for i in 0..10 {
        let mut req = job("q", "j");
        req.namespace = format!("p{i}");
        enqueue(&mut c, req).await;
    }
    let mut config = cluster_config(&cluster);
    config.redis_url = cluster.url_with_password(None);
    let without = Service::start_unready(config).await;
    let mut c = without.client().await;
    let err = c.enqueue(job("q", "j")).await.expect_err("no password");
    assert_eq!(err.code(), Code::Unavailable, "{err:?}");
}
