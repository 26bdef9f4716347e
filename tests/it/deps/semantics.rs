//! What a flow does: nodes wait for their dependencies, run once they finished, carry
//! their results; each on_dependency_failure rule.

use super::*;
use proto::{DependencyFailure as Rule, JobState as S};

/// Pins: a diamond (resize → thumb-a, thumb-b → notify) runs in dependency order
/// across two queues: only what has all its dependencies completed is claimable, each
/// claim carries its dependencies' results by ref, and the flow ends COMPLETED.
#[tokio::test]
async fn a_diamond_runs_in_dependency_order_and_passes_results_on() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let stored = enqueue_flow(
        &mut c,
        "diamond",
        vec![
            node("notify", "q", &["thumb-a", "thumb-b"]),
            node("thumb-a", "t", &["resize"]),
            node("thumb-b", "t", &["resize"]),
            node("resize", "q", &[]),
        ],
    )
    .await
    .expect("EnqueueFlow");
    assert_eq!(stored.flow_id, "diamond");
    assert_eq!(stored.job_ids.len(), 4);
    let states = node_states(&mut c, "diamond").await;
    assert_eq!(states["resize"], S::Pending);
    assert_eq!(states["notify"], S::Waiting);
    assert_eq!(listed_queue(&mut c, "t").await.pending, 0);

    let resize = run_one(&mut c, &["q", "t"], b"big.png").await;
    assert_eq!(
        (resize.flow_id.as_str(), resize.flow_ref.as_str()),
        ("diamond", "resize")
    );
    assert!(resize.dependencies.is_empty());
    assert!(
        claim_job(&mut c, &["q"], 0, None).await.is_none(),
        "notify still waits"
    );
    let a = run_one(&mut c, &["t"], b"a.png").await;
    assert_eq!(
        a.dependency_results.get("resize").map(Vec::as_slice),
        Some(&b"big.png"[..])
    );
    assert_eq!(a.dependencies[0].state, S::Completed as i32);
    assert!(
        claim_job(&mut c, &["q"], 0, None).await.is_none(),
        "notify waits for thumb-b"
    );
    run_one(&mut c, &["t"], b"").await;
    let notify = run_one(&mut c, &["q"], b"done").await;
    assert_eq!(notify.flow_ref, "notify");
    assert_eq!(
        notify.dependency_results.get("thumb-a").map(Vec::as_slice),
        Some(&b"a.png"[..])
    );
    assert_eq!(
        notify.dependency_results.get("thumb-b").map(Vec::as_slice),
        Some(&b""[..])
    );
    let flow = get_flow(&mut c, "diamond").await.expect("GetFlow");
    assert_eq!(
        (flow.state, flow.unfinished, flow.failed),
        (proto::FlowState::Completed as i32, 0, 0)
    );
    assert!(flow.finish_time.is_some());
    let order: Vec<&str> = flow.nodes.iter().map(|n| n.r#ref.as_str()).collect();
    assert_eq!(
        order,
        ["resize", "thumb-a", "thumb-b", "notify"],
        "dependency order"
    );
}

/// Pins each rule: a dead dependency cancels a CANCEL node at once (and, by its rule,
/// the CANCEL node after it), skips a SKIP node (whose dependent then runs), and a
/// RUN node runs once every dependency finished, told which failed.
#[tokio::test]
async fn each_rule_for_a_failed_dependency_holds() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut root = node("root", "q", &[]);
    root.job.as_mut().expect("job").max_attempts = Some(1);
    enqueue_flow(
        &mut c,
        "rules",
        vec![
            root,
            node("ok", "q", &[]),
            node("cancelled", "w", &["root"]),
            node("after-cancelled", "w", &["cancelled"]),
            node_with("skipped", "w", &["root"], Rule::Skip),
            node("after-skipped", "w", &["skipped"]),
            node_with("runs", "w", &["root", "ok"], Rule::Run),
        ],
    )
    .await
    .expect("EnqueueFlow");
    let ok = claim_job(&mut c, &["q"], 0, Some(600_000))
        .await
        .expect("root");
    assert_eq!(ok.flow_ref, "root");
    fail_job(&mut c, &ok.job_id, &ok.lease_token, "boom")
        .await
        .expect("fail");
    let states = node_states(&mut c, "rules").await;
    assert_eq!(states["root"], S::Dead);
    assert_eq!(states["cancelled"], S::Cancelled);
    assert_eq!(states["after-cancelled"], S::Cancelled);
    assert_eq!(states["skipped"], S::Skipped);
    assert_eq!(
        states["after-skipped"],
        S::Pending,
        "a skipped dependency counts as finished"
    );
    assert_eq!(states["runs"], S::Waiting, "waits for ok");
    let flow = get_flow(&mut c, "rules").await.expect("GetFlow");
    let cancelled = flow
        .nodes
        .iter()
        .find(|n| n.r#ref == "cancelled")
        .expect("node");
    assert_eq!(cancelled.failed_dependency, "root");
    let job = get_job(&mut c, &cancelled.job_id).await;
    assert!(
        job.errors
            .iter()
            .any(|e| e.message.contains("dependency root")),
        "{:?}",
        job.errors
    );

    run_one(&mut c, &["q"], b"").await;
    run_one(&mut c, &["w"], b"").await; // after-skipped
    let runs = run_one(&mut c, &["w"], b"").await;
    assert_eq!(runs.flow_ref, "runs");
    let by_ref: std::collections::BTreeMap<_, _> = runs
        .dependencies
        .iter()
        .map(|d| (d.r#ref.as_str(), d.state))
        .collect();
    assert_eq!(by_ref["root"], S::Dead as i32);
    assert_eq!(by_ref["ok"], S::Completed as i32);
    let flow = get_flow(&mut c, "rules").await.expect("GetFlow");
    assert_eq!(flow.state, proto::FlowState::Failed as i32);
    assert_eq!(flow.failed, 3, "root dead, two cancelled");
}

/// Pins: a 999 -> 1 fan-in drained by claims that carry the acks of the jobs before
/// (100 a claim, so a claim's graph work passes the 64 steps a script may take and the
/// rest is queued, then drained at once): the sink becomes claimable — a long-poll
/// without acks gets it — and carries 999 dependencies.
#[tokio::test]
async fn a_fan_in_drained_by_claims_carrying_acks_readies_its_sink() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut nodes: Vec<_> = (0..999)
        .map(|i| node(&format!("r{i}"), "fi", &[]))
        .collect();
    let roots: Vec<String> = nodes.iter().map(|n| n.r#ref.clone()).collect();
    let roots: Vec<&str> = roots.iter().map(String::as_str).collect();
    nodes.push(node("sink", "fi", &roots));
    enqueue_flow(&mut c, "fan-in", nodes)
        .await
        .expect("EnqueueFlow");
    let mut acks = Vec::new();
    let mut seen = 0;
    let sink = loop {
        // A claim carrying acks answers at once; one without waits for work.
        let mut req = claim_req(&["fi"], LONG_POLL_MS, Some(600_000));
        req.max_jobs = 100;
        req.acks = std::mem::take(&mut acks);
        let jobs = c.claim_job(req).await.expect("claim").into_inner().jobs;
        seen += jobs.len();
        if let Some(sink) = jobs.iter().find(|j| j.flow_ref == "sink") {
            break sink.clone();
        }
        assert!(seen < 1000, "the sink was not among the first 999 jobs");
        acks = jobs
            .iter()
            .map(|j| proto::JobLease {
                job_id: j.job_id.clone(),
                lease_token: j.lease_token.clone(),
                result: Vec::new(),
            })
            .collect();
    };
    assert_eq!(sink.dependencies.len(), 999);
    assert_eq!(seen, 1000);
}
