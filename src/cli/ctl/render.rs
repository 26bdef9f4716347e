//! How the operator commands print: a table (comfy-table) for people, or one JSON
//! document for scripts. The JSON is built here field by field (snake_case names,
//! RFC 3339 times, lower-case enum names, durations in seconds) rather than derived
//! from the generated types, so it stays the same when the proto grows.

use base64::Engine;
use chrono::{DateTime, SecondsFormat, Utc};
use comfy_table::{presets, ContentArrangement, Table};
use dueq::{config::ctl::Output, proto};
use serde_json::{json, Map, Value};

/// Prints `doc` as JSON, or the table `table` makes.
pub(crate) fn emit(output: Output, doc: Value, table: impl FnOnce() -> String) {
    match output {
        Output::Json => match serde_json::to_string_pretty(&doc) {
            Ok(text) => println!("{text}"),
            // A Value of strings, numbers and maps always serializes.
            Err(error) => eprintln!("cannot print JSON: {error}"),
        },
        Output::Table => println!("{}", table()),
    }
}

/// A table with a header, in the style every command uses.
pub(crate) fn table(header: &[&str]) -> Table {
    let mut table = Table::new();
    table
        .load_style(presets::UTF8_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Disabled)
        .set_header(header.iter().copied());
    table
}

/// A two-column table of names and values.
pub(crate) fn fields(rows: Vec<(&str, String)>) -> Table {
    let mut table = table(&["FIELD", "VALUE"]);
    for (name, value) in rows {
        table.add_row(vec![name.to_string(), value]);
    }
    table
}

/// A timestamp as RFC 3339 in UTC, or None.
fn time(ts: &Option<prost_types::Timestamp>, format: SecondsFormat) -> Option<String> {
    let ts = ts.as_ref()?;
    let nanos = u32::try_from(ts.nanos).ok()?;
    DateTime::<Utc>::from_timestamp(ts.seconds, nanos).map(|t| t.to_rfc3339_opts(format, true))
}

/// A timestamp for JSON: a string (with as many fraction digits as it has) or null.
pub(crate) fn time_json(ts: &Option<prost_types::Timestamp>) -> Value {
    time(ts, SecondsFormat::AutoSi)
        .map(Value::String)
        .unwrap_or(Value::Null)
}

/// A timestamp for a table: to the second, or "-".
pub(crate) fn time_cell(ts: &Option<prost_types::Timestamp>) -> String {
    time(ts, SecondsFormat::Secs).unwrap_or_else(|| "-".into())
}

/// A duration in seconds, or None.
pub(crate) fn seconds(d: &Option<prost_types::Duration>) -> Option<f64> {
    d.as_ref()
        .map(|d| d.seconds as f64 + f64::from(d.nanos) / 1e9)
}

fn seconds_json(d: &Option<prost_types::Duration>) -> Value {
    seconds(d).map(|s| json!(s)).unwrap_or(Value::Null)
}

/// A duration as people write it ("1h", "90s"), or "-".
pub(crate) fn duration_cell(d: &Option<prost_types::Duration>) -> String {
    match d {
        Some(d) if d.seconds >= 0 && d.nanos >= 0 => {
            humantime::format_duration(std::time::Duration::new(d.seconds as u64, d.nanos as u32))
                .to_string()
        }
        _ => "-".into(),
    }
}

/// An empty string as "-" in a table.
pub(crate) fn or_dash(s: &str) -> String {
    if s.is_empty() {
        "-".into()
    } else {
        s.to_string()
    }
}

/// A job state's name in the CLI and its JSON ("pending", …).
pub(crate) fn job_state(state: i32) -> String {
    match proto::JobState::try_from(state) {
        Ok(proto::JobState::Pending) => "pending".into(),
        Ok(proto::JobState::Delayed) => "delayed".into(),
        Ok(proto::JobState::Active) => "active".into(),
        Ok(proto::JobState::Completed) => "completed".into(),
        Ok(proto::JobState::Dead) => "dead".into(),
        Ok(proto::JobState::Cancelled) => "cancelled".into(),
        Ok(proto::JobState::Waiting) => "waiting".into(),
        Ok(proto::JobState::Skipped) => "skipped".into(),
        Ok(proto::JobState::Unspecified) => "unspecified".into(),
        Err(_) => format!("unknown({state})"),
    }
}

/// A schedule status's name in the CLI and its JSON ("active", …).
pub(crate) fn schedule_status(status: i32) -> String {
    match proto::ScheduleStatus::try_from(status) {
        Ok(proto::ScheduleStatus::Active) => "active".into(),
        Ok(proto::ScheduleStatus::Paused) => "paused".into(),
        Ok(proto::ScheduleStatus::Completed) => "completed".into(),
        Ok(proto::ScheduleStatus::Unspecified) => "unspecified".into(),
        Err(_) => format!("unknown({status})"),
    }
}

fn headers_json(headers: &std::collections::HashMap<String, String>) -> Value {
    let mut sorted: Vec<_> = headers.iter().collect();
    sorted.sort();
    Value::Object(
        sorted
            .into_iter()
            .map(|(k, v)| (k.clone(), Value::String(v.clone())))
            .collect::<Map<_, _>>(),
    )
}

fn payload_json(payload: &[u8]) -> Value {
    Value::String(base64::engine::general_purpose::STANDARD.encode(payload))
}

/// A job's progress as JSON (issue 30): fraction, message and report time; `full`
/// adds the checkpoint (base64). Null when no progress was reported.
fn progress_json(progress: Option<&proto::JobProgress>, full: bool) -> Value {
    let Some(p) = progress else {
        return Value::Null;
    };
    let mut doc = json!({
        "fraction": p.fraction,
        "message": p.message,
        "update_time": time_json(&p.update_time),
    });
    if full {
        doc["checkpoint_base64"] = p.checkpoint.as_deref().map_or(Value::Null, payload_json);
    }
    doc
}

/// A job's progress for a table: "40% 400 of 1000 rows (2026-…Z)", "-" when none.
pub(crate) fn progress_cell(progress: Option<&proto::JobProgress>) -> String {
    let Some(p) = progress else {
        return "-".into();
    };
    let mut parts = Vec::new();
    if let Some(fraction) = p.fraction {
        parts.push(format!("{}%", (fraction * 100.0).round()));
    }
    if let Some(message) = p.message.as_deref().filter(|m| !m.is_empty()) {
        parts.push(message.to_owned());
    }
    parts.push(format!("({})", time_cell(&p.update_time)));
    parts.join(" ")
}

/// Bytes for a table: the text when it is short UTF-8 on one line, else its size.
pub(crate) fn bytes_cell(bytes: &[u8]) -> String {
    match std::str::from_utf8(bytes) {
        _ if bytes.is_empty() => "-".into(),
        Ok(text) if text.len() <= 80 && !text.chars().any(char::is_control) => text.to_owned(),
        _ => format!("{} bytes", bytes.len()),
    }
}

/// A job as JSON; `full` adds its payload, result and checkpoint (base64) and
/// headers.
pub(crate) fn job_json(job: &proto::Job, full: bool) -> Value {
    let mut doc = json!({
        "job_id": job.job_id,
        "queue": job.queue,
        "name": job.name,
        "state": job_state(job.state),
        "priority": job.priority,
        "attempts": job.attempts,
        "max_attempts": job.max_attempts,
        "create_time": time_json(&job.create_time),
        "update_time": time_json(&job.update_time),
        "run_at": time_json(&job.run_at),
        "lease_deadline": time_json(&job.lease_deadline),
        "finish_time": time_json(&job.finish_time),
        "worker_id": job.worker_id,
        "dedup_key": job.dedup_key,
        "lease_seconds": seconds_json(&job.lease),
        "errors": job.errors.iter().map(|e| json!({
            "attempt": e.attempt,
            "message": e.message,
            "time": time_json(&e.time),
        })).collect::<Vec<_>>(),
        "cancel_requested": job.cancel_requested,
        "progress": progress_json(job.progress.as_ref(), full),
        "result_bytes": job.result.len(),
    });
    if full {
        doc["backoff"] = job
            .backoff
            .as_ref()
            .map(|b| {
                json!({
                    "kind": match proto::BackoffKind::try_from(b.kind) {
                        Ok(proto::BackoffKind::Fixed) => "fixed",
                        Ok(proto::BackoffKind::Exponential) => "exponential",
                        _ => "unspecified",
                    },
                    "base_seconds": seconds_json(&b.base),
                    "cap_seconds": seconds_json(&b.cap),
                    "jitter": b.jitter,
                })
            })
            .unwrap_or(Value::Null);
        doc["headers"] = headers_json(&job.headers);
        doc["fairness_key"] = json!(job.fairness_key);
        doc["concurrency_key"] = json!(job.concurrency_key);
        doc["rate_key"] = json!(job.rate_key);
        doc["flow_id"] = json!(job.flow_id);
        doc["flow_ref"] = json!(job.flow_ref);
        doc["cost"] = json!(job.cost);
        doc["payload_base64"] = payload_json(&job.payload);
        doc["result_base64"] = payload_json(&job.result);
    }
    doc
}

/// A schedule's timing for a table: "cron 0 7 * * * (UTC)" or "every 1h".
pub(crate) fn timing_cell(s: &proto::Schedule) -> String {
    match &s.timing {
        Some(proto::schedule::Timing::Cron(cron)) => {
            let zone = if s.timezone.is_empty() {
                "UTC"
            } else {
                &s.timezone
            };
            format!("cron {cron} ({zone})")
        }
        Some(proto::schedule::Timing::Every(every)) => {
            format!("every {}", duration_cell(&Some(*every)))
        }
        None => "-".into(),
    }
}

/// Where a schedule's slots go, for a table: "queue invoices" (the service enqueues
/// them as jobs) or "-" (workers claim them).
pub(crate) fn target_cell(s: &proto::Schedule) -> String {
    match &s.target {
        Some(proto::schedule::Target::Enqueue(t)) => format!("queue {}", t.queue),
        None => "-".into(),
    }
}

/// A schedule's target as JSON (null: workers claim its occurrences).
fn target_json(s: &proto::Schedule) -> Value {
    match &s.target {
        Some(proto::schedule::Target::Enqueue(t)) => json!({
            "queue": t.queue,
            "priority": t.priority,
            "max_attempts": t.max_attempts,
            "lease_seconds": seconds_json(&t.lease),
            "headers": headers_json(&t.headers),
        }),
        None => Value::Null,
    }
}

/// A schedule as JSON; `full` adds its payload (base64) and headers.
pub(crate) fn schedule_json(s: &proto::Schedule, full: bool) -> Value {
    let (cron, every) = match &s.timing {
        Some(proto::schedule::Timing::Cron(cron)) => (json!(cron), Value::Null),
        Some(proto::schedule::Timing::Every(every)) => (Value::Null, seconds_json(&Some(*every))),
        None => (Value::Null, Value::Null),
    };
    let mut doc = json!({
        "id": s.id,
        "status": schedule_status(s.status),
        "cron": cron,
        "every_seconds": every,
        "timezone": if s.timezone.is_empty() { "UTC" } else { &s.timezone },
        "start_time": time_json(&s.start_time),
        "end_time": time_json(&s.end_time),
        "run_limit": s.run_limit,
        "job_name": s.job_name,
        "run_count": s.run_count,
        "last_run_time": time_json(&s.last_run_time),
        "next_run_time": time_json(&s.next_run_time),
        "create_time": time_json(&s.create_time),
        "update_time": time_json(&s.update_time),
        "revision": s.revision,
        "pause_note": s.pause_note,
        "target": target_json(s),
    });
    if full {
        doc["headers"] = headers_json(&s.headers);
        doc["payload_base64"] = payload_json(&s.payload);
    }
    doc
}
