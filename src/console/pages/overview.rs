//! The overview: every namespace the viewer may read, with its jobs by state, the
//! oldest pending job, rates over the last hour, overdue schedules and lateness, and
//! the hottest queues across them, sortable by failure rate, depth or age. Live.

use std::{convert::Infallible, sync::Arc, time::Duration};

use axum::{
    extract::{Query, State},
    response::{
        sse::{Event, KeepAlive, Sse},
        IntoResponse,
    },
};
use futures_util::{future::join_all, Stream, StreamExt};
use maud::{html, Markup};
use serde::Deserialize;

use super::queues::{queue_table_rows, Sort};
use crate::console::{
    grpc::rpc,
    html::{count, enc, notice, page as frame, span, Answer},
    sampler::{QueueRow, Snapshot, MAX_OVERDUE},
    viewer::Viewer,
    Console,
};
use crate::proto;

/// Namespaces on one page of the overview.
const PAGE: u32 = 50;
/// Queues in the hottest-queues table.
const HOTTEST: usize = 20;

#[derive(Deserialize, Default)]
pub(crate) struct Params {
    #[serde(default)]
    page: String,
    /// The hottest queues' order: by depth unless asked.
    #[serde(default = "by_depth")]
    sort: Sort,
    notice: Option<String>,
}

async fn namespaces(
    console: &Console,
    viewer: &Viewer,
    token: &str,
) -> Result<(Vec<String>, String), tonic::Status> {
    let message = proto::ListNamespacesRequest {
        page_size: PAGE,
        page_token: token.to_owned(),
    };
    let reply = console
        .grpc
        .call(&viewer.caller, rpc::LIST_NAMESPACES, message)
        .await;
    match reply {
        Ok(reply) => Ok((reply.namespaces, reply.next_page_token)),
        // Listing every namespace needs a principal of `*`; one of named namespaces
        // sees those (a wildcard one such as `team-*` opens /ns/NAME directly).
        Err(status) if status.code() == tonic::Code::PermissionDenied => {
            let mut names = viewer.caller.exact_namespaces();
            names.sort();
            names.dedup();
            names.truncate(PAGE as usize);
            Ok((names, String::new()))
        }
        Err(status) => Err(status),
    }
}

fn by_depth() -> Sort {
    Sort::Depth
}

type Seen = Vec<(String, Option<Arc<Snapshot>>)>;

async fn snapshots(console: &Console, names: Vec<String>) -> Seen {
    let reads = names.iter().map(|ns| console.samplers.snapshot(ns));
    names
        .clone()
        .into_iter()
        .zip(join_all(reads).await)
        .collect()
}

async fn render(console: &Console, viewer: &Viewer, params: &Params) -> Answer {
    let (names, next) = namespaces(console, viewer, &params.page).await?;
    let seen = snapshots(console, names.clone()).await;
    let live = format!(
        "/live?page={}&sort={}",
        enc(&params.page),
        params.sort.as_str()
    );
    let body = html! {
        main {
            h1 { "Overview" }
            (notice(params.notice.as_deref()))
            @if names.is_empty() {
                p.muted { "No namespace you may read holds jobs or schedules yet. Enqueue a job or upsert a schedule, and it shows up here." }
            }
            div #overview data-live=(live) { (content(&seen, params.sort)) }
            @if !next.is_empty() {
                p.pager { a href={ "/?page=" (enc(&next)) } { "More namespaces →" } }
            }
        }
    };
    Ok(frame(viewer, "Overview", None, body).into_response())
}

pub(crate) async fn page(
    State(console): State<Arc<Console>>,
    viewer: Viewer,
    Query(params): Query<Params>,
) -> Answer {
    render(&console, &viewer, &params).await
}

/// The part of the overview the live stream replaces.
fn content(seen: &Seen, sort: Sort) -> Markup {
    let mut hottest: Vec<(&str, &QueueRow)> = seen
        .iter()
        .filter_map(|(ns, s)| s.as_ref().map(|s| (ns, s)))
        .flat_map(|(ns, s)| s.queues.iter().map(move |q| (ns.as_str(), q)))
        .collect();
    sort.sort(&mut hottest, |(_, q)| q);
    hottest.truncate(HOTTEST);
    html! {
        table #namespaces {
            thead { tr {
                th { "Namespace" } th.num { "Queues" } th.num { "Pending" } th.num { "Delayed" }
                th.num { "Active" } th.num { "Waiting" } th.num { "Dead" } th.num title="How long the oldest pending job has waited" { "Oldest" }
                th.num title="Jobs enqueued per minute over the last hour" { "Enq/min" } th.num title="Jobs completed per minute over the last hour" { "Done/min" } th.num title="Failed attempts per minute over the last hour" { "Fail/min" }
                th.num title="Active schedules overdue by 30 s or more" { "Overdue" } th.num { "Lateness" }
            } }
            tbody {
                @for (ns, snapshot) in seen { (namespace_row(ns, snapshot.as_deref())) }
            }
        }
        @if !hottest.is_empty() {
            h2 { "Hottest queues" }
            p.muted {
                "Sorted by " (sort.label()) ". Sort by: "
                @for each in Sort::ALL { a href={ "/?sort=" (each.as_str()) } { (each.label()) } " " }
            }
            (queue_table_rows(&hottest, true))
        }
    }
}

fn namespace_row(ns: &str, snapshot: Option<&Snapshot>) -> Markup {
    let Some(s) = snapshot else {
        return html! { tr { td { a href={ "/ns/" (enc(ns)) } { (ns) } } td colspan="12" .muted { "sampling…" } } };
    };
    let sum = |f: fn(&QueueRow) -> u64| s.queues.iter().map(f).sum::<u64>();
    let rate = |f: fn(&QueueRow) -> f64| s.queues.iter().map(f).sum::<f64>();
    let oldest = s
        .queues
        .iter()
        .map(QueueRow::oldest_pending_ms)
        .max()
        .unwrap_or(0);
    let overdue = if s.overdue >= MAX_OVERDUE {
        format!("{MAX_OVERDUE}+")
    } else {
        s.overdue.to_string()
    };
    html! {
        tr class=[(s.error.is_some()).then_some("hot")] {
            td {
                a href={ "/ns/" (enc(ns)) } { (ns) }
                @if let Some(error) = &s.error { br; span.error { (error) } }
            }
            td.num { (s.queues.len()) @if s.truncated { "+" } }
            td.num { (count(sum(|q| q.info.pending))) }
            td.num { (count(sum(|q| q.info.delayed))) }
            td.num { (count(sum(|q| q.info.active))) }
            td.num { (count(sum(|q| q.info.waiting))) }
            td.num { (count(sum(|q| q.info.dead))) }
            td.num { @if oldest > 0 { (span(oldest)) } @else { "—" } }
            td.num { (format!("{:.1}", rate(|q| q.enqueue_rate))) }
            td.num { (format!("{:.1}", rate(|q| q.complete_rate))) }
            td.num { (format!("{:.1}", rate(|q| q.fail_rate))) }
            td.num { (overdue) }
            td.num { @if s.lateness_ms > 0 { (span(s.lateness_ms)) } @else { "—" } }
        }
    }
}

/// The overview's live stream: its content again whenever a sample may have
/// changed it (every 2 s, from the samplers' latest snapshots: no Redis read).
pub(crate) async fn live(
    State(console): State<Arc<Console>>,
    viewer: Viewer,
    Query(params): Query<Params>,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, crate::console::html::Failure> {
    let (names, _) = namespaces(&console, &viewer, &params.page).await?;
    let sort = params.sort;
    let stop = console.shutdown.clone().cancelled_owned();
    let stream =
        futures_util::stream::unfold((console, names), move |(console, names)| async move {
            // The refresh interval of a live page: real time.
            #[allow(clippy::disallowed_methods)]
            tokio::time::sleep(Duration::from_secs(2)).await;
            let seen: Seen = names
                .iter()
                .map(|ns| (ns.clone(), console.samplers.watch(ns).borrow().clone()))
                .collect();
            let event = Event::default()
                .event("update")
                .data(content(&seen, sort).into_string());
            Some((Ok(event), (console, names)))
        });
    Ok(Sse::new(stream.take_until(stop)).keep_alive(KeepAlive::default()))
}
