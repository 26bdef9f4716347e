//! Handlers of the job RPCs: validate, call `crate::jobs`, convert.

mod convert;
mod validate;

use tonic::Request;

use super::{convert::timestamp, reply_budget, validate as check, ApiError, QueueApi};
use crate::{
    domain::{limits::PageShape, Failure},
    jobs::ClaimRequest,
    proto,
};

const MAX_CLAIM_QUEUES: usize = 16;
const MAX_CLAIM_JOBS: u32 = 100;
const MAX_ERROR_LEN: usize = 4096;
const DEFAULT_PAGE_SIZE: u32 = 100;
const MAX_PAGE_SIZE: u32 = 1000;

pub(super) async fn enqueue(
    api: &QueueApi,
    request: Request<proto::EnqueueRequest>,
) -> Result<proto::EnqueueResponse, ApiError> {
    let req = request.into_inner();
    let namespace = check::namespace(&req.namespace)?.to_owned();
    let job = validate::new_job(api, "", req)?;
    let result = api.jobs.enqueue_one(&namespace, job).await?;
    tracing::debug!(job_id = %result.id, outcome = ?result.outcome, "enqueued");
    Ok(convert::enqueued_to_proto(result))
}

pub(super) async fn enqueue_batch(
    api: &QueueApi,
    request: Request<proto::EnqueueBatchRequest>,
) -> Result<proto::EnqueueBatchResponse, ApiError> {
    let req = request.into_inner();
    let namespace = check::namespace(&req.namespace)?.to_owned();
    let limit = api.limits.max_batch as usize;
    if req.jobs.len() > limit {
        return Err(ApiError::invalid(
            "jobs",
            format!("at most {limit} jobs per batch, got {}", req.jobs.len()),
        ));
    }
    // Validate every item first; only the valid ones go to Redis, in one call.
    let mut results = Vec::with_capacity(req.jobs.len());
    let mut jobs = Vec::with_capacity(req.jobs.len());
    let mut positions = Vec::with_capacity(req.jobs.len());
    for (i, item) in req.jobs.into_iter().enumerate() {
        let at = format!("jobs[{i}].");
        let job = if !item.namespace.is_empty() && item.namespace != namespace {
            Err(ApiError::invalid(
                format!("{at}namespace"),
                "must be empty or the batch's namespace",
            ))
        } else {
            validate::new_job(api, &at, item)
        };
        match job {
            Ok(job) => {
                jobs.push(job);
                positions.push(i);
            }
            Err(error) => results.push(item_error(api, i, error)),
        }
    }
    let stored = api.jobs.enqueue(&namespace, jobs).await?;
    results.extend(
        positions
            .into_iter()
            .zip(stored)
            .map(|(i, stored)| match stored {
                Ok(e) => proto::EnqueueBatchResult {
                    index: i as u32,
                    result: Some(proto::enqueue_batch_result::Result::Ok(
                        convert::enqueued_to_proto(e),
                    )),
                },
                Err(error) => item_error(api, i, error.into()),
            }),
    );
    results.sort_by_key(|r| r.index);
    Ok(proto::EnqueueBatchResponse { results })
}

/// A batch item's refusal, with the code and message its own call would have had.
fn item_error(api: &QueueApi, index: usize, error: ApiError) -> proto::EnqueueBatchResult {
    let status = api.rescue.status(error);
    proto::EnqueueBatchResult {
        index: index as u32,
        result: Some(proto::enqueue_batch_result::Result::Error(
            proto::ItemError {
                code: status.code() as i32,
                message: status.message().to_owned(),
            },
        )),
    }
}

pub(super) async fn claim(
    api: &QueueApi,
    request: Request<proto::ClaimJobRequest>,
) -> Result<proto::ClaimJobResponse, ApiError> {
    let wait = api
        .limits
        .wait(&request.get_ref().wait, request.metadata())?;
    let req = request.into_inner();
    let namespace = check::namespace(&req.namespace)?;
    check::max_len("worker_id", &req.worker_id, check::MAX_ID_LEN)?;
    if req.queues.is_empty() || req.queues.len() > MAX_CLAIM_QUEUES {
        return Err(ApiError::invalid(
            "queues",
            format!("give 1-{MAX_CLAIM_QUEUES} queues, got {}", req.queues.len()),
        ));
    }
    for (i, q) in req.queues.iter().enumerate() {
        check::id(&format!("queues[{i}]"), q)?;
    }
    let mut queues = req.queues.clone();
    queues.sort();
    queues.dedup();
    let lease_ms = req
        .lease
        .as_ref()
        .map(|d| api.limits.lease_ms("lease", d))
        .transpose()?;
    let max_jobs = match req.max_jobs {
        0 => 1,
        n if n > MAX_CLAIM_JOBS => {
            return Err(ApiError::invalid(
                "max_jobs",
                format!("must be at most {MAX_CLAIM_JOBS}"),
            ))
        }
        n => n,
    };
    let claim = ClaimRequest {
        queues: &queues,
        worker: &req.worker_id,
        lease_ms,
        max_jobs,
        wait,
        max_bytes: api.limits.max_message_size,
    };
    let jobs = api.jobs.claim(namespace, &claim).await?;
    tracing::debug!(claimed = jobs.len(), worker_id = %req.worker_id, "jobs claimed");
    let mut reply = proto::ClaimJobResponse {
        jobs: jobs.into_iter().map(convert::claimed_to_proto).collect(),
    };
    let overflow = reply_budget::fit(&mut reply.jobs, api.limits.max_message_size);
    if !overflow.is_empty() {
        // The script's size estimate fell short: give the leases back rather than
        // hand out work the reply cannot carry (tonic would fail the encoding and the
        // jobs would sit leased until their leases expired, an attempt each).
        let leases: Vec<(&str, &str)> = overflow
            .iter()
            .map(|j| (j.job_id.as_str(), j.lease_token.as_str()))
            .collect();
        let released = api.jobs.release(namespace, &leases).await?;
        tracing::warn!(
            kept = reply.jobs.len(),
            released,
            max_message_size = api.limits.max_message_size,
            "claimed jobs did not fit in the reply; their leases were released"
        );
    }
    Ok(reply)
}

pub(super) async fn ack(
    api: &QueueApi,
    request: Request<proto::AckJobRequest>,
) -> Result<proto::AckJobResponse, ApiError> {
    let req = request.into_inner();
    let namespace = check::namespace(&req.namespace)?;
    let id = check::id("job_id", &req.job_id)?;
    check::id("lease_token", &req.lease_token)?;
    api.jobs.ack(namespace, id, &req.lease_token).await?;
    Ok(proto::AckJobResponse {})
}

pub(super) async fn fail(
    api: &QueueApi,
    request: Request<proto::FailJobRequest>,
) -> Result<proto::FailJobResponse, ApiError> {
    let req = request.into_inner();
    let namespace = check::namespace(&req.namespace)?;
    let id = check::id("job_id", &req.job_id)?;
    check::id("lease_token", &req.lease_token)?;
    check::max_len("error", &req.error, MAX_ERROR_LEN)?;
    let failure = Failure {
        retry_after_ms: check::optional_later_ms(
            "retry_after",
            &req.retry_after,
            api.schedules.now_ms(),
        )?,
        error: req.error,
        non_retryable: req.non_retryable,
    };
    let failed = api
        .jobs
        .fail(namespace, id, &req.lease_token, &failure)
        .await?;
    Ok(proto::FailJobResponse {
        state: convert::state_to_proto(failed.state) as i32,
        run_at: failed.run_at_ms.map(timestamp),
    })
}

pub(super) async fn extend_lease(
    api: &QueueApi,
    request: Request<proto::ExtendLeaseRequest>,
) -> Result<proto::ExtendLeaseResponse, ApiError> {
    let req = request.into_inner();
    let namespace = check::namespace(&req.namespace)?;
    let id = check::id("job_id", &req.job_id)?;
    check::id("lease_token", &req.lease_token)?;
    let lease = req
        .lease
        .as_ref()
        .ok_or_else(|| ApiError::invalid("lease", "is required"))?;
    let lease_ms = api.limits.lease_ms("lease", lease)?;
    let until = api
        .jobs
        .extend(namespace, id, &req.lease_token, lease_ms)
        .await?;
    Ok(proto::ExtendLeaseResponse {
        lease_deadline: Some(timestamp(until)),
    })
}

pub(super) async fn get(
    api: &QueueApi,
    request: Request<proto::GetJobRequest>,
) -> Result<proto::GetJobResponse, ApiError> {
    let req = request.into_inner();
    let namespace = check::namespace(&req.namespace)?;
    let id = check::id("job_id", &req.job_id)?;
    let record = api.jobs.get(namespace, id).await?;
    Ok(proto::GetJobResponse {
        job: Some(convert::job_to_proto(record)),
    })
}

pub(super) async fn list(
    api: &QueueApi,
    request: Request<proto::ListJobsRequest>,
) -> Result<proto::ListJobsResponse, ApiError> {
    let req = request.into_inner();
    let namespace = check::namespace(&req.namespace)?;
    let queue = check::id("queue", &req.queue)?;
    let page = PageShape {
        size: check::page_size(req.page_size, DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE)?,
        full: convert::full_view("view", req.view)?,
        max_bytes: api.limits.max_message_size,
    };
    let after = convert::parse_page_token(&req.page_token)?;
    let state = convert::state_filter("state", req.state)?;
    let (records, mut next) = api.jobs.list(namespace, queue, after, page, state).await?;
    let seqs: Vec<i64> = records.iter().map(|r| r.seq).collect();
    let mut jobs: Vec<proto::Job> = records.into_iter().map(convert::job_to_proto).collect();
    // The script's size estimate is a bound, not the encoding: if the page still does
    // not fit, it ends earlier and the rest opens the next page.
    if !reply_budget::fit(&mut jobs, api.limits.max_message_size).is_empty() {
        next = seqs.get(jobs.len().saturating_sub(1)).copied();
    }
    Ok(proto::ListJobsResponse {
        jobs,
        next_page_token: next.map(convert::page_token).unwrap_or_default(),
    })
}

pub(super) async fn cancel(
    api: &QueueApi,
    request: Request<proto::CancelJobRequest>,
) -> Result<proto::CancelJobResponse, ApiError> {
    let req = request.into_inner();
    let namespace = check::namespace(&req.namespace)?;
    let id = check::id("job_id", &req.job_id)?;
    let record = api.jobs.cancel(namespace, id).await?;
    Ok(proto::CancelJobResponse {
        job: Some(convert::job_to_proto(record)),
    })
}

pub(super) async fn retry(
    api: &QueueApi,
    request: Request<proto::RetryJobRequest>,
) -> Result<proto::RetryJobResponse, ApiError> {
    let req = request.into_inner();
    let namespace = check::namespace(&req.namespace)?;
    let id = check::id("job_id", &req.job_id)?;
    let record = api.jobs.retry(namespace, id).await?;
    Ok(proto::RetryJobResponse {
        job: Some(convert::job_to_proto(record)),
    })
}
