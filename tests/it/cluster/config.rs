//! The Redis topology flags: refused when they do not fit together, and
//! `--redis-wait-replicas` failing a write that too few replicas acknowledged.

use dueq::config::RedisMode;
use tonic::Code;

use crate::common::*;

/// Pins: sentinel mode without --redis-sentinel-master, a sentinel master without
/// sentinel mode, and several addresses in standalone mode are refused at startup,
/// naming the flag.
#[tokio::test]
async fn topology_flags_that_do_not_fit_are_refused_naming_the_flag() {
    let cases = [
        (
            RedisMode::Sentinel,
            None,
            "redis://127.0.0.1:1",
            "--redis-sentinel-master",
        ),
        (
            RedisMode::Cluster,
            Some("m"),
            "redis://127.0.0.1:1",
            "--redis-sentinel-master",
        ),
        (
            RedisMode::Standalone,
            None,
            "redis://127.0.0.1:1,redis://127.0.0.1:2",
            "--redis-mode",
        ),
    ];
    for (mode, master, url, flag) in cases {
        let mut config = config(url);
        config.redis_mode = mode;
        config.redis_sentinel_master = master.map(str::to_owned);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let err = dueq::server::run(config, listener, std::future::pending())
            .await
            .expect_err("refused");
        assert!(err.to_string().contains(flag), "{mode:?}: {err}");
    }
}

/// Pins: with --redis-wait-replicas 1 and a Redis that has no replica, an enqueue
/// fails UNAVAILABLE naming the flag (the write was made on the master all the
/// same: the job is there), and a read, which is not waited for, succeeds.
#[tokio::test]
async fn a_write_too_few_replicas_acknowledged_fails_unavailable_naming_the_flag() {
    let redis = Redis::start().await;
    let mut config = config(&redis.url());
    config.redis_wait_replicas = 1;
    config.redis_timeout = std::time::Duration::from_millis(400);
    let service = Service::start_with(config).await;
    let mut c = service.client().await;
    let mut req = job("q", "j");
    req.job_id = "written".into();
    let err = c.enqueue(req).await.expect_err("no replica acknowledged");
    assert_eq!(err.code(), Code::Unavailable, "{err:?}");
    assert!(err.message().contains("--redis-wait-replicas 1"), "{err:?}");
    assert_eq!(get_job(&mut c, "written").await.job_id, "written");
}

/// Pins: with --redis-wait-replicas 1 and a replica in sync, writes succeed.
#[tokio::test]
async fn writes_succeed_when_a_replica_acknowledges() {
    let master = Redis::start().await;
    let replica = Redis::start_with_args(
        &[
            "--replicaof".into(),
            "127.0.0.1".into(),
            master.port.to_string(),
        ],
        None,
    )
    .await;
    let mut conn = replica.conn().await;
    let patience = Patience::new("the replica to sync");
    loop {
        let info: String = cmd("INFO")
            .arg("replication")
            .query_async(&mut conn)
            .await
            .expect("INFO");
        if info.contains("master_link_status:up") {
            break;
        }
        patience.wait().await;
    }
    let mut config = config(&master.url());
    config.redis_wait_replicas = 1;
    let service = Service::start_with(config).await;
    let mut c = service.client().await;
    let id = enqueue(&mut c, job("q", "j")).await.job_id;
    let claimed = claim_job(&mut c, &["q"], 0, None).await.expect("the job");
    assert_eq!(claimed.job_id, id);
    ack_job(&mut c, &id, &claimed.lease_token)
        .await
        .expect("ack");
    upsert(&mut c, "ns", every("s", 60)).await;
}
