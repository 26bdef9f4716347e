//! Handlers of the inspection and queue-control RPCs (issue 14): validate, call
//! `crate::jobs`, convert. Every field is checked before anything is read or written.

use tonic::Request;

use super::{
    authorize::AllNamespaces,
    convert::{duration, timestamp},
    validate as check, ApiError, QueueApi,
};
use crate::{
    domain::{limits::is_namespace, Namespace, QueueStats},
    proto,
    store::ops::{
        list_workers::Session, publish_workers::SessionKind, purge_jobs, purge_jobs::PurgeState,
        retry_dead_jobs,
    },
};

const DEFAULT_PAGE_SIZE: u32 = 100;
const MAX_PAGE_SIZE: u32 = 1000;
const DEFAULT_BATCH: u32 = 100;

/// A bulk call's `limit`: 0 means [`DEFAULT_BATCH`], at most `max`.
fn limit(value: u32, max: u32) -> Result<u32, ApiError> {
    match value {
        0 => Ok(DEFAULT_BATCH),
        n if n > max => Err(ApiError::invalid("limit", format!("must be at most {max}"))),
        n => Ok(n),
    }
}

/// A queue name: required, an id's rules.
pub(super) fn queue(value: &str) -> Result<&str, ApiError> {
    if value.is_empty() {
        return Err(ApiError::invalid("queue", "is required"));
    }
    check::id("queue", value)
}

pub(super) async fn list_namespaces(
    api: &QueueApi,
    _: &AllNamespaces,
    request: Request<proto::ListNamespacesRequest>,
) -> Result<proto::ListNamespacesResponse, ApiError> {
    let req = request.into_inner();
    let size = check::page_size(req.page_size, DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE)?;
    // The token is the last name of the previous page.
    if !req.page_token.is_empty() && !is_namespace(&req.page_token) {
        return Err(ApiError::invalid(
            "page_token",
            "is not a token ListNamespaces returned",
        ));
    }
    let page = api.jobs.list_namespaces(&req.page_token, size).await?;
    Ok(proto::ListNamespacesResponse {
        namespaces: page.namespaces,
        next_page_token: page.next_after.unwrap_or_default(),
    })
}

pub(super) async fn list_queues(
    api: &QueueApi,
    namespace: &Namespace,
    request: Request<proto::ListQueuesRequest>,
) -> Result<proto::ListQueuesResponse, ApiError> {
    let req = request.into_inner();
    let size = check::page_size(req.page_size, DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE)?;
    if !req.page_token.is_empty() {
        check::id("page_token", &req.page_token)?;
    }
    let page = api
        .jobs
        .list_queues(namespace, &req.page_token, size)
        .await?;
    let now_ms = page.now_ms;
    Ok(proto::ListQueuesResponse {
        queues: page
            .queues
            .into_iter()
            .map(|q| queue_to_proto(q, now_ms))
            .collect(),
        next_page_token: page.next_after.unwrap_or_default(),
        read_time: Some(timestamp(now_ms)),
    })
}

fn queue_to_proto(q: QueueStats, now_ms: i64) -> proto::QueueInfo {
    let age = q
        .oldest_pending_ms
        .map(|_| duration(q.oldest_pending_age_ms(now_ms)));
    proto::QueueInfo {
        queue: q.queue,
        pending: q.pending,
        delayed: q.delayed,
        active: q.active,
        dead: q.dead,
        oldest_pending_age: age,
        paused: q.paused,
        counted: q.counted,
        removed: q.removed,
        waiting: q.waiting,
        policy: q.policy.map(super::flow::policy_to_proto),
    }
}

pub(super) async fn pause(
    api: &QueueApi,
    namespace: &Namespace,
    request: Request<proto::PauseQueueRequest>,
) -> Result<proto::PauseQueueResponse, ApiError> {
    let req = request.into_inner();
    let queue = queue(&req.queue)?;
    let changed = api.jobs.pause_queue(namespace, queue, true).await?;
    Ok(proto::PauseQueueResponse { changed })
}

pub(super) async fn resume(
    api: &QueueApi,
    namespace: &Namespace,
    request: Request<proto::ResumeQueueRequest>,
) -> Result<proto::ResumeQueueResponse, ApiError> {
    let req = request.into_inner();
    let queue = queue(&req.queue)?;
    let changed = api.jobs.pause_queue(namespace, queue, false).await?;
    Ok(proto::ResumeQueueResponse { changed })
}

pub(super) async fn retry_dead(
    api: &QueueApi,
    namespace: &Namespace,
    request: Request<proto::RetryDeadJobsRequest>,
) -> Result<proto::RetryDeadJobsResponse, ApiError> {
    let req = request.into_inner();
    let queue = queue(&req.queue)?;
    let limit = limit(req.limit, retry_dead_jobs::MAX_BATCH)?;
    let (retried, more) = api.jobs.retry_dead(namespace, queue, limit).await?;
    Ok(proto::RetryDeadJobsResponse { retried, more })
}

pub(super) async fn purge(
    api: &QueueApi,
    namespace: &Namespace,
    request: Request<proto::PurgeJobsRequest>,
) -> Result<proto::PurgeJobsResponse, ApiError> {
    let req = request.into_inner();
    let queue = queue(&req.queue)?;
    let state = match proto::JobState::try_from(req.state) {
        Ok(proto::JobState::Pending) => PurgeState::Pending,
        Ok(proto::JobState::Delayed) => PurgeState::Delayed,
        Ok(proto::JobState::Dead) => PurgeState::Dead,
        Ok(proto::JobState::Unspecified) => {
            return Err(ApiError::invalid(
                "state",
                "is required: JOB_STATE_PENDING, JOB_STATE_DELAYED or JOB_STATE_DEAD",
            ))
        }
        Ok(other) => {
            return Err(ApiError::invalid(
                "state",
                format!(
                    "{} jobs cannot be purged (only pending, delayed or dead)",
                    other.as_str_name()
                ),
            ))
        }
        Err(_) => {
            return Err(ApiError::invalid(
                "state",
                format!("unknown state {}", req.state),
            ))
        }
    };
    let limit = limit(req.limit, purge_jobs::MAX_BATCH)?;
    let (purged, more) = api.jobs.purge(namespace, queue, state, limit).await?;
    Ok(proto::PurgeJobsResponse { purged, more })
}

/// A page of the namespace's audit log, newest first (issue 33).
pub(super) async fn list_audit(
    api: &QueueApi,
    namespace: &Namespace,
    request: Request<proto::ListAuditEventsRequest>,
) -> Result<proto::ListAuditEventsResponse, ApiError> {
    let req = request.into_inner();
    let size = check::page_size(req.page_size, DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE)?;
    // The token is the stream id of the previous page's last record: `<ms>-<seq>`.
    let is_id = |token: &str| {
        token.split_once('-').is_some_and(|(ms, seq)| {
            [ms, seq].iter().all(|part| {
                !part.is_empty() && part.len() <= 20 && part.bytes().all(|b| b.is_ascii_digit())
            })
        })
    };
    if !req.page_token.is_empty() && !is_id(&req.page_token) {
        return Err(ApiError::invalid(
            "page_token",
            "is not a token ListAuditEvents returned",
        ));
    }
    let limit = u32::try_from(size).unwrap_or(MAX_PAGE_SIZE);
    let page = api
        .jobs
        .list_audit(namespace, &req.page_token, limit)
        .await?;
    let next_page_token = match (page.more, page.entries.last()) {
        (true, Some(last)) => last.id.clone(),
        _ => String::new(),
    };
    Ok(proto::ListAuditEventsResponse {
        events: page
            .entries
            .into_iter()
            .map(|entry| proto::AuditEvent {
                time: Some(timestamp(entry.at_ms)),
                principal: entry.principal,
                method: entry.method,
                target: entry.target,
                outcome: entry.outcome,
                via: entry.via,
            })
            .collect(),
        next_page_token,
    })
}

/// A page of the namespace's worker sessions, and its soonest ending leases (issue 33).
pub(super) async fn list_workers(
    api: &QueueApi,
    namespace: &Namespace,
    request: Request<proto::ListWorkersRequest>,
) -> Result<proto::ListWorkersResponse, ApiError> {
    let req = request.into_inner();
    let size = check::page_size(req.page_size, DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE)?;
    // The token is the cursor of the hash's scan: a number.
    let cursor = match req.page_token.as_str() {
        "" => "0",
        token if token.len() <= 20 && token.bytes().all(|b| b.is_ascii_digit()) => token,
        _ => {
            return Err(ApiError::invalid(
                "page_token",
                "is not a token ListWorkers returned",
            ))
        }
    };
    let limit = u32::try_from(size).unwrap_or(MAX_PAGE_SIZE);
    let page = api.jobs.list_workers(namespace, cursor, limit).await?;
    Ok(proto::ListWorkersResponse {
        workers: page.sessions.into_iter().map(worker_to_proto).collect(),
        expiring_leases: page
            .leases
            .into_iter()
            .map(|lease| proto::LeaseInfo {
                job_id: lease.id,
                queue: lease.queue,
                worker_id: lease.worker,
                lease_deadline: Some(timestamp(lease.deadline_ms)),
            })
            .collect(),
        next_page_token: page.next_cursor.unwrap_or_default(),
    })
}

fn worker_to_proto(session: Session) -> proto::WorkerInfo {
    let record = session.record;
    let kind = match record.kind {
        SessionKind::Work => proto::WorkerKind::Work,
        SessionKind::ClaimJob => proto::WorkerKind::ClaimJob,
        SessionKind::ClaimDueSchedule => proto::WorkerKind::ClaimDueSchedule,
    };
    proto::WorkerInfo {
        worker_id: record.worker,
        kind: kind as i32,
        queues: record.queues,
        capacity: record.capacity,
        in_flight: record.in_flight,
        connected_since: Some(timestamp(record.since_ms)),
        replica: record.replica,
        last_seen: Some(timestamp(session.last_seen_ms)),
    }
}
