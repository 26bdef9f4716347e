//! Retention of flows: a running flow's finished nodes are never pruned, a finished
//! flow goes as a whole; a store given up (the storing service crashed) is deleted.

use std::time::Duration;

use tokio_stream::StreamExt as _;
use tonic::Code;

use super::*;

async fn job_missing(c: &mut Client, id: &str) -> bool {
    match c
        .get_job(proto::GetJobRequest {
            namespace: "ns".into(),
            job_id: id.into(),
        })
        .await
    {
        Ok(_) => false,
        Err(s) if s.code() == Code::NotFound => true,
        Err(s) => panic!("GetJob {id}: {s:?}"),
    }
}

/// Pins: with --job-retention 1s, a finished node of a RUNNING flow outlives a prune
/// visit that prunes a plain job finished after it; once the flow finished, all its
/// jobs and its hash are pruned together (GetFlow and GetJob NOT_FOUND).
#[tokio::test]
async fn a_running_flows_nodes_are_kept_and_a_finished_flow_goes_together() {
    let redis = Redis::start().await;
    let mut config = config(&redis.url());
    config.job_retention = Duration::from_secs(1);
    config.job_prune_interval = Duration::from_millis(100);
    let service = Service::start_with(config).await;
    let mut c = service.client().await;
    let stored = enqueue_flow(
        &mut c,
        "kept",
        vec![node("a", "q", &[]), node("b", "w", &["a"])],
    )
    .await
    .expect("EnqueueFlow");
    run_one(&mut c, &["q"], b"").await;
    let plain = enqueue(&mut c, job("p", "plain")).await.job_id;
    run_one(&mut c, &["p"], b"").await;
    let patience = Patience::new("the plain job finished after node a to be pruned");
    while !job_missing(&mut c, &plain).await {
        patience.wait().await;
    }
    assert_eq!(
        state(&get_job(&mut c, &stored.job_ids["a"]).await),
        proto::JobState::Completed
    );
    assert_eq!(
        get_flow(&mut c, "kept").await.expect("GetFlow").state,
        proto::FlowState::Running as i32
    );
    run_one(&mut c, &["w"], b"").await;
    let patience = Patience::new("the finished flow to be pruned");
    loop {
        match get_flow(&mut c, "kept").await {
            Err(s) if s.code() == Code::NotFound => break,
            Err(s) => panic!("GetFlow: {s:?}"),
            Ok(_) => patience.wait().await,
        }
    }
    for id in stored.job_ids.values() {
        assert!(job_missing(&mut c, id).await, "{id} went with its flow");
    }
    assert!(keys_naming(&redis, "kept").await.is_empty());
}

/// Pins: a store given up mid-way (the storing service killed between parts, as
/// observed by the flow hash still holding `stage`) is deleted by the pruner once its
/// stage time is up: every node's record and the flow hash go, and the flow id can
/// be stored again. The 60 s stage time is passed by moving the stage's deadline
/// (meta:dagstage) and the namespace's prune visit to now in Redis.
#[tokio::test]
async fn a_store_given_up_is_deleted_by_the_pruner() {
    let redis = Redis::start().await;
    let mut conn = redis.conn().await;
    let storing = Service::start_with(config(&redis.url())).await;
    let mut s = storing.client().await;
    let nodes = super::refusals::chain(1000, "gu");
    let ids = ids_of(&nodes);
    let flow_key = "dueq:{ns}:meta:dag:given-up";
    // The store is cut between its parts (32 jobs each) by pausing Redis's writes
    // the moment its first part writes the flow's record, which Redis announces
    // (keyspace notifications): no poll could catch a store that takes
    // milliseconds.
    let _: () = query(
        &mut conn,
        cmd("CONFIG").arg(&["SET", "notify-keyspace-events", "Kh"]),
    )
    .await;
    let client = deadpool_redis::redis::Client::open(redis.url()).expect("a client");
    let mut pubsub = client
        .get_async_pubsub()
        .await
        .expect("a pubsub connection");
    pubsub
        .subscribe(format!("__keyspace@0__:{flow_key}"))
        .await
        .expect("SUBSCRIBE");
    let store = tokio::spawn(async move { enqueue_flow(&mut s, "given-up", nodes).await });
    let first_write = tokio::time::timeout(PATIENCE, pubsub.on_message().next()).await;
    assert!(
        matches!(first_write, Ok(Some(_))),
        "the store never wrote its flow"
    );
    let _: () = query(&mut conn, cmd("CLIENT").arg(&["PAUSE", "60000", "WRITE"])).await;
    storing.kill();
    store.abort();
    let _ = store.await;
    let _: () = query(&mut conn, cmd("CLIENT").arg("UNPAUSE")).await;
    let stage: Option<String> = query(&mut conn, cmd("HGET").arg(flow_key).arg("stage")).await;
    assert!(stage.is_some(), "the store was cut before its last part");
    let pruner = {
        let mut config = config(&redis.url());
        config.job_prune_interval = Duration::from_millis(100);
        Service::start_with(config).await
    };
    let mut c = pruner.client().await;
    let busy = enqueue_flow(&mut c, "given-up", vec![node("x", "q", &[])])
        .await
        .expect_err("still being stored");
    assert_eq!(busy.code(), Code::Aborted, "{busy:?}");
    // As if graph.STAGE_TTL_MS (60 s) had passed without a call of the store.
    let _: i64 = query(
        &mut conn,
        cmd("ZADD")
            .arg("dueq:{ns}:meta:dagstage")
            .arg(0)
            .arg("given-up"),
    )
    .await;
    let _: i64 = query(
        &mut conn,
        cmd("ZADD").arg("dueq:prune-due").arg(0).arg("ns"),
    )
    .await;
    let patience = Patience::new("the given-up store to be deleted");
    while exists(&mut conn, flow_key).await || job_records(&redis).await > 0 {
        patience.wait().await;
    }
    assert_nothing_stored(&redis, &mut c, "given-up", &ids).await;
    let again = enqueue_flow(&mut c, "given-up", vec![node("x", "q", &[])])
        .await
        .expect("stored again");
    assert_eq!(again.outcome(), proto::EnqueueOutcome::Created);
}
