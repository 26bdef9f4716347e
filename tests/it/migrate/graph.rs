//! Migrate's dependency check (issue 34): a WAITING node whose dependencies have all
//! finished is found by a dry run (which writes nothing) and readied by a real run; a
//! finished node whose dependents were never told is settled; a flow whose graph
//! work is still queued is not taken for a broken one. Stranded nodes are made by
//! hand, behind the service's back.

use deadpool_redis::redis::aio::MultiplexedConnection;
use dueq::proto;

use crate::common::*;
use crate::deps::{enqueue_flow, node, node_states};
use proto::JobState as S;

const FLOW: &str = "dueq:{ns}:meta:dag:f";
const DAGQ: &str = "dueq:{ns}:meta:dagq";

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

/// Claims one job of queue "q" and acks it; its flow ref.
async fn run_one(c: &mut Client) -> String {
    crate::deps::run_one(c, &["q"], b"").await.flow_ref
}

/// Flow "f": a → b, a → c; then `field` of the flow hash raised by one behind the
/// service's back, and a run.
async fn strand(c: &mut Client, conn: &mut MultiplexedConnection, field: &str) {
    enqueue_flow(
        c,
        "f",
        vec![
            node("a", "q", &[]),
            node("b", "q", &["a"]),
            node("c", "q", &["a"]),
        ],
    )
    .await
    .expect("EnqueueFlow");
    let _: i64 = query(conn, cmd("HINCRBY").arg(FLOW).arg(field).arg(1)).await;
    assert_eq!(run_one(c).await, "a");
}

/// Pins: b waits although a completed (its count was raised by hand). A dry run
/// counts it and writes nothing; a real run readies it and it runs; then nothing is
/// found.
#[tokio::test]
async fn a_stranded_node_is_found_by_a_dry_run_and_readied_by_migrate() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut a = admin(&service).await;
    let mut conn = redis.conn().await;
    strand(&mut c, &mut conn, "w:b").await;
    let states = node_states(&mut c, "f").await;
    assert_eq!((states["b"], states["c"]), (S::Waiting, S::Pending));

    let before = snapshot(&mut conn).await;
    assert_eq!(repaired(&mut a, true).await, 1, "the dry run finds b");
    assert_eq!(
        snapshot(&mut conn).await,
        before,
        "a dry run writes nothing"
    );
    assert_eq!(node_states(&mut c, "f").await["b"], S::Waiting);

    assert_eq!(repaired(&mut a, false).await, 1);
    assert_eq!(node_states(&mut c, "f").await["b"], S::Pending);
    let mut ran = vec![run_one(&mut c).await, run_one(&mut c).await];
    ran.sort();
    assert_eq!(ran, ["b", "c"]);
    assert_eq!(repaired(&mut a, true).await, 0);
    assert_eq!(repaired(&mut a, false).await, 0);
    let flow = crate::deps::get_flow(&mut c, "f").await.expect("GetFlow");
    assert_eq!(flow.state, proto::FlowState::Completed as i32, "{flow:?}");
}

/// Pins: a waiting node whose count is wrong but not 0 (it still has a dependency to
/// wait for) is recounted, and readied by the right finish.
#[tokio::test]
async fn a_miscounted_node_is_recounted() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut a = admin(&service).await;
    let mut conn = redis.conn().await;
    enqueue_flow(
        &mut c,
        "f",
        vec![node("a", "q", &[]), node("b", "q", &["a"])],
    )
    .await
    .expect("EnqueueFlow");
    let _: i64 = query(&mut conn, cmd("HINCRBY").arg(FLOW).arg("w:b").arg(5)).await;
    assert_eq!(repaired(&mut a, true).await, 1);
    assert_eq!(repaired(&mut a, false).await, 1);
    let w: i64 = query(&mut conn, cmd("HGET").arg(FLOW).arg("w:b")).await;
    assert_eq!(w, 1);
    assert_eq!(run_one(&mut c).await, "a");
    assert_eq!(run_one(&mut c).await, "b", "a's ack readied b");
}

/// Pins: a finished node without its mark (its dependents never told) is counted and
/// settled: the mark is back, and a second check finds nothing.
#[tokio::test]
async fn a_finished_node_without_its_mark_is_settled() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut a = admin(&service).await;
    let mut conn = redis.conn().await;
    enqueue_flow(
        &mut c,
        "f",
        vec![
            node("a", "q", &[]),
            node("b", "q", &["a"]),
            node("z", "q", &[]),
        ],
    )
    .await
    .expect("EnqueueFlow");
    assert_eq!(run_one(&mut c).await, "a");
    // As if a's finish had never been told: no mark, the flow's open count up again.
    let _: () = pipe()
        .cmd("HDEL")
        .arg(FLOW)
        .arg("t:a")
        .ignore()
        .cmd("HINCRBY")
        .arg(FLOW)
        .arg("open")
        .arg(1)
        .ignore()
        .query_async(&mut conn)
        .await
        .expect("lose the mark");
    assert_eq!(repaired(&mut a, true).await, 1);
    assert_eq!(repaired(&mut a, false).await, 1);
    let mark: Option<String> = query(&mut conn, cmd("HGET").arg(FLOW).arg("t:a")).await;
    assert_eq!(mark.as_deref(), Some("o"));
    assert_eq!(repaired(&mut a, true).await, 0);
}

/// A msgpack item { 'r', flow, 0 } of lib/graph.lua's queue: the roots sweep.
fn roots_item(flow: &str) -> Vec<u8> {
    let mut item = vec![
        0x93,
        0xa1,
        b'r',
        0xa0 + u8::try_from(flow.len()).expect("short"),
    ];
    item.extend_from_slice(flow.as_bytes());
    item.push(0);
    item
}

/// Pins: a flow with graph work queued is passed over by a dry run (its counts are
/// under way, not wrong); a real run drains the queue first, then repairs.
#[tokio::test]
async fn a_flow_with_queued_work_is_passed_over_until_drained() {
    let redis = Redis::start().await;
    let mut conn = redis.conn().await;
    let first = Service::start(&redis.url()).await;
    strand(&mut first.client().await, &mut conn, "w:b").await;
    // Stopped, so no pruner of its own drains the queue behind the test's back; the
    // second one's prunes only on its interval (an hour) or when its calls ask.
    first.stop().await;
    let service = Service::start_with(config_without_background_work(&redis.url())).await;
    let mut c = service.client().await;
    let mut a = admin(&service).await;
    let _: i64 = query(&mut conn, cmd("RPUSH").arg(DAGQ).arg(roots_item("f"))).await;
    assert_eq!(repaired(&mut a, true).await, 0, "f has queued work");
    assert_eq!(node_states(&mut c, "f").await["b"], S::Waiting);
    assert_eq!(repaired(&mut a, false).await, 1);
    let left: i64 = query(&mut conn, cmd("LLEN").arg(DAGQ)).await;
    assert_eq!(left, 0, "drained");
    assert_eq!(node_states(&mut c, "f").await["b"], S::Pending);
}

/// Pins: the check walks every running flow in bounded calls (a batch of one step):
/// a stranded node in each of several flows, some of one node and some larger, is
/// found once each, however the calls cut the walk.
#[tokio::test]
async fn the_check_walks_every_flow_in_bounded_calls() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut a = admin(&service).await;
    let mut conn = redis.conn().await;
    for i in 0..6 {
        let id = format!("f{i}");
        let mut nodes = vec![node("a", "q", &[]), node("b", "q", &["a"])];
        if i % 2 == 0 {
            nodes.push(node("c", "q", &["b"]));
        }
        enqueue_flow(&mut c, &id, nodes).await.expect("EnqueueFlow");
        let key = format!("dueq:{{ns}}:meta:dag:{id}");
        let _: i64 = query(&mut conn, cmd("HINCRBY").arg(&key).arg("w:b").arg(1)).await;
        assert_eq!(run_one(&mut c).await, "a");
    }
    let step = |dry_run| proto::MigrateRequest {
        dry_run,
        batch_size: Some(1),
        ..migrate_req("ns")
    };
    let dry = migrate_done(&mut a, step(true)).await;
    assert_eq!(dry.repaired, 6, "{dry:?}");
    assert_eq!(migrate_done(&mut a, step(false)).await.repaired, 6);
    for _ in 0..6 {
        assert_eq!(run_one(&mut c).await, "b");
    }
    assert_eq!(migrate_done(&mut a, step(true)).await.repaired, 0);
}

/// Pins: a repair that leaves graph work queued (a finished node told to 80
/// dependents: 64 steps a script) stops the walk until the queue is drained, so the
/// dependents still counted down by queued work are not "recounted" (which would
/// then ready them before their other dependency): each ran only after z.
#[tokio::test]
async fn a_repair_with_queued_work_is_drained_before_the_walk_goes_on() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut a = admin(&service).await;
    let mut conn = redis.conn().await;
    let children: Vec<String> = (0..80).map(|i| format!("b{i}")).collect();
    let mut nodes = vec![node("a", "q", &[]), node("z", "z", &[])];
    nodes.extend(children.iter().map(|b| node(b, "b", &["a", "z"])));
    enqueue_flow(&mut c, "f", nodes).await.expect("EnqueueFlow");
    assert_eq!(run_one(&mut c).await, "a");
    // As if a's finish had never been told: no mark, each child's count up again.
    let mut lose = pipe();
    lose.cmd("HDEL").arg(FLOW).arg("t:a").ignore();
    lose.cmd("HINCRBY").arg(FLOW).arg("open").arg(1).ignore();
    for b in &children {
        lose.cmd("HINCRBY")
            .arg(FLOW)
            .arg(format!("w:{b}"))
            .arg(1)
            .ignore();
    }
    let _: () = lose.query_async(&mut conn).await.expect("lose the mark");
    assert_eq!(repaired(&mut a, true).await, 1);
    assert_eq!(repaired(&mut a, false).await, 1);
    assert_eq!(repaired(&mut a, true).await, 0);
    assert!(
        claim_job(&mut c, &["b"], 0, None).await.is_none(),
        "the children still wait for z"
    );
    let z = claim_job(&mut c, &["z"], 0, Some(600_000))
        .await
        .expect("z");
    ack_job(&mut c, &z.job_id, &z.lease_token)
        .await
        .expect("ack z");
    // z's ack readies 64 children itself and queues the rest for the pruner.
    let patience = Patience::new("every child to be pending after z");
    loop {
        let states = node_states(&mut c, "f").await;
        if children.iter().all(|b| states[b] == S::Pending) {
            break;
        }
        assert!(
            children
                .iter()
                .all(|b| states[b] == S::Pending || states[b] == S::Waiting),
            "{states:?}"
        );
        patience.wait().await;
    }
}
