//! EnqueueFlow, GetFlow, CancelFlow and RetryFlow (issue 34): validate, call
//! `crate::jobs`, convert.

use tonic::Request;

use super::{convert, validate};
use crate::{
    api::{convert::timestamp, validate as check, ApiError, QueueApi},
    auth::Caller,
    domain::{
        FlowPage, FlowState, Namespace, NewFlowNode, OnDependencyFailure, MAX_FLOW_EDGES,
        MAX_FLOW_NODES, MAX_REF_LEN,
    },
    proto,
};

/// Nodes per GetFlow page unless the caller asks for fewer.
const MAX_FLOW_PAGE: u32 = 1000;

pub(in crate::api) async fn enqueue_flow(
    api: &QueueApi,
    namespace: &Namespace,
    request: Request<proto::EnqueueFlowRequest>,
) -> Result<proto::EnqueueFlowResponse, ApiError> {
    let (_, extensions, req) = request.into_parts();
    let flow_id = if req.flow_id.is_empty() {
        uuid::Uuid::new_v4().to_string()
    } else {
        check::id("flow_id", &req.flow_id)?.to_owned()
    };
    let nodes = nodes(api, namespace, req.nodes)?;
    let specs = api.jobs.flow_specs(nodes).map_err(|e| {
        ApiError::invalid(
            format!("nodes[{}] (ref {:?}).{}", e.index, e.reference, e.field),
            e.message,
        )
    })?;
    // Every node is a job: the principal's max_jobs lets the flow in whole or not.
    let (_, admitted) = api
        .quotas
        .admit_jobs(extensions.get::<Caller>(), specs.len(), true)
        .await?;
    let stored = api.jobs.enqueue_flow(namespace, &flow_id, specs).await;
    drop(admitted);
    let stored = stored?;
    tracing::debug!(%flow_id, created = stored.created, "flow enqueued");
    let outcome = if stored.created {
        proto::EnqueueOutcome::Created
    } else {
        proto::EnqueueOutcome::Duplicate
    };
    Ok(proto::EnqueueFlowResponse {
        flow_id: stored.flow_id,
        job_ids: stored.job_ids.into_iter().collect(),
        outcome: outcome as i32,
    })
}

/// Each node's own fields, and the counts; the graph's shape is checked after.
fn nodes(
    api: &QueueApi,
    namespace: &Namespace,
    nodes: Vec<proto::FlowNode>,
) -> Result<Vec<NewFlowNode>, ApiError> {
    if nodes.is_empty() || nodes.len() > MAX_FLOW_NODES {
        return Err(ApiError::invalid(
            "nodes",
            format!("must hold 1-{MAX_FLOW_NODES} nodes, got {}", nodes.len()),
        ));
    }
    let edges: usize = nodes.iter().map(|n| n.after.len()).sum();
    if edges > MAX_FLOW_EDGES {
        return Err(ApiError::invalid(
            "nodes",
            format!("at most {MAX_FLOW_EDGES} dependencies (after entries) in a flow, got {edges}"),
        ));
    }
    nodes
        .into_iter()
        .enumerate()
        .map(|(i, node)| flow_node(api, namespace, i, node))
        .collect()
}

fn flow_node(
    api: &QueueApi,
    namespace: &Namespace,
    i: usize,
    node: proto::FlowNode,
) -> Result<NewFlowNode, ApiError> {
    let at = format!("nodes[{i}]");
    if node.r#ref.is_empty() || node.r#ref.len() > MAX_REF_LEN {
        return Err(ApiError::invalid(
            format!("{at}.ref"),
            format!("must be 1-{MAX_REF_LEN} bytes, got {}", node.r#ref.len()),
        ));
    }
    let at = format!("{at} (ref {:?})", node.r#ref);
    let job = node
        .job
        .ok_or_else(|| ApiError::invalid(format!("{at}.job"), "is required"))?;
    if !job.namespace.is_empty() && job.namespace != namespace.as_str() {
        return Err(ApiError::invalid(
            format!("{at}.job.namespace"),
            "must be empty or the flow's namespace",
        ));
    }
    if !job.dedup_key.is_empty() {
        return Err(ApiError::invalid(
            format!("{at}.job.dedup_key"),
            "is not allowed in a flow: every node is a new job",
        ));
    }
    if job.retention.is_some() {
        return Err(ApiError::invalid(
            format!("{at}.job.retention"),
            "is not allowed in a flow: a flow's jobs are kept together, until the whole \
             flow finished and passed the server's retention",
        ));
    }
    let limit = MAX_FLOW_NODES;
    if node.after.len() > limit {
        return Err(ApiError::invalid(
            format!("{at}.after"),
            format!("at most {limit} dependencies, got {}", node.after.len()),
        ));
    }
    let on_failure = match proto::DependencyFailure::try_from(node.on_dependency_failure) {
        Ok(proto::DependencyFailure::Unspecified | proto::DependencyFailure::Cancel) => {
            OnDependencyFailure::Cancel
        }
        Ok(proto::DependencyFailure::Run) => OnDependencyFailure::Run,
        Ok(proto::DependencyFailure::Skip) => OnDependencyFailure::Skip,
        Err(_) => {
            return Err(ApiError::invalid(
                format!("{at}.on_dependency_failure"),
                format!("unknown rule {}", node.on_dependency_failure),
            ))
        }
    };
    Ok(NewFlowNode {
        job: super::traced(validate::new_job(api, &format!("{at}.job."), job)?),
        reference: node.r#ref,
        after: node.after,
        on_failure,
    })
}

pub(in crate::api) async fn get_flow(
    api: &QueueApi,
    namespace: &Namespace,
    request: Request<proto::GetFlowRequest>,
) -> Result<proto::GetFlowResponse, ApiError> {
    let req = request.into_inner();
    let flow_id = check::id("flow_id", &req.flow_id)?;
    let size = check::page_size(req.page_size, MAX_FLOW_PAGE, MAX_FLOW_PAGE)?;
    let from = parse_page_token(&req.page_token)?;
    let page = api
        .jobs
        .get_flow(
            namespace,
            flow_id,
            from,
            u32::try_from(size).unwrap_or(MAX_FLOW_PAGE),
        )
        .await?;
    Ok(page_to_proto(flow_id, page))
}

pub(in crate::api) async fn cancel_flow(
    api: &QueueApi,
    namespace: &Namespace,
    request: Request<proto::CancelFlowRequest>,
) -> Result<proto::CancelFlowResponse, ApiError> {
    let req = request.into_inner();
    let flow_id = check::id("flow_id", &req.flow_id)?;
    let (state, unfinished, failed) = summary(api.jobs.cancel_flow(namespace, flow_id).await?);
    Ok(proto::CancelFlowResponse {
        state,
        unfinished,
        failed,
    })
}

pub(in crate::api) async fn retry_flow(
    api: &QueueApi,
    namespace: &Namespace,
    request: Request<proto::RetryFlowRequest>,
) -> Result<proto::RetryFlowResponse, ApiError> {
    let req = request.into_inner();
    let flow_id = check::id("flow_id", &req.flow_id)?;
    let (state, unfinished, failed) = summary(api.jobs.retry_flow(namespace, flow_id).await?);
    Ok(proto::RetryFlowResponse {
        state,
        unfinished,
        failed,
    })
}

/// A flow's state, unfinished and failed counts, as CancelFlow and RetryFlow answer.
fn summary(page: FlowPage) -> (i32, u32, u32) {
    let counts = page.counts;
    (
        flow_state(counts.state()) as i32,
        counts.unfinished,
        counts.failed,
    )
}

fn flow_state(state: FlowState) -> proto::FlowState {
    match state {
        FlowState::Running => proto::FlowState::Running,
        FlowState::Completed => proto::FlowState::Completed,
        FlowState::Failed => proto::FlowState::Failed,
    }
}

/// GetFlow page tokens are the place of the page's first node, prefixed.
fn parse_page_token(token: &str) -> Result<u32, ApiError> {
    if token.is_empty() {
        return Ok(0);
    }
    token
        .strip_prefix('n')
        .and_then(|n| n.parse().ok())
        .ok_or_else(|| ApiError::invalid("page_token", "is not a token returned by GetFlow"))
}

fn page_to_proto(flow_id: &str, page: FlowPage) -> proto::GetFlowResponse {
    proto::GetFlowResponse {
        flow_id: flow_id.to_owned(),
        state: flow_state(page.counts.state()) as i32,
        node_count: page.counts.nodes,
        unfinished: page.counts.unfinished,
        failed: page.counts.failed,
        create_time: Some(timestamp(page.create_ms)),
        finish_time: page.finish_ms.map(timestamp),
        cancelled: page.cancelled,
        nodes: page
            .nodes
            .into_iter()
            .map(|node| {
                let mut out = proto::FlowNodeStatus {
                    r#ref: node.reference,
                    job_id: node.job_id,
                    after: node.after,
                    failed_dependency: node.failed_dependency,
                    ..Default::default()
                };
                if let Some(job) = node.job {
                    out.queue.clone_from(&job.queue);
                    out.name.clone_from(&job.name);
                    out.state = convert::state_to_proto(job.state) as i32;
                    out.attempts = job.attempts;
                    out.create_time = Some(timestamp(job.create_ms));
                    out.update_time = Some(timestamp(job.update_ms));
                    out.finish_time = job.finish_ms.map(timestamp);
                    out.on_dependency_failure =
                        convert::rule_to_proto(job.graph.map(|g| g.on_failure).unwrap_or_default())
                            as i32;
                }
                out
            })
            .collect(),
        next_page_token: page.next.map(|n| format!("n{n}")).unwrap_or_default(),
    }
}
