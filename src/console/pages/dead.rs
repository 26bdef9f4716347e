//! Dead letters grouped by error: the namespace's dead jobs by error fingerprint
//! (the message with numbers and ids normalised, ListDeadGroups), largest group
//! first, with count, first and last seen and a sample; retry or delete a group.

use std::sync::Arc;

use axum::extract::{Path, Query, State};
use maud::html;
use serde::Deserialize;

use super::{done, queues, readable};
use crate::{
    console::{
        grpc::rpc,
        html::{action, count, enc, notice, ns_page, time, Answer, Tab},
        viewer::Viewer,
        Console,
    },
    proto::{self, JobState},
};

const PAGE: u32 = 50;

#[derive(Deserialize, Default)]
pub(crate) struct Params {
    #[serde(default)]
    queue: String,
    #[serde(default)]
    page: String,
    notice: Option<String>,
}

pub(crate) async fn list(
    State(console): State<Arc<Console>>,
    viewer: Viewer,
    Path(ns): Path<String>,
    Query(p): Query<Params>,
) -> Answer {
    readable(&viewer, &ns)?;
    let message = proto::ListDeadGroupsRequest {
        namespace: ns.clone(),
        queue: p.queue.clone(),
        page_size: PAGE,
        page_token: p.page.clone(),
    };
    let reply = console
        .grpc
        .call(&viewer.caller, rpc::LIST_DEAD_GROUPS, message)
        .await?;
    let admin = viewer.may_call("RetryDeadJobs", &ns);
    let body = html! { main {
        h1 { "Dead letters by error" }
        (notice(p.notice.as_deref()))
        p.muted { "Dead jobs grouped by their last error, with numbers, ids and quoted text set aside, so one cause is one row." }
        table.groups {
            thead { tr { th { "Queue" } th.num { "Jobs" } th { "Error (a sample)" } th { "First seen" } th { "Last seen" } @if admin { th { "Act on the group" } } } }
            tbody { @for g in &reply.groups {
                @let to = |act: &str| format!("/ns/{}/dead/{}/{}/{act}", enc(&ns), enc(&g.queue), enc(&g.fingerprint));
                tr data-fingerprint=(g.fingerprint) {
                    td { a href={ "/ns/" (enc(&ns)) "/jobs?queue=" (enc(&g.queue)) "&state=dead" } { (g.queue) } }
                    td.num { (count(g.count)) }
                    td {
                        span.error { (g.sample_error) } br;
                        a.mono href={ "/ns/" (enc(&ns)) "/jobs/" (enc(&g.sample_job_id)) } { (g.sample_job_id) }
                    }
                    td { (time(g.first_seen.as_ref())) }
                    td { (time(g.last_seen.as_ref())) }
                    @if admin { td {
                        (action(&to("retry"), "Retry group", Some("Retry every dead job of this group?")))
                        " "
                        (action(&to("delete"), "Delete group", Some("Delete every dead job of this group? This cannot be undone.")))
                    } }
                }
            } }
        }
        @if reply.groups.is_empty() { p.muted { "No dead jobs." } }
        @if !reply.next_page_token.is_empty() {
            p.pager { a href={ "/ns/" (enc(&ns)) "/dead?queue=" (enc(&p.queue)) "&page=" (enc(&reply.next_page_token)) } { "Next groups →" } }
        }
    } };
    ns_page(&viewer, &ns, Tab::Dead, "dead letters", body)
}

pub(crate) async fn act(
    State(console): State<Arc<Console>>,
    viewer: Viewer,
    Path((ns, queue, fingerprint, act)): Path<(String, String, String, String)>,
) -> Answer {
    let back = format!("/ns/{}/dead", enc(&ns));
    let notice = match act.as_str() {
        "retry" => queues::retry_dead(&console, &viewer, &ns, &queue, &fingerprint).await?,
        "delete" => {
            queues::purge_state(&console, &viewer, &ns, &queue, JobState::Dead, &fingerprint)
                .await?
        }
        _ => return Ok(super::not_found().await),
    };
    Ok(done(&back, &notice))
}
