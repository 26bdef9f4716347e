//! `--redis-wait-replicas` on a Redis Cluster (issue 29 item 11): the WAIT reaches
//! the node that ran the script, a WAIT that fails is UNAVAILABLE naming the flag,
//! the work a claim handed out that the replicas did not confirm is given back
//! without spending an attempt, a WAIT holds up no other call, and a give-back that
//! finds no Redis is tried again (on one Redis: a cluster node that vanishes is
//! failed over instead).

use std::time::Duration;

use dueq::config::{RedisMode, ServeConfig};
use tokio_stream::StreamExt as _;
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

/// Pins issue 29 item 11: a give-back that finds no Redis is tried again until it
/// works. One Redis, no replica (every WAIT runs out), every write on disk
/// (`appendfsync always`), killed (SIGKILL) the moment a ClaimJob's script has
/// leased the job (its receipt's keyspace notification), while the claim's WAIT
/// waits: the claim's reply is lost and its give-back finds no Redis. Restarted
/// from its AOF, Redis holds the job leased to nobody; the give-back tried again
/// makes it pending, its attempt not counted. On main the give-back was tried once,
/// and the job stayed leased until its lease (60 s) ran out.
#[tokio::test]
async fn a_give_back_that_finds_no_redis_is_tried_again_until_it_works() {
    let args: Vec<String> = ["--appendonly", "yes", "--appendfsync", "always"]
        .into_iter()
        .chain(["--notify-keyspace-events", "Kl"])
        .map(str::to_owned)
        .collect();
    let mut redis = Redis::start_with_args(&args, None).await;
    let plain = Service::start_with(config(&redis.url())).await;
    let mut p = plain.client().await;
    let mut req = job("q", "j");
    req.job_id = "j".into();
    req.max_attempts = Some(1);
    enqueue(&mut p, req).await;
    let mut waiting = config(&redis.url());
    waiting.redis_wait_replicas = 1;
    waiting.redis_timeout = Duration::from_secs(4);
    let waiting = Service::start_with(waiting).await;
    let mut w = waiting.client().await;
    let client = deadpool_redis::redis::Client::open(redis.url()).expect("a client");
    let mut pubsub = client
        .get_async_pubsub()
        .await
        .expect("a pubsub connection");
    pubsub
        .psubscribe("__keyspace@0__:dueq:{ns}:meta:claim:*")
        .await
        .expect("PSUBSCRIBE");

    let claim = tokio::spawn(async move { w.claim_job(claim_req(&["q"], 0, Some(60_000))).await });
    let leased = tokio::time::timeout(PATIENCE, pubsub.on_message().next()).await;
    assert!(
        matches!(leased, Ok(Some(_))),
        "the claim never leased the job"
    );
    redis.kill();
    let refused = claim.await.expect("the claim's task");
    let err = refused.expect_err("the claim's reply was lost");
    assert_eq!(err.code(), Code::Unavailable, "{err:?}");
    redis.restart().await;

    let patience = Patience::new("the claim to be given back");
    loop {
        let found = p
            .get_job(proto::GetJobRequest {
                namespace: "ns".into(),
                job_id: "j".into(),
            })
            .await;
        match found.map(|r| r.into_inner().job) {
            Ok(Some(job)) if state(&job) == proto::JobState::Pending => {
                assert_eq!(job.attempts, 0, "{job:?}");
                break;
            }
            Ok(Some(job)) => assert_eq!(state(&job), proto::JobState::Active, "{job:?}"),
            Ok(None) => panic!("GetJob answered no job"),
            Err(s) => assert_eq!(s.code(), Code::Unavailable, "{s:?}"),
        }
        patience.wait().await;
    }
    // It was the give-back that ran after the restart: it left its mark on the
    // claim's receipt (release_claim.lua), which nothing before the kill wrote.
    let mut conn = redis.conn().await;
    let receipts: Vec<String> = query(&mut conn, cmd("KEYS").arg("dueq:{ns}:meta:claim:*")).await;
    assert_eq!(receipts.len(), 1, "{receipts:?}");
    let mark: Vec<String> = query(&mut conn, cmd("LRANGE").arg(&receipts[0]).arg(0).arg(-1)).await;
    assert_eq!(mark, [""], "the receipt of a claim given back");
}
