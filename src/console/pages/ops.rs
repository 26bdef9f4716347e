//! Workers and audit: the open Work streams and long-polls of every replica with
//! the leases ending soonest (ListWorkers), and the operator actions with who did
//! them, when, from where and how they ended (ListAuditEvents).

use std::sync::Arc;

use axum::extract::{Path, Query, State};
use maud::html;
use serde::Deserialize;

use super::readable;
use crate::{
    console::{
        grpc::rpc,
        html::{enc, ms_of, ns_page, span, time, Answer, Tab},
        viewer::Viewer,
        Console,
    },
    proto,
};

const PAGE: u32 = 100;

#[derive(Deserialize, Default)]
pub(crate) struct Params {
    #[serde(default)]
    page: String,
}

fn kind(kind: i32) -> &'static str {
    match proto::WorkerKind::try_from(kind) {
        Ok(proto::WorkerKind::Work) => "Work stream",
        Ok(proto::WorkerKind::ClaimJob) => "ClaimJob long-poll",
        Ok(proto::WorkerKind::ClaimDueSchedule) => "ClaimDueSchedule long-poll",
        _ => "?",
    }
}

pub(crate) async fn workers(
    State(console): State<Arc<Console>>,
    viewer: Viewer,
    Path(ns): Path<String>,
    Query(p): Query<Params>,
) -> Answer {
    readable(&viewer, &ns)?;
    let message = proto::ListWorkersRequest {
        namespace: ns.clone(),
        page_size: PAGE,
        page_token: p.page.clone(),
    };
    let reply = console
        .grpc
        .call(&viewer.caller, rpc::LIST_WORKERS, message)
        .await?;
    let now = reply
        .workers
        .iter()
        .filter_map(|w| ms_of(w.last_seen.as_ref()))
        .max()
        .unwrap_or(0);
    let body = html! { main {
        h1 { "Workers" }
        p.muted { "Open Work streams and waiting long-polls on every replica, refreshed every few seconds." }
        table.workers {
            thead { tr { th { "Worker" } th { "Kind" } th { "Queues" } th.num { "In flight" } th.num { "Capacity" } th { "Connected for" } th { "Replica" } } }
            tbody { @for w in &reply.workers {
                tr data-worker=(w.worker_id) {
                    td.mono { (w.worker_id) }
                    td { (kind(w.kind)) }
                    td { (w.queues.join(", ")) }
                    td.num { (w.in_flight) }
                    td.num { (w.capacity) }
                    td { (ms_of(w.connected_since.as_ref()).map_or_else(String::new, |at| span(now - at))) }
                    td.mono { (w.replica) }
                }
            } }
        }
        @if reply.workers.is_empty() { p.muted { "No worker is connected." } }
        @if !reply.next_page_token.is_empty() {
            p.pager { a href={ "/ns/" (enc(&ns)) "/workers?page=" (enc(&reply.next_page_token)) } { "More workers →" } }
        }
        h2 { "Leases ending soonest" }
        table.leases {
            thead { tr { th { "Job" } th { "Queue" } th { "Worker" } th { "Lease deadline" } } }
            tbody { @for l in &reply.expiring_leases {
                tr {
                    td.mono { a href={ "/ns/" (enc(&ns)) "/jobs/" (enc(&l.job_id)) } { (l.job_id) } }
                    td { (l.queue) }
                    td.mono { (l.worker_id) }
                    td { (time(l.lease_deadline.as_ref())) }
                }
            } }
        }
        @if reply.expiring_leases.is_empty() { p.muted { "No job is leased." } }
    } };
    ns_page(&viewer, &ns, Tab::Workers, "workers", body)
}

pub(crate) async fn audit(
    State(console): State<Arc<Console>>,
    viewer: Viewer,
    Path(ns): Path<String>,
    Query(p): Query<Params>,
) -> Answer {
    readable(&viewer, &ns)?;
    let message = proto::ListAuditEventsRequest {
        namespace: ns.clone(),
        page_size: PAGE,
        page_token: p.page.clone(),
    };
    let reply = console
        .grpc
        .call(&viewer.caller, rpc::LIST_AUDIT_EVENTS, message)
        .await?;
    let body = html! { main {
        h1 { "Audit" }
        p.muted { "Operator actions on this namespace, newest first: from the console and from gRPC." }
        table.audit {
            thead { tr { th { "When" } th { "Who" } th { "What" } th { "On" } th { "Outcome" } th { "Via" } } }
            tbody { @for e in &reply.events {
                tr class=[(e.outcome != "OK").then_some("hot")] {
                    td { (time(e.time.as_ref())) }
                    td { (e.principal) }
                    td.mono { (e.method) }
                    td.mono { (e.target) }
                    td { (e.outcome) }
                    td { (e.via) }
                }
            } }
        }
        @if reply.events.is_empty() { p.muted { "No operator action yet." } }
        @if !reply.next_page_token.is_empty() {
            p.pager { a href={ "/ns/" (enc(&ns)) "/audit?page=" (enc(&reply.next_page_token)) } { "Older →" } }
        }
    } };
    ns_page(&viewer, &ns, Tab::Audit, "audit", body)
}
