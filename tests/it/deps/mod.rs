//! Job dependencies (issue 34): flows of jobs (EnqueueFlow, GetFlow, CancelFlow,
//! RetryFlow), the WAITING and SKIPPED states, each on_dependency_failure rule,
//! dependency results in claims, retention of flows, and the graph's bounded work.

mod control;
mod failover;
mod idempotency;
mod large;
mod proof;
mod refusals;
mod retention;
mod semantics;

use tonic::Status;

use crate::common::*;

/// A node of queue `queue` with ref `reference` after `after`, rule CANCEL.
pub fn node(reference: &str, queue: &str, after: &[&str]) -> proto::FlowNode {
    proto::FlowNode {
        r#ref: reference.into(),
        job: Some(job(queue, reference)),
        after: after.iter().map(|a| (*a).to_owned()).collect(),
        on_dependency_failure: 0,
    }
}

/// `node` with a rule.
pub fn node_with(
    reference: &str,
    queue: &str,
    after: &[&str],
    rule: proto::DependencyFailure,
) -> proto::FlowNode {
    proto::FlowNode {
        on_dependency_failure: rule as i32,
        ..node(reference, queue, after)
    }
}

pub async fn enqueue_flow(
    c: &mut Client,
    flow_id: &str,
    nodes: Vec<proto::FlowNode>,
) -> Result<proto::EnqueueFlowResponse, Status> {
    c.enqueue_flow(proto::EnqueueFlowRequest {
        namespace: "ns".into(),
        nodes,
        flow_id: flow_id.into(),
    })
    .await
    .map(|r| r.into_inner())
}

/// Every node of flow `flow_id`, all pages.
pub async fn get_flow(c: &mut Client, flow_id: &str) -> Result<proto::GetFlowResponse, Status> {
    let mut token = String::new();
    let mut all: Option<proto::GetFlowResponse> = None;
    loop {
        let page = c
            .get_flow(proto::GetFlowRequest {
                namespace: "ns".into(),
                flow_id: flow_id.into(),
                page_size: 0,
                page_token: token,
            })
            .await?
            .into_inner();
        token = page.next_page_token.clone();
        match &mut all {
            None => all = Some(page),
            Some(all) => all.nodes.extend(page.nodes),
        }
        if token.is_empty() {
            return Ok(all.expect("a page"));
        }
    }
}

/// The state of each node by ref.
pub async fn node_states(
    c: &mut Client,
    flow_id: &str,
) -> std::collections::BTreeMap<String, proto::JobState> {
    get_flow(c, flow_id)
        .await
        .expect("GetFlow")
        .nodes
        .into_iter()
        .map(|n| {
            (
                n.r#ref,
                proto::JobState::try_from(n.state).expect("a state"),
            )
        })
        .collect()
}

/// `node` whose job has id `id`.
pub fn node_id(reference: &str, queue: &str, after: &[&str], id: &str) -> proto::FlowNode {
    let mut n = node(reference, queue, after);
    n.job.as_mut().expect("job").job_id = id.into();
    n
}

/// The `dueq:{ns}:*` keys whose name holds `needle`.
pub async fn keys_naming(redis: &Redis, needle: &str) -> Vec<String> {
    let mut conn = redis.conn().await;
    let keys: Vec<String> = query(&mut conn, cmd("KEYS").arg("dueq:{ns}:*")).await;
    keys.into_iter().filter(|k| k.contains(needle)).collect()
}

/// Flow `flow_id` is not stored: GetFlow answers NOT_FOUND, no key names it or any of
/// `ids`, and the flow sets do not hold it.
pub async fn assert_nothing_stored(redis: &Redis, c: &mut Client, flow_id: &str, ids: &[String]) {
    let missing = get_flow(c, flow_id).await.expect_err("no flow");
    assert_eq!(missing.code(), tonic::Code::NotFound, "{missing:?}");
    assert!(keys_naming(redis, flow_id).await.is_empty(), "{flow_id}");
    for id in ids {
        assert!(keys_naming(redis, id).await.is_empty(), "{id}");
    }
    let mut conn = redis.conn().await;
    for set in ["dags", "dagsdone", "dagstage"] {
        let key = format!("dueq:{{ns}}:meta:{set}");
        let score: Option<f64> = query(&mut conn, cmd("ZSCORE").arg(&key).arg(flow_id)).await;
        assert!(score.is_none(), "{key} holds {flow_id}");
    }
}

/// The job ids of `nodes` (each given one).
pub fn ids_of(nodes: &[proto::FlowNode]) -> Vec<String> {
    nodes
        .iter()
        .filter_map(|n| n.job.as_ref().map(|j| j.job_id.clone()))
        .filter(|id| !id.is_empty())
        .collect()
}

/// How many jobs namespace "ns" stores (records).
pub async fn job_records(redis: &Redis) -> usize {
    let mut conn = redis.conn().await;
    let keys: Vec<String> = query(&mut conn, cmd("KEYS").arg("dueq:{ns}:j:*")).await;
    keys.len()
}

/// Claims one job of `queues` (waiting up to LONG_POLL_MS) and acks it with `result`.
pub async fn run_one(c: &mut Client, queues: &[&str], result: &[u8]) -> proto::ClaimedJob {
    let claimed = claim_job(c, queues, LONG_POLL_MS, Some(600_000))
        .await
        .expect("a claimable job");
    c.ack_job(proto::AckJobRequest {
        namespace: "ns".into(),
        job_id: claimed.job_id.clone(),
        lease_token: claimed.lease_token.clone(),
        result: result.to_vec(),
    })
    .await
    .expect("ack");
    claimed
}

/// Waits until node `reference` of flow `flow_id` is in `want`.
pub async fn wait_node(c: &mut Client, flow_id: &str, reference: &str, want: proto::JobState) {
    let patience = Patience::new(format!("{flow_id}/{reference} to be {want:?}"));
    while node_states(c, flow_id).await.get(reference) != Some(&want) {
        patience.wait().await;
    }
}
