//! Jobs: a queue's jobs by state with cursor paging, lookup by id, and a job's
//! detail (timeline, payload, headers, result, lease) with retry, cancel, delete and
//! clone-and-enqueue.

use std::sync::Arc;

use axum::{
    extract::{Path, Query, RawQuery, State},
    response::{IntoResponse, Redirect},
};
use maud::{html, Markup};
use serde::Deserialize;

use super::{done, readable, Fields};
use crate::{
    console::{
        grpc::rpc,
        html::{action, badge, enc, notice, ns_page, state_name, time, Answer, Failure, Tab},
        viewer::Viewer,
        Console,
    },
    proto::{self, JobState},
};

/// Jobs on one page of a listing.
const PAGE: u32 = 25;
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

pub(crate) async fn list(
    State(console): State<Arc<Console>>,
    viewer: Viewer,
    Path(ns): Path<String>,
    Query(p): Query<ListParams>,
    RawQuery(raw): RawQuery,
) -> Answer {
    readable(&viewer, &ns)?;
    let id = p.id.trim();
    if !id.is_empty() {
        return Ok(Redirect::to(&format!("/ns/{}/jobs/{}", enc(&ns), enc(id))).into_response());
    }
    if p.queue.is_empty() {
        let snapshot = console.samplers.snapshot(&ns).await.unwrap_or_default();
        let body = html! { main {
            h1 { "Jobs" } (lookup(&ns))
            h2 { "Pick a queue" }
            ul { @for q in &snapshot.queues {
                li { a href={ "/ns/" (enc(&ns)) "/jobs?queue=" (enc(&q.info.queue)) } { (q.info.queue) } }
            } }
        } };
        return ns_page(&viewer, &ns, Tab::Jobs, "jobs", body);
    }
    let filter = Filter::from_fields(&Fields::of(raw.unwrap_or_default().as_bytes()))?;
    listing(&console, &viewer, &ns, &p, &filter).await
}

fn lookup(ns: &str) -> Markup {
    html! {
        form.row method="get" action={ "/ns/" (enc(ns)) "/jobs" } {
            div { label for="id" { "Job id" } input #id name="id" placeholder="find a job by id"; }
            button type="submit" { "Open" }
        }
    }
}

async fn listing(
    console: &Console,
    viewer: &Viewer,
    ns: &str,
    p: &ListParams,
    filter: &Filter,
) -> Answer {
    let state = state_of(&p.state).ok_or_else(|| {
        Failure(tonic::Status::invalid_argument(format!(
            "state: no job state {:?}",
            p.state
        )))
    })?;
    let message = proto::ListJobsRequest {
        namespace: ns.to_owned(),
        queue: p.queue.clone(),
        state: state.into(),
        page_size: PAGE,
        page_token: p.page.clone(),
        filter: (!filter.is_empty()).then(|| filter.to_proto()),
        ..Default::default()
    };
    let reply = console
        .grpc
        .call(&viewer.caller, rpc::LIST_JOBS, message)
        .await?;
    let base = format!("/ns/{}/jobs?queue={}", enc(ns), enc(&p.queue));
    let here = format!("{base}&state={}{}", enc(&p.state), filter.query());
    let body = html! { main {
        h1 { "Jobs of " (p.queue) }
        (notice(p.notice.as_deref()))
        (lookup(ns))
        p.states {
            a href=(base) aria-current=[p.state.is_empty().then_some("page")] { "all" } " "
            @for s in STATES { a href={ (base) "&state=" (s) (filter.query()) } aria-current=[(p.state == s).then_some("page")] { (s) } " " }
        }
        (filter_form(ns, p, filter))
        (selection(viewer, ns, &p.queue, &reply.jobs))
        @if reply.jobs.is_empty() { p.muted { "No jobs on this page." } }
        @if !filter.is_empty() { p.muted #scanned { "This page examined " (reply.scanned) " jobs." } }
        div.pager {
            @if !p.page.is_empty() { a href=(here) { "← First page" } }
            @if !reply.next_page_token.is_empty() {
                a href={ (here) "&page=" (enc(&reply.next_page_token)) } {
                    @if filter.is_empty() { "Next page →" } @else { "Keep searching →" }
                }
            }
        }
        (matching(viewer, ns, p, filter))
        (enqueue_form(viewer, ns, &p.queue))
        (recent_runs(console, ns))
    } };
    ns_page(viewer, ns, Tab::Jobs, "jobs", body)
}

fn filter_form(ns: &str, p: &ListParams, filter: &Filter) -> Markup {
    html! {
        form.row.filter method="get" action={ "/ns/" (enc(ns)) "/jobs" } {
            input type="hidden" name="queue" value=(p.queue);
            input type="hidden" name="state" value=(p.state);
            (filter.inputs())
            button type="submit" { "Filter" }
            @if !filter.is_empty() { a href={ "/ns/" (enc(ns)) "/jobs?queue=" (enc(&p.queue)) "&state=" (enc(&p.state)) } { "Clear" } }
        }
    }
}

/// The page's jobs with a checkbox each, and the actions on the checked ones.
fn selection(viewer: &Viewer, ns: &str, queue: &str, jobs: &[proto::Job]) -> Markup {
    let may = |method| viewer.may_call(method, ns);
    let acts = may("RetryJobs") || may("CancelJobs") || may("DeleteJobs");
    html! {
        form.selection method="post" action={ "/ns/" (enc(ns)) "/bulk" } data-confirm="Act on the selected jobs?" {
            input type="hidden" name="queue" value=(queue);
            (job_table(ns, jobs, acts))
            @if acts && !jobs.is_empty() {
                div.actions {
                    @if may("RetryJobs") { button type="submit" name="action" value="retry" { "Retry selected" } }
                    @if may("CancelJobs") { button type="submit" name="action" value="cancel" { "Cancel selected" } }
                    @if may("DeleteJobs") { button.danger type="submit" name="action" value="delete" { "Delete selected" } }
                }
            }
        }
    }
}

/// A form that enqueues a job into the queue (Enqueue, as the viewer).
fn enqueue_form(viewer: &Viewer, ns: &str, queue: &str) -> Markup {
    if !viewer.may_call("Enqueue", ns) {
        return html! {};
    }
    html! {
        h2 { "Enqueue a job" }
        form.row.enqueue method="post" action={ "/ns/" (enc(ns)) "/enqueue" } {
            input type="hidden" name="queue" value=(queue);
            div { label for="e-name" { "Name" } input #e-name name="name" required; }
            div { label for="e-payload" { "Payload (bytes as typed; JSON is usual)" }
                textarea #e-payload name="payload" rows="2" cols="50" {} }
            button type="submit" { "Enqueue" }
        }
    }
}

/// POST /ns/{ns}/enqueue: one job, then its page.
pub(crate) async fn enqueue(
    State(console): State<Arc<Console>>,
    viewer: Viewer,
    Path(ns): Path<String>,
    body: bytes::Bytes,
) -> Answer {
    let form = Fields::of(&body);
    let message = proto::EnqueueRequest {
        namespace: ns.clone(),
        queue: form.get("queue").unwrap_or_default().to_owned(),
        name: form.get("name").unwrap_or_default().to_owned(),
        payload: form.get("payload").unwrap_or_default().as_bytes().to_vec(),
        ..Default::default()
    };
    let reply = console
        .grpc
        .call(&viewer.caller, rpc::ENQUEUE, message)
        .await?;
    let to = format!("/ns/{}/jobs/{}", enc(&ns), enc(&reply.job_id));
    Ok(done(&to, &format!("Enqueued {}.", reply.job_id)))
}

/// The bulk actions of the namespace this replica ran lately.
fn recent_runs(console: &Console, ns: &str) -> Markup {
    let runs = console.bulks.of(ns);
    html! {
        @if !runs.is_empty() {
            h2 { "Recent bulk actions" }
            ul.runs { @for run in runs.iter().take(10) {
                @let p = run.progress.borrow().clone();
                li {
                    a href={ "/ns/" (enc(ns)) "/bulk/" (enc(&run.id)) } { (run.action.verb()) " " (run.queue) }
                    " by " (run.principal) ": " (p.applied) " done"
                    @if !p.finished { " (running)" }
                }
            } }
        }
    }
}

/// The actions on every job the listing's state and filter match, run server-side.
fn matching(viewer: &Viewer, ns: &str, p: &ListParams, filter: &Filter) -> Markup {
    let may = |method| viewer.may_call(method, ns);
    if !may("RetryJobs") && !may("CancelJobs") && !may("DeleteJobs") {
        return html! {};
    }
    let scope = if filter.is_empty() {
        "every job of this listing"
    } else {
        "every job this filter matches"
    };
    html! {
        h2 { "Act on " (scope) }
        form.row.matching method="post" action={ "/ns/" (enc(ns)) "/bulk" }
            data-confirm={ "Act on " (scope) " (all pages)? It runs in bounded batches; you can stop it." } {
            input type="hidden" name="scope" value="matching";
            input type="hidden" name="queue" value=(p.queue);
            input type="hidden" name="state" value=(p.state);
            (filter.hidden())
            @if may("RetryJobs") { button type="submit" name="action" value="retry" { "Retry all matching" } }
            @if may("CancelJobs") { button type="submit" name="action" value="cancel" { "Cancel all matching" } }
            @if may("DeleteJobs") { button.danger type="submit" name="action" value="delete" { "Delete all matching" } }
        }
    }
}

/// The filter of a jobs listing (form fields `name`, `dedup`, `header` as `key=value`
/// or `key`, `error`, `after`, `before` as UTC `YYYY-MM-DDTHH:MM`).
#[derive(Debug, Clone, Default)]
pub(crate) struct Filter {
    name: String,
    dedup: String,
    header: String,
    error: String,
    after: String,
    before: String,
}

impl Filter {
    pub(crate) fn from_fields(f: &Fields) -> Result<Filter, Failure> {
        let get = |k| f.get(k).unwrap_or_default().trim().to_owned();
        let filter = Filter {
            name: get("name"),
            dedup: get("dedup"),
            header: get("header"),
            error: get("error"),
            after: get("after"),
            before: get("before"),
        };
        filter.proto()?;
        Ok(filter)
    }

    pub(crate) fn is_empty(&self) -> bool {
        [
            &self.name,
            &self.dedup,
            &self.header,
            &self.error,
            &self.after,
            &self.before,
        ]
        .iter()
        .all(|v| v.is_empty())
    }

    fn time(field: &str, value: &str) -> Result<Option<prost_types::Timestamp>, Failure> {
        if value.is_empty() {
            return Ok(None);
        }
        super::schedules::utc(field, Some(value)).map(Some)
    }

    fn proto(&self) -> Result<proto::JobFilter, Failure> {
        let (header_key, header_value) = match self.header.split_once('=') {
            Some((k, v)) => (k.trim().to_owned(), v.trim().to_owned()),
            None => (self.header.clone(), String::new()),
        };
        Ok(proto::JobFilter {
            name: self.name.clone(),
            dedup_key: self.dedup.clone(),
            header_key,
            header_value,
            error_contains: self.error.clone(),
            created_after: Filter::time("after", &self.after)?,
            created_before: Filter::time("before", &self.before)?,
        })
    }

    /// The filter as a proto (its fields were checked when it was read).
    pub(crate) fn to_proto(&self) -> proto::JobFilter {
        self.proto().unwrap_or_default()
    }

    /// The filter as query parameters (`&name=…`), for links that keep it.
    fn query(&self) -> String {
        let mut out = String::new();
        for (k, v) in self.pairs() {
            if !v.is_empty() {
                out.push_str(&format!("&{k}={}", enc(v)));
            }
        }
        out
    }

    /// The filter as hidden inputs (a form that acts on what it matches).
    fn hidden(&self) -> Markup {
        html! {
            @for (k, v) in self.pairs() { input type="hidden" name=(k) value=(v); }
        }
    }

    fn pairs(&self) -> [(&'static str, &String); 6] {
        [
            ("name", &self.name),
            ("dedup", &self.dedup),
            ("header", &self.header),
            ("error", &self.error),
            ("after", &self.after),
            ("before", &self.before),
        ]
    }

    /// The filter's inputs.
    fn inputs(&self) -> Markup {
        html! {
            div { label for="f-name" { "Name" } input #f-name name="name" value=(self.name); }
            div { label for="f-error" { "Error contains" } input #f-error name="error" value=(self.error); }
            div { label for="f-header" { "Header (key=value)" } input #f-header name="header" value=(self.header); }
            div { label for="f-dedup" { "Dedup key" } input #f-dedup name="dedup" value=(self.dedup); }
            div { label for="f-after" { "Created after (UTC)" } input #f-after type="datetime-local" name="after" value=(self.after); }
            div { label for="f-before" { "Created before (UTC)" } input #f-before type="datetime-local" name="before" value=(self.before); }
        }
    }
}

fn job_table(ns: &str, jobs: &[proto::Job], select: bool) -> Markup {
    html! {
        table.jobs {
            thead { tr { @if select { th { span.sr { "Select" } } } th { "Job" } th { "Name" } th { "State" } th.num { "Attempts" } th { "Created" } th { "Last error" } th { "Worker" } } }
            tbody { @for job in jobs {
                tr data-job=(job.job_id) {
                    @if select { td { input type="checkbox" name="id" value=(job.job_id) aria-label={ "select " (job.job_id) }; } }
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
        .call(&viewer.caller, rpc::GET_JOB, message)
        .await?;
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
    ns_page(&viewer, &ns, Tab::Jobs, &job.job_id, body)
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
                li.bad {
                    (time(e.time.as_ref())) " — attempt " (e.attempt)
                    @if !e.worker_id.is_empty() { " on " span.mono { (e.worker_id) } }
                    " failed: " span.error { (e.message) }
                }
            }
            @if state_name(job.state) == "active" {
                li { "claimed by " span.mono { (job.worker_id) } ", lease until " (time(job.lease_deadline.as_ref())) }
            }
            @if job.finish_time.is_some() {
                li {
                    (time(job.finish_time.as_ref())) " — " (state_name(job.state))
                    @if state_name(job.state) == "completed" && !job.worker_id.is_empty() {
                        " (acked by " span.mono { (job.worker_id) } ")"
                    }
                }
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
    let may = |method| viewer.may_call(method, ns);
    html! {
        div.actions {
            @if may("RetryJob") && matches!(state, "dead" | "cancelled" | "completed" | "skipped") {
                (action(&to("retry"), "Retry", Some("Retry this job?")))
            }
            @if may("CancelJob") && unfinished { (action(&to("cancel"), "Cancel", Some("Cancel this job?"))) }
            @if may("DeleteJob") && state != "active" { (action(&to("delete"), "Delete", Some("Delete this job? This cannot be undone."))) }
            @if may("Enqueue") { (action(&to("clone"), "Clone and enqueue", Some("Enqueue a copy of this job?"))) }
        }
    }
}

pub(crate) async fn act(
    State(console): State<Arc<Console>>,
    viewer: Viewer,
    Path((ns, id, act)): Path<(String, String, String)>,
) -> Answer {
    let back = format!("/ns/{}/jobs/{}", enc(&ns), enc(&id));
    let client = &console.grpc;
    let caller = &viewer.caller;
    let (namespace, job_id) = (ns.clone(), id.clone());
    match act.as_str() {
        "retry" => {
            client
                .call(
                    caller,
                    rpc::RETRY_JOB,
                    proto::RetryJobRequest { namespace, job_id },
                )
                .await?;
            Ok(done(&back, "Retried: the job is pending again."))
        }
        "cancel" => {
            client
                .call(
                    caller,
                    rpc::CANCEL_JOB,
                    proto::CancelJobRequest { namespace, job_id },
                )
                .await?;
            Ok(done(&back, "Cancel requested."))
        }
        "delete" => {
            client
                .call(
                    caller,
                    rpc::DELETE_JOB,
                    proto::DeleteJobRequest { namespace, job_id },
                )
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
    let client = &console.grpc;
    let message = proto::GetJobRequest {
        namespace: ns.to_owned(),
        job_id: id.to_owned(),
    };
    let job = client
        .call(&viewer.caller, rpc::GET_JOB, message)
        .await?
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
    let reply = client.call(&viewer.caller, rpc::ENQUEUE, message).await?;
    Ok(reply.job_id)
}
