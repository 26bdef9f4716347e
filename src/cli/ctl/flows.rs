//! `dueq flow enqueue|get|cancel|retry` (issue 34): a flow of jobs from a JSON file
//! (EnqueueFlow), its nodes (GetFlow, every page), CancelFlow and RetryFlow.

use std::collections::{BTreeMap, HashMap};

use dueq::{
    config::ctl::{FlowAction, FlowArgs, FlowEnqueueArgs, FlowTarget},
    proto,
};
use serde::Deserialize;
use serde_json::{json, Value};

use super::{
    connect::connect,
    render::{self, emit, time_json},
    Failure,
};

/// The file `dueq flow enqueue --file` reads.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FlowFile {
    #[serde(default)]
    flow_id: String,
    nodes: Vec<NodeFile>,
}

/// One node of the file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct NodeFile {
    #[serde(rename = "ref")]
    reference: String,
    queue: String,
    name: String,
    /// Text, sent as its UTF-8 bytes.
    #[serde(default)]
    payload: String,
    #[serde(default)]
    after: Vec<String>,
    #[serde(default)]
    on_dependency_failure: Option<String>,
    #[serde(default)]
    job_id: String,
    #[serde(default)]
    headers: HashMap<String, String>,
}

pub(crate) async fn run(args: FlowArgs) -> Result<(), Failure> {
    match args.action {
        FlowAction::Enqueue(args) => enqueue(args).await,
        FlowAction::Get(target) => get(target).await,
        FlowAction::Cancel(target) => cancel(target).await,
        FlowAction::Retry(target) => retry(target).await,
    }
}

/// The file's text: a path, or standard input for "-".
fn read_file(path: &std::path::Path) -> Result<String, Failure> {
    let unreadable =
        |e: std::io::Error| Failure::Usage(format!("cannot read {}: {e}", path.display()));
    if path.as_os_str() == "-" {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut text).map_err(unreadable)?;
        return Ok(text);
    }
    std::fs::read_to_string(path).map_err(unreadable)
}

/// A rule's name in the file, in `nodes[i]`.
fn rule(i: usize, name: Option<&str>) -> Result<proto::DependencyFailure, Failure> {
    match name {
        None | Some("cancel") => Ok(proto::DependencyFailure::Cancel),
        Some("run") => Ok(proto::DependencyFailure::Run),
        Some("skip") => Ok(proto::DependencyFailure::Skip),
        Some(other) => Err(Failure::Usage(format!(
            "nodes[{i}].on_dependency_failure: {other:?} is not cancel, run or skip"
        ))),
    }
}

/// The request the file describes; a file that is not one is a usage error naming
/// where it is wrong.
fn request(namespace: &str, text: &str, path: &str) -> Result<proto::EnqueueFlowRequest, Failure> {
    let file: FlowFile = serde_json::from_str(text)
        .map_err(|e| Failure::Usage(format!("{path} is not a flow: {e}")))?;
    let mut nodes = Vec::with_capacity(file.nodes.len());
    for (i, node) in file.nodes.into_iter().enumerate() {
        let on_failure = rule(i, node.on_dependency_failure.as_deref())?;
        nodes.push(proto::FlowNode {
            r#ref: node.reference,
            job: Some(proto::EnqueueRequest {
                queue: node.queue,
                name: node.name,
                payload: node.payload.into_bytes(),
                job_id: node.job_id,
                headers: node.headers,
                ..Default::default()
            }),
            after: node.after,
            on_dependency_failure: on_failure as i32,
        });
    }
    Ok(proto::EnqueueFlowRequest {
        namespace: namespace.to_owned(),
        nodes,
        flow_id: file.flow_id,
    })
}

/// `dueq flow enqueue`: prints the flow id, whether it was created, and the job ids
/// by ref.
async fn enqueue(args: FlowEnqueueArgs) -> Result<(), Failure> {
    let text = read_file(&args.file)?;
    let req = request(&args.namespace, &text, &args.file.display().to_string())?;
    let mut client = connect(&args.client, true).await?;
    let stored = client.enqueue_flow(req).await?.into_inner();
    let created = stored.outcome != proto::EnqueueOutcome::Duplicate as i32;
    let ids: BTreeMap<_, _> = stored.job_ids.iter().collect();
    let doc = json!({
        "namespace": args.namespace,
        "flow_id": stored.flow_id,
        "created": created,
        "job_ids": ids,
    });
    emit(args.client.output, doc, || {
        let mut table = render::table(&["REF", "JOB ID"]);
        for (reference, id) in &ids {
            table.add_row(vec![(*reference).clone(), (*id).clone()]);
        }
        let what = if created {
            "enqueued"
        } else {
            "already stored"
        };
        format!("flow {} {what}\n{table}", stored.flow_id)
    });
    Ok(())
}

/// A flow state's name in the CLI and its JSON.
fn flow_state(state: i32) -> String {
    match proto::FlowState::try_from(state) {
        Ok(proto::FlowState::Running) => "running".into(),
        Ok(proto::FlowState::Completed) => "completed".into(),
        Ok(proto::FlowState::Failed) => "failed".into(),
        Ok(proto::FlowState::Unspecified) => "unspecified".into(),
        Err(_) => format!("unknown({state})"),
    }
}

fn rule_name(rule: i32) -> &'static str {
    match proto::DependencyFailure::try_from(rule) {
        Ok(proto::DependencyFailure::Run) => "run",
        Ok(proto::DependencyFailure::Skip) => "skip",
        _ => "cancel",
    }
}

fn node_json(n: &proto::FlowNodeStatus) -> Value {
    json!({
        "ref": n.r#ref,
        "job_id": n.job_id,
        "queue": n.queue,
        "name": n.name,
        "state": render::job_state(n.state),
        "after": n.after,
        "on_dependency_failure": rule_name(n.on_dependency_failure),
        "attempts": n.attempts,
        "create_time": time_json(&n.create_time),
        "update_time": time_json(&n.update_time),
        "finish_time": time_json(&n.finish_time),
        "failed_dependency": n.failed_dependency,
    })
}

/// Every page of a flow.
async fn whole_flow(
    client: &mut super::connect::Client,
    target: &FlowTarget,
) -> Result<proto::GetFlowResponse, Failure> {
    let mut token = String::new();
    let mut all: Option<proto::GetFlowResponse> = None;
    loop {
        let page = client
            .get_flow(proto::GetFlowRequest {
                namespace: target.namespace.clone(),
                flow_id: target.flow_id.clone(),
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
            return all.ok_or_else(|| Failure::Status(tonic::Status::internal("no page")));
        }
    }
}

/// `dueq flow get`.
async fn get(target: FlowTarget) -> Result<(), Failure> {
    let mut client = connect(&target.client, true).await?;
    let flow = whole_flow(&mut client, &target).await?;
    let doc = json!({
        "namespace": target.namespace,
        "flow_id": flow.flow_id,
        "state": flow_state(flow.state),
        "node_count": flow.node_count,
        "unfinished": flow.unfinished,
        "failed": flow.failed,
        "cancelled": flow.cancelled,
        "create_time": time_json(&flow.create_time),
        "finish_time": time_json(&flow.finish_time),
        "nodes": flow.nodes.iter().map(node_json).collect::<Vec<_>>(),
    });
    emit(target.client.output, doc, || {
        let mut table =
            render::table(&["REF", "STATE", "QUEUE", "AFTER", "ATTEMPTS", "FAILED_DEP"]);
        for n in &flow.nodes {
            table.add_row(vec![
                n.r#ref.clone(),
                render::job_state(n.state),
                n.queue.clone(),
                if n.after.is_empty() {
                    "-".into()
                } else {
                    n.after.join(",")
                },
                n.attempts.to_string(),
                render::or_dash(&n.failed_dependency),
            ]);
        }
        format!(
            "flow {}: {}{}, {} nodes, {} unfinished, {} failed\n{table}",
            flow.flow_id,
            flow_state(flow.state),
            if flow.cancelled { " (cancelled)" } else { "" },
            flow.node_count,
            flow.unfinished,
            flow.failed
        )
    });
    Ok(())
}

/// What CancelFlow and RetryFlow answer: the flow's state after the call.
fn after_call(target: &FlowTarget, done: &str, state: i32, unfinished: u32, failed: u32) {
    let doc = json!({
        "namespace": target.namespace,
        "flow_id": target.flow_id,
        "state": flow_state(state),
        "unfinished": unfinished,
        "failed": failed,
    });
    emit(target.client.output, doc, || {
        format!(
            "{done} flow {}: now {}, {unfinished} unfinished, {failed} failed",
            target.flow_id,
            flow_state(state)
        )
    });
}

/// `dueq flow cancel`.
async fn cancel(target: FlowTarget) -> Result<(), Failure> {
    let mut client = connect(&target.client, true).await?;
    let r = client
        .cancel_flow(proto::CancelFlowRequest {
            namespace: target.namespace.clone(),
            flow_id: target.flow_id.clone(),
        })
        .await?
        .into_inner();
    after_call(&target, "cancelled", r.state, r.unfinished, r.failed);
    Ok(())
}

/// `dueq flow retry`.
async fn retry(target: FlowTarget) -> Result<(), Failure> {
    let mut client = connect(&target.client, true).await?;
    let r = client
        .retry_flow(proto::RetryFlowRequest {
            namespace: target.namespace.clone(),
            flow_id: target.flow_id.clone(),
        })
        .await?
        .into_inner();
    after_call(&target, "retried", r.state, r.unfinished, r.failed);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flow_file_becomes_the_request() {
        let text = r#"{"flow_id": "f", "nodes": [
            {"ref": "a", "queue": "q", "name": "n", "payload": "hi", "headers": {"k": "v"}},
            {"ref": "b", "queue": "q", "name": "n", "after": ["a"], "on_dependency_failure": "skip", "job_id": "j"}
        ]}"#;
        let req = request("ns", text, "f.json").expect("a flow");
        assert_eq!(req.flow_id, "f");
        assert_eq!(req.nodes.len(), 2);
        let a = req.nodes[0].job.as_ref().expect("a job");
        assert_eq!(
            (a.payload.as_slice(), a.headers["k"].as_str()),
            (&b"hi"[..], "v")
        );
        assert_eq!(req.nodes[1].after, ["a"]);
        assert_eq!(
            req.nodes[1].on_dependency_failure,
            proto::DependencyFailure::Skip as i32
        );
        assert_eq!(req.nodes[1].job.as_ref().expect("b").job_id, "j");
    }

    #[test]
    fn a_bad_file_names_what_is_wrong() {
        let bad_rule = r#"{"nodes": [{"ref": "a", "queue": "q", "name": "n", "on_dependency_failure": "maybe"}]}"#;
        let message = |text: &str| match request("ns", text, "f.json") {
            Err(Failure::Usage(why)) => why,
            other => panic!("{other:?}"),
        };
        assert!(message(bad_rule).contains("nodes[0].on_dependency_failure"));
        assert!(message(r#"{"nodes": [{"ref": "a", "queue": "q"}]}"#).contains("name"));
        assert!(message(r#"{"nodes": [], "extra": 1}"#).contains("extra"));
        assert!(message("not json").starts_with("f.json is not a flow"));
    }
}
