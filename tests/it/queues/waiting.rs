//! The WAITING count of ListQueues (issue 34): flow nodes waiting for their
//! dependencies are counted per queue, move to pending as their dependencies finish,
//! and are recounted by Migrate for a store older than the counts.

use crate::common::*;
use crate::deps::{enqueue_flow, node};

/// (waiting, pending) of a queue of namespace "ns", which must be counted.
async fn waiting(c: &mut Client, queue: &str) -> (u64, u64) {
    let q = listed_queue(c, queue).await;
    assert!(q.counted, "{q:?}");
    (q.waiting, q.pending)
}

/// Claims one job of `queue` and acks it; returns its flow ref.
async fn run_one(c: &mut Client, queue: &str) -> String {
    crate::deps::run_one(c, &[queue], b"").await.flow_ref
}

/// Pins: a chain a → (b, c) → d over two queues shows its waiting nodes in
/// ListQueues; each moves from waiting to pending when its last dependency finishes,
/// and every count is 0 at the end.
#[tokio::test]
async fn waiting_nodes_are_counted_and_move_to_pending() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    enqueue_flow(
        &mut c,
        "chain",
        vec![
            node("a", "q", &[]),
            node("b", "w", &["a"]),
            node("c", "w", &["a"]),
            node("d", "q", &["b", "c"]),
        ],
    )
    .await
    .expect("EnqueueFlow");
    assert_eq!(waiting(&mut c, "q").await, (1, 1), "d waits, a is pending");
    assert_eq!(waiting(&mut c, "w").await, (2, 0), "b and c wait");

    assert_eq!(run_one(&mut c, "q").await, "a");
    assert_eq!(waiting(&mut c, "w").await, (0, 2), "b and c are ready");
    assert_eq!(waiting(&mut c, "q").await, (1, 0));
    run_one(&mut c, "w").await;
    assert_eq!(waiting(&mut c, "q").await, (1, 0), "d still waits for one");
    run_one(&mut c, "w").await;
    assert_eq!(waiting(&mut c, "q").await, (0, 1), "d is ready");
    assert_eq!(run_one(&mut c, "q").await, "d");
    assert_eq!(waiting(&mut c, "q").await, (0, 0));
    assert_eq!(waiting(&mut c, "w").await, (0, 0));
}

/// Pins: a cancelled flow takes its waiting nodes off the count.
#[tokio::test]
async fn a_cancelled_flow_leaves_no_waiting_count() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    enqueue_flow(
        &mut c,
        "f",
        vec![
            node("a", "q", &[]),
            node("b", "q", &["a"]),
            node("c", "q", &["b"]),
        ],
    )
    .await
    .expect("EnqueueFlow");
    assert_eq!(waiting(&mut c, "q").await, (2, 1));
    c.cancel_flow(proto::CancelFlowRequest {
        namespace: "ns".into(),
        flow_id: "f".into(),
    })
    .await
    .expect("CancelFlow");
    assert_eq!(waiting(&mut c, "q").await, (0, 0));
}

/// Pins: Migrate's recount of a store older than the counts counts waiting nodes too.
#[tokio::test]
async fn migrate_recounts_waiting_nodes() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    enqueue_flow(
        &mut c,
        "f",
        vec![
            node("a", "q", &[]),
            node("b", "q", &["a"]),
            node("c", "q", &["a"]),
        ],
    )
    .await
    .expect("EnqueueFlow");
    let mut conn = redis.conn().await;
    let _: () = pipe()
        .cmd("HDEL")
        .arg("dueq:{ns}:meta")
        .arg("counts")
        .ignore()
        .cmd("DEL")
        .arg("dueq:{ns}:meta:q:q")
        .ignore()
        .query_async(&mut conn)
        .await
        .expect("as an old store");
    assert!(!listed_queue(&mut c, "q").await.counted);
    let mut admin = admin(&service).await;
    migrate_done(&mut admin, migrate_req("ns")).await;
    assert_eq!(waiting(&mut c, "q").await, (2, 1));
    // The counts are kept from there on.
    assert_eq!(run_one(&mut c, "q").await, "a");
    assert_eq!(waiting(&mut c, "q").await, (0, 2));
}
