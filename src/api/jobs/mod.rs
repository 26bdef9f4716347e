//! Handlers of the job RPCs: validate, call `crate::jobs`, convert.

mod bulk;
pub(super) mod convert;
mod graph;
mod manage;
pub(super) mod validate;
mod watch;
mod work;

pub(super) use bulk::{cancel_jobs, delete_jobs, retry_jobs};
pub(super) use graph::{cancel_flow, enqueue_flow, get_flow, retry_flow};
pub(super) use manage::{delete, release};
pub(super) use watch::{watch, WatchJobStream};
pub(super) use work::{work, WorkStream};

use tonic::Request;

use super::{convert::timestamp, heavy, reply_budget, validate as check, ApiError, QueueApi};
use crate::{
    auth::Caller,
    domain::{
        limits::{PageShape, MAX_HEADERS},
        Failure, Namespace, NewJob, ProgressReport,
    },
    error::Error,
    jobs::{ClaimRequest, Lease},
    proto,
    store::StoreError,
    telemetry,
};

const MAX_CLAIM_QUEUES: usize = 16;
const MAX_CLAIM_JOBS: u32 = 100;
/// Most acks per AckJobs call or per claim (one script call stays about a ms).
const MAX_ACKS: usize = 100;
const MAX_ERROR_LEN: usize = 4096;
const DEFAULT_PAGE_SIZE: u32 = 100;
const MAX_PAGE_SIZE: u32 = 1000;

pub(super) async fn enqueue(
    api: &QueueApi,
    namespace: &Namespace,
    request: Request<proto::EnqueueRequest>,
) -> Result<proto::EnqueueResponse, ApiError> {
    let (_, extensions, req) = request.into_parts();
    let job = traced(validate::new_job(api, "", req)?);
    let admitted = api
        .quotas
        .admit_job(
            extensions.get::<Caller>(),
            namespace.as_str(),
            job.id.as_deref(),
        )
        .await?;
    let result = api.jobs.enqueue_one(namespace, job).await;
    drop(admitted);
    let result = result?;
    tracing::debug!(job_id = %result.id, outcome = ?result.outcome, "enqueued");
    Ok(convert::enqueued_to_proto(result))
}

pub(super) async fn enqueue_batch(
    api: &QueueApi,
    namespace: &Namespace,
    request: Request<proto::EnqueueBatchRequest>,
) -> Result<proto::EnqueueBatchResponse, ApiError> {
    let (_, extensions, req) = request.into_parts();
    let caller = extensions.get::<Caller>();
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
        let job = if !item.namespace.is_empty() && item.namespace != namespace.as_str() {
            Err(ApiError::invalid(
                format!("{at}namespace"),
                "must be empty or the batch's namespace",
            ))
        } else {
            validate::new_job(api, &at, item).map(traced)
        };
        match job {
            Ok(job) => {
                jobs.push(job);
                positions.push(i);
            }
            Err(error) => results.push(item_error(api, i, error)),
        }
    }
    // The principal's max_jobs lets in the first jobs that fit; the rest are
    // refused each as its own item, unless none fits (then the call is refused).
    let (fit, admitted) = api.quotas.admit_jobs(caller, jobs.len(), false).await?;
    let left_out = positions.split_off(fit.min(positions.len()));
    jobs.truncate(fit);
    results.extend(
        left_out
            .into_iter()
            .map(|i| item_error(api, i, super::Quotas::job_left_out(caller))),
    );
    let stored = api.jobs.enqueue(namespace, jobs).await;
    drop(admitted);
    let stored = stored?;
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

/// A job this call enqueues, with the call's trace context in its headers
/// (`traceparent`, with `--otlp-endpoint`), for the claim that hands it out to link
/// to and its worker to continue.
fn traced(mut job: NewJob) -> NewJob {
    telemetry::stamp(&mut job.headers, MAX_HEADERS);
    job
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
    namespace: &Namespace,
    request: Request<proto::ClaimJobRequest>,
) -> Result<proto::ClaimJobResponse, ApiError> {
    let wait = api
        .limits
        .wait(&request.get_ref().wait, request.metadata())?;
    let req = request.into_inner();
    check::max_len("worker_id", &req.worker_id, check::MAX_ID_LEN)?;
    let queues = claim_queues(&req.queues)?;
    let lease_ms = req
        .lease
        .as_ref()
        .map(|d| api.limits.lease_ms("lease", d))
        .transpose()?;
    let acks = Acks::check("acks", &req.acks)?;
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
        acks: &acks.leases,
        results: &acks.results,
    };
    let claimed = api.jobs.claim(namespace, &claim).await?;
    let span = tracing::Span::current();
    for job in &claimed.jobs {
        telemetry::handed_out(&span, &job.id, &job.headers);
    }
    tracing::debug!(claimed = claimed.jobs.len(), worker_id = %req.worker_id, "jobs claimed");
    let mut reply = proto::ClaimJobResponse {
        jobs: claimed
            .jobs
            .into_iter()
            .map(convert::claimed_to_proto)
            .collect(),
        acks: acks.answer(api, claimed.acked),
    };
    // The ack results go first; the jobs fill what is left.
    let acks_len = prost::Message::encoded_len(&proto::ClaimJobResponse {
        jobs: vec![],
        acks: reply.acks.clone(),
    });
    let overflow = reply_budget::fit_beside(&mut reply.jobs, api.limits.max_message_size, acks_len);
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
    namespace: &Namespace,
    request: Request<proto::AckJobRequest>,
) -> Result<proto::AckJobResponse, ApiError> {
    let req = request.into_inner();
    let id = check::id("job_id", &req.job_id)?;
    check::id("lease_token", &req.lease_token)?;
    validate::result("result", &req.result)?;
    api.jobs
        .ack(namespace, id, &req.lease_token, &req.result)
        .await?;
    Ok(proto::AckJobResponse {})
}

pub(super) async fn ack_jobs(
    api: &QueueApi,
    namespace: &Namespace,
    request: Request<proto::AckJobsRequest>,
) -> Result<proto::AckJobsResponse, ApiError> {
    let req = request.into_inner();
    if req.acks.is_empty() {
        return Err(ApiError::invalid("acks", "give at least one lease"));
    }
    let acks = Acks::check("acks", &req.acks)?;
    let acked = api
        .jobs
        .ack_many(namespace, &acks.leases, &acks.results)
        .await?;
    Ok(proto::AckJobsResponse {
        results: acks.answer(api, acked),
    })
}

/// The queues of a claim: 1-16 valid names, sorted, without duplicates.
fn claim_queues(queues: &[String]) -> Result<Vec<String>, ApiError> {
    if queues.is_empty() || queues.len() > MAX_CLAIM_QUEUES {
        return Err(ApiError::invalid(
            "queues",
            format!("give 1-{MAX_CLAIM_QUEUES} queues, got {}", queues.len()),
        ));
    }
    for (i, q) in queues.iter().enumerate() {
        check::id(&format!("queues[{i}]"), q)?;
    }
    let mut queues = queues.to_vec();
    queues.sort();
    queues.dedup();
    Ok(queues)
}

/// The acks of an AckJobs call or a claim: the well-formed ones go to Redis, and a
/// malformed one is answered INVALID_ARGUMENT on its own, as EnqueueBatch answers a
/// bad item.
struct Acks<'a> {
    items: &'a [proto::JobLease],
    leases: Vec<Lease<'a>>,
    /// (index in `leases`, result) of the well-formed acks with a non-empty result.
    results: Vec<(usize, &'a [u8])>,
    /// Per item: the refusal of a malformed one.
    refused: Vec<Option<ApiError>>,
}

impl<'a> Acks<'a> {
    fn check(field: &str, items: &'a [proto::JobLease]) -> Result<Self, ApiError> {
        if items.len() > MAX_ACKS {
            return Err(ApiError::invalid(
                field,
                format!("at most {MAX_ACKS} acks per call, got {}", items.len()),
            ));
        }
        let mut leases = Vec::with_capacity(items.len());
        let mut results = Vec::new();
        let mut refused = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            let valid = check::id(&format!("{field}[{i}].job_id"), &item.job_id)
                .and_then(|_| check::id(&format!("{field}[{i}].lease_token"), &item.lease_token))
                .and_then(|_| validate::result(&format!("{field}[{i}].result"), &item.result));
            match valid {
                Ok(()) => {
                    if !item.result.is_empty() {
                        results.push((leases.len(), item.result.as_slice()));
                    }
                    leases.push((item.job_id.as_str(), item.lease_token.as_str()));
                    refused.push(None);
                }
                Err(error) => refused.push(Some(error)),
            }
        }
        Ok(Acks {
            items,
            leases,
            results,
            refused,
        })
    }

    /// One result per item, in order: the refusal, or the outcome Redis gave.
    fn answer(self, api: &QueueApi, acked: Vec<Result<(), Error>>) -> Vec<proto::AckResult> {
        let mut acked = acked.into_iter();
        self.items
            .iter()
            .zip(self.refused)
            .map(|(item, refused)| {
                let outcome = match refused {
                    Some(error) => Err(error),
                    None => acked
                        .next()
                        .unwrap_or_else(|| {
                            Err(StoreError::corrupt("ack reply", "fewer outcomes than acks").into())
                        })
                        .map_err(ApiError::from),
                };
                ack_result(api, item.job_id.clone(), outcome)
            })
            .collect()
    }
}

/// An ack's outcome as the code and message AckJob would have answered.
fn ack_result(api: &QueueApi, job_id: String, outcome: Result<(), ApiError>) -> proto::AckResult {
    let (code, message) = outcome_code(api, outcome);
    proto::AckResult {
        job_id,
        code,
        message,
    }
}

/// The gRPC code (0 for OK) and message of an item's outcome.
fn outcome_code<T>(api: &QueueApi, outcome: Result<T, ApiError>) -> (i32, String) {
    match outcome {
        Ok(_) => (0, String::new()),
        Err(error) => {
            let status = api.rescue.status(error);
            (status.code() as i32, status.message().to_owned())
        }
    }
}

pub(super) async fn fail(
    api: &QueueApi,
    namespace: &Namespace,
    request: Request<proto::FailJobRequest>,
) -> Result<proto::FailJobResponse, ApiError> {
    let req = request.into_inner();
    let (id, token, failure) = failure_of(api, req)?;
    let failed = api.jobs.fail(namespace, &id, &token, &failure).await?;
    Ok(failed_to_proto(failed))
}

/// A FailJob request's job id, lease token and failure, validated (the namespace is
/// the caller's to check).
fn failure_of(
    api: &QueueApi,
    req: proto::FailJobRequest,
) -> Result<(String, String, Failure), ApiError> {
    check::id("job_id", &req.job_id)?;
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
    Ok((req.job_id, req.lease_token, failure))
}

fn failed_to_proto(failed: crate::domain::Failed) -> proto::FailJobResponse {
    proto::FailJobResponse {
        state: convert::state_to_proto(failed.state) as i32,
        run_at: failed.run_at_ms.map(timestamp),
    }
}

pub(super) async fn extend_lease(
    api: &QueueApi,
    namespace: &Namespace,
    request: Request<proto::ExtendLeaseRequest>,
) -> Result<proto::ExtendLeaseResponse, ApiError> {
    let req = request.into_inner();
    let (lease_ms, progress) = extension_of(api, &req)?;
    let extended = api
        .jobs
        .extend(
            namespace,
            &req.job_id,
            &req.lease_token,
            lease_ms,
            progress.as_ref(),
        )
        .await?;
    Ok(extended_to_proto(extended))
}

fn extended_to_proto(extended: crate::domain::Extended) -> proto::ExtendLeaseResponse {
    proto::ExtendLeaseResponse {
        lease_deadline: Some(timestamp(extended.until_ms)),
        cancel_requested: extended.cancel_requested,
    }
}

/// An ExtendLease request's new lease (None: unchanged, allowed only with progress)
/// and progress report, its job id and token validated (the namespace is the caller's
/// to check).
fn extension_of(
    api: &QueueApi,
    req: &proto::ExtendLeaseRequest,
) -> Result<(Option<i64>, Option<ProgressReport>), ApiError> {
    check::id("job_id", &req.job_id)?;
    check::id("lease_token", &req.lease_token)?;
    let progress = req
        .progress
        .as_ref()
        .map(|p| validate::progress("progress", p))
        .transpose()?;
    let lease_ms = match &req.lease {
        Some(lease) => Some(api.limits.lease_ms("lease", lease)?),
        None if progress.is_some() => None,
        None => return Err(ApiError::invalid("lease", "is required without progress")),
    };
    Ok((lease_ms, progress))
}

pub(super) async fn get(
    api: &QueueApi,
    namespace: &Namespace,
    request: Request<proto::GetJobRequest>,
) -> Result<proto::GetJobResponse, ApiError> {
    let allowed = heavy::allowed_wait(request.metadata());
    let heavy = api
        .limits
        .heavy
        .enter(request.extensions().get::<Caller>(), allowed)
        .await?;
    let req = request.into_inner();
    let id = check::id("job_id", &req.job_id)?;
    let record = api.jobs.get(namespace, id).await?;
    let reply = proto::GetJobResponse {
        job: Some(convert::job_to_proto(record)),
    };
    heavy.charge(|| prost::Message::encoded_len(&reply));
    Ok(reply)
}

pub(super) async fn list(
    api: &QueueApi,
    namespace: &Namespace,
    request: Request<proto::ListJobsRequest>,
) -> Result<proto::ListJobsResponse, ApiError> {
    let caller = request.extensions().get::<Caller>().cloned();
    let allowed = heavy::allowed_wait(request.metadata());
    let req = request.into_inner();
    let queue = check::id("queue", &req.queue)?;
    let page = PageShape {
        size: check::page_size(req.page_size, DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE)?,
        full: convert::full_view("view", req.view)?,
        max_bytes: api.limits.max_message_size,
    };
    let after = convert::parse_page_token(&req.page_token)?;
    let state = convert::state_filter("state", req.state)?;
    let filter = bulk::filter("filter", req.filter.as_ref())?;
    let heavy = if page.full {
        Some(api.limits.heavy.enter(caller.as_ref(), allowed).await?)
    } else {
        None
    };
    let listed = api
        .jobs
        .list(namespace, queue, after, page, state, &filter)
        .await?;
    let (records, mut next) = (listed.jobs, listed.next_after);
    let seqs: Vec<i64> = records.iter().map(|r| r.seq).collect();
    let mut jobs: Vec<proto::Job> = records.into_iter().map(convert::job_to_proto).collect();
    // The script's size estimate is a bound, not the encoding: if the page still does
    // not fit, it ends earlier and the rest opens the next page.
    if !reply_budget::fit(&mut jobs, api.limits.max_message_size).is_empty() {
        next = seqs.get(jobs.len().saturating_sub(1)).copied();
    }
    let reply = proto::ListJobsResponse {
        jobs,
        next_page_token: next.map(convert::page_token).unwrap_or_default(),
        scanned: listed.scanned,
    };
    if let Some(heavy) = heavy {
        heavy.charge(|| prost::Message::encoded_len(&reply));
    }
    Ok(reply)
}

pub(super) async fn cancel(
    api: &QueueApi,
    namespace: &Namespace,
    request: Request<proto::CancelJobRequest>,
) -> Result<proto::CancelJobResponse, ApiError> {
    let req = request.into_inner();
    let id = check::id("job_id", &req.job_id)?;
    let record = api.jobs.cancel(namespace, id).await?;
    Ok(proto::CancelJobResponse {
        job: Some(convert::job_to_proto(record)),
    })
}

pub(super) async fn retry(
    api: &QueueApi,
    namespace: &Namespace,
    request: Request<proto::RetryJobRequest>,
) -> Result<proto::RetryJobResponse, ApiError> {
    let req = request.into_inner();
    let id = check::id("job_id", &req.job_id)?;
    let record = api.jobs.retry(namespace, id).await?;
    Ok(proto::RetryJobResponse {
        job: Some(convert::job_to_proto(record)),
    })
}
