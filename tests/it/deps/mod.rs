//! Job dependencies (issue 34): flows of jobs (EnqueueFlow, GetFlow, CancelFlow,
//! RetryFlow), the WAITING and SKIPPED states, each on_dependency_failure rule,
//! dependency results in claims, retention of flows, and the graph's bounded work.

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
