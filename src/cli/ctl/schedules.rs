//! `dueq schedules` (ListSchedules, paged up to --limit), `dueq schedule
//! show|pause|resume|trigger|next-run|delete` (GetSchedule, PauseSchedule,
//! ResumeSchedule, TriggerSchedule, SetScheduleNextRun, DeleteSchedule) and `dueq preview`
//! (PreviewSchedule of a cron, an interval or a stored schedule).

use dueq::{
    config::ctl::{
        NextRunScheduleTarget, PauseScheduleTarget, PreviewArgs, ScheduleAction, ScheduleArgs,
        ScheduleOrderArg, ScheduleStatusArg, ScheduleTarget, SchedulesArgs, TriggerScheduleTarget,
    },
    proto,
};
use serde_json::json;

use super::{
    connect::connect,
    render::{self, emit, or_dash, schedule_json, time_cell},
    Failure,
};

fn status(arg: ScheduleStatusArg) -> proto::ScheduleStatus {
    match arg {
        ScheduleStatusArg::Active => proto::ScheduleStatus::Active,
        ScheduleStatusArg::Paused => proto::ScheduleStatus::Paused,
        ScheduleStatusArg::Completed => proto::ScheduleStatus::Completed,
    }
}

fn schedules_table(schedules: &[proto::Schedule]) -> comfy_table::Table {
    let mut table = render::table(&[
        "ID", "STATUS", "TIMING", "NEXT RUN", "LAST RUN", "RUNS", "JOB NAME", "TARGET",
    ]);
    for s in schedules {
        table.add_row(vec![
            s.id.clone(),
            render::schedule_status(s.status),
            render::timing_cell(s),
            time_cell(&s.next_run_time),
            time_cell(&s.last_run_time),
            s.run_count.to_string(),
            or_dash(&s.job_name),
            render::target_cell(s),
        ]);
    }
    table
}

pub(crate) async fn list(args: SchedulesArgs) -> Result<(), Failure> {
    let mut client = connect(&args.client, true).await?;
    let limit = args.limit as usize;
    let filter = args.status.map(status);
    let order = match args.order {
        ScheduleOrderArg::Id if args.overdue.is_none() => proto::ScheduleOrder::Id,
        // Overdue schedules are listed by next run whatever the order says.
        _ => proto::ScheduleOrder::NextRun,
    };
    let overdue_by = args
        .overdue
        .map(prost_types::Duration::try_from)
        .transpose()
        .map_err(|e| Failure::Usage(format!("--overdue: {e}")))?;
    let mut schedules = Vec::new();
    let mut token = String::new();
    let more = loop {
        let page = client
            .list_schedules(proto::ListSchedulesRequest {
                namespace: args.namespace.clone(),
                page_size: (limit - schedules.len()).min(1000) as u32,
                page_token: token,
                status: filter.map_or(0, |s| s as i32),
                view: proto::ScheduleView::Basic as i32,
                order: order as i32,
                overdue_by,
            })
            .await?
            .into_inner();
        schedules.extend(page.schedules);
        token = page.next_page_token;
        if token.is_empty() {
            break false;
        }
        if schedules.len() >= limit {
            break true;
        }
    };
    schedules.truncate(limit);
    let doc = json!({
        "namespace": args.namespace,
        "status": args.status.map(|s| render::schedule_status(status(s) as i32)),
        "order": if order == proto::ScheduleOrder::NextRun { "next_run" } else { "id" },
        "overdue_by_seconds": args.overdue.map(|d| d.as_secs_f64()),
        "schedules": schedules.iter().map(|s| schedule_json(s, false)).collect::<Vec<_>>(),
        "more": more,
    });
    emit(args.client.output, doc, || {
        let mut text = schedules_table(&schedules).to_string();
        if more {
            text.push_str(&format!(
                "\nmore schedules follow; raise --limit (now {limit}) to see them"
            ));
        }
        text
    });
    Ok(())
}

pub(crate) async fn act(args: ScheduleArgs) -> Result<(), Failure> {
    let (target, schedule) = match args.action {
        ScheduleAction::Show(target) => {
            let mut client = connect(&target.client, true).await?;
            let answer = client
                .get_schedule(proto::GetScheduleRequest {
                    namespace: target.namespace.clone(),
                    id: target.id.clone(),
                })
                .await?
                .into_inner();
            (target, answer.schedule)
        }
        ScheduleAction::Pause(PauseScheduleTarget { target, note }) => {
            let mut client = connect(&target.client, true).await?;
            let answer = client
                .pause_schedule(proto::PauseScheduleRequest {
                    namespace: target.namespace.clone(),
                    id: target.id.clone(),
                    note,
                })
                .await?
                .into_inner();
            (target, answer.schedule)
        }
        ScheduleAction::Trigger(TriggerScheduleTarget {
            target,
            ignore_overlap,
        }) => return trigger(target, ignore_overlap).await,
        ScheduleAction::Delete(target) => return delete(target).await,
        ScheduleAction::NextRun(NextRunScheduleTarget {
            target,
            time,
            expected_revision,
        }) => {
            let mut client = connect(&target.client, true).await?;
            let answer = client
                .set_schedule_next_run(proto::SetScheduleNextRunRequest {
                    namespace: target.namespace.clone(),
                    id: target.id.clone(),
                    next_run_time: Some(prost_types::Timestamp {
                        seconds: time.timestamp(),
                        nanos: i32::try_from(time.timestamp_subsec_nanos()).unwrap_or(0),
                    }),
                    expected_revision,
                })
                .await?
                .into_inner();
            (target, answer.schedule)
        }
        ScheduleAction::Resume(target) => {
            let mut client = connect(&target.client, true).await?;
            let answer = client
                .resume_schedule(proto::ResumeScheduleRequest {
                    namespace: target.namespace.clone(),
                    id: target.id.clone(),
                })
                .await?
                .into_inner();
            (target, answer.schedule)
        }
    };
    let schedule = schedule
        .ok_or_else(|| Failure::Status(tonic::Status::internal("the answer held no schedule")))?;
    let doc = json!({
        "namespace": target.namespace,
        "schedule": schedule_json(&schedule, true),
    });
    emit(target.client.output, doc, || {
        schedules_table(std::slice::from_ref(&schedule)).to_string()
    });
    Ok(())
}

/// `dueq schedule trigger`: prints the triggered occurrence's id and due time.
async fn trigger(target: ScheduleTarget, ignore_overlap: bool) -> Result<(), Failure> {
    let mut client = connect(&target.client, true).await?;
    let answer = client
        .trigger_schedule(proto::TriggerScheduleRequest {
            namespace: target.namespace.clone(),
            id: target.id.clone(),
            ignore_overlap,
        })
        .await?
        .into_inner();
    let due = answer
        .due_time
        .as_ref()
        .map(|t| t.seconds * 1000 + i64::from(t.nanos) / 1_000_000)
        .and_then(chrono::DateTime::from_timestamp_millis)
        .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
        .unwrap_or_default();
    let doc = json!({
        "namespace": target.namespace,
        "id": target.id,
        "occurrence_id": answer.occurrence_id,
        "due_time": due,
    });
    emit(target.client.output, doc, || {
        format!(
            "triggered {} (occurrence {}, due {due})",
            target.id, answer.occurrence_id
        )
    });
    Ok(())
}

/// `dueq schedule delete`: says which schedule is gone.
async fn delete(target: ScheduleTarget) -> Result<(), Failure> {
    let mut client = connect(&target.client, true).await?;
    client
        .delete_schedule(proto::DeleteScheduleRequest {
            namespace: target.namespace.clone(),
            id: target.id.clone(),
        })
        .await?;
    let doc = json!({ "namespace": target.namespace, "deleted": target.id });
    emit(target.client.output, doc, || {
        format!("deleted schedule {}", target.id)
    });
    Ok(())
}

pub(crate) async fn preview(args: PreviewArgs) -> Result<(), Failure> {
    let target = match (&args.id, &args.cron, args.every) {
        (Some(id), _, _) => proto::preview_schedule_request::Target::Id(id.clone()),
        (None, cron, every) => {
            let timing = match (cron, every) {
                (Some(cron), _) => proto::schedule::Timing::Cron(cron.clone()),
                (None, Some(every)) => proto::schedule::Timing::Every(
                    prost_types::Duration::try_from(every).map_err(|e| {
                        Failure::Usage(format!(
                            "--every {}: {e}",
                            humantime::format_duration(every)
                        ))
                    })?,
                ),
                // clap requires one of the three.
                (None, None) => {
                    return Err(Failure::Usage("give a cron, --every or --id".into()));
                }
            };
            proto::preview_schedule_request::Target::Schedule(proto::Schedule {
                timing: Some(timing),
                timezone: args.timezone.clone().unwrap_or_default(),
                ..Default::default()
            })
        }
    };
    let mut client = connect(&args.client, true).await?;
    let answer = client
        .preview_schedule(proto::PreviewScheduleRequest {
            namespace: args.namespace.clone(),
            target: Some(target),
            count: args.count,
            from_time: args.from.map(prost_types::Timestamp::from),
        })
        .await?
        .into_inner();
    let doc = json!({
        "timezone": answer.timezone,
        "fire_times": answer.fire_times.iter().map(|f| json!({
            "time": render::time_json(&f.time),
            "local_time": f.local_time,
            "utc_offset_seconds": f.utc_offset_seconds,
            "dst_adjusted": f.dst_adjusted,
            "note": f.note,
        })).collect::<Vec<_>>(),
    });
    emit(args.client.output, doc, || {
        let mut table = render::table(&["TIME (UTC)", "LOCAL TIME", "NOTE"]);
        for f in &answer.fire_times {
            table.add_row(vec![
                time_cell(&f.time),
                f.local_time.clone(),
                if f.dst_adjusted {
                    or_dash(&f.note)
                } else {
                    "-".into()
                },
            ]);
        }
        format!("{table}\ntime zone: {}", answer.timezone)
    });
    Ok(())
}
