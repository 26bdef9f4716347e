//! Large flows: 1,000 nodes (stored in many parts) of each shape run every node once
//! in dependency order, page through GetFlow, and leave no graph work behind; a claim
//! whose dependencies' results exceed the reply budget carries what fits.

use std::collections::{BTreeMap, BTreeSet};

use super::*;

/// Every page of flow `flow_id`, `page_size` nodes each, following the tokens.
async fn pages(c: &mut Client, flow_id: &str, page_size: u32) -> Vec<proto::GetFlowResponse> {
    let mut token = String::new();
    let mut out = Vec::new();
    loop {
        let page = c
            .get_flow(proto::GetFlowRequest {
                namespace: "ns".into(),
                flow_id: flow_id.into(),
                page_size,
                page_token: token,
            })
            .await
            .expect("GetFlow")
            .into_inner();
        token = page.next_page_token.clone();
        out.push(page);
        if token.is_empty() {
            return out;
        }
    }
}

/// Claims in batches of 100 from "q" and acks each batch; checks no node is claimed
/// twice or before every one of its dependencies was acked; returns each node's
/// claim by ref once all `deps.len()` nodes ran.
async fn run_all(
    c: &mut Client,
    deps: &BTreeMap<String, Vec<String>>,
) -> BTreeMap<String, proto::ClaimedJob> {
    let mut acked: BTreeSet<String> = BTreeSet::new();
    let mut claims: BTreeMap<String, proto::ClaimedJob> = BTreeMap::new();
    while claims.len() < deps.len() {
        let batch = c
            .claim_job(proto::ClaimJobRequest {
                max_jobs: 100,
                ..claim_req(&["q"], LONG_POLL_MS, Some(600_000))
            })
            .await
            .expect("claim")
            .into_inner()
            .jobs;
        if batch.is_empty() {
            let mut counts: BTreeMap<i32, usize> = BTreeMap::new();
            let flow = c
                .list_jobs(proto::ListJobsRequest {
                    namespace: "ns".into(),
                    queue: "q".into(),
                    state: proto::JobState::Pending as i32,
                    page_size: 1000,
                    page_token: String::new(),
                    view: 1,
                    filter: None,
                })
                .await
                .expect("list")
                .into_inner();
            for j in flow.jobs {
                *counts.entry(j.state).or_default() += 1;
            }
            panic!(
                "a long-poll ends with work while nodes are left: {} claimed, pending {counts:?}",
                claims.len()
            );
        }
        let mut leases = Vec::new();
        for job in batch {
            let r = job.flow_ref.clone();
            for d in &deps[&r] {
                assert!(
                    acked.contains(d),
                    "{r} claimed before its dependency {d} finished"
                );
            }
            leases.push(proto::JobLease {
                job_id: job.job_id.clone(),
                lease_token: job.lease_token.clone(),
                result: r.as_bytes().to_vec(),
            });
            assert!(claims.insert(r.clone(), job).is_none(), "{r} claimed twice");
        }
        let results = c
            .ack_jobs(proto::AckJobsRequest {
                namespace: "ns".into(),
                acks: leases.clone(),
            })
            .await
            .expect("AckJobs")
            .into_inner()
            .results;
        assert!(results.iter().all(|a| a.code == 0), "{results:?}");
        acked.extend(
            leases
                .into_iter()
                .map(|l| String::from_utf8(l.result).expect("utf-8")),
        );
    }
    claims
}

/// Stores `nodes` as flow `flow_id`, runs it all, and checks the pages, the end state
/// and that no graph work is left; returns the claims by ref.
async fn run_large(
    redis: &Redis,
    c: &mut Client,
    flow_id: &str,
    nodes: Vec<proto::FlowNode>,
) -> BTreeMap<String, proto::ClaimedJob> {
    let deps: BTreeMap<String, Vec<String>> = nodes
        .iter()
        .map(|n| (n.r#ref.clone(), n.after.clone()))
        .collect();
    let stored = enqueue_flow(c, flow_id, nodes).await.expect("EnqueueFlow");
    assert_eq!(stored.job_ids.len(), 1000);
    let claims = run_all(c, &deps).await;
    let all = pages(c, flow_id, 100).await;
    assert_eq!(all.len(), 10, "ten pages of 100");
    let mut seen: BTreeSet<String> = BTreeSet::new();
    for page in &all {
        assert!(page.nodes.len() <= 100);
        for n in &page.nodes {
            for d in &n.after {
                assert!(
                    seen.contains(d),
                    "{} listed before its dependency {d}",
                    n.r#ref
                );
            }
            assert_eq!(n.state, proto::JobState::Completed as i32, "{}", n.r#ref);
            assert!(seen.insert(n.r#ref.clone()), "{} listed twice", n.r#ref);
        }
    }
    assert_eq!(seen.len(), 1000);
    let flow = &all[0];
    assert_eq!(
        (flow.state, flow.unfinished, flow.failed, flow.node_count),
        (proto::FlowState::Completed as i32, 0, 0, 1000)
    );
    let mut conn = redis.conn().await;
    assert!(
        !exists(&mut conn, "dueq:{ns}:meta:dagq").await,
        "no graph work is left"
    );
    claims
}

/// Pins: a 1,000-node chain runs each node once, in order; GetFlow pages through it
/// 100 at a time; the flow ends COMPLETED with no graph work queued.
#[tokio::test]
async fn a_chain_of_1000_runs_in_order() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let nodes = super::refusals::chain(1000, "ch");
    let claims = run_large(&redis, &mut c, "chain", nodes).await;
    assert_eq!(
        claims["n999"]
            .dependency_results
            .get("n998")
            .map(Vec::as_slice),
        Some(&b"n998"[..])
    );
}

/// Pins: a fan-out of 1 root and 999 dependents readies all 999 (more than one
/// script's 64 steps: the rest through the graph queue) once the root completed.
#[tokio::test]
async fn a_fan_out_of_1000_runs_every_dependent_once() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut nodes = vec![node("root", "q", &[])];
    nodes.extend((0..999).map(|i| node(&format!("d{i}"), "q", &["root"])));
    let claims = run_large(&redis, &mut c, "fan-out", nodes).await;
    assert!(claims.values().filter(|j| j.flow_ref != "root").all(|j| {
        j.dependencies.len() == 1
            && j.dependency_results.get("root").map(Vec::as_slice) == Some(&b"root"[..])
    }));
}

/// Pins: a fan-in of 999 roots and 1 sink runs the sink last, its claim carrying all
/// 999 dependencies, each COMPLETED with its result.
#[tokio::test]
async fn a_fan_in_of_1000_runs_the_sink_last_with_999_dependencies() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let roots: Vec<String> = (0..999).map(|i| format!("r{i}")).collect();
    let refs: Vec<&str> = roots.iter().map(String::as_str).collect();
    let mut nodes: Vec<proto::FlowNode> = refs.iter().map(|r| node(r, "q", &[])).collect();
    nodes.push(node("sink", "q", &refs));
    let claims = run_large(&redis, &mut c, "fan-in", nodes).await;
    let sink = &claims["sink"];
    assert_eq!(sink.dependencies.len(), 999);
    assert!(sink
        .dependencies
        .iter()
        .all(|d| d.state == proto::JobState::Completed as i32));
    // At most 200 dependency records are read for their results per claim call: the
    // first 200 in `after` order come along, the rest are read with GetJob.
    assert_eq!(sink.dependency_results.len(), 200);
    assert_eq!(
        sink.dependency_results.get("r199").map(Vec::as_slice),
        Some(&b"r199"[..])
    );
    assert!(!sink.dependency_results.contains_key("r500"));
    let r500 = sink
        .dependencies
        .iter()
        .find(|d| d.r#ref == "r500")
        .expect("r500 is a dependency");
    assert_eq!(get_job(&mut c, &r500.job_id).await.result, b"r500");
}

/// Pins: when the dependencies' results together exceed --max-message-size, the
/// claim carries every dependency (id and state) and only the results that fit, each
/// as stored; the others are readable with GetJob.
#[tokio::test]
async fn dependency_results_beyond_the_reply_budget_are_left_to_get_job() {
    let redis = Redis::start().await;
    let mut config = config(&redis.url());
    config.max_payload_size = 1024;
    config.max_message_size = 700_000;
    let service = Service::start_with(config).await;
    let mut c = service.client().await;
    let roots: Vec<String> = (0..12).map(|i| format!("r{i}")).collect();
    let refs: Vec<&str> = roots.iter().map(String::as_str).collect();
    let mut nodes: Vec<proto::FlowNode> = refs.iter().map(|r| node(r, "q", &[])).collect();
    nodes.push(node("sink", "s", &refs));
    let stored = enqueue_flow(&mut c, "budget", nodes)
        .await
        .expect("EnqueueFlow");
    let result = |r: &str| vec![r.as_bytes()[1]; 64 * 1024];
    for _ in 0..12 {
        let j = claim_job(&mut c, &["q"], LONG_POLL_MS, Some(600_000))
            .await
            .expect("a root");
        c.ack_job(proto::AckJobRequest {
            namespace: "ns".into(),
            job_id: j.job_id,
            lease_token: j.lease_token,
            result: result(&j.flow_ref),
        })
        .await
        .expect("ack");
    }
    let sink = claim_job(&mut c, &["s"], LONG_POLL_MS, Some(600_000))
        .await
        .expect("the sink");
    assert_eq!(sink.dependencies.len(), 12);
    for d in &sink.dependencies {
        assert_eq!(d.job_id, stored.job_ids[&d.r#ref]);
        assert_eq!(d.state, proto::JobState::Completed as i32);
    }
    let carried = sink.dependency_results.len();
    assert!(
        carried < 12,
        "not all 12 results of 64 KiB fit in 700,000 bytes"
    );
    for (r, bytes) in &sink.dependency_results {
        assert_eq!(bytes, &result(r), "{r}");
    }
    for d in sink
        .dependencies
        .iter()
        .filter(|d| !sink.dependency_results.contains_key(&d.r#ref))
    {
        assert_eq!(get_job(&mut c, &d.job_id).await.result, result(&d.r#ref));
    }
}
