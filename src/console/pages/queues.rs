//! A namespace's queues: depth by state, oldest pending age, rates, paused; pause and
//! resume, retry every dead job, purge a state behind a typed confirmation. Live.

use std::{convert::Infallible, sync::Arc};

use axum::{
    extract::{Path, Query, State},
    response::sse::{Event, KeepAlive, Sse},
};
use bytes::Bytes;
use futures_util::{Stream, StreamExt};
use maud::{html, Markup};
use serde::Deserialize;
use tokio_stream::wrappers::WatchStream;

use super::{done, readable, Fields};
use crate::{
    console::{
        grpc::rpc,
        html::{action, count, enc, notice, ns_page, span, Answer, Failure, Tab},
        sampler::{QueueRow, Snapshot, MAX_OVERDUE, MAX_QUEUES},
        viewer::Viewer,
        Console,
    },
    proto::{self, JobState},
};

/// How a queue table is sorted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Sort {
    #[default]
    Name,
    Depth,
    Age,
    Failure,
    Dead,
}

impl Sort {
    pub(crate) const ALL: [Sort; 5] = [
        Sort::Name,
        Sort::Depth,
        Sort::Age,
        Sort::Failure,
        Sort::Dead,
    ];

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Sort::Name => "name",
            Sort::Depth => "depth",
            Sort::Age => "age",
            Sort::Failure => "failure",
            Sort::Dead => "dead",
        }
    }

    pub(crate) fn label(self) -> &'static str {
        match self {
            Sort::Name => "name",
            Sort::Depth => "depth",
            Sort::Age => "oldest pending",
            Sort::Failure => "failure rate",
            Sort::Dead => "dead jobs",
        }
    }

    /// Sorts `rows` (the most notable first; by name, in name order).
    pub(crate) fn sort<T>(self, rows: &mut [T], row: impl Fn(&T) -> &QueueRow) {
        match self {
            Sort::Name => rows.sort_by(|a, b| row(a).info.queue.cmp(&row(b).info.queue)),
            Sort::Depth => {
                rows.sort_by_key(|r| std::cmp::Reverse(row(r).info.pending + row(r).info.delayed))
            }
            Sort::Age => rows.sort_by_key(|r| std::cmp::Reverse(row(r).oldest_pending_ms())),
            Sort::Failure => {
                rows.sort_by(|a, b| row(b).failure_ratio().total_cmp(&row(a).failure_ratio()))
            }
            Sort::Dead => rows.sort_by_key(|r| std::cmp::Reverse(row(r).info.dead)),
        }
    }
}

#[derive(Deserialize, Default)]
pub(crate) struct Params {
    #[serde(default)]
    sort: Sort,
    notice: Option<String>,
}

/// A table of queues (`(namespace, row)`), with the namespace column when `with_ns`.
pub(crate) fn queue_table_rows(rows: &[(&str, &QueueRow)], with_ns: bool) -> Markup {
    html! {
        table.queues {
            thead { tr {
                @if with_ns { th { "Namespace" } }
                th { "Queue" } th.num { "Pending" } th.num { "Delayed" } th.num { "Active" }
                th.num { "Waiting" } th.num { "Dead" } th.num title="How long the oldest pending job has waited" { "Oldest" }
                th.num title="Jobs enqueued per minute over the last hour" { "Enq/min" } th.num title="Jobs completed per minute over the last hour" { "Done/min" } th.num title="Failed attempts per minute over the last hour" { "Fail/min" } th.num { "Failure %" }
                th { "State" }
            } }
            tbody {
                @for (ns, q) in rows {
                    @let base = format!("/ns/{}/jobs?queue={}", enc(ns), enc(&q.info.queue));
                    tr class=[(q.info.dead > 0).then_some("hot")] data-queue=(q.info.queue) {
                        @if with_ns { td { a href={ "/ns/" (enc(ns)) } { (ns) } } }
                        td { a href={ "/ns/" (enc(ns)) "/queues/" (enc(&q.info.queue)) } { (q.info.queue) } }
                        td.num { a href={ (base) "&state=pending" } { (count(q.info.pending)) } }
                        td.num { a href={ (base) "&state=delayed" } { (count(q.info.delayed)) } }
                        td.num { a href={ (base) "&state=active" } { (count(q.info.active)) } }
                        td.num { a href={ (base) "&state=waiting" } { (count(q.info.waiting)) } }
                        td.num.dead { a href={ (base) "&state=dead" } { (count(q.info.dead)) } }
                        td.num { @if q.oldest_pending_ms() > 0 { (span(q.oldest_pending_ms())) } @else { "—" } }
                        td.num { (format!("{:.1}", q.enqueue_rate)) }
                        td.num { (format!("{:.1}", q.complete_rate)) }
                        td.num { (format!("{:.1}", q.fail_rate)) }
                        td.num { (format!("{:.0}", q.failure_ratio() * 100.0)) }
                        td { @if q.info.paused { span.badge.paused { "paused" } } @else { span.muted { "running" } } }
                    }
                }
            }
        }
    }
}

fn cards(s: &Snapshot) -> Markup {
    let sum = |f: fn(&QueueRow) -> u64| count(s.queues.iter().map(f).sum::<u64>());
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
        div.cards {
            div.card { "Pending" b #total-pending { (sum(|q| q.info.pending)) } }
            div.card { "Delayed" b { (sum(|q| q.info.delayed)) } }
            div.card { "Active" b { (sum(|q| q.info.active)) } }
            div.card { "Waiting" b { (sum(|q| q.info.waiting)) } }
            div.card { "Dead" b #total-dead { (sum(|q| q.info.dead)) } }
            div.card { "Oldest pending" b { @if oldest > 0 { (span(oldest)) } @else { "—" } } }
            div.card { "Overdue schedules" b { (overdue) } }
            div.card { "Schedule lateness" b { @if s.lateness_ms > 0 { (span(s.lateness_ms)) } @else { "—" } } }
        }
    }
}

/// The part of the page the live stream replaces.
fn content(ns: &str, s: &Snapshot, sort: Sort, viewer: &Viewer) -> Markup {
    let mut rows: Vec<(&str, &QueueRow)> = s.queues.iter().map(|q| (ns, q)).collect();
    sort.sort(&mut rows, |(_, q)| q);
    html! {
        @if let Some(error) = &s.error { p.error role="alert" { "The last read failed: " (error) } }
        (cards(s))
        (queue_table_rows(&rows, false))
        @if s.truncated { p.muted { "Only the first " (MAX_QUEUES) " queues are shown." } }
        @if viewer.may_call("PauseQueue", ns) {
            p.muted { "Open a queue to pause or resume it, retry its dead jobs or purge it." }
        }
    }
}

/// One queue's counts from the namespace's latest sample, and (for those who may)
/// its actions: pause or resume, retry every dead job, purge a state behind the
/// queue's typed name. The namespace page links here, so it carries no forms of its
/// own (1,000 queues' forms made it 1.5 MB).
pub(crate) async fn queue(
    State(console): State<Arc<Console>>,
    viewer: Viewer,
    Path((ns, queue)): Path<(String, String)>,
    Query(params): Query<Params>,
) -> Answer {
    readable(&viewer, &ns)?;
    let snapshot = console.samplers.snapshot(&ns).await.unwrap_or_default();
    let row = snapshot.queues.iter().find(|q| q.info.queue == queue);
    let jobs = format!("/ns/{}/jobs?queue={}", enc(&ns), enc(&queue));
    let body = html! {
        main {
            h1 { "Queue " (queue) }
            (notice(params.notice.as_deref()))
            @match row {
                Some(q) => (queue_cards(q, &jobs)),
                None => p.muted { "The namespace's latest sample has no such queue: it holds no jobs, or it is past the first " (MAX_QUEUES) " queues." },
            }
            p { a href=(jobs) { "Its jobs" } " · " a href={ "/ns/" (enc(&ns)) "/dead" } { "Dead letters by error" } }
            @if viewer.may_call("PauseQueue", &ns) {
                h2 { "Act on the queue" }
                (queue_actions(&ns, &queue, row.is_some_and(|q| q.info.paused)))
            }
        }
    };
    ns_page(&viewer, &ns, Tab::Queues, &queue, body)
}

fn queue_cards(q: &QueueRow, jobs: &str) -> Markup {
    let by_state =
        |state: &str, n: u64| html! { a href={ (jobs) "&state=" (state) } { (count(n)) } };
    html! {
        div.cards {
            div.card { "Pending" b #queue-pending { (by_state("pending", q.info.pending)) } }
            div.card { "Delayed" b { (by_state("delayed", q.info.delayed)) } }
            div.card { "Active" b { (by_state("active", q.info.active)) } }
            div.card { "Waiting" b { (by_state("waiting", q.info.waiting)) } }
            div.card { "Dead" b #queue-dead { (by_state("dead", q.info.dead)) } }
            div.card { "Oldest pending" b { @if q.oldest_pending_ms() > 0 { (span(q.oldest_pending_ms())) } @else { "—" } } }
            div.card { "Enqueued/min" b { (format!("{:.1}", q.enqueue_rate)) } }
            div.card { "Completed/min" b { (format!("{:.1}", q.complete_rate)) } }
            div.card { "Failed/min" b { (format!("{:.1}", q.fail_rate)) } }
            div.card { "Claims" b { @if q.info.paused { span.badge.paused { "paused" } } @else { "running" } } }
        }
    }
}

fn queue_actions(ns: &str, queue: &str, paused: bool) -> Markup {
    let to = |act: &str| format!("/ns/{}/queues/{}/{act}", enc(ns), enc(queue));
    html! {
        div.actions {
            @if paused { (action(&to("resume"), "Resume", None)) }
            @else { (action(&to("pause"), "Pause", Some("Pause claims of this queue? Enqueues still land."))) }
            (action(&to("retry-dead"), "Retry all dead", Some("Retry every dead job of this queue?")))
        }
        form.inline method="post" action=(to("purge")) data-confirm="Delete these jobs? This cannot be undone." {
            "Purge "
            select name="state" aria-label="state to purge" {
                option value="dead" { "dead" } option value="pending" { "pending" } option value="delayed" { "delayed" }
            }
            " jobs: type the queue's name to confirm "
            input name="confirm" placeholder=(queue) aria-label="type the queue name" required;
            button.danger type="submit" { "Purge" }
        }
    }
}

pub(crate) async fn page(
    State(console): State<Arc<Console>>,
    viewer: Viewer,
    Path(ns): Path<String>,
    Query(params): Query<Params>,
) -> Answer {
    readable(&viewer, &ns)?;
    let snapshot = console.samplers.snapshot(&ns).await.unwrap_or_default();
    let live = format!("/ns/{}/live?sort={}", enc(&ns), params.sort.as_str());
    let body = html! {
        main {
            h1 { "Queues" }
            (notice(params.notice.as_deref()))
            p.muted {
                "Rates are per minute over the last hour. Sort by: "
                @for each in Sort::ALL { a href={ "/ns/" (enc(&ns)) "?sort=" (each.as_str()) } { (each.label()) } " " }
            }
            div #queues data-live=(live) { (content(&ns, &snapshot, params.sort, &viewer)) }
        }
    };
    ns_page(&viewer, &ns, Tab::Queues, "queues", body)
}

/// The queues' live stream: the content again at every sample of the namespace.
pub(crate) async fn live(
    State(console): State<Arc<Console>>,
    viewer: Viewer,
    Path(ns): Path<String>,
    Query(params): Query<Params>,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, Failure> {
    readable(&viewer, &ns)?;
    let sort = params.sort;
    let stop = console.shutdown.clone().cancelled_owned();
    let stream = WatchStream::new(console.samplers.watch(&ns)).filter_map(move |snapshot| {
        let event = snapshot.map(|s| {
            let html = content(&ns, &s, sort, &viewer).into_string();
            Ok(Event::default().event("update").data(html))
        });
        std::future::ready(event)
    });
    Ok(Sse::new(stream.take_until(stop)).keep_alive(KeepAlive::default()))
}

/// Most calls one retry-all or purge makes (500 jobs each); more is another press.
const MAX_BATCHES: usize = 40;

pub(crate) async fn act(
    State(console): State<Arc<Console>>,
    viewer: Viewer,
    Path((ns, queue, act)): Path<(String, String, String)>,
    body: Bytes,
) -> Answer {
    let back = format!("/ns/{}/queues/{}", enc(&ns), enc(&queue));
    let client = &console.grpc;
    let caller = &viewer.caller;
    let (namespace, q) = (ns.clone(), queue.clone());
    let notice = match act.as_str() {
        "pause" => {
            let message = proto::PauseQueueRequest {
                namespace,
                queue: q,
            };
            client.call(caller, rpc::PAUSE_QUEUE, message).await?;
            format!("Paused queue {queue}.")
        }
        "resume" => {
            let message = proto::ResumeQueueRequest {
                namespace,
                queue: q,
            };
            client.call(caller, rpc::RESUME_QUEUE, message).await?;
            format!("Resumed queue {queue}.")
        }
        "retry-dead" => retry_dead(&console, &viewer, &ns, &queue, "").await?,
        "purge" => purge(&console, &viewer, &ns, &queue, &Fields::of(&body)).await?,
        _ => return Ok(super::not_found().await),
    };
    Ok(done(&back, &notice))
}

/// Retries the queue's dead jobs (those of one error group when `fingerprint` is
/// set) in bounded batches.
pub(crate) async fn retry_dead(
    console: &Console,
    viewer: &Viewer,
    ns: &str,
    queue: &str,
    fingerprint: &str,
) -> Result<String, Failure> {
    let client = &console.grpc;
    let mut retried = 0u64;
    for _ in 0..MAX_BATCHES {
        let message = proto::RetryDeadJobsRequest {
            namespace: ns.to_owned(),
            queue: queue.to_owned(),
            limit: 500,
            error_fingerprint: fingerprint.to_owned(),
        };
        let reply = client
            .call(&viewer.caller, rpc::RETRY_DEAD_JOBS, message)
            .await?;
        retried += u64::from(reply.retried);
        if !reply.more {
            return Ok(format!("Retried {retried} dead jobs of {queue}."));
        }
    }
    Ok(format!(
        "Retried {retried} dead jobs of {queue}; more remain: retry again."
    ))
}

async fn purge(
    console: &Console,
    viewer: &Viewer,
    ns: &str,
    queue: &str,
    form: &Fields,
) -> Result<String, Failure> {
    if form.get("confirm") != Some(queue) {
        return Err(Failure(tonic::Status::invalid_argument(format!(
            "confirm: type the queue's name ({queue:?}) to purge it"
        ))));
    }
    let state = match form.get("state") {
        Some("dead") => JobState::Dead,
        Some("pending") => JobState::Pending,
        Some("delayed") => JobState::Delayed,
        _ => {
            return Err(Failure(tonic::Status::invalid_argument(
                "state: purge dead, pending or delayed jobs",
            )))
        }
    };
    purge_state(console, viewer, ns, queue, state, "").await
}

/// Deletes the queue's jobs in `state` (the dead jobs of one error group when
/// `fingerprint` is set) in bounded batches.
pub(crate) async fn purge_state(
    console: &Console,
    viewer: &Viewer,
    ns: &str,
    queue: &str,
    state: JobState,
    fingerprint: &str,
) -> Result<String, Failure> {
    let client = &console.grpc;
    let mut purged = 0u64;
    for _ in 0..MAX_BATCHES {
        let message = proto::PurgeJobsRequest {
            namespace: ns.to_owned(),
            queue: queue.to_owned(),
            state: state.into(),
            limit: 500,
            error_fingerprint: fingerprint.to_owned(),
        };
        let reply = client
            .call(&viewer.caller, rpc::PURGE_JOBS, message)
            .await?;
        purged += u64::from(reply.purged);
        if !reply.more {
            return Ok(format!(
                "Purged {purged} {} jobs of {queue}.",
                crate::console::html::state_name(state.into())
            ));
        }
    }
    Ok(format!(
        "Purged {purged} jobs of {queue}; more remain: purge again."
    ))
}
