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
        list_dead_groups::DeadGroup, list_workers::Session, publish_workers::SessionKind,
        purge_jobs, purge_jobs::PurgeState, retry_dead_jobs,
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
        enqueued_total: q.enqueued,
        completed_total: q.completed,
        failed_total: q.failed,
    }
}

pub(super) async fn pause(
    api: &QueueApi,
    namespace: &Namespace,
    request: Request<proto::PauseQueueRequest>,
) -> Result<proto::PauseQueueResponse, ApiError> {
    let req = request.into_inner();
    let queue = check::queue(&req.queue)?;
    let changed = api.jobs.pause_queue(namespace, queue, true).await?;
    Ok(proto::PauseQueueResponse { changed })
}

pub(super) async fn resume(
    api: &QueueApi,
    namespace: &Namespace,
    request: Request<proto::ResumeQueueRequest>,
) -> Result<proto::ResumeQueueResponse, ApiError> {
    let req = request.into_inner();
    let queue = check::queue(&req.queue)?;
    let changed = api.jobs.pause_queue(namespace, queue, false).await?;
    Ok(proto::ResumeQueueResponse { changed })
}

/// An error group's fingerprint (issue 33): "" (none), 16 lowercase hex digits, or
/// "other".
fn fingerprint(value: &str) -> Result<&str, ApiError> {
    let hex = value.len() == 16
        && value
            .bytes()
            .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    if value.is_empty() || value == "other" || hex {
        return Ok(value);
    }
    Err(ApiError::invalid(
        "error_fingerprint",
        "must be a DeadGroup.fingerprint: 16 lowercase hex digits or \"other\"",
    ))
}

/// Most groups a page token may skip: a token is an offset into the groups, which
/// a namespace holds at most about 10,000 of.
const MAX_GROUP_OFFSET: u64 = 1_000_000;

/// ListDeadGroups' page token: the number of groups before the page, in decimal.
fn group_offset(token: &str) -> Result<u64, ApiError> {
    if token.is_empty() {
        return Ok(0);
    }
    match token.parse::<u64>() {
        Ok(n) if n <= MAX_GROUP_OFFSET && token.bytes().all(|b| b.is_ascii_digit()) => Ok(n),
        _ => Err(ApiError::invalid(
            "page_token",
            "is not a token ListDeadGroups returned",
        )),
    }
}

pub(super) async fn list_dead_groups(
    api: &QueueApi,
    namespace: &Namespace,
    request: Request<proto::ListDeadGroupsRequest>,
) -> Result<proto::ListDeadGroupsResponse, ApiError> {
    let req = request.into_inner();
    if !req.queue.is_empty() {
        check::id("queue", &req.queue)?;
    }
    let size = check::page_size(req.page_size, DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE)?;
    let offset = group_offset(&req.page_token)?;
    let page = api
        .jobs
        .list_dead_groups(namespace, &req.queue, offset, size)
        .await?;
    Ok(proto::ListDeadGroupsResponse {
        groups: page.groups.into_iter().map(group_to_proto).collect(),
        next_page_token: page.next_offset.map(|n| n.to_string()).unwrap_or_default(),
    })
}

fn group_to_proto(g: DeadGroup) -> proto::DeadGroup {
    proto::DeadGroup {
        fingerprint: g.fingerprint,
        queue: g.queue,
        count: g.count,
        first_seen: g.first_seen_ms.map(timestamp),
        last_seen: g.last_seen_ms.map(timestamp),
        sample_job_id: g.sample_job_id,
        sample_error: g.sample_error,
    }
}

pub(super) async fn retry_dead(
    api: &QueueApi,
    namespace: &Namespace,
    request: Request<proto::RetryDeadJobsRequest>,
) -> Result<proto::RetryDeadJobsResponse, ApiError> {
    let req = request.into_inner();
    let queue = check::queue(&req.queue)?;
    let fingerprint = fingerprint(&req.error_fingerprint)?;
    let limit = limit(req.limit, retry_dead_jobs::MAX_BATCH)?;
    let (retried, more) = api
        .jobs
        .retry_dead(namespace, queue, fingerprint, limit)
        .await?;
    Ok(proto::RetryDeadJobsResponse { retried, more })
}

pub(super) async fn purge(
    api: &QueueApi,
    namespace: &Namespace,
    request: Request<proto::PurgeJobsRequest>,
) -> Result<proto::PurgeJobsResponse, ApiError> {
    let req = request.into_inner();
    let queue = check::queue(&req.queue)?;
    let fingerprint = fingerprint(&req.error_fingerprint)?;
    let state = purge_state(req.state, !fingerprint.is_empty())?;
    let limit = limit(req.limit, purge_jobs::MAX_BATCH)?;
    let (purged, more) = api
        .jobs
        .purge(namespace, queue, state, fingerprint, limit)
        .await?;
    Ok(proto::PurgeJobsResponse { purged, more })
}

/// PurgeJobs' `state`; with an error fingerprint (`grouped`) it is DEAD or left
/// unspecified (meaning DEAD).
fn purge_state(state: i32, grouped: bool) -> Result<PurgeState, ApiError> {
    match proto::JobState::try_from(state) {
        Ok(proto::JobState::Dead) => Ok(PurgeState::Dead),
        Ok(proto::JobState::Unspecified) if grouped => Ok(PurgeState::Dead),
        Ok(proto::JobState::Pending | proto::JobState::Delayed) if grouped => {
            Err(ApiError::invalid(
                "state",
                "must be JOB_STATE_DEAD or unspecified with error_fingerprint (only dead jobs \
                 have an error group)",
            ))
        }
        Ok(proto::JobState::Pending) => Ok(PurgeState::Pending),
        Ok(proto::JobState::Delayed) => Ok(PurgeState::Delayed),
        Ok(proto::JobState::Unspecified) => Err(ApiError::invalid(
            "state",
            "is required: JOB_STATE_PENDING, JOB_STATE_DELAYED or JOB_STATE_DEAD",
        )),
        Ok(other) => Err(ApiError::invalid(
            "state",
            format!(
                "{} jobs cannot be purged (only pending, delayed or dead)",
                other.as_str_name()
            ),
        )),
        Err(_) => Err(ApiError::invalid("state", format!("unknown state {state}"))),
    }
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
