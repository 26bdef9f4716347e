//! Controlling a flow and its nodes: CancelFlow, RetryFlow, RetryJob, CancelJob,
//! DeleteJob and PurgeJobs of nodes; WAITING is visible to GetJob and ListJobs.

use super::*;
use proto::{DependencyFailure as Rule, JobState as S};
use tonic::Code;

async fn cancel_flow(
    c: &mut Client,
    flow_id: &str,
) -> Result<proto::CancelFlowResponse, tonic::Status> {
    c.cancel_flow(proto::CancelFlowRequest {
        namespace: "ns".into(),
        flow_id: flow_id.into(),
    })
    .await
    .map(|r| r.into_inner())
}

async fn retry_flow(
    c: &mut Client,
    flow_id: &str,
) -> Result<proto::RetryFlowResponse, tonic::Status> {
    c.retry_flow(proto::RetryFlowRequest {
        namespace: "ns".into(),
        flow_id: flow_id.into(),
    })
    .await
    .map(|r| r.into_inner())
}

/// A node that fails at once (one attempt).
fn fragile(reference: &str, queue: &str, after: &[&str]) -> proto::FlowNode {
    let mut n = node(reference, queue, after);
    n.job.as_mut().expect("job").max_attempts = Some(1);
    n
}

/// Claims the one job of `queue` and fails it for good.
async fn fail_one(c: &mut Client, queue: &str) -> proto::ClaimedJob {
    let j = claim_job(c, &[queue], LONG_POLL_MS, Some(600_000))
        .await
        .expect("a job");
    c.fail_job(proto::FailJobRequest {
        namespace: "ns".into(),
        job_id: j.job_id.clone(),
        lease_token: j.lease_token.clone(),
        error: "boom".into(),
        non_retryable: true,
        ..Default::default()
    })
    .await
    .expect("fail");
    j
}

/// Pins: CancelFlow ends pending, delayed and waiting nodes CANCELLED at once, asks an
/// active node to stop (ExtendLease answers cancel_requested) which ends CANCELLED
/// when its worker fails it; the flow ends FAILED and cancelled; a node readied
/// afterwards (RetryJob of a cancelled one) is cancelled instead; CancelFlow twice
/// is fine; an unknown flow is NOT_FOUND.
#[tokio::test]
async fn cancel_flow_cancels_every_unfinished_node() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut later = node("delayed", "d", &[]);
    later.job.as_mut().expect("job").when =
        Some(proto::enqueue_request::When::Delay(dur(3_600_000)));
    let stored = enqueue_flow(
        &mut c,
        "cf",
        vec![
            node("active", "a", &[]),
            node("pending", "p", &[]),
            later,
            node_with("waiting", "w", &["active"], Rule::Run),
        ],
    )
    .await
    .expect("EnqueueFlow");
    let active = claim_job(&mut c, &["a"], LONG_POLL_MS, Some(600_000))
        .await
        .expect("active");
    let answer = cancel_flow(&mut c, "cf").await.expect("CancelFlow");
    assert_eq!(
        (answer.state, answer.unfinished),
        (proto::FlowState::Running as i32, 1)
    );
    let states = node_states(&mut c, "cf").await;
    assert_eq!(states["pending"], S::Cancelled);
    assert_eq!(states["delayed"], S::Cancelled);
    assert_eq!(states["waiting"], S::Cancelled, "even a RUN node");
    assert_eq!(states["active"], S::Active);
    let extended = c
        .extend_lease(proto::ExtendLeaseRequest {
            namespace: "ns".into(),
            job_id: active.job_id.clone(),
            lease_token: active.lease_token.clone(),
            lease: Some(dur(600_000)),
            progress: None,
        })
        .await
        .expect("ExtendLease")
        .into_inner();
    assert!(extended.cancel_requested);
    cancel_flow(&mut c, "cf").await.expect("CancelFlow twice");
    fail_job(&mut c, &active.job_id, &active.lease_token, "stopped")
        .await
        .expect("fail");
    assert_eq!(node_states(&mut c, "cf").await["active"], S::Cancelled);
    let flow = get_flow(&mut c, "cf").await.expect("GetFlow");
    assert_eq!(
        (flow.state, flow.cancelled),
        (proto::FlowState::Failed as i32, true)
    );

    let retried = c
        .retry_job(proto::RetryJobRequest {
            namespace: "ns".into(),
            job_id: stored.job_ids["pending"].clone(),
        })
        .await;
    assert!(
        claim_job(&mut c, &["p"], 0, None).await.is_none(),
        "{retried:?}"
    );
    assert_eq!(node_states(&mut c, "cf").await["pending"], S::Cancelled);
    cancel_flow(&mut c, "cf")
        .await
        .expect("CancelFlow of a finished flow");
    let missing = cancel_flow(&mut c, "nope").await.expect_err("unknown");
    assert_eq!(missing.code(), Code::NotFound);
    let missing = retry_flow(&mut c, "nope").await.expect_err("unknown");
    assert_eq!(missing.code(), Code::NotFound);
}

/// Pins: RetryFlow after a failure cascade re-arms the dead, cancelled and skipped
/// nodes and keeps the completed ones (whose results are still passed on); the flow
/// then runs to COMPLETED.
#[tokio::test]
async fn retry_flow_rearms_the_failed_nodes_and_keeps_the_completed() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    enqueue_flow(
        &mut c,
        "rf",
        vec![
            node("ok", "o", &[]),
            fragile("root", "r", &[]),
            node("cancelled", "w", &["root", "ok"]),
            node("after-cancelled", "w", &["cancelled"]),
            node_with("skipped", "s", &["root"], Rule::Skip),
            node("after-skipped", "x", &["skipped"]),
        ],
    )
    .await
    .expect("EnqueueFlow");
    run_one(&mut c, &["o"], b"ok-result").await;
    fail_one(&mut c, "r").await;
    run_one(&mut c, &["x"], b"").await; // after-skipped: a skipped dependency is ok
    let flow = get_flow(&mut c, "rf").await.expect("GetFlow");
    assert_eq!(flow.state, proto::FlowState::Failed as i32);
    let answer = retry_flow(&mut c, "rf").await.expect("RetryFlow");
    assert_eq!(answer.state, proto::FlowState::Running as i32);
    let states = node_states(&mut c, "rf").await;
    assert_eq!(states["ok"], S::Completed, "kept");
    assert_eq!(states["after-skipped"], S::Completed, "kept");
    assert_eq!(states["root"], S::Pending);
    for r in ["cancelled", "after-cancelled", "skipped"] {
        assert_eq!(states[r], S::Waiting, "{r}");
    }
    run_one(&mut c, &["r"], b"").await;
    let cancelled = run_one(&mut c, &["w"], b"").await;
    assert_eq!(cancelled.flow_ref, "cancelled");
    assert_eq!(
        cancelled.dependency_results.get("ok").map(Vec::as_slice),
        Some(&b"ok-result"[..])
    );
    run_one(&mut c, &["w"], b"").await;
    run_one(&mut c, &["s"], b"").await;
    let flow = get_flow(&mut c, "rf").await.expect("GetFlow");
    assert_eq!(
        (flow.state, flow.failed),
        (proto::FlowState::Completed as i32, 0)
    );
    assert!(
        claim_job(&mut c, &["x"], 0, None).await.is_none(),
        "ran once"
    );
}

/// Pins: RetryJob of a dead node re-arms the nodes its failure cancelled (waiting
/// again), and the flow runs to COMPLETED.
#[tokio::test]
async fn retry_job_of_a_dead_node_rearms_what_its_failure_cancelled() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let stored = enqueue_flow(
        &mut c,
        "rj",
        vec![
            fragile("root", "r", &[]),
            node("a", "w", &["root"]),
            node("b", "w", &["a"]),
        ],
    )
    .await
    .expect("EnqueueFlow");
    fail_one(&mut c, "r").await;
    let states = node_states(&mut c, "rj").await;
    assert_eq!((states["a"], states["b"]), (S::Cancelled, S::Cancelled));
    c.retry_job(proto::RetryJobRequest {
        namespace: "ns".into(),
        job_id: stored.job_ids["root"].clone(),
    })
    .await
    .expect("RetryJob");
    let states = node_states(&mut c, "rj").await;
    assert_eq!((states["root"], states["a"]), (S::Pending, S::Waiting));
    // b was cancelled by a: re-armed by the continuation RetryJob queued
    wait_node(&mut c, "rj", "b", S::Waiting).await;
    run_one(&mut c, &["r"], b"").await;
    run_one(&mut c, &["w"], b"").await;
    run_one(&mut c, &["w"], b"").await;
    let flow = get_flow(&mut c, "rj").await.expect("GetFlow");
    assert_eq!(flow.state, proto::FlowState::Completed as i32);
}

/// Pins: CancelJob of a WAITING node cancels it, and its dependents follow their
/// rules (CANCEL cancelled, SKIP skipped, RUN readied).
#[tokio::test]
async fn cancel_job_of_a_waiting_node_applies_its_dependents_rules() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let stored = enqueue_flow(
        &mut c,
        "cj",
        vec![
            node("root", "r", &[]),
            node("w", "w", &["root"]),
            node("x", "x", &["w"]),
            node_with("y", "x", &["w"], Rule::Skip),
            node_with("z", "z", &["w"], Rule::Run),
        ],
    )
    .await
    .expect("EnqueueFlow");
    let job = c
        .cancel_job(proto::CancelJobRequest {
            namespace: "ns".into(),
            job_id: stored.job_ids["w"].clone(),
        })
        .await
        .expect("CancelJob")
        .into_inner()
        .job
        .expect("job");
    assert_eq!(state(&job), S::Cancelled);
    let states = node_states(&mut c, "cj").await;
    assert_eq!(
        (states["root"], states["x"], states["y"], states["z"]),
        (S::Pending, S::Cancelled, S::Skipped, S::Pending)
    );
    let z = run_one(&mut c, &["z"], b"").await;
    assert_eq!(z.dependencies[0].state, S::Cancelled as i32);
}

/// Pins: DeleteJob of a waiting or pending node is FAILED_PRECONDITION (the node
/// stays); of a finished node of a finished flow it succeeds.
#[tokio::test]
async fn delete_job_refuses_an_unfinished_node() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let stored = enqueue_flow(
        &mut c,
        "dj",
        vec![node("a", "q", &[]), node("b", "q", &["a"])],
    )
    .await
    .expect("EnqueueFlow");
    let delete = |id: &str| proto::DeleteJobRequest {
        namespace: "ns".into(),
        job_id: id.into(),
    };
    for r in ["a", "b"] {
        let refused = c
            .delete_job(delete(&stored.job_ids[r]))
            .await
            .expect_err("unfinished");
        assert_eq!(refused.code(), Code::FailedPrecondition, "{r}: {refused:?}");
    }
    run_one(&mut c, &["q"], b"").await;
    run_one(&mut c, &["q"], b"").await;
    c.delete_job(delete(&stored.job_ids["a"]))
        .await
        .expect("a finished node of a finished flow");
    let flow = get_flow(&mut c, "dj").await.expect("GetFlow");
    assert_eq!(flow.state, proto::FlowState::Completed as i32);
}

/// Pins: PurgeJobs of a queue's pending nodes cancels them (their records stay,
/// CANCELLED) and their dependents follow their rules.
#[tokio::test]
async fn purge_jobs_cancels_pending_nodes_instead_of_deleting_them() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let stored = enqueue_flow(
        &mut c,
        "pj",
        vec![
            node("p1", "p", &[]),
            node("p2", "p", &[]),
            node("x", "w", &["p1"]),
            node_with("y", "w", &["p2"], Rule::Skip),
            node_with("z", "z", &["p1", "p2"], Rule::Run),
        ],
    )
    .await
    .expect("EnqueueFlow");
    c.purge_jobs(proto::PurgeJobsRequest {
        namespace: "ns".into(),
        queue: "p".into(),
        state: S::Pending as i32,
        limit: 0,
        ..Default::default()
    })
    .await
    .expect("PurgeJobs");
    for r in ["p1", "p2"] {
        assert_eq!(
            state(&get_job(&mut c, &stored.job_ids[r]).await),
            S::Cancelled,
            "{r}"
        );
    }
    let states = node_states(&mut c, "pj").await;
    assert_eq!(
        (states["x"], states["y"], states["z"]),
        (S::Cancelled, S::Skipped, S::Pending)
    );
}

/// Pins: a waiting node shows WAITING in GetJob and is listed by ListJobs with state
/// filter WAITING (and only waiting nodes are).
#[tokio::test]
async fn waiting_is_visible_to_get_job_and_list_jobs() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let stored = enqueue_flow(
        &mut c,
        "wv",
        vec![
            node("a", "q", &[]),
            node("b", "q", &["a"]),
            node("c", "q", &["b"]),
        ],
    )
    .await
    .expect("EnqueueFlow");
    let b = get_job(&mut c, &stored.job_ids["b"]).await;
    assert_eq!(state(&b), S::Waiting);
    assert_eq!((b.flow_id.as_str(), b.flow_ref.as_str()), ("wv", "b"));
    let listed = c
        .list_jobs(proto::ListJobsRequest {
            namespace: "ns".into(),
            queue: "q".into(),
            state: S::Waiting as i32,
            page_size: 100,
            page_token: String::new(),
            view: proto::JobView::Basic as i32,
            filter: None,
        })
        .await
        .expect("ListJobs")
        .into_inner()
        .jobs;
    let mut ids: Vec<&str> = listed.iter().map(|j| j.job_id.as_str()).collect();
    ids.sort_unstable();
    let mut want = vec![stored.job_ids["b"].as_str(), stored.job_ids["c"].as_str()];
    want.sort_unstable();
    assert_eq!(ids, want);
}
