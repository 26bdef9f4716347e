//! Schedules: each with its timing, status, next and last run, skipped counts and
//! policies; a schedule's page with its next fire times (DST moves marked), its
//! recent runs, pause (with a note), resume, trigger now and backfill a range.

use std::sync::Arc;

use axum::extract::{Path, Query, State};
use bytes::Bytes;
use maud::{html, Markup};
use serde::Deserialize;

use super::{done, readable, Fields};
use crate::{
    console::{
        grpc::rpc,
        html::{action, badge, enc, notice, ns_page, span, time, Answer, Failure, Tab},
        viewer::Viewer,
        Console,
    },
    proto::{self, schedule::Timing},
};

const PAGE: u32 = 50;
const PREVIEW: u32 = 10;

#[derive(Deserialize, Default)]
pub(crate) struct Params {
    #[serde(default)]
    page: String,
    notice: Option<String>,
}

fn timing(s: &proto::Schedule) -> String {
    let zone = if s.timezone.is_empty() {
        "UTC"
    } else {
        &s.timezone
    };
    match &s.timing {
        Some(Timing::Cron(cron)) => format!("cron {cron} ({zone})"),
        Some(Timing::Every(every)) => format!("every {}", span(every.seconds * 1000)),
        None => String::new(),
    }
}

fn status(s: &proto::Schedule) -> &'static str {
    match proto::ScheduleStatus::try_from(s.status) {
        Ok(proto::ScheduleStatus::Paused) => "paused",
        Ok(proto::ScheduleStatus::Active) => "active",
        _ if s.paused => "paused",
        _ => "completed",
    }
}

pub(crate) async fn list(
    State(console): State<Arc<Console>>,
    viewer: Viewer,
    Path(ns): Path<String>,
    Query(p): Query<Params>,
) -> Answer {
    readable(&viewer, &ns)?;
    let message = proto::ListSchedulesRequest {
        namespace: ns.clone(),
        page_size: PAGE,
        page_token: p.page.clone(),
        ..Default::default()
    };
    let reply = console
        .grpc
        .call(&viewer.caller, rpc::LIST_SCHEDULES, message)
        .await?;
    let body = html! { main {
        h1 { "Schedules" }
        (notice(p.notice.as_deref()))
        table.schedules {
            thead { tr { th { "Schedule" } th { "Timing" } th { "Status" } th { "Next run" } th { "Last run" } th.num { "Runs" } th.num { "Skipped" } } }
            tbody { @for s in &reply.schedules {
                tr data-schedule=(s.id) {
                    td.mono { a href={ "/ns/" (enc(&ns)) "/schedules/" (enc(&s.id)) } { (s.id) } }
                    td { (timing(s)) }
                    td { (badge(status(s))) }
                    td { (time(s.next_run_time.as_ref())) }
                    td { (time(s.last_run_time.as_ref())) }
                    td.num { (s.run_count) }
                    td.num { (s.skipped_catchup + s.skipped_window + s.skipped_overlap) }
                }
            } }
        }
        @if reply.schedules.is_empty() { p.muted { "No schedules on this page." } }
        @if !reply.next_page_token.is_empty() {
            p.pager { a href={ "/ns/" (enc(&ns)) "/schedules?page=" (enc(&reply.next_page_token)) } { "Next page →" } }
        }
    } };
    ns_page(&viewer, &ns, Tab::Schedules, "schedules", body)
}

pub(crate) async fn detail(
    State(console): State<Arc<Console>>,
    viewer: Viewer,
    Path((ns, id)): Path<(String, String)>,
    Query(p): Query<Params>,
) -> Answer {
    readable(&viewer, &ns)?;
    let client = &console.grpc;
    let message = proto::GetScheduleRequest {
        namespace: ns.clone(),
        id: id.clone(),
    };
    let reply = client
        .call(&viewer.caller, rpc::GET_SCHEDULE, message)
        .await?;
    let schedule = reply.schedule.ok_or_else(|| {
        Failure(tonic::Status::not_found(format!(
            "schedule {id:?} not found"
        )))
    })?;
    let preview = proto::PreviewScheduleRequest {
        namespace: ns.clone(),
        target: Some(proto::preview_schedule_request::Target::Id(id.clone())),
        count: PREVIEW,
        from_time: None,
    };
    // A paused or finished schedule has no next fire times: the page says so.
    let fires = client
        .call(&viewer.caller, rpc::PREVIEW_SCHEDULE, preview)
        .await
        .map(|r| r.fire_times);
    let body = html! { main {
        h1 { "Schedule " span.mono { (schedule.id) } " " (badge(status(&schedule))) }
        (notice(p.notice.as_deref()))
        (schedule_actions(&viewer, &ns, &schedule))
        (facts(&schedule))
        h2 { "Next fire times" }
        (fire_times(&fires))
        h2 { "Recent runs" }
        (runs(&reply.recent_runs))
    } };
    ns_page(&viewer, &ns, Tab::Schedules, &schedule.id, body)
}

fn facts(s: &proto::Schedule) -> Markup {
    html! {
        dl.facts {
            dt { "Timing" } dd { (timing(s)) }
            dt { "Job name" } dd { (s.job_name) }
            dt { "Next run" } dd { (time(s.next_run_time.as_ref())) }
            dt { "Last run" } dd { (time(s.last_run_time.as_ref())) }
            dt { "Runs" } dd { (s.run_count) @if s.run_limit > 0 { " of " (s.run_limit) } }
            dt { "Catch-up" } dd { (proto::CatchupPolicy::try_from(s.catchup_policy).map_or("?", |p| p.as_str_name())) }
            dt { "Overlap" } dd { (proto::OverlapPolicy::try_from(s.overlap_policy).map_or("?", |p| p.as_str_name())) }
            dt { "Skipped" } dd { "catch-up " (s.skipped_catchup) ", window " (s.skipped_window) ", overlap " (s.skipped_overlap) }
            @if !s.pause_note.is_empty() { dt { "Pause note" } dd { (s.pause_note) } }
        }
    }
}

fn fire_times(fires: &Result<Vec<proto::FireTime>, tonic::Status>) -> Markup {
    html! {
        @match fires {
            Err(status) => p.muted { (status.message()) },
            Ok(fires) if fires.is_empty() => p.muted { "No upcoming fire times." },
            Ok(fires) => table.fires {
                thead { tr { th { "UTC" } th { "Local time" } th { "DST" } } }
                tbody { @for f in fires {
                    tr class=[f.dst_adjusted.then_some("hot")] {
                        td { (time(f.time.as_ref())) }
                        td.mono { (f.local_time) }
                        td { @if f.dst_adjusted { span.badge.delayed { "DST moved" } " " (f.note) } }
                    }
                } }
            },
        }
    }
}

fn runs(runs: &[proto::ScheduleRun]) -> Markup {
    html! {
        @if runs.is_empty() { p.muted { "No runs yet." } }
        @else {
            table.runs {
                thead { tr { th { "Occurrence" } th { "Due" } th { "Claimed" } th { "Lateness" } th { "Worker" } th { "Outcome" } } }
                tbody { @for r in runs {
                    tr {
                        td.mono { (r.occurrence_id) }
                        td { (time(r.due_time.as_ref())) }
                        td { (time(r.claim_time.as_ref())) }
                        td { (r.lateness.as_ref().map_or_else(String::new, |d| span(d.seconds * 1000))) }
                        td.mono { (r.worker_id) }
                        td { (proto::RunOutcome::try_from(r.outcome).map_or("?", |o| o.as_str_name())) }
                    }
                } }
            }
        }
    }
}

fn schedule_actions(viewer: &Viewer, ns: &str, s: &proto::Schedule) -> Markup {
    if !viewer.may_call("TriggerSchedule", ns) {
        return html! {};
    }
    let to = |act: &str| format!("/ns/{}/schedules/{}/{act}", enc(ns), enc(&s.id));
    html! {
        div.actions {
            (action(&to("trigger"), "Trigger now", Some("Run this schedule now, once?")))
            @if status(s) == "paused" { (action(&to("resume"), "Resume", None)) }
            @else {
                form.inline method="post" action=(to("pause")) {
                    input name="note" placeholder="why (optional)" aria-label="pause note";
                    button type="submit" { "Pause" }
                }
            }
        }
        form.row method="post" action=(to("backfill")) data-confirm="Backfill the occurrences in this range?" {
            div { label for="start" { "Backfill from (UTC)" } input #start type="datetime-local" name="start" required; }
            div { label for="end" { "to (UTC)" } input #end type="datetime-local" name="end" required; }
            button type="submit" { "Backfill" }
        }
    }
}

/// A `datetime-local` value (UTC) as a timestamp.
pub(crate) fn utc(field: &str, value: Option<&str>) -> Result<prost_types::Timestamp, Failure> {
    let bad = || {
        Failure(tonic::Status::invalid_argument(format!(
            "{field}: a date and time, as YYYY-MM-DDTHH:MM"
        )))
    };
    let value = value.ok_or_else(bad)?;
    let parsed = chrono::NaiveDateTime::parse_from_str(value, "%Y-%m-%dT%H:%M")
        .or_else(|_| chrono::NaiveDateTime::parse_from_str(value, "%Y-%m-%dT%H:%M:%S"))
        .map_err(|_| bad())?;
    Ok(prost_types::Timestamp {
        seconds: parsed.and_utc().timestamp(),
        nanos: 0,
    })
}

pub(crate) async fn act(
    State(console): State<Arc<Console>>,
    viewer: Viewer,
    Path((ns, id, act)): Path<(String, String, String)>,
    body: Bytes,
) -> Answer {
    let back = format!("/ns/{}/schedules/{}", enc(&ns), enc(&id));
    let form = Fields::of(&body);
    let client = &console.grpc;
    let caller = &viewer.caller;
    let (namespace, sid) = (ns.clone(), id.clone());
    let notice = match act.as_str() {
        "trigger" => {
            let message = proto::TriggerScheduleRequest {
                namespace,
                id: sid,
                ignore_overlap: false,
            };
            let reply = client.call(caller, rpc::TRIGGER_SCHEDULE, message).await?;
            format!("Triggered: occurrence {}.", reply.occurrence_id)
        }
        "pause" => {
            let note = form.get("note").unwrap_or_default().to_owned();
            client
                .call(
                    caller,
                    rpc::PAUSE_SCHEDULE,
                    proto::PauseScheduleRequest {
                        namespace,
                        id: sid,
                        note,
                    },
                )
                .await?;
            "Paused.".to_owned()
        }
        "resume" => {
            client
                .call(
                    caller,
                    rpc::RESUME_SCHEDULE,
                    proto::ResumeScheduleRequest { namespace, id: sid },
                )
                .await?;
            "Resumed.".to_owned()
        }
        "backfill" => {
            let message = proto::BackfillScheduleRequest {
                namespace,
                id: sid,
                start_time: Some(utc("start", form.get("start"))?),
                end_time: Some(utc("end", form.get("end"))?),
            };
            let reply = client.call(caller, rpc::BACKFILL_SCHEDULE, message).await?;
            format!(
                "Backfill: {} slots in range, {} added, {} waiting.",
                reply.slots, reply.added, reply.waiting
            )
        }
        _ => return Ok(super::not_found().await),
    };
    Ok(done(&back, &notice))
}
