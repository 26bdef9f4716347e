//! One flow id stores one flow: a repeat answers DUPLICATE with the stored ids, and
//! concurrent calls (on one service or two) store it once.

use super::{refusals::chain, *};

/// Pins: EnqueueFlow with a flow id already stored answers DUPLICATE with the same job
/// ids (also when the repeat's nodes differ) and writes nothing.
#[tokio::test]
async fn the_same_flow_id_twice_answers_duplicate_with_the_same_ids() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let nodes = || {
        vec![
            node("a", "q", &[]),
            node("b", "q", &["a"]),
            node("c", "q", &["a"]),
        ]
    };
    let first = enqueue_flow(&mut c, "again", nodes()).await.expect("first");
    assert_eq!(first.outcome(), proto::EnqueueOutcome::Created);
    let second = enqueue_flow(&mut c, "again", nodes())
        .await
        .expect("second");
    assert_eq!(second.outcome(), proto::EnqueueOutcome::Duplicate);
    assert_eq!(second.job_ids, first.job_ids);
    let other = enqueue_flow(&mut c, "again", vec![node("z", "q", &[])])
        .await
        .expect("other nodes");
    assert_eq!(other.outcome(), proto::EnqueueOutcome::Duplicate);
    assert_eq!(other.job_ids, first.job_ids);
    assert_eq!(job_records(&redis).await, 3);
    assert_eq!(get_flow(&mut c, "again").await.expect("flow").node_count, 3);
}

/// Runs two EnqueueFlow calls of one 300-node flow (10 parts) at once on `a` and `b`;
/// checks each answered CREATED, DUPLICATE or ABORTED, exactly one CREATED, and Redis
/// holds the one flow's jobs.
async fn race(a: &mut Client, b: &mut Client, flow_id: &str) {
    let (x, y) = tokio::join!(
        enqueue_flow(a, flow_id, chain(300, &format!("{flow_id}-x"))),
        enqueue_flow(b, flow_id, chain(300, &format!("{flow_id}-y"))),
    );
    let mut created = 0;
    let mut ids = None;
    for answer in [x, y] {
        match answer {
            Ok(r) if r.outcome() == proto::EnqueueOutcome::Created => {
                created += 1;
                ids = Some(r.job_ids);
            }
            Ok(r) => assert_eq!(r.outcome(), proto::EnqueueOutcome::Duplicate),
            Err(s) => assert_eq!(s.code(), tonic::Code::Aborted, "{s:?}"),
        }
    }
    assert_eq!(created, 1, "{flow_id}: exactly one call stored it");
    let flow = get_flow(a, flow_id).await.expect("stored");
    assert_eq!(flow.node_count, 300);
    let stored: std::collections::BTreeMap<String, String> = flow
        .nodes
        .iter()
        .map(|n| (n.r#ref.clone(), n.job_id.clone()))
        .collect();
    assert_eq!(Some(stored), ids.map(|i| i.into_iter().collect()));
}

/// Pins: two concurrent EnqueueFlow calls with one flow id, on one service and on two
/// services over one Redis, store one flow: one CREATED, the other DUPLICATE or
/// ABORTED (busy), and Redis holds exactly the flow's jobs.
#[tokio::test]
async fn concurrent_calls_with_one_flow_id_store_one_flow() {
    let redis = Redis::start().await;
    let one = Service::start(&redis.url()).await;
    let two = Service::start(&redis.url()).await;
    let mut a = one.client().await;
    let mut b = one.client().await;
    let mut other = two.client().await;
    for round in 0..5 {
        race(&mut a, &mut b, &format!("same-{round}")).await;
        race(&mut a, &mut other, &format!("two-{round}")).await;
    }
    assert_eq!(job_records(&redis).await, 10 * 300);
}
