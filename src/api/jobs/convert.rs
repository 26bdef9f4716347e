//! Translation between the job protobuf messages and the job domain types.

use crate::{
    api::{
        convert::{backoff_to_proto, duration, timestamp},
        ApiError,
    },
    domain::{EnqueueOutcome, Enqueued, JobRecord, JobSchedule, JobState, OnDependencyFailure},
    proto,
};

pub(super) fn state_to_proto(state: JobState) -> proto::JobState {
    match state {
        JobState::Pending => proto::JobState::Pending,
        JobState::Delayed => proto::JobState::Delayed,
        JobState::Active => proto::JobState::Active,
        JobState::Completed => proto::JobState::Completed,
        JobState::Dead => proto::JobState::Dead,
        JobState::Cancelled => proto::JobState::Cancelled,
        JobState::Waiting => proto::JobState::Waiting,
        JobState::Skipped => proto::JobState::Skipped,
    }
}

pub(super) fn rule_to_proto(rule: OnDependencyFailure) -> proto::DependencyFailure {
    match rule {
        OnDependencyFailure::Cancel => proto::DependencyFailure::Cancel,
        OnDependencyFailure::Run => proto::DependencyFailure::Run,
        OnDependencyFailure::Skip => proto::DependencyFailure::Skip,
    }
}

/// A state filter: UNSPECIFIED = any; unknown numbers are refused.
pub(super) fn state_filter(field: &str, value: i32) -> Result<Option<JobState>, ApiError> {
    Ok(Some(match proto::JobState::try_from(value) {
        Ok(proto::JobState::Unspecified) => return Ok(None),
        Ok(proto::JobState::Pending) => JobState::Pending,
        Ok(proto::JobState::Delayed) => JobState::Delayed,
        Ok(proto::JobState::Active) => JobState::Active,
        Ok(proto::JobState::Completed) => JobState::Completed,
        Ok(proto::JobState::Dead) => JobState::Dead,
        Ok(proto::JobState::Cancelled) => JobState::Cancelled,
        Ok(proto::JobState::Waiting) => JobState::Waiting,
        Ok(proto::JobState::Skipped) => JobState::Skipped,
        Err(_) => return Err(ApiError::invalid(field, format!("unknown state {value}"))),
    }))
}

/// A listing's view: whether payloads, headers, results and checkpoints go out (FULL);
/// UNSPECIFIED is BASIC (lua/list_jobs.lua leaves them out).
pub(super) fn full_view(field: &str, value: i32) -> Result<bool, ApiError> {
    match proto::JobView::try_from(value) {
        Ok(proto::JobView::Unspecified | proto::JobView::Basic) => Ok(false),
        Ok(proto::JobView::Full) => Ok(true),
        Err(_) => Err(ApiError::invalid(field, format!("unknown view {value}"))),
    }
}

pub(super) fn enqueued_to_proto(e: Enqueued) -> proto::EnqueueResponse {
    let outcome = match e.outcome {
        EnqueueOutcome::Created => proto::EnqueueOutcome::Created,
        EnqueueOutcome::Duplicate => proto::EnqueueOutcome::Duplicate,
        EnqueueOutcome::Replaced => proto::EnqueueOutcome::Replaced,
        EnqueueOutcome::Extended => proto::EnqueueOutcome::Extended,
    };
    proto::EnqueueResponse {
        job_id: e.id,
        outcome: outcome as i32,
        state: state_to_proto(e.state) as i32,
    }
}

pub(super) fn job_to_proto(r: JobRecord) -> proto::Job {
    let active = r.state == JobState::Active;
    proto::Job {
        job_id: r.id,
        queue: r.queue,
        name: r.name,
        payload: r.payload,
        headers: r.headers.into_iter().collect(),
        priority: r.priority,
        state: state_to_proto(r.state) as i32,
        attempts: r.attempts,
        max_attempts: r.max_attempts,
        backoff: Some(backoff_to_proto(r.backoff)),
        lease: Some(duration(r.lease_ms)),
        errors: r
            .errors
            .into_iter()
            .map(|e| proto::JobErrorEntry {
                attempt: e.attempt,
                message: e.message,
                time: Some(timestamp(e.at_ms)),
                worker_id: e.worker,
            })
            .collect(),
        create_time: Some(timestamp(r.create_ms)),
        update_time: Some(timestamp(r.update_ms)),
        run_at: r.run_at_ms.map(timestamp),
        lease_deadline: r.lease_until_ms.filter(|_| active).map(timestamp),
        worker_id: r.worker,
        finish_time: r.finish_ms.map(timestamp),
        dedup_key: r.dedup_key,
        schedule: r.schedule.map(schedule_to_proto),
        progress: r.progress.map(|p| proto::JobProgress {
            fraction: p.fraction,
            message: p.message,
            checkpoint: (!r.checkpoint.is_empty()).then_some(r.checkpoint),
            update_time: Some(timestamp(p.at_ms)),
        }),
        result: r.result,
        cancel_requested: r.cancel_requested,
        version: r.version,
        fairness_key: r.flow.fairness,
        concurrency_key: r.flow.concurrency,
        rate_key: r.flow.rate,
        cost: i32::try_from(r.flow.cost).unwrap_or(i32::MAX),
        flow_id: r
            .graph
            .as_ref()
            .map(|g| g.flow_id.clone())
            .unwrap_or_default(),
        flow_ref: r.graph.map(|g| g.reference).unwrap_or_default(),
    }
}

fn schedule_to_proto(s: JobSchedule) -> proto::JobSchedule {
    proto::JobSchedule {
        schedule_id: s.schedule_id,
        due_time: Some(timestamp(s.due_ms)),
        run_number: s.run,
    }
}

pub(super) fn claimed_to_proto(r: JobRecord) -> proto::ClaimedJob {
    let mut dependency_results = std::collections::HashMap::new();
    let dependencies = r
        .dependencies
        .into_iter()
        .map(|d| {
            if let Some(result) = d.result {
                dependency_results.insert(d.reference.clone(), result);
            }
            proto::JobDependency {
                r#ref: d.reference,
                job_id: d.job_id,
                state: d.state.map_or(proto::JobState::Unspecified, state_to_proto) as i32,
            }
        })
        .collect();
    let (flow_id, flow_ref) = r
        .graph
        .map(|g| (g.flow_id, g.reference))
        .unwrap_or_default();
    proto::ClaimedJob {
        flow_id,
        flow_ref,
        dependencies,
        dependency_results,
        job_id: r.id,
        lease_token: r.lease_token,
        attempt: r.attempts,
        lease_deadline: r.lease_until_ms.map(timestamp),
        queue: r.queue,
        name: r.name,
        payload: r.payload,
        headers: r.headers.into_iter().collect(),
        priority: r.priority,
        max_attempts: r.max_attempts,
        create_time: Some(timestamp(r.create_ms)),
        schedule: r.schedule.map(schedule_to_proto),
        checkpoint: r.checkpoint,
        cancel_requested: r.cancel_requested,
    }
}

/// Job page tokens are the decimal job number (within its queue) listing stopped at,
/// prefixed so they are not mistaken for (or accepted as) schedule tokens.
pub(super) fn page_token(after_seq: i64) -> String {
    format!("j{after_seq}")
}

pub(super) fn parse_page_token(token: &str) -> Result<Option<i64>, ApiError> {
    if token.is_empty() {
        return Ok(None);
    }
    token
        .strip_prefix('j')
        .and_then(|n| n.parse::<i64>().ok())
        .filter(|n| *n >= 0)
        .map(Some)
        .ok_or_else(|| ApiError::invalid("page_token", "is not a token returned by ListJobs"))
}
