//! A flow (issue 34) as a graph: its nodes in columns by depth (a node stands right
//! of everything it runs after), an edge from each dependency, each node coloured by
//! state and linked to its job; the counts; cancel and retry the flow.

use std::{collections::HashMap, sync::Arc};

use axum::extract::{Path, Query, State};
use maud::{html, Markup};
use serde::Deserialize;

use super::{done, readable};
use crate::{
    console::{
        grpc::rpc,
        html::{action, enc, notice, ns_page, state_name, time, Answer, Tab},
        viewer::Viewer,
        Console,
    },
    proto,
};

/// Most nodes drawn (one GetFlow page); a larger flow lists the rest below.
const DRAWN: u32 = 200;
const BOX_W: i64 = 180;
const BOX_H: i64 = 44;
const GAP_X: i64 = 60;
const GAP_Y: i64 = 18;

#[derive(Deserialize, Default)]
pub(crate) struct Params {
    #[serde(default)]
    page: String,
    notice: Option<String>,
}

/// The flow's state as a badge (coloured as the job state it resembles).
fn flow_state(state: i32) -> Markup {
    let (class, text) = match proto::FlowState::try_from(state) {
        Ok(proto::FlowState::Running) => ("active", "running"),
        Ok(proto::FlowState::Completed) => ("completed", "completed"),
        Ok(proto::FlowState::Failed) => ("dead", "failed"),
        _ => ("", "unknown"),
    };
    html! { span class={ "badge " (class) } { (text) } }
}

pub(crate) async fn detail(
    State(console): State<Arc<Console>>,
    viewer: Viewer,
    Path((ns, id)): Path<(String, String)>,
    Query(p): Query<Params>,
) -> Answer {
    readable(&viewer, &ns)?;
    let message = proto::GetFlowRequest {
        namespace: ns.clone(),
        flow_id: id.clone(),
        page_size: DRAWN,
        page_token: p.page.clone(),
    };
    let flow = console
        .grpc
        .call(&viewer.caller, rpc::GET_FLOW, message)
        .await?;
    let to = |act: &str| format!("/ns/{}/flows/{}/{act}", enc(&ns), enc(&id));
    let body = html! { main {
        h1 { "Flow " span.mono { (flow.flow_id) } " " (flow_state(flow.state)) }
        (notice(p.notice.as_deref()))
        div.actions {
            @if viewer.may_call("CancelFlow", &ns) && flow.unfinished > 0 {
                (action(&to("cancel"), "Cancel flow", Some("Cancel every unfinished node of this flow?")))
            }
            @if viewer.may_call("RetryFlow", &ns) && flow.failed > 0 {
                (action(&to("retry"), "Retry flow", Some("Retry the failed nodes of this flow?")))
            }
        }
        dl.facts {
            dt { "Nodes" } dd { (flow.node_count) }
            dt { "Unfinished" } dd { (flow.unfinished) }
            dt { "Failed" } dd { (flow.failed) }
            dt { "Created" } dd { (time(flow.create_time.as_ref())) }
            dt { "Finished" } dd { (time(flow.finish_time.as_ref())) }
        }
        h2 { "Graph" }
        (graph(&ns, &flow.nodes))
        @if !flow.next_page_token.is_empty() {
            p.pager { a href={ "/ns/" (enc(&ns)) "/flows/" (enc(&id)) "?page=" (enc(&flow.next_page_token)) } { "Next nodes →" } }
        }
    } };
    ns_page(&viewer, &ns, Tab::Jobs, &format!("flow {id}"), body)
}

/// Each node's column: one right of its deepest dependency on this page (nodes come
/// after their dependencies, so one pass suffices).
fn columns(nodes: &[proto::FlowNodeStatus]) -> Vec<i64> {
    let mut depth: HashMap<&str, i64> = HashMap::new();
    nodes
        .iter()
        .map(|node| {
            let d = node
                .after
                .iter()
                .filter_map(|dep| depth.get(dep.as_str()))
                .max()
                .map_or(0, |d| d + 1);
            depth.insert(&node.r#ref, d);
            d
        })
        .collect()
}

fn graph(ns: &str, nodes: &[proto::FlowNodeStatus]) -> Markup {
    let cols = columns(nodes);
    let mut rows_in: HashMap<i64, i64> = HashMap::new();
    let mut at: HashMap<&str, (i64, i64)> = HashMap::new();
    for (node, col) in nodes.iter().zip(&cols) {
        let row = rows_in.entry(*col).or_insert(0);
        at.insert(&node.r#ref, (col * (BOX_W + GAP_X), *row * (BOX_H + GAP_Y)));
        *row += 1;
    }
    let width = cols.iter().max().map_or(0, |c| c + 1) * (BOX_W + GAP_X);
    let height = rows_in.values().max().copied().unwrap_or(0) * (BOX_H + GAP_Y);
    html! {
        svg.flow width=(width + 8) height=(height + 8) viewBox={ "-4 -4 " (width + 8) " " (height + 8) } role="img" aria-label="the flow's nodes and dependencies" {
            @for node in nodes {
                @for dep in &node.after {
                    @if let (Some((x1, y1)), Some((x2, y2))) = (at.get(dep.as_str()), at.get(node.r#ref.as_str())) {
                        line.edge x1=(x1 + BOX_W) y1=(y1 + BOX_H / 2) x2=(x2) y2=(y2 + BOX_H / 2) {}
                    }
                }
            }
            @for node in nodes {
                @if let Some((x, y)) = at.get(node.r#ref.as_str()) {
                    a href={ "/ns/" (enc(ns)) "/jobs/" (enc(&node.job_id)) } {
                        g class={ "node " (state_name(node.state)) } data-ref=(node.r#ref) {
                            rect x=(x) y=(y) width=(BOX_W) height=(BOX_H) rx="6" {}
                            text x=(x + 8) y=(y + 18) { (node.r#ref) }
                            text.sub x=(x + 8) y=(y + 35) { (state_name(node.state)) " · " (node.queue) }
                        }
                    }
                }
            }
        }
    }
}

pub(crate) async fn act(
    State(console): State<Arc<Console>>,
    viewer: Viewer,
    Path((ns, id, act)): Path<(String, String, String)>,
) -> Answer {
    let back = format!("/ns/{}/flows/{}", enc(&ns), enc(&id));
    let client = &console.grpc;
    let (namespace, flow_id) = (ns.clone(), id.clone());
    match act.as_str() {
        "cancel" => {
            let message = proto::CancelFlowRequest { namespace, flow_id };
            client
                .call(&viewer.caller, rpc::CANCEL_FLOW, message)
                .await?;
            Ok(done(
                &back,
                "Flow cancelled: its unfinished nodes end cancelled.",
            ))
        }
        "retry" => {
            let message = proto::RetryFlowRequest { namespace, flow_id };
            client
                .call(&viewer.caller, rpc::RETRY_FLOW, message)
                .await?;
            Ok(done(&back, "Flow retried: its failed nodes run again."))
        }
        _ => Ok(super::not_found().await),
    }
}

#[cfg(test)]
mod tests {
    use crate::proto::FlowNodeStatus;

    fn node(r: &str, after: &[&str]) -> FlowNodeStatus {
        FlowNodeStatus {
            r#ref: r.into(),
            after: after.iter().map(|a| (*a).into()).collect(),
            ..Default::default()
        }
    }

    #[test]
    fn a_node_stands_right_of_its_deepest_dependency() {
        let nodes = [
            node("fetch", &[]),
            node("resize", &["fetch"]),
            node("thumb", &["fetch"]),
            node("publish", &["resize", "thumb", "fetch"]),
        ];
        assert_eq!(super::columns(&nodes), vec![0, 1, 1, 2]);
    }
}
