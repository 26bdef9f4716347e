//! `--redis-wait-replicas` on a Redis Cluster (issue 29 item 11): the WAIT reaches
//! the node that ran the script, a WAIT that fails is UNAVAILABLE naming the flag,
//! and the work a claim handed out that the replicas did not confirm is given back
//! without spending an attempt.

use std::time::Duration;

use dueq::config::{RedisMode, ServeConfig};
use tonic::Code;

use crate::common::*;

/// A key of namespace "ns": its slot, its master.
const NS_KEY: &str = "dueq:{ns}:meta";

fn waiting(cluster: &Cluster) -> ServeConfig {
    let mut config = config(&cluster.url());
    config.redis_mode = RedisMode::Cluster;
    config.redis_wait_replicas = 1;
    // WAIT waits half of it.
    config.redis_timeout = Duration::from_secs(1);
    config
}

/// Pins issue 29 item 11: with --redis-wait-replicas 1 and the replica of "ns"'s
/// master stopped (SIGSTOP: it acknowledges nothing), a ClaimJob and a leased
/// ClaimDueSchedule fail UNAVAILABLE naming the flag, and what they claimed is given
/// back: the job is pending with 0 attempts, and once the replica is back the next
/// claims take the job at attempt 1 and the occurrence at attempt 1 (the schedule
/// allows one attempt: an occurrence that kept the unconfirmed claim's attempt
/// would be finished, not re-handed). On main both stayed leased to nobody.
#[tokio::test]
async fn a_claim_the_replicas_did_not_confirm_gives_its_work_back_without_an_attempt() {
    let cluster = Cluster::start().await;
    let service = Service::start_with(waiting(&cluster)).await;
    let mut c = service.client().await;
    let mut req = job("q", "j");
    req.job_id = "j".into();
    enqueue(&mut c, req).await;
    let master = cluster.master_of(NS_KEY).await;
    let due = redis_now(&mut cluster.conn_to(master).await).await + SOON_MS;
    let schedule = proto::Schedule {
        max_attempts: 1,
        ..every_hour_from("s", due)
    };
    upsert(&mut c, "ns", schedule).await;
    let replica = &cluster.nodes[cluster.index_of(cluster.replica_of(master).await)];
    replica.signal(libc::SIGSTOP);

    let refused = c.claim_job(claim_req(&["q"], 0, Some(60_000))).await;
    let err = refused.expect_err("the replica acknowledged nothing");
    assert_eq!(err.code(), Code::Unavailable, "{err:?}");
    assert!(err.message().contains("--redis-wait-replicas 1"), "{err:?}");
    let given_back = get_job(&mut c, "j").await;
    assert_eq!(
        (state(&given_back), given_back.attempts),
        (proto::JobState::Pending, 0),
        "{given_back:?}"
    );
    let leased = proto::ClaimDueScheduleRequest {
        lease: Some(dur(60_000)),
        ..claim_due_req("ns", 10_000)
    };
    let refused = c.claim_due_schedule(leased.clone()).await;
    let err = refused.expect_err("the replica acknowledged nothing");
    assert_eq!(err.code(), Code::Unavailable, "{err:?}");
    assert!(err.message().contains("--redis-wait-replicas 1"), "{err:?}");

    replica.signal(libc::SIGCONT);
    cluster.wait_healthy().await;
    let again = claim_job(&mut c, &["q"], 0, Some(60_000))
        .await
        .expect("job j is claimable again");
    assert_eq!((again.job_id.as_str(), again.attempt), ("j", 1));
    let occurrence = c
        .claim_due_schedule(proto::ClaimDueScheduleRequest {
            wait: None,
            ..leased
        })
        .await
        .expect("leased claim")
        .into_inner()
        .occurrence
        .expect("the occurrence given back is re-handed");
    assert_eq!(occurrence.attempt, 1, "{occurrence:?}");
}

/// Pins issue 29 item 11: after a failover (CLUSTER FAILOVER: the replica of "ns"'s
/// master takes over, the old master becomes its replica), dueq's slot map still
/// names the old master; each script is redirected (MOVED) to the new one, and its
/// WAIT goes with it, so with --redis-wait-replicas 1 every call succeeds. A WAIT
/// sent on its own by the stale map reached the old master, a replica now: `WAIT
/// cannot be used with replica instances`, answered INTERNAL.
#[tokio::test]
async fn after_a_failover_the_wait_goes_where_the_script_ran() {
    let cluster = Cluster::start().await;
    let service = Service::start_with(waiting(&cluster)).await;
    let mut c = service.client().await;
    // dueq learns the slot map.
    enqueue(&mut c, job("q", "before")).await;
    let master = cluster.master_of(NS_KEY).await;
    let replica = cluster.replica_of(master).await;
    let mut conn = cluster.conn_to(replica).await;
    let _: () = query(&mut conn, cmd("CLUSTER").arg("FAILOVER")).await;
    let patience = Patience::new("the replica to take over");
    while cluster.try_master_of(NS_KEY).await != Some(replica) {
        patience.wait().await;
    }
    cluster.wait_healthy().await;
    for i in 0..20 {
        let mut req = job("q", "after");
        req.job_id = format!("after-{i}");
        if let Err(e) = c.enqueue(req).await {
            panic!("enqueue {i} after the failover: {e:?}");
        }
        match c.claim_job(claim_req(&["q"], 0, None)).await {
            Ok(claimed) => assert_eq!(claimed.into_inner().jobs.len(), 1),
            Err(e) => panic!("claim {i} after the failover: {e:?}"),
        }
    }
}

/// Pins issue 29 item 11: a call waiting for replicas holds up no other call. With
/// --pool-size 1 and the replica of "ns"'s master stopped (SIGSTOP: a WAIT runs out
/// its timeout, here 20 s), a GetJob is answered while an Enqueue's WAIT still
/// blocks on the master, and the Enqueue goes through once the replica is back. On
/// main both shared the one connection to that master: the GetJob was answered
/// only after the WAIT ran out, when the Enqueue had failed.
#[tokio::test]
async fn a_call_waiting_for_replicas_holds_up_no_other_call() {
    let cluster = Cluster::start().await;
    let mut config = waiting(&cluster);
    config.pool_size = 1;
    config.redis_timeout = Duration::from_secs(40);
    let service = Service::start_with(config).await;
    let mut c = service.client().await;
    let mut req = job("q", "before");
    req.job_id = "before".into();
    enqueue(&mut c, req).await;
    let master = cluster.master_of(NS_KEY).await;
    let replica = &cluster.nodes[cluster.index_of(cluster.replica_of(master).await)];
    replica.signal(libc::SIGSTOP);

    let mut e = c.clone();
    let waiting_enqueue = tokio::spawn(async move {
        let mut req = job("q", "during");
        req.job_id = "during".into();
        e.enqueue(req).await
    });
    let mut conn = cluster.conn_to(master).await;
    let patience = Patience::new("the Enqueue's WAIT to block on the master");
    loop {
        let clients: String = query(&mut conn, cmd("CLIENT").arg("LIST")).await;
        if clients.lines().any(|l| l.contains(" cmd=wait ")) {
            break;
        }
        patience.wait().await;
    }
    let read = get_job(&mut c, "before").await;
    assert_eq!(read.job_id, "before");
    assert!(
        !waiting_enqueue.is_finished(),
        "GetJob was answered only after the Enqueue's WAIT"
    );
    replica.signal(libc::SIGCONT);
    let enqueued = waiting_enqueue.await.expect("the Enqueue's task");
    assert!(enqueued.is_ok(), "{enqueued:?}");
}
