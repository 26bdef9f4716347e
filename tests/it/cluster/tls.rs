//! TLS and ACL credentials to Redis beyond one server: a TLS-only Redis Cluster (the
//! cluster bus too) and TLS-only sentinels watching a TLS-only master and replica.
//! Every node dueq finds through the seeds or the sentinels is reached over TLS with
//! the CA and the URL's credentials, and without the CA nothing is served.
//!
//! The clusters here have three masters and no replicas: these tests are about how
//! dueq connects, not failover, and half the processes start sooner.

use std::collections::{BTreeMap, BTreeSet};

use dueq::config::ServeConfig;
use tonic::{Code, Status};
use tonic_health::pb::health_check_response::ServingStatus;

use super::{
    basics::{cluster_config, namespace_of},
    sentinel::sentinel_config,
};
use crate::common::*;

/// Namespaces whose hash tags fall on all three masters of a cluster made by
/// `redis-cli --cluster create` (slots split in three equal ranges); the tests check
/// that they did.
const NAMESPACES: [&str; 6] = ["tls-a", "tls-b", "tls-c", "tls-d", "tls-e", "tls-f"];

/// `config` with `certs`' CA trusted for Redis's certificates.
fn trusting(mut config: ServeConfig, certs: &Certs) -> ServeConfig {
    config.redis_tls_ca = Some(certs.ca.clone());
    config
}

/// In each namespace: a job enqueued, claimed and acked, and an every-second
/// schedule upserted and then claimed (a long-poll) when it comes due. Every second,
/// not a due time a second from now: however slow the calls before it, it comes due.
async fn serve_jobs_and_schedules(service: &Service) {
    let mut c = service.client().await;
    for ns in NAMESPACES {
        upsert(&mut c, ns, every("tick", 1)).await;
        let mut req = job("q", "over-tls");
        req.namespace = ns.into();
        let id = enqueue(&mut c, req).await.job_id;
        let mut claim = claim_req(&["q"], 0, None);
        claim.namespace = ns.into();
        let claimed = c
            .claim_job(claim)
            .await
            .expect("claim job")
            .into_inner()
            .jobs
            .pop()
            .unwrap_or_else(|| panic!("the job just enqueued in {ns}"));
        assert_eq!(claimed.job_id, id, "{ns}");
        c.ack_job(proto::AckJobRequest {
            result: Vec::new(),
            namespace: ns.into(),
            job_id: id,
            lease_token: claimed.lease_token,
        })
        .await
        .unwrap_or_else(|e| panic!("ack in {ns}: {e:?}"));
    }
    for ns in NAMESPACES {
        let occurrence = claim(&mut c, ns, LONG_POLL_MS)
            .await
            .unwrap_or_else(|| panic!("the schedule of {ns} came due within the wait"));
        assert_eq!(occurrence.schedule.expect("schedule").id, "tick", "{ns}");
    }
}

/// The masters (ports) that hold keys of `NAMESPACES`, checking that each
/// namespace's keys are on one master.
async fn masters_holding_the_namespaces(cluster: &Cluster) -> BTreeSet<u16> {
    let mut home: BTreeMap<String, BTreeSet<u16>> = BTreeMap::new();
    for (port, keys) in cluster.keys_by_master().await {
        for ns in keys.iter().filter_map(|k| namespace_of(k)) {
            home.entry(ns.to_owned()).or_default().insert(port);
        }
    }
    let expected: BTreeSet<String> = NAMESPACES.iter().map(|n| (*n).to_owned()).collect();
    assert_eq!(
        home.keys().cloned().collect::<BTreeSet<_>>(),
        expected,
        "every namespace wrote keys: {home:?}"
    );
    assert!(
        home.values().all(|masters| masters.len() == 1),
        "a namespace's keys on more than one master: {home:?}"
    );
    home.into_values().flatten().collect()
}

/// An Enqueue the service cannot take to Redis: refused UNAVAILABLE, at once rather
/// than after a hang, and the service is not SERVING.
async fn refused(service: &Service) -> Status {
    let mut c = service.client().await;
    let status = within_patience(
        "an enqueue without a usable Redis",
        c.enqueue(job("q", "no")),
    )
    .await
    .expect_err("Enqueue without a usable Redis connection");
    assert_eq!(status.code(), Code::Unavailable, "{status:?}");
    assert_ne!(service.health().await, ServingStatus::Serving as i32);
    status
}

/// Pins: dueq in cluster mode with rediss:// seeds and `--redis-tls-ca` serves jobs
/// (enqueue, claim, ack) and schedules (a long-poll claim of a due occurrence) in
/// namespaces on every master of a TLS-only cluster (`port 0`, `tls-cluster yes`),
/// so the nodes found through CLUSTER SLOTS are reached over TLS with the CA too.
/// Without the CA the service still starts (it connects lazily) but is not SERVING,
/// and a call fails UNAVAILABLE at once, saying the certificate is not trusted.
#[tokio::test]
async fn a_tls_cluster_serves_jobs_and_schedules_with_the_ca_and_not_without() {
    let certs = Certs::generate();
    let cluster = Cluster::start_tls(&certs, None).await;
    assert!(cluster.url().starts_with("rediss://"), "{}", cluster.url());

    let untrusting = Service::start_unready(cluster_config(&cluster)).await;
    let status = refused(&untrusting).await;
    assert!(
        status.message().contains("certificate"),
        "the refusal says why: {status:?}"
    );

    let service = Service::start_with(trusting(cluster_config(&cluster), &certs)).await;
    serve_jobs_and_schedules(&service).await;
    let masters = masters_holding_the_namespaces(&cluster).await;
    assert_eq!(
        masters.len(),
        3,
        "the namespaces span every master: {masters:?}"
    );
}

/// Pins: a Redis ACL user's `user:password` in the rediss:// seed URL is used on
/// every node of a TLS cluster, the nodes discovered through the one seed included:
/// the user exists on every node, the default user has another password (so a client
/// that dropped the user name would be refused), and jobs and schedules are served
/// in namespaces on all three masters. A wrong password is refused UNAVAILABLE with
/// Redis's reason and the URL redacted, quoting neither password.
#[tokio::test]
async fn an_acl_user_in_the_seed_urls_works_on_every_node_of_a_tls_cluster() {
    const DEFAULT: &str = "default-pw-7a41";
    const RIGHT: &str = "acl-right-3f0e";
    const WRONG: &str = "acl-wrong-c29d";
    let certs = Certs::generate();
    let cluster = Cluster::start_tls(&certs, Some(DEFAULT)).await;
    for node in &cluster.nodes {
        let _: () = cmd("ACL")
            .arg(
                &[
                    "SETUSER",
                    "worker",
                    "on",
                    &format!(">{RIGHT}"),
                    "~*",
                    "&*",
                    "+@all",
                ][..],
            )
            .query_async(&mut node.conn().await)
            .await
            .expect("ACL SETUSER on every node");
    }
    // One seed: the other masters are known only through CLUSTER SLOTS, with no
    // credentials of their own.
    let seed = cluster.nodes[0].port;
    let as_worker = |password: &str| {
        let mut config = trusting(cluster_config(&cluster), &certs);
        config.redis_url = format!("rediss://worker:{password}@127.0.0.1:{seed}");
        config
    };

    let wrong = Service::start_unready(as_worker(WRONG)).await;
    let shown = format!("{:?}", refused(&wrong).await);
    assert!(
        shown.contains("WRONGPASS") || shown.contains("authentication"),
        "the refusal says why: {shown}"
    );
    for secret in [WRONG, RIGHT, DEFAULT] {
        assert!(!shown.contains(secret), "a password is quoted: {shown}");
    }
    assert!(shown.contains("worker:***@"), "{shown}");

    let service = Service::start_with(as_worker(RIGHT)).await;
    serve_jobs_and_schedules(&service).await;
    let masters = masters_holding_the_namespaces(&cluster).await;
    assert_eq!(
        masters.len(),
        3,
        "the namespaces span every master: {masters:?}"
    );
}

/// Pins: sentinel mode with rediss:// sentinels and `--redis-tls-ca` finds the
/// TLS-only master through TLS-only sentinels and serves jobs and schedules on it
/// (the keys are on that master); without the CA the sentinels' certificate is not
/// trusted: not SERVING, and a call fails UNAVAILABLE at once, saying so.
#[tokio::test]
async fn tls_sentinels_and_master_serve_with_the_ca_and_not_without() {
    let certs = Certs::generate();
    let setup = Sentinels::start_tls(&certs).await;
    assert!(setup.url().starts_with("rediss://"), "{}", setup.url());

    let untrusting = Service::start_unready(sentinel_config(&setup.url())).await;
    let status = refused(&untrusting).await;
    assert!(
        status.message().contains("certificate"),
        "the refusal says why: {status:?}"
    );

    let service = Service::start_with(trusting(sentinel_config(&setup.url()), &certs)).await;
    serve_jobs_and_schedules(&service).await;
    let keys: Vec<String> = cmd("KEYS")
        .arg("*")
        .query_async(&mut setup.master.conn().await)
        .await
        .expect("KEYS");
    for ns in NAMESPACES {
        assert!(
            keys.iter().any(|k| namespace_of(k) == Some(ns)),
            "{ns}'s keys are on the master: {keys:?}"
        );
    }
}
