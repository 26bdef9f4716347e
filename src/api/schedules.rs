//! Handlers of the schedule RPCs: validate, call `crate::schedules`, convert.

use tonic::Request;

use crate::schedules::{BadNextRun, BadRange, NextRunEarliestBy, MAX_BACKFILL_SLOTS};

use super::{convert, cpu, reply_budget, validate, ApiError, QueueApi};
use crate::{
    auth::Caller,
    domain::{
        limits::PageShape, EnqueueTarget, Namespace, Overlap, ScheduleDef, ScheduleStatus,
        TimingDef,
    },
    proto,
    timing::{CatchUp, CatchUpRule, Timing, TimingSpec, MAX_CATCHUP_LIMIT},
};

const DEFAULT_PAGE_SIZE: u32 = 100;
const MAX_PAGE_SIZE: u32 = 1000;
const DEFAULT_PREVIEW: u32 = 10;
const MAX_PREVIEW: u32 = 1000;
/// `Schedule.max_attempts` at most (a bound that keeps the counter meaningful).
const MAX_OCCURRENCE_ATTEMPTS: u32 = 1000;

/// Parses the timing of a proto schedule; errors name `<field>.<timing field>`.
fn parse_timing(
    field: &str,
    s: &proto::Schedule,
) -> Result<(Timing, convert::RawTiming), ApiError> {
    let raw = convert::raw_timing(field, s)?;
    let timing = Timing::parse_new(&TimingSpec {
        cron: raw.cron.as_deref(),
        every_ms: raw.every_ms,
        timezone: &s.timezone,
        start_ms: raw.start_ms,
        end_ms: raw.end_ms,
        offset_ms: raw.offset_ms,
    })
    .map_err(|e| {
        // Timing messages start with their own field name ("cron: ..."); the API
        // names the full path instead, once.
        let message = e.to_string();
        let reason = message
            .strip_prefix(&format!("{}: ", e.field()))
            .unwrap_or(&message);
        ApiError::invalid(format!("{field}.{}", e.field()), reason)
    })?;
    Ok((timing, raw))
}

/// A schedule as UpsertSchedule may write it (an empty id asks for a new one).
fn schedule_def(
    max_payload_size: usize,
    s: proto::Schedule,
) -> Result<(ScheduleDef, Timing), ApiError> {
    if !s.id.is_empty() {
        validate::id("schedule.id", &s.id)?;
    }
    let (timing, raw) = parse_timing("schedule", &s)?;
    if s.run_limit > validate::MAX_RUN_LIMIT {
        return Err(ApiError::invalid(
            "schedule.run_limit",
            format!("must be at most {}", validate::MAX_RUN_LIMIT),
        ));
    }
    validate::max_len("schedule.job_name", &s.job_name, validate::MAX_NAME_LEN)?;
    validate::payload("schedule.payload", &s.payload, max_payload_size)?;
    validate::headers("schedule.headers", s.headers.iter())?;
    let kind = match (&raw.cron, raw.every_ms) {
        (Some(expr), _) => TimingDef::Cron(expr.trim().to_owned()),
        (None, Some(ms)) => TimingDef::EveryMs(ms),
        (None, None) => return Err(ApiError::invalid("schedule.timing", "set cron or every")),
    };
    let catchup = catchup_rule(&s)?;
    let overlap = overlap_policy(&s)?;
    let timezone = timing.timezone_name().to_owned();
    if s.max_attempts > MAX_OCCURRENCE_ATTEMPTS {
        return Err(ApiError::invalid(
            "schedule.max_attempts",
            format!("must be at most {MAX_OCCURRENCE_ATTEMPTS} (0: unlimited)"),
        ));
    }
    let s_max_attempts = s.max_attempts;
    let jitter_ms = jitter(&s, &timing)?;
    let id = s.id.clone();
    let mut def = convert::schedule_def(s, id, kind, timezone, &raw);
    def.catchup = catchup;
    def.overlap = overlap;
    def.max_attempts = s_max_attempts;
    def.jitter_ms = jitter_ms;
    Ok((def, timing))
}

/// `jitter` of a proto schedule (0: none): shorter than the interval, which for a cron
/// is the shortest gap between its next 100 fire times (from its start, or now).
fn jitter(s: &proto::Schedule, timing: &Timing) -> Result<i64, ApiError> {
    let field = "schedule.jitter";
    let Some(d) = &s.jitter else { return Ok(0) };
    if d.seconds < 0 || d.nanos < 0 {
        return Err(ApiError::invalid(field, "must not be negative"));
    }
    let ms = validate::duration_ms(field, d)?;
    if ms == 0 {
        return Ok(0);
    }
    let interval = match s.timing {
        Some(proto::schedule::Timing::Every(ref every)) => validate::duration_ms(field, every)?,
        _ => {
            let from = s
                .start_time
                .as_ref()
                .map_or(Ok(crate::clock::local_ms()), |t| {
                    validate::timestamp_ms(field, t)
                })?;
            let mut gap = i64::MAX;
            let mut at = timing.first_at_or_after(from);
            for _ in 0..100 {
                let Some(slot) = at else { break };
                at = timing.next_after(slot);
                if let Some(next) = at {
                    gap = gap.min(next - slot);
                }
            }
            gap
        }
    };
    if ms >= interval {
        return Err(ApiError::invalid(
            field,
            "must be shorter than the interval between runs",
        ));
    }
    Ok(ms)
}

/// Now by this host's clock: only to pick where a cron's gaps are measured.
/// `overlap_policy` of a proto schedule.
fn overlap_policy(s: &proto::Schedule) -> Result<Overlap, ApiError> {
    match proto::OverlapPolicy::try_from(s.overlap_policy) {
        Ok(proto::OverlapPolicy::Unspecified | proto::OverlapPolicy::AllowAll) => {
            Ok(Overlap::AllowAll)
        }
        Ok(proto::OverlapPolicy::Skip) => Ok(Overlap::Skip),
        Ok(proto::OverlapPolicy::BufferOne) => Ok(Overlap::BufferOne),
        Err(_) => Err(ApiError::invalid(
            "schedule.overlap_policy",
            format!("unknown value {}", s.overlap_policy),
        )),
    }
}

/// `catchup_policy`, `catchup_limit` and `catchup_window` of a proto schedule.
fn catchup_rule(s: &proto::Schedule) -> Result<CatchUpRule, ApiError> {
    let policy = match proto::CatchupPolicy::try_from(s.catchup_policy) {
        Ok(proto::CatchupPolicy::Unspecified | proto::CatchupPolicy::One) => CatchUp::One,
        Ok(proto::CatchupPolicy::Skip) => CatchUp::Skip,
        Ok(proto::CatchupPolicy::All) => CatchUp::All {
            limit: s.catchup_limit,
        },
        Err(_) => {
            return Err(ApiError::invalid(
                "schedule.catchup_policy",
                format!("unknown value {}", s.catchup_policy),
            ))
        }
    };
    match policy {
        CatchUp::All { limit } if limit == 0 || limit > MAX_CATCHUP_LIMIT => {
            return Err(ApiError::invalid(
                "schedule.catchup_limit",
                format!("must be 1-{MAX_CATCHUP_LIMIT} with CATCHUP_POLICY_ALL"),
            ))
        }
        CatchUp::One | CatchUp::Skip if s.catchup_limit != 0 => {
            return Err(ApiError::invalid(
                "schedule.catchup_limit",
                "is only read with CATCHUP_POLICY_ALL; leave it 0",
            ))
        }
        _ => {}
    }
    let window_ms = match &s.catchup_window {
        None => None,
        Some(d) => {
            let field = "schedule.catchup_window";
            if d.seconds < 0 || d.nanos < 0 || (d.seconds, d.nanos) == (0, 0) {
                return Err(ApiError::invalid(field, "must be positive"));
            }
            let ms = validate::duration_ms(field, d)?;
            if ms == 0 {
                return Err(ApiError::invalid(field, "must be at least 1ms"));
            }
            Some(ms)
        }
    };
    Ok(CatchUpRule { policy, window_ms })
}

pub(super) async fn upsert(
    api: &QueueApi,
    namespace: &Namespace,
    request: Request<proto::UpsertScheduleRequest>,
) -> Result<proto::UpsertScheduleResponse, ApiError> {
    let caller = request.extensions().get::<Caller>().cloned();
    let req = request.into_inner();
    let mut schedule = req
        .schedule
        .ok_or_else(|| ApiError::invalid("schedule", "is required"))?;
    let target = schedule.target.take();
    let max_payload_size = api.limits.max_payload_size;
    let (mut def, timing) = cpu::run(caller.as_ref(), move || {
        schedule_def(max_payload_size, schedule)
    })
    .await?;
    def.target = match target {
        None => None,
        Some(proto::schedule::Target::Enqueue(t)) => Some(enqueue_target(api, &def, t)?),
    };
    let admitted = api
        .quotas
        .admit_schedule(caller.as_ref(), namespace.as_str(), &def.id)
        .await?;
    let upserted = api.schedules.upsert(namespace, def, &timing).await;
    drop(admitted);
    let (created, record) = upserted?;
    tracing::debug!(schedule_id = %record.def.id, created, "schedule upserted");
    Ok(proto::UpsertScheduleResponse {
        schedule: Some(convert::schedule_to_proto(record)),
        created,
    })
}

/// A schedule's target (issue 30), validated by Enqueue's own rules (the job it
/// makes is an Enqueue of the schedule's job name and payload, with the schedule's
/// headers under the target's): errors name `schedule.enqueue.<field>`; unset fields
/// take Enqueue's defaults, which the stored target keeps.
fn enqueue_target(
    api: &QueueApi,
    def: &ScheduleDef,
    t: proto::EnqueueTarget,
) -> Result<EnqueueTarget, ApiError> {
    if def.job_name.is_empty() {
        return Err(ApiError::invalid(
            "schedule.job_name",
            "is required with a target: it names the jobs",
        ));
    }
    let mut merged = def.headers.clone();
    merged.extend(t.headers.iter().map(|(k, v)| (k.clone(), v.clone())));
    let request = proto::EnqueueRequest {
        queue: t.queue,
        name: def.job_name.clone(),
        headers: merged.into_iter().collect(),
        priority: t.priority,
        max_attempts: t.max_attempts,
        backoff: t.backoff,
        lease: t.lease,
        ..Default::default()
    };
    let max_lease_ms = i64::try_from(api.limits.max_lease.as_millis()).unwrap_or(i64::MAX);
    let spec =
        super::jobs::validate::new_job(api, "schedule.enqueue.", request)?.into_spec(max_lease_ms);
    Ok(EnqueueTarget {
        queue: spec.queue,
        priority: spec.priority,
        max_attempts: spec.max_attempts,
        backoff: spec.backoff,
        headers: t.headers.into_iter().collect(),
        lease_ms: spec.lease_ms,
    })
}

pub(super) async fn get(
    api: &QueueApi,
    namespace: &Namespace,
    request: Request<proto::GetScheduleRequest>,
) -> Result<proto::GetScheduleResponse, ApiError> {
    let req = request.into_inner();
    let id = validate::id("id", &req.id)?;
    let mut record = api.schedules.get(namespace, id).await?;
    let recent_runs = std::mem::take(&mut record.recent_runs)
        .into_iter()
        .map(convert::run_to_proto)
        .collect();
    Ok(proto::GetScheduleResponse {
        schedule: Some(convert::schedule_to_proto(record)),
        recent_runs,
    })
}

pub(super) async fn list(
    api: &QueueApi,
    namespace: &Namespace,
    request: Request<proto::ListSchedulesRequest>,
) -> Result<proto::ListSchedulesResponse, ApiError> {
    let req = request.into_inner();
    let page = PageShape {
        size: validate::page_size(req.page_size, DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE)?,
        full: full_view("view", req.view)?,
        max_bytes: api.limits.max_message_size,
    };
    let after = if req.page_token.is_empty() {
        String::new()
    } else {
        convert::parse_page_token(&req.page_token)?
    };
    let status = convert::status_filter("status", req.status)?;
    let overdue_by = req
        .overdue_by
        .as_ref()
        .map(|d| validate::duration_ms("overdue_by", d))
        .transpose()?;
    let by_next_run = match proto::ScheduleOrder::try_from(req.order) {
        Ok(proto::ScheduleOrder::Unspecified | proto::ScheduleOrder::Id) => overdue_by.is_some(),
        Ok(proto::ScheduleOrder::NextRun) => true,
        Err(_) => {
            return Err(ApiError::invalid(
                "order",
                format!("unknown order {}", req.order),
            ))
        }
    };
    if by_next_run {
        return list_by_next_run(api, namespace, &req.page_token, page, status, overdue_by).await;
    }
    let (records, mut next) = api.schedules.list(namespace, &after, page, status).await?;
    let mut schedules: Vec<proto::Schedule> = records
        .into_iter()
        .map(convert::schedule_to_proto)
        .collect();
    // As for jobs: a page that still does not fit ends earlier.
    if !reply_budget::fit(&mut schedules, api.limits.max_message_size).is_empty() {
        next = schedules.last().map(|s| s.id.clone());
    }
    Ok(proto::ListSchedulesResponse {
        schedules,
        next_page_token: next.map(|id| convert::page_token(&id)).unwrap_or_default(),
    })
}

/// ListSchedules by next run (`order` NEXT_RUN, or `overdue_by`): from the due index,
/// so only active schedules; the page token carries the last entry's next run and id.
async fn list_by_next_run(
    api: &QueueApi,
    namespace: &Namespace,
    token: &str,
    page: PageShape,
    status: Option<ScheduleStatus>,
    overdue_by: Option<i64>,
) -> Result<proto::ListSchedulesResponse, ApiError> {
    if status.is_some_and(|s| s != ScheduleStatus::Active) {
        return Err(ApiError::invalid(
            "status",
            "must be UNSPECIFIED or ACTIVE when listing by next run or overdue_by: only active schedules have a next run",
        ));
    }
    let after = if token.is_empty() {
        None
    } else {
        // "<next run ms>:<id>": an id and at most 21 bytes more.
        let text = convert::parse_page_token_of(token, validate::MAX_ID_LEN + 21)?;
        let (ms, id) = text
            .split_once(':')
            .and_then(|(ms, id)| Some((ms.parse::<i64>().ok()?, id.to_owned())))
            .ok_or_else(|| {
                ApiError::invalid("page_token", "is not a token returned by this RPC")
            })?;
        Some((ms, id))
    };
    let (records, next) = api
        .schedules
        .list_by_next_run(
            namespace,
            after.as_ref().map(|(ms, id)| (*ms, id.as_str())),
            overdue_by,
            page,
        )
        .await?;
    let mut next = next.map(|(ms, id)| format!("{ms}:{id}"));
    let mut schedules: Vec<proto::Schedule> = records
        .into_iter()
        .map(convert::schedule_to_proto)
        .collect();
    if !reply_budget::fit(&mut schedules, api.limits.max_message_size).is_empty() {
        next = schedules.last().map(|s| {
            let ms = s
                .next_run_time
                .as_ref()
                .map_or(0, |t| t.seconds * 1000 + i64::from(t.nanos) / 1_000_000);
            format!("{ms}:{}", s.id)
        });
    }
    Ok(proto::ListSchedulesResponse {
        schedules,
        next_page_token: next.map(|t| convert::page_token(&t)).unwrap_or_default(),
    })
}

/// A listing's view: whether payloads and headers go out (FULL); UNSPECIFIED is BASIC.
fn full_view(field: &str, value: i32) -> Result<bool, ApiError> {
    match proto::ScheduleView::try_from(value) {
        Ok(proto::ScheduleView::Unspecified | proto::ScheduleView::Basic) => Ok(false),
        Ok(proto::ScheduleView::Full) => Ok(true),
        Err(_) => Err(ApiError::invalid(field, format!("unknown view {value}"))),
    }
}

pub(super) async fn delete(
    api: &QueueApi,
    namespace: &Namespace,
    request: Request<proto::DeleteScheduleRequest>,
) -> Result<proto::DeleteScheduleResponse, ApiError> {
    let req = request.into_inner();
    let id = validate::id("id", &req.id)?;
    api.schedules.delete(namespace, id).await?;
    Ok(proto::DeleteScheduleResponse {})
}

pub(super) async fn pause(
    api: &QueueApi,
    namespace: &Namespace,
    request: Request<proto::PauseScheduleRequest>,
) -> Result<proto::PauseScheduleResponse, ApiError> {
    let req = request.into_inner();
    let id = validate::id("id", &req.id)?;
    let note = validate::max_len("note", &req.note, crate::schedules::MAX_PAUSE_NOTE_LEN)?;
    let record = api.schedules.pause(namespace, id, note).await?;
    Ok(proto::PauseScheduleResponse {
        schedule: Some(convert::schedule_to_proto(record)),
    })
}

pub(super) async fn resume(
    api: &QueueApi,
    namespace: &Namespace,
    request: Request<proto::ResumeScheduleRequest>,
) -> Result<proto::ResumeScheduleResponse, ApiError> {
    let req = request.into_inner();
    let id = validate::id("id", &req.id)?;
    let record = api.schedules.resume(namespace, id).await?;
    Ok(proto::ResumeScheduleResponse {
        schedule: Some(convert::schedule_to_proto(record)),
    })
}

pub(super) async fn claim(
    api: &QueueApi,
    namespace: &Namespace,
    request: Request<proto::ClaimDueScheduleRequest>,
) -> Result<proto::ClaimDueScheduleResponse, ApiError> {
    let wait = api
        .limits
        .wait(&request.get_ref().wait, request.metadata())?;
    let req = request.into_inner();
    validate::max_len("worker_id", &req.worker_id, validate::MAX_ID_LEN)?;
    let lease_ms = req
        .lease
        .as_ref()
        .map(|d| api.limits.lease_ms("lease", d))
        .transpose()?;
    let occurrence = api
        .schedules
        .claim(namespace, lease_ms, wait, &req.worker_id)
        .await?;
    if let Some(o) = &occurrence {
        tracing::debug!(occurrence_id = %o.occurrence_id, worker_id = %req.worker_id, "occurrence claimed");
    }
    Ok(proto::ClaimDueScheduleResponse {
        occurrence: occurrence.map(convert::occurrence_to_proto),
    })
}

pub(super) async fn ack_occurrence(
    api: &QueueApi,
    namespace: &Namespace,
    request: Request<proto::AckOccurrenceRequest>,
) -> Result<proto::AckOccurrenceResponse, ApiError> {
    let req = request.into_inner();
    let id = validate::id("occurrence_id", &req.occurrence_id)?;
    validate::id("lease_token", &req.lease_token)?;
    api.schedules
        .ack_occurrence(namespace, id, &req.lease_token)
        .await?;
    Ok(proto::AckOccurrenceResponse {})
}

pub(super) async fn trigger(
    api: &QueueApi,
    namespace: &Namespace,
    request: Request<proto::TriggerScheduleRequest>,
) -> Result<proto::TriggerScheduleResponse, ApiError> {
    let req = request.into_inner();
    let id = validate::id("id", &req.id)?;
    let (occurrence_id, due_ms) = api
        .schedules
        .trigger(namespace, id, req.ignore_overlap)
        .await?;
    Ok(proto::TriggerScheduleResponse {
        occurrence_id,
        due_time: Some(convert::timestamp(due_ms)),
    })
}

pub(super) async fn backfill(
    api: &QueueApi,
    namespace: &Namespace,
    request: Request<proto::BackfillScheduleRequest>,
) -> Result<proto::BackfillScheduleResponse, ApiError> {
    let req = request.into_inner();
    let id = validate::id("id", &req.id)?;
    let (Some(start), Some(end)) = (&req.start_time, &req.end_time) else {
        let field = if req.start_time.is_none() {
            "start_time"
        } else {
            "end_time"
        };
        return Err(ApiError::invalid(field, "is required"));
    };
    let start_ms = validate::timestamp_ms("start_time", start)?;
    let end_ms = validate::timestamp_ms("end_time", end)?;
    if end_ms < start_ms {
        return Err(ApiError::invalid(
            "end_time",
            "must not be before start_time",
        ));
    }
    match api
        .schedules
        .backfill(namespace, id, start_ms, end_ms)
        .await?
    {
        Ok((slots, added, waiting)) => Ok(proto::BackfillScheduleResponse {
            slots: u32::try_from(slots).unwrap_or(u32::MAX),
            added: u32::try_from(added).unwrap_or(u32::MAX),
            waiting: u32::try_from(waiting).unwrap_or(u32::MAX),
        }),
        Err(BadRange::TooManySlots) => Err(ApiError::invalid(
            "end_time",
            format!("the range holds more than {MAX_BACKFILL_SLOTS} slots; split it"),
        )),
        Err(BadRange::InTheFuture) => Err(ApiError::invalid(
            "end_time",
            "must not be in the future (Redis clock)",
        )),
    }
}

pub(super) async fn set_next_run(
    api: &QueueApi,
    namespace: &Namespace,
    request: Request<proto::SetScheduleNextRunRequest>,
) -> Result<proto::SetScheduleNextRunResponse, ApiError> {
    let req = request.into_inner();
    let id = validate::id("id", &req.id)?;
    let Some(at) = &req.next_run_time else {
        return Err(ApiError::invalid("next_run_time", "is required"));
    };
    let next_ms = validate::timestamp_ms("next_run_time", at)?;
    match api
        .schedules
        .set_next_run(namespace, id, next_ms, req.expected_revision)
        .await?
    {
        Ok(record) => Ok(proto::SetScheduleNextRunResponse {
            schedule: Some(convert::schedule_to_proto(record)),
        }),
        Err(bad) => Err(ApiError::invalid("next_run_time", bad_next_run(&bad))),
    }
}

/// What is wrong with a refused `next_run_time`, with the earliest or latest allowed.
fn bad_next_run(bad: &BadNextRun) -> String {
    let at = |ms: i64| {
        chrono::DateTime::from_timestamp_millis(ms).map_or_else(
            || format!("{ms} ms"),
            |t| t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        )
    };
    match bad {
        BadNextRun::TooEarly { earliest_ms, by } => {
            let why = match by {
                NextRunEarliestBy::Window => "its catchup_window before now",
                NextRunEarliestBy::MaxPast => "one day before now (it has no catchup_window)",
                NextRunEarliestBy::LastRun => {
                    "just after its last run (a slot handed out is not handed out again)"
                }
                NextRunEarliestBy::StartTime => "its start_time",
            };
            format!(
                "must not be before {} for this schedule: {why}",
                at(*earliest_ms)
            )
        }
        BadNextRun::AfterEnd(end_ms) => format!(
            "must not be after the schedule's end_time ({})",
            at(*end_ms)
        ),
    }
}

pub(super) async fn preview(
    api: &QueueApi,
    namespace: &Option<Namespace>,
    request: Request<proto::PreviewScheduleRequest>,
) -> Result<proto::PreviewScheduleResponse, ApiError> {
    let caller = request.extensions().get::<Caller>().cloned();
    let req = request.into_inner();
    let count = match req.count {
        0 => DEFAULT_PREVIEW,
        n if n > MAX_PREVIEW => {
            return Err(ApiError::invalid(
                "count",
                format!("must be at most {MAX_PREVIEW}"),
            ))
        }
        n => n,
    };
    let from = req
        .from_time
        .as_ref()
        .map(|t| validate::timestamp_ms("from_time", t))
        .transpose()?;
    let (timing, default_from) = match req.target {
        Some(proto::preview_schedule_request::Target::Id(id)) => {
            // The target has a namespace whenever the request names an id.
            let Some(namespace) = namespace else {
                return Err(ApiError::invalid("namespace", "must not be empty"));
            };
            let id = validate::id("id", &id)?;
            let record = api.schedules.get(namespace, id).await?;
            let timing = record
                .def
                .timing()
                .map_err(|e| ApiError::invalid("id", format!("stored timing is invalid: {e}")))?;
            (timing, record.next_run_ms)
        }
        Some(proto::preview_schedule_request::Target::Schedule(s)) => (
            cpu::run(caller.as_ref(), move || Ok(parse_timing("schedule", &s)?.0)).await?,
            None,
        ),
        None => return Err(ApiError::invalid("target", "set id or schedule")),
    };
    let from = from
        .or(default_from)
        .unwrap_or_else(|| api.schedules.now_ms());
    cpu::run(caller.as_ref(), move || {
        Ok(proto::PreviewScheduleResponse {
            fire_times: timing
                .preview(from, count as usize)
                .into_iter()
                .map(convert::fire_time_to_proto)
                .collect(),
            timezone: timing.timezone_name().to_owned(),
        })
    })
    .await
}
