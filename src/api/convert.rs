//! Translation between protobuf messages and domain types.

use std::collections::BTreeMap;

use crate::{
    domain::{
        Backoff, BackoffKind, Occurrence, OccurrenceKind, Overlap, RecentRun, RunOutcome,
        ScheduleDef, ScheduleRecord, ScheduleStatus, TimingDef,
    },
    proto,
    timing::CatchUp,
};

use super::{validate, ApiError};

pub(super) fn timestamp(ms: i64) -> prost_types::Timestamp {
    prost_types::Timestamp {
        seconds: ms.div_euclid(1000),
        nanos: i32::try_from(ms.rem_euclid(1000) * 1_000_000).unwrap_or(0),
    }
}

pub(super) fn duration(ms: i64) -> prost_types::Duration {
    prost_types::Duration {
        seconds: ms.div_euclid(1000),
        nanos: i32::try_from(ms.rem_euclid(1000) * 1_000_000).unwrap_or(0),
    }
}

pub(super) fn status_to_proto(status: ScheduleStatus) -> proto::ScheduleStatus {
    match status {
        ScheduleStatus::Active => proto::ScheduleStatus::Active,
        ScheduleStatus::Paused => proto::ScheduleStatus::Paused,
        ScheduleStatus::Completed => proto::ScheduleStatus::Completed,
    }
}

/// A status filter: UNSPECIFIED = any; unknown numbers are refused.
pub(super) fn status_filter(field: &str, value: i32) -> Result<Option<ScheduleStatus>, ApiError> {
    match proto::ScheduleStatus::try_from(value) {
        Ok(proto::ScheduleStatus::Unspecified) => Ok(None),
        Ok(proto::ScheduleStatus::Active) => Ok(Some(ScheduleStatus::Active)),
        Ok(proto::ScheduleStatus::Paused) => Ok(Some(ScheduleStatus::Paused)),
        Ok(proto::ScheduleStatus::Completed) => Ok(Some(ScheduleStatus::Completed)),
        Err(_) => Err(ApiError::invalid(field, format!("unknown status {value}"))),
    }
}

/// The timing part of a proto schedule, before parsing by `timing`.
pub(super) struct RawTiming {
    pub(super) cron: Option<String>,
    pub(super) every_ms: Option<i64>,
    pub(super) start_ms: Option<i64>,
    pub(super) end_ms: Option<i64>,
    pub(super) offset_ms: Option<i64>,
}

pub(super) fn raw_timing(field: &str, s: &proto::Schedule) -> Result<RawTiming, ApiError> {
    let (cron, every_ms) = match &s.timing {
        Some(proto::schedule::Timing::Cron(expr)) => (Some(expr.clone()), None),
        Some(proto::schedule::Timing::Every(d)) => {
            let ms = validate::duration_ms(&format!("{field}.every"), d)?;
            // Sub-millisecond intervals round to 0 ms: say what is wrong with them.
            if ms == 0 && (d.seconds, d.nanos) != (0, 0) {
                return Err(ApiError::invalid(
                    format!("{field}.every"),
                    "must be at least 1s",
                ));
            }
            (None, Some(ms))
        }
        None => (None, None),
    };
    let start_ms = s
        .start_time
        .as_ref()
        .map(|t| validate::timestamp_ms(&format!("{field}.start_time"), t))
        .transpose()?;
    let end_ms = s
        .end_time
        .as_ref()
        .map(|t| validate::timestamp_ms(&format!("{field}.end_time"), t))
        .transpose()?;
    let offset_ms = s
        .offset
        .as_ref()
        .map(|d| {
            let field = format!("{field}.offset");
            if d.seconds < 0 || d.nanos < 0 {
                return Err(ApiError::invalid(
                    field,
                    "must be at least 0 and shorter than every",
                ));
            }
            validate::duration_ms(&field, d)
        })
        .transpose()?;
    Ok(RawTiming {
        cron,
        every_ms,
        start_ms,
        end_ms,
        offset_ms,
    })
}

/// Builds the definition from a validated proto schedule and its parsed timing.
pub(super) fn schedule_def(
    s: proto::Schedule,
    id: String,
    timing: TimingDef,
    timezone: String,
    raw: &RawTiming,
) -> ScheduleDef {
    ScheduleDef {
        id,
        timing,
        timezone,
        start_ms: raw.start_ms,
        end_ms: raw.end_ms,
        run_limit: s.run_limit,
        job_name: s.job_name,
        payload: s.payload,
        headers: s.headers.into_iter().collect::<BTreeMap<_, _>>(),
        paused: s.paused,
        catchup: Default::default(),
        offset_ms: raw.offset_ms,
        overlap: Default::default(),
        max_attempts: 0,
        jitter_ms: 0,
        target: None,
    }
}

/// A stored target as the API shows it (Enqueue's defaults filled in).
fn target_to_proto(t: crate::domain::EnqueueTarget) -> proto::schedule::Target {
    proto::schedule::Target::Enqueue(proto::EnqueueTarget {
        queue: t.queue,
        priority: t.priority,
        max_attempts: Some(t.max_attempts),
        backoff: Some(backoff_to_proto(t.backoff)),
        headers: t.headers.into_iter().collect(),
        lease: Some(duration(t.lease_ms)),
    })
}

pub(super) fn schedule_to_proto(r: ScheduleRecord) -> proto::Schedule {
    let timing = match r.def.timing {
        TimingDef::Cron(expr) => proto::schedule::Timing::Cron(expr),
        TimingDef::EveryMs(ms) => proto::schedule::Timing::Every(duration(ms)),
    };
    proto::Schedule {
        id: r.def.id,
        timing: Some(timing),
        target: r.def.target.map(target_to_proto),
        timezone: r.def.timezone,
        start_time: r.def.start_ms.map(timestamp),
        end_time: r.def.end_ms.map(timestamp),
        run_limit: r.def.run_limit,
        job_name: r.def.job_name,
        payload: r.def.payload,
        headers: r.def.headers.into_iter().collect(),
        paused: r.status == ScheduleStatus::Paused,
        status: status_to_proto(r.status) as i32,
        run_count: r.run_count,
        last_run_time: r.last_run_ms.map(timestamp),
        next_run_time: r.next_run_ms.map(timestamp),
        create_time: Some(timestamp(r.create_ms)),
        update_time: Some(timestamp(r.update_ms)),
        revision: r.revision,
        catchup_policy: catchup_to_proto(r.def.catchup.policy) as i32,
        catchup_limit: match r.def.catchup.policy {
            CatchUp::All { limit } => limit,
            CatchUp::One | CatchUp::Skip => 0,
        },
        catchup_window: r.def.catchup.window_ms.map(duration),
        skipped_catchup: r.skipped.catchup,
        skipped_window: r.skipped.window,
        pause_note: r.pause_note,
        offset: r.def.offset_ms.map(duration),
        overlap_policy: overlap_to_proto(r.def.overlap) as i32,
        max_attempts: r.def.max_attempts,
        jitter: (r.def.jitter_ms > 0).then(|| duration(r.def.jitter_ms)),
        skipped_overlap: r.skipped.overlap,
        buffered_time: r.buffered_ms.map(timestamp),
        triggered_time: r.trigger_ms.map(timestamp),
        backfill_time: r.backfill_ms.map(timestamp),
    }
}

pub(super) fn run_to_proto(r: RecentRun) -> proto::ScheduleRun {
    proto::ScheduleRun {
        occurrence_id: r.occurrence_id,
        due_time: Some(timestamp(r.due_ms)),
        claim_time: r.claim_ms.map(timestamp),
        lateness: r.claim_ms.map(|c| duration(c - r.due_ms)),
        worker_id: r.worker,
        attempt: r.attempt,
        outcome: match r.outcome {
            RunOutcome::Leased => proto::RunOutcome::Leased,
            RunOutcome::Acked => proto::RunOutcome::Acked,
            RunOutcome::LeaseExpired => proto::RunOutcome::LeaseExpired,
            RunOutcome::NotLeased => proto::RunOutcome::NotLeased,
            RunOutcome::SkippedOverlap => proto::RunOutcome::SkippedOverlap,
            RunOutcome::Enqueued => proto::RunOutcome::Enqueued,
        } as i32,
        kind: kind_to_proto(r.kind) as i32,
    }
}

fn kind_to_proto(kind: OccurrenceKind) -> proto::OccurrenceKind {
    match kind {
        OccurrenceKind::Scheduled => proto::OccurrenceKind::Scheduled,
        OccurrenceKind::Triggered => proto::OccurrenceKind::Triggered,
        OccurrenceKind::Backfill => proto::OccurrenceKind::Backfill,
    }
}

fn overlap_to_proto(policy: Overlap) -> proto::OverlapPolicy {
    match policy {
        Overlap::AllowAll => proto::OverlapPolicy::AllowAll,
        Overlap::Skip => proto::OverlapPolicy::Skip,
        Overlap::BufferOne => proto::OverlapPolicy::BufferOne,
    }
}

fn catchup_to_proto(policy: CatchUp) -> proto::CatchupPolicy {
    match policy {
        CatchUp::One => proto::CatchupPolicy::One,
        CatchUp::Skip => proto::CatchupPolicy::Skip,
        CatchUp::All { .. } => proto::CatchupPolicy::All,
    }
}

pub(super) fn occurrence_to_proto(o: Occurrence) -> proto::Occurrence {
    let jittered_time = o.jittered_ms().map(timestamp);
    let run_number = o.schedule.run_count;
    let (lease_token, lease_deadline, attempt) = match o.lease {
        Some(l) => (l.token, Some(timestamp(l.deadline_ms)), l.attempt),
        None => (String::new(), None, 1),
    };
    proto::Occurrence {
        occurrence_id: o.occurrence_id,
        schedule: Some(schedule_to_proto(o.schedule)),
        due_time: Some(timestamp(o.due_ms)),
        claim_time: Some(timestamp(o.claim_ms)),
        run_number,
        skipped_runs: o.skipped,
        lease_token,
        lease_deadline,
        attempt,
        jittered_time,
        kind: kind_to_proto(o.kind) as i32,
    }
}

pub(super) fn fire_time_to_proto(item: crate::timing::PreviewItem) -> proto::FireTime {
    proto::FireTime {
        time: Some(timestamp(item.utc_ms)),
        local_time: item.local,
        utc_offset_seconds: item.utc_offset_seconds,
        dst_adjusted: item.dst_adjusted,
        note: item.note,
    }
}

/// Page tokens are the hex of the last id returned: opaque, and safe for any id bytes.
pub(super) fn page_token(after_id: &str) -> String {
    after_id.bytes().map(|b| format!("{b:02x}")).collect()
}

pub(super) fn parse_page_token(token: &str) -> Result<String, ApiError> {
    parse_page_token_of(token, validate::MAX_ID_LEN)
}

/// A page token that holds up to `max_bytes` bytes (an id and more).
pub(super) fn parse_page_token_of(token: &str, max_bytes: usize) -> Result<String, ApiError> {
    let bad = || ApiError::invalid("page_token", "is not a token returned by this RPC");
    if !token.len().is_multiple_of(2) || token.len() > 2 * max_bytes {
        return Err(bad());
    }
    let bytes = (0..token.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(token.get(i..i + 2).unwrap_or("zz"), 16))
        .collect::<Result<Vec<u8>, _>>()
        .map_err(|_| bad())?;
    String::from_utf8(bytes).map_err(|_| bad())
}

/// A job's (or a schedule target's) backoff as the API says it.
pub(in crate::api) fn backoff_to_proto(b: Backoff) -> proto::Backoff {
    let kind = match b.kind {
        BackoffKind::Fixed => proto::BackoffKind::Fixed,
        BackoffKind::Exponential => proto::BackoffKind::Exponential,
    };
    proto::Backoff {
        kind: kind as i32,
        base: Some(duration(b.base_ms)),
        cap: (b.kind == BackoffKind::Exponential).then(|| duration(b.cap_ms)),
        jitter: b.jitter,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_tokens_round_trip_any_id() {
        for id in ["a", "x}{y", "ünï:cödé", "{x}"] {
            assert_eq!(parse_page_token(&page_token(id)).ok().as_deref(), Some(id));
        }
        assert!(parse_page_token("zz").is_err());
        assert!(parse_page_token("abc").is_err());
    }

    #[test]
    fn timestamps_round_trip_ms() {
        let ts = timestamp(1_767_225_600_123);
        assert_eq!((ts.seconds, ts.nanos), (1_767_225_600, 123_000_000));
    }
}
