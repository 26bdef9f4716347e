//! Flow control's indexes (issue 32) lost behind the service's back are repaired by
//! Migrate, which a dry run reports without writing: the rotation, a lane, the
//! running slots and a lost wake-up of a park; a namespace without flow control pays
//! nothing. Against a real redis-server and the real service.

use deadpool_redis::redis::aio::MultiplexedConnection;
use dueq::proto;

use crate::common::*;

const ROTATION: &str = "dueq:{ns}:meta:fr:1:q";
const SLOTS: &str = "dueq:{ns}:meta:fc:1:q";

/// A Redis, a service on it, and a client, an admin client and a raw connection to
/// them (the Redis and the service live as long as the bindings of their fields).
struct Setup {
    redis: Redis,
    service: Service,
    c: Client,
    a: Admin,
    conn: MultiplexedConnection,
}

impl Setup {
    async fn start() -> Setup {
        let redis = Redis::start().await;
        let service = Service::start(&redis.url()).await;
        let c = service.client().await;
        let a = admin(&service).await;
        let conn = redis.conn().await;
        Setup {
            redis,
            service,
            c,
            a,
            conn,
        }
    }
}

/// The lane key of fairness key `f`, concurrency key `c` in queue "q" (lib/flow.lua
/// `flow.key` of `flow.lane`).
fn lane_key(f: &str, c: &str) -> String {
    format!("dueq:{{ns}}:meta:fl:1:q{}", lane(f, c))
}

fn lane(f: &str, c: &str) -> String {
    format!("{}:{f}{}:{c}", f.len(), c.len())
}

fn keyed(name: &str, fairness: &str, concurrency: &str) -> proto::EnqueueRequest {
    proto::EnqueueRequest {
        fairness_key: fairness.into(),
        concurrency_key: concurrency.into(),
        ..job("q", name)
    }
}

async fn claim(c: &mut Client) -> Option<proto::ClaimedJob> {
    claim_job(c, &["q"], 0, Some(60_000)).await
}

fn name_of(claimed: &proto::ClaimedJob) -> String {
    claimed.name.clone()
}

/// Claims until none is left: the names, in order.
async fn claim_all(c: &mut Client) -> Vec<String> {
    let mut names = Vec::new();
    while let Some(claimed) = claim(c).await {
        names.push(name_of(&claimed));
    }
    names
}

async fn per_key_max_running(c: &mut Client, n: u32) {
    c.set_queue_policy(proto::SetQueuePolicyRequest {
        namespace: "ns".into(),
        queue: "q".into(),
        policy: Some(proto::QueuePolicy {
            per_key_max_running: n,
            ..Default::default()
        }),
    })
    .await
    .expect("SetQueuePolicy");
}

/// How many SCAN commands Redis has run.
async fn scan_calls(conn: &mut MultiplexedConnection) -> u64 {
    let info: String = query(conn, cmd("INFO").arg("commandstats")).await;
    info.lines()
        .find_map(|line| line.strip_prefix("cmdstat_scan:calls="))
        .and_then(|rest| rest.split(',').next())
        .map_or(0, |calls| calls.parse().expect("calls"))
}

async fn repaired(a: &mut Admin, dry_run: bool) -> u64 {
    let done = migrate_done(
        a,
        proto::MigrateRequest {
            dry_run,
            ..migrate_req("ns")
        },
    )
    .await;
    assert!(done.problems.is_empty(), "{done:?}");
    done.repaired
}

#[tokio::test]
async fn lost_rotation_is_repaired() {
    let Setup {
        redis: _redis,
        service: _service,
        mut c,
        mut a,
        mut conn,
    } = Setup::start().await;
    for name in ["a1", "a2", "a3"] {
        enqueue(&mut c, keyed(name, "a", "")).await;
    }
    enqueue(&mut c, keyed("b1", "b", "")).await;
    assert_eq!(repaired(&mut a, false).await, 0, "nothing lost yet");

    let _: () = query(&mut conn, cmd("DEL").arg(ROTATION)).await;
    assert!(claim(&mut c).await.is_none(), "lost with the rotation");
    // Both lanes had lost their place.
    assert_eq!(repaired(&mut a, false).await, 2);
    assert_eq!(claim_all(&mut c).await, ["a1", "a2", "a3", "b1"]);
}

#[tokio::test]
async fn lost_lane_is_repaired() {
    let Setup {
        redis: _redis,
        service: _service,
        mut c,
        mut a,
        mut conn,
    } = Setup::start().await;
    for name in ["a1", "a2", "a3"] {
        enqueue(&mut c, keyed(name, "a", "")).await;
    }
    let _: () = query(&mut conn, cmd("DEL").arg(lane_key("a", ""))).await;
    assert!(claim(&mut c).await.is_none(), "lost with the lane");
    // Three entries, and the lane's place (the claim dropped the empty lane).
    assert_eq!(repaired(&mut a, false).await, 4);
    assert_eq!(claim_all(&mut c).await, ["a1", "a2", "a3"]);
    assert_eq!(repaired(&mut a, false).await, 0, "all repaired");
}

#[tokio::test]
async fn lost_turns_of_a_round_robin_queue_are_repaired() {
    let Setup {
        redis: _redis,
        service: _service,
        mut c,
        mut a,
        mut conn,
    } = Setup::start().await;
    c.set_queue_policy(proto::SetQueuePolicyRequest {
        namespace: "ns".into(),
        queue: "q".into(),
        policy: Some(proto::QueuePolicy {
            fairness: proto::Fairness::RoundRobin as i32,
            ..Default::default()
        }),
    })
    .await
    .expect("SetQueuePolicy");
    // Keyless jobs of a queue that takes turns wait in lane "0:0:".
    for name in ["x1", "x2"] {
        enqueue(&mut c, job("q", name)).await;
    }
    enqueue(&mut c, keyed("t1", "t", "")).await;
    assert_eq!(repaired(&mut a, false).await, 0, "nothing lost yet");
    let _: () = query(&mut conn, cmd("DEL").arg("dueq:{ns}:meta:fp:1:q")).await;
    let _: () = query(&mut conn, cmd("DEL").arg(lane_key("", ""))).await;
    assert!(claim(&mut c).await.is_none(), "lost with the turns");

    // x1's and x2's entries, their lane's turn, t's turn.
    assert_eq!(repaired(&mut a, false).await, 4);
    let mut names = claim_all(&mut c).await;
    names.sort();
    assert_eq!(names, ["t1", "x1", "x2"]);
}

#[tokio::test]
async fn lost_slots_are_recounted_so_no_key_runs_over_its_limit() {
    let Setup {
        redis: _redis,
        service: _service,
        mut c,
        mut a,
        mut conn,
    } = Setup::start().await;
    per_key_max_running(&mut c, 1).await;
    enqueue(&mut c, keyed("k1", "", "k")).await;
    let first = claim(&mut c).await.expect("k1 leased");
    assert_eq!(name_of(&first), "k1");

    let _: () = query(&mut conn, cmd("DEL").arg(SLOTS)).await;
    assert_eq!(repaired(&mut a, false).await, 1, "k's one slot");
    let held: Option<u64> = query(&mut conn, cmd("ZSCORE").arg(SLOTS).arg("k")).await;
    assert_eq!(held, Some(1));
    // A job of k in another lane meets the restored slot: not admitted.
    enqueue(&mut c, keyed("k2", "x", "k")).await;
    assert!(claim(&mut c).await.is_none(), "k is at its limit");

    ack_job(&mut c, &first.job_id, &first.lease_token)
        .await
        .expect("ack");
    assert_eq!(claim_all(&mut c).await, ["k2"]);
}

#[tokio::test]
async fn lost_wake_up_of_a_park_is_repaired() {
    let Setup {
        redis: _redis,
        service: _service,
        mut c,
        mut a,
        mut conn,
    } = Setup::start().await;
    per_key_max_running(&mut c, 1).await;
    enqueue(&mut c, keyed("k1", "", "k")).await;
    // The lane parked on k while k has a free slot: no finish will wake it.
    let _: () = query(&mut conn, cmd("DEL").arg(ROTATION)).await;
    let park = "dueq:{ns}:meta:fw:1:qk";
    let _: () = query(&mut conn, cmd("SADD").arg(park).arg(lane("", "k"))).await;
    assert!(claim(&mut c).await.is_none(), "parked");

    assert_eq!(repaired(&mut a, false).await, 1, "the parked lane");
    assert_eq!(claim_all(&mut c).await, ["k1"]);
}

#[tokio::test]
async fn dry_run_reports_and_writes_nothing() {
    let Setup {
        redis: _redis,
        service: _service,
        mut c,
        mut a,
        mut conn,
    } = Setup::start().await;
    per_key_max_running(&mut c, 1).await;
    for name in ["a1", "a2"] {
        enqueue(&mut c, keyed(name, "a", "")).await;
    }
    enqueue(&mut c, keyed("b1", "b", "")).await;
    enqueue(&mut c, keyed("k1", "", "k")).await;
    let leased = claim(&mut c).await.expect("a1 leased");
    assert_eq!(name_of(&leased), "a1");
    enqueue(&mut c, keyed("k2", "", "k")).await;
    // k2 is parked on k, whose one slot k1 holds.
    assert_eq!(claim_all(&mut c).await, ["a2", "b1", "k1"]);
    for name in ["a3", "b2"] {
        enqueue(&mut c, keyed(name, &name[..1], "")).await;
    }
    let _: () = query(&mut conn, cmd("DEL").arg(ROTATION)).await;
    let _: () = query(&mut conn, cmd("DEL").arg(lane_key("b", ""))).await;
    let _: () = query(&mut conn, cmd("DEL").arg(SLOTS)).await;

    let before = snapshot(&mut conn).await;
    let would = repaired(&mut a, true).await;
    assert_eq!(
        snapshot(&mut conn).await,
        before,
        "a dry run writes nothing"
    );
    // b2's entry and lane, a's lane, k's slot (k2 stays parked on k).
    assert_eq!(would, 4);
    assert_eq!(
        repaired(&mut a, false).await,
        would,
        "the dry run counted it all"
    );
    assert_eq!(claim_all(&mut c).await, ["a3", "b2"]);
}

#[tokio::test]
async fn namespace_without_flow_control_pays_nothing() {
    let Setup {
        redis: _redis,
        service: _service,
        mut c,
        mut a,
        mut conn,
    } = Setup::start().await;
    for name in ["p1", "p2", "p3"] {
        enqueue(&mut c, job("q", name)).await;
    }
    claim(&mut c).await.expect("p1 leased");
    let scans = scan_calls(&mut conn).await;
    let done = migrate_done(&mut a, migrate_req("ns")).await;
    assert_eq!(done.repaired, 0, "{done:?}");
    assert!(done.problems.is_empty(), "{done:?}");
    // No walk over the keyspace for lanes, which only a namespace with flow state pays.
    assert_eq!(scan_calls(&mut conn).await, scans);
    let flow_keys: Vec<String> = query(&mut conn, cmd("KEYS").arg("dueq:{ns}:meta:f*")).await;
    assert!(flow_keys.is_empty(), "{flow_keys:?}");
}
