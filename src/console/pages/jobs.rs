//! Jobs: a queue's jobs by state with cursor paging, lookup by id, and a job's
//! detail (timeline, payload, headers, result, lease) with retry, cancel, delete and
//! clone-and-enqueue.

use std::sync::Arc;

use axum::{
    extract::{Path, Query, State},
    response::{IntoResponse, Redirect},
};
use maud::{html, Markup};
use serde::Deserialize;

use super::{done, readable};
use crate::{
    auth::Role,
    console::{
        grpc::request,
        html::{action, badge, enc, notice, page, state_name, time, Answer, Failure, Tab},
        session::Viewer,
        Console,
    },
    proto::{self, JobState},
};

/// Jobs on one page of a listing.
const PAGE: u32 = 50;
/// Most payload or result bytes shown.
const MAX_SHOWN: usize = 64 * 1024;

#[derive(Deserialize, Default)]
pub(crate) struct ListParams {
    #[serde(default)]
    queue: String,
    #[serde(default)]
    state: String,
    #[serde(default)]
    page: String,
    #[serde(default)]
    id: String,
    notice: Option<String>,
}

pub(crate) fn state_of(name: &str) -> Option<JobState> {
    match name {
        "" => Some(JobState::Unspecified),
        other => JobState::from_str_name(&format!("JOB_STATE_{}", other.to_ascii_uppercase())),
    }
}

const STATES: [&str; 8] = [
    "pending",
    "delayed",
    "active",
    "waiting",
    "dead",
    "completed",
    "cancelled",
    "skipped",
];

fn frame(viewer: &Viewer, ns: &str, title: &str, body: Markup) -> Markup {
    page(
        viewer,
        &format!("{ns} · {title}"),
        Some((ns, Tab::Jobs)),
        body,
    )
}

pub(crate) async fn list(
    State(console): State<Arc<Console>>,
    viewer: Viewer,
    Path(ns): Path<String>,
    Query(p): Query<ListParams>,
) -> Answer {
    readable(&viewer, &ns)?;
    let id = p.id.trim();
    if !id.is_empty() {
        return Ok(Redirect::to(&format!("/ns/{}/jobs/{}", enc(&ns), enc(id))).into_response());
    }
    let lookup = html! {
        form.row method="get" action={ "/ns/" (enc(&ns)) "/jobs" } {
            div { label for="id" { "Job id" } input #id name="id" placeholder="find a job by id"; }
            button type="submit" { "Open" }
        }
    };
    if p.queue.is_empty() {
        let snapshot = console.samplers.snapshot(&ns).await.unwrap_or_default();
        let body = html! { main {
            h1 { "Jobs" } (lookup)
            h2 { "Pick a queue" }
            ul { @for q in &snapshot.queues {
                li { a href={ "/ns/" (enc(&ns)) "/jobs?queue=" (enc(&q.info.queue)) } { (q.info.queue) } }
            } }
        } };
        return Ok(frame(&viewer, &ns, "jobs", body).into_response());
    }
    let state = state_of(&p.state).ok_or_else(|| {
        Failure(tonic::Status::invalid_argument(format!(
            "state: no job state {:?}",
            p.state
        )))
    })?;
    let message = proto::ListJobsRequest {
        namespace: ns.clone(),
        queue: p.queue.clone(),
        state: state.into(),
        page_size: PAGE,
        page_token: p.page.clone(),
        ..Default::default()
    };
    let reply = console
        .grpc
        .queue()
        .list_jobs(request(&viewer.caller, message))
        .await?
        .into_inner();
    let base = format!("/ns/{}/jobs?queue={}", enc(&ns), enc(&p.queue));
    let body = html! { main {
        h1 { "Jobs of " (p.queue) }
        (notice(p.notice.as_deref()))
        (lookup)
        p.states {
            a href=(base) aria-current=[p.state.is_empty().then_some("page")] { "all" } " "
            @for s in STATES { a href={ (base) "&state=" (s) } aria-current=[(p.state == s).then_some("page")] { (s) } " " }
        }
        (job_table(&ns, &reply.jobs))
        @if reply.jobs.is_empty() { p.muted { "No jobs on this page." } }
        div.pager {
            @if !p.page.is_empty() { a href={ (base) "&state=" (p.state) } { "← First page" } }
            @if !reply.next_page_token.is_empty() {
                a href={ (base) "&state=" (p.state) "&page=" (enc(&reply.next_page_token)) } { "Next page →" }
            }
        }
    } };
    Ok(frame(&viewer, &ns, "jobs", body).into_response())
}

fn job_table(ns: &str, jobs: &[proto::Job]) -> Markup {
    html! {
        table.jobs {
            thead { tr { th { "Job" } th { "Name" } th { "State" } th.num { "Attempts" } th { "Created" } th { "Last error" } th { "Worker" } } }
            tbody { @for job in jobs {
                tr data-job=(job.job_id) {
                    td.mono { a href={ "/ns/" (enc(ns)) "/jobs/" (enc(&job.job_id)) } { (job.job_id) } }
                    td { (job.name) }
                    td { (badge(state_name(job.state))) }
                    td.num { (job.attempts) "/" (job.max_attempts) }
                    td { (time(job.create_time.as_ref())) }
                    td.error { @if let Some(e) = job.errors.last() { (e.message) } }
                    td.mono { (job.worker_id) }
                }
            } }
        }
    }
}

#[derive(Deserialize, Default)]
pub(crate) struct DetailParams {
    notice: Option<String>,
}

pub(crate) async fn detail(
    State(console): State<Arc<Console>>,
    viewer: Viewer,
    Path((ns, id)): Path<(String, String)>,
    Query(p): Query<DetailParams>,
) -> Answer {
    readable(&viewer, &ns)?;
    let message = proto::GetJobRequest {
        namespace: ns.clone(),
        job_id: id.clone(),
    };
    let reply = console
        .grpc
        .queue()
        .get_job(request(&viewer.caller, message))
        .await?
        .into_inner();
    let job = reply
        .job
        .ok_or_else(|| Failure(tonic::Status::not_found(format!("job {id:?} not found"))))?;
    let body = html! { main {
        h1 { "Job " span.mono { (job.job_id) } " " (badge(state_name(job.state))) }
        (notice(p.notice.as_deref()))
        (job_actions(&viewer, &ns, &job))
        (facts(&ns, &job))
        h2 { "Timeline" }
        (timeline(&job))
        h2 { "Payload" }
        (bytes_view(&job.payload))
        @if !job.headers.is_empty() {
            h2 { "Headers" }
            table.headers { tbody { @for (k, v) in &job.headers { tr { th.mono { (k) } td.mono { (v) } } } } }
        }
        @if !job.result.is_empty() { h2 { "Result" } (bytes_view(&job.result)) }
    } };
    Ok(frame(&viewer, &ns, &job.job_id, body).into_response())
}

fn facts(ns: &str, job: &proto::Job) -> Markup {
    html! {
        dl.facts {
            dt { "Queue" } dd { a href={ "/ns/" (enc(ns)) "/jobs?queue=" (enc(&job.queue)) } { (job.queue) } }
            dt { "Name" } dd { (job.name) }
            dt { "Attempts" } dd { (job.attempts) " of " (job.max_attempts) }
            dt { "Priority" } dd { (job.priority) }
            dt { "Run at" } dd { (time(job.run_at.as_ref())) }
            @if !job.worker_id.is_empty() {
                dt { @if state_name(job.state) == "active" { "Lease holder" } @else { "Last worker" } }
                dd { (job.worker_id) }
            }
            @if job.lease_deadline.is_some() { dt { "Lease deadline" } dd { (time(job.lease_deadline.as_ref())) } }
            @if !job.dedup_key.is_empty() { dt { "Dedup key" } dd { (job.dedup_key) } }
            @if !job.flow_id.is_empty() {
                dt { "Flow" } dd { a href={ "/ns/" (enc(ns)) "/flows/" (enc(&job.flow_id)) } { (job.flow_id) } " · node " (job.flow_ref) }
            }
            @if let Some(progress) = &job.progress {
                dt { "Progress" } dd {
                    @if let Some(f) = progress.fraction { (format!("{:.0}%", f * 100.0)) " " }
                    @if let Some(m) = &progress.message { (m) }
                }
            }
            @if job.cancel_requested { dt { "Cancel" } dd { "requested" } }
        }
    }
}

fn timeline(job: &proto::Job) -> Markup {
    html! {
        ol.timeline {
            li { (time(job.create_time.as_ref())) " — enqueued" }
            @for e in &job.errors {
                li.bad { (time(e.time.as_ref())) " — attempt " (e.attempt) " failed: " span.error { (e.message) } }
            }
            @if state_name(job.state) == "active" {
                li { "claimed by " span.mono { (job.worker_id) } ", lease until " (time(job.lease_deadline.as_ref())) }
            }
            @if job.finish_time.is_some() {
                li { (time(job.finish_time.as_ref())) " — " (state_name(job.state)) }
            }
        }
    }
}

/// Bytes as a person reads them: JSON pretty-printed, else text, else hex.
pub(crate) fn bytes_view(bytes: &[u8]) -> Markup {
    let shown = &bytes[..bytes.len().min(MAX_SHOWN)];
    let cut = bytes.len() > MAX_SHOWN;
    let text = match serde_json::from_slice::<serde_json::Value>(shown) {
        Ok(value) => serde_json::to_string_pretty(&value).unwrap_or_default(),
        Err(_) => match std::str::from_utf8(shown) {
            Ok(text) => text.to_owned(),
            Err(_) => hex(shown),
        },
    };
    html! {
        @if bytes.is_empty() { p.muted { "(empty)" } }
        @else {
            pre.payload { (text) }
            @if cut { p.muted { "Only the first " (MAX_SHOWN / 1024) " KiB of " (bytes.len()) " bytes are shown." } }
        }
    }
}

fn hex(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 3);
    for (i, line) in bytes.chunks(16).enumerate() {
        out.push_str(&format!("{:08x} ", i * 16));
        for b in line {
            out.push_str(&format!(" {b:02x}"));
        }
        out.push('\n');
    }
    out
}

fn job_actions(viewer: &Viewer, ns: &str, job: &proto::Job) -> Markup {
    let to = |act: &str| format!("/ns/{}/jobs/{}/{act}", enc(ns), enc(&job.job_id));
    let state = state_name(job.state);
    let unfinished = matches!(state, "pending" | "delayed" | "active" | "waiting");
    let may = |role| viewer.caller.may(role, ns);
    html! {
        div.actions {
            @if may(Role::Admin) && matches!(state, "dead" | "cancelled" | "completed" | "skipped") {
                (action(&to("retry"), "Retry", Some("Retry this job?")))
            }
            @if may(Role::Producer) && unfinished { (action(&to("cancel"), "Cancel", Some("Cancel this job?"))) }
            @if may(Role::Producer) && state != "active" { (action(&to("delete"), "Delete", Some("Delete this job? This cannot be undone."))) }
            @if may(Role::Producer) { (action(&to("clone"), "Clone and enqueue", Some("Enqueue a copy of this job?"))) }
        }
    }
}

pub(crate) async fn act(
    State(console): State<Arc<Console>>,
    viewer: Viewer,
    Path((ns, id, act)): Path<(String, String, String)>,
) -> Answer {
    let back = format!("/ns/{}/jobs/{}", enc(&ns), enc(&id));
    let mut client = console.grpc.queue();
    let caller = &viewer.caller;
    let (namespace, job_id) = (ns.clone(), id.clone());
    match act.as_str() {
        "retry" => {
            client
                .retry_job(request(
                    caller,
                    proto::RetryJobRequest { namespace, job_id },
                ))
                .await?;
            Ok(done(&back, "Retried: the job is pending again."))
        }
        "cancel" => {
            client
                .cancel_job(request(
                    caller,
                    proto::CancelJobRequest { namespace, job_id },
                ))
                .await?;
            Ok(done(&back, "Cancel requested."))
        }
        "delete" => {
            client
                .delete_job(request(
                    caller,
                    proto::DeleteJobRequest { namespace, job_id },
                ))
                .await?;
            Ok(done(
                &format!("/ns/{}/jobs", enc(&ns)),
                &format!("Deleted job {id}."),
            ))
        }
        "clone" => {
            let copy = clone_job(&console, &viewer, &ns, &id).await?;
            Ok(done(
                &format!("/ns/{}/jobs/{}", enc(&ns), enc(&copy)),
                &format!("Enqueued {copy}, a copy of {id}."),
            ))
        }
        _ => Ok(super::not_found().await),
    }
}

/// Enqueues a copy of job `id` (its queue, name, payload, headers and options; a new
/// id, no dedup key); the copy's id.
async fn clone_job(
    console: &Console,
    viewer: &Viewer,
    ns: &str,
    id: &str,
) -> Result<String, Failure> {
    let mut client = console.grpc.queue();
    let message = proto::GetJobRequest {
        namespace: ns.to_owned(),
        job_id: id.to_owned(),
    };
    let job = client
        .get_job(request(&viewer.caller, message))
        .await?
        .into_inner()
        .job
        .ok_or_else(|| Failure(tonic::Status::not_found(format!("job {id:?} not found"))))?;
    let message = proto::EnqueueRequest {
        namespace: ns.to_owned(),
        queue: job.queue,
        name: job.name,
        payload: job.payload,
        headers: job.headers,
        priority: job.priority,
        max_attempts: Some(job.max_attempts),
        backoff: job.backoff,
        lease: job.lease,
        fairness_key: job.fairness_key,
        concurrency_key: job.concurrency_key,
        rate_key: job.rate_key,
        cost: Some(job.cost),
        ..Default::default()
    };
    let reply = client
        .enqueue(request(&viewer.caller, message))
        .await?
        .into_inner();
    Ok(reply.job_id)
}
