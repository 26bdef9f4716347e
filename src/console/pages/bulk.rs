//! Bulk actions from the jobs page: on the selected jobs (one bounded call with
//! their ids), or on everything the filter matches (a run, `console::bulk`, with its
//! own live page, progress bar and stop button).

use std::{convert::Infallible, sync::Arc};

use axum::{
    extract::{Path, State},
    response::{
        sse::{Event, KeepAlive, Sse},
        IntoResponse, Redirect,
    },
};
use bytes::Bytes;
use futures_util::{Stream, StreamExt};
use maud::{html, Markup};
use tokio_stream::wrappers::WatchStream;

use super::{done, jobs::Filter, readable, Fields};
use crate::{
    auth::Role,
    console::{
        bulk::{Action, Order, Progress, Run},
        html::{count, enc, ns_page, Answer, Failure, Tab},
        viewer::Viewer,
        Console,
    },
    proto,
};

fn bad(message: String) -> Failure {
    Failure(tonic::Status::invalid_argument(message))
}

/// POST /ns/{ns}/jobs/bulk: the selected ids (`id`, repeated) or, with
/// `scope=matching`, everything the filter matches.
pub(crate) async fn start(
    State(console): State<Arc<Console>>,
    viewer: Viewer,
    Path(ns): Path<String>,
    body: Bytes,
) -> Answer {
    readable(&viewer, &ns)?;
    let form = Fields::of(&body);
    let action = form
        .get("action")
        .and_then(Action::parse)
        .ok_or_else(|| bad("action: retry, cancel or delete".to_owned()))?;
    let queue = form.get("queue").unwrap_or_default().to_owned();
    if form.get("scope") == Some("matching") {
        return matching(&console, viewer, ns, queue, action, &form).await;
    }
    let ids: Vec<String> = form.all("id").map(str::to_owned).collect();
    if ids.is_empty() {
        return Err(bad("id: select at least one job".to_owned()));
    }
    let message = proto::BulkJobsRequest {
        namespace: ns.clone(),
        queue: queue.clone(),
        selection: Some(proto::bulk_jobs_request::Selection::JobIds(proto::JobIds {
            job_ids: ids,
        })),
    };
    let reply = action.call(&console.grpc, &viewer.caller, message).await?;
    let back = format!("/ns/{}/jobs?queue={}", enc(&ns), enc(&queue));
    let mut notice = format!(
        "{}: {} done, {} skipped",
        action.verb(),
        reply.applied,
        reply.skipped
    );
    if let Some(skip) = reply.skips.first() {
        notice.push_str(&format!(" ({}: {})", skip.job_id, skip.reason));
    }
    Ok(done(&back, &notice))
}

async fn matching(
    console: &Console,
    viewer: Viewer,
    ns: String,
    queue: String,
    action: Action,
    form: &Fields,
) -> Answer {
    let filter = Filter::from_fields(form)?;
    let state = super::jobs::state_of(form.get("state").unwrap_or_default())
        .ok_or_else(|| bad("state: not a job state".to_owned()))?;
    let estimate = estimate(console, &ns, &queue).await;
    let order = Order {
        caller: viewer.caller.clone(),
        namespace: ns.clone(),
        queue,
        action,
        state,
        filter: filter.to_proto(),
        estimate,
    };
    let method = action.method();
    if !viewer.may_call(method, &ns) {
        return Err(Failure(tonic::Status::permission_denied(format!(
            "principal {:?} may not call {method} on namespace {ns:?}",
            viewer.name()
        ))));
    }
    let run = console.bulks.start(&console.grpc, order)?;
    Ok(Redirect::to(&format!("/ns/{}/bulk/{}", enc(&ns), enc(&run.id))).into_response())
}

/// The queue's jobs (every state, as a filtered scan walks them) from the sampler:
/// the progress bar's scale.
async fn estimate(console: &Console, ns: &str, queue: &str) -> u64 {
    let Some(snapshot) = console.samplers.snapshot(ns).await else {
        return 0;
    };
    snapshot
        .queues
        .iter()
        .find(|q| q.info.queue == queue)
        .map_or(0, |q| q.info.enqueued_total.saturating_sub(q.info.removed))
}

fn run_of(console: &Console, ns: &str, id: &str) -> Result<Arc<Run>, Failure> {
    console.bulks.get(ns, id).ok_or_else(|| {
        Failure(tonic::Status::not_found(format!(
            "bulk action {id:?} not found on this replica"
        )))
    })
}

fn progress_view(run: &Run, p: &Progress) -> Markup {
    let status = if let Some(error) = &p.error {
        format!("stopped by an error: {error}")
    } else if p.stopped {
        "stopped".to_owned()
    } else if p.finished {
        "finished".to_owned()
    } else {
        "running".to_owned()
    };
    html! {
        p #bulk-status data-finished=(p.finished) { "Status: " strong { (status) } }
        @if run.estimate > 0 { progress value=(p.scanned.min(run.estimate)) max=(run.estimate) {} }
        dl.facts {
            dt { "Done" } dd #bulk-applied { (count(p.applied)) }
            dt { "Skipped" } dd { (count(p.skipped)) }
            dt { "Examined" } dd { (count(p.scanned)) @if run.estimate > 0 { " of about " (count(run.estimate)) } }
            dt { "Batches" } dd { (p.batches) }
        }
        @if !p.skips.is_empty() {
            h2 { "Skipped (first " (p.skips.len()) ")" }
            table { tbody { @for (id, why) in &p.skips { tr { td.mono { (id) } td { (why) } } } } }
        }
    }
}

pub(crate) async fn show(
    State(console): State<Arc<Console>>,
    viewer: Viewer,
    Path((ns, id)): Path<(String, String)>,
) -> Answer {
    readable(&viewer, &ns)?;
    let run = run_of(&console, &ns, &id)?;
    let p = run.progress.borrow().clone();
    let live = format!("/ns/{}/bulk/{}/live", enc(&ns), enc(&id));
    let body = html! { main {
        h1 { "Bulk " (run.action.verb()) " of " (run.queue) }
        p.muted { "Started by " (run.principal) ". Each batch is one bounded call; the run goes on without this page." }
        @if !p.finished {
            form.inline method="post" action={ "/ns/" (enc(&ns)) "/bulk/" (enc(&id)) "/stop" } {
                button.danger type="submit" { "Stop" }
            }
        }
        div #bulk data-live=(live) { (progress_view(&run, &p)) }
        p { a href={ "/ns/" (enc(&ns)) "/jobs?queue=" (enc(&run.queue)) } { "← Jobs of " (run.queue) } }
    } };
    ns_page(&viewer, &ns, Tab::Jobs, "bulk action", body)
}

pub(crate) async fn live(
    State(console): State<Arc<Console>>,
    viewer: Viewer,
    Path((ns, id)): Path<(String, String)>,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, Failure> {
    readable(&viewer, &ns)?;
    let run = run_of(&console, &ns, &id)?;
    let stop = console.shutdown.clone().cancelled_owned();
    let rx = run.progress.subscribe();
    let stream = WatchStream::new(rx).map(move |p| {
        Ok(Event::default()
            .event("update")
            .data(progress_view(&run, &p).into_string()))
    });
    Ok(Sse::new(stream.take_until(stop)).keep_alive(KeepAlive::default()))
}

pub(crate) async fn stop(
    State(console): State<Arc<Console>>,
    viewer: Viewer,
    Path((ns, id)): Path<(String, String)>,
) -> Answer {
    readable(&viewer, &ns)?;
    let run = run_of(&console, &ns, &id)?;
    if run.principal != viewer.name() && !viewer.caller.may(Role::Admin, &ns) {
        return Err(Failure(tonic::Status::permission_denied(format!(
            "principal {:?} may not stop {:?}'s bulk action (an admin of {ns:?} may)",
            viewer.name(),
            run.principal
        ))));
    }
    run.stop();
    Ok(done(
        &format!("/ns/{}/bulk/{}", enc(&ns), enc(&id)),
        "Stopping after the batch in flight.",
    ))
}
