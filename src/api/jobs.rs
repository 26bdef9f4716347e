//! Handlers of the job RPCs. The `QueueService` trait methods (in `schedules.rs`)
//! delegate here in one line each.

use std::{collections::BTreeMap, time::Duration};

use tokio::time::Instant;
use tonic::{Request, Response, Status};

use super::{deadline, job_convert as convert, validate, ApiError, QueueApi};
use crate::{
    jobs::model::{
        Backoff, BackoffKind, Dedup, DedupMode, EnqueueOutcome, Enqueued, Failure, JobRecord,
        JobSpec, JobState, RunAt,
    },
    proto,
    wake::Woken,
};

const DEFAULT_MAX_ATTEMPTS: u32 = 3;
const MAX_ATTEMPTS: u32 = 1000;
const DEFAULT_LEASE_MS: i64 = 30_000;
const DEFAULT_BACKOFF_CAP_MS: i64 = 3_600_000;
const MAX_CLAIM_QUEUES: usize = 16;
const MAX_CLAIM_JOBS: u32 = 100;
const MAX_ERROR_LEN: usize = 4096;
const MAX_DEDUP_TTL_MS: i64 = 365 * 24 * 3_600_000;
const DEFAULT_PAGE_SIZE: u32 = 100;
const MAX_PAGE_SIZE: u32 = 1000;
/// Claims in a row that may find claimable work but claim none (all heads stale)
/// before a long-poll parks instead of retrying at once.
const MAX_EMPTY_RETRIES: usize = 8;

fn optional_ms(field: &str, d: &Option<prost_types::Duration>) -> Result<Option<i64>, ApiError> {
    d.as_ref()
        .map(|d| validate::duration_ms(field, d))
        .transpose()
}

impl QueueApi {
    /// A lease: positive and at most the server's cap.
    pub(super) fn lease_ms(&self, field: &str, d: &prost_types::Duration) -> Result<i64, ApiError> {
        let ms = validate::duration_ms(field, d)?;
        let cap = i64::try_from(self.limits.max_lease.as_millis()).unwrap_or(i64::MAX);
        if ms <= 0 {
            return Err(ApiError::invalid(field, "must be positive"));
        }
        if ms > cap {
            return Err(ApiError::invalid(
                field,
                format!(
                    "must be at most {}",
                    humantime::format_duration(self.limits.max_lease)
                ),
            ));
        }
        Ok(ms)
    }

    /// Validates one EnqueueRequest; `at` prefixes every field name ("jobs[3].").
    fn validate_job(&self, at: &str, req: proto::EnqueueRequest) -> Result<JobSpec, ApiError> {
        let f = |name: &str| format!("{at}{name}");
        validate::id(&f("queue"), &req.queue)?;
        validate::id(&f("name"), &req.name)?;
        if req.payload.len() > self.limits.max_payload_size {
            return Err(ApiError::TooLarge {
                field: f("payload"),
                size: req.payload.len(),
                limit: self.limits.max_payload_size,
            });
        }
        validate::headers(&f("headers"), req.headers.iter())?;
        let run_at = match &req.when {
            None => RunAt::Now,
            Some(proto::enqueue_request::When::RunAt(t)) => {
                RunAt::AtMs(validate::timestamp_ms(&f("run_at"), t)?)
            }
            Some(proto::enqueue_request::When::Delay(d)) => {
                RunAt::DelayMs(validate::duration_ms(&f("delay"), d)?)
            }
        };
        let max_attempts = match req.max_attempts {
            None => DEFAULT_MAX_ATTEMPTS,
            Some(n) if (1..=MAX_ATTEMPTS).contains(&n) => n,
            Some(n) => {
                return Err(ApiError::invalid(
                    f("max_attempts"),
                    format!("must be 1-{MAX_ATTEMPTS}, got {n}"),
                ))
            }
        };
        let backoff = match &req.backoff {
            None => Backoff::default(),
            Some(b) => self.validate_backoff(at, b)?,
        };
        let lease_ms = match &req.lease {
            None => DEFAULT_LEASE_MS
                .min(i64::try_from(self.limits.max_lease.as_millis()).unwrap_or(DEFAULT_LEASE_MS)),
            Some(d) => self.lease_ms(&f("lease"), d)?,
        };
        let id = if req.job_id.is_empty() {
            uuid::Uuid::new_v4().to_string()
        } else {
            validate::id(&f("job_id"), &req.job_id)?.to_owned()
        };
        let dedup = if req.dedup_key.is_empty() {
            if req.dedup_ttl.is_some() {
                return Err(ApiError::invalid(
                    f("dedup_ttl"),
                    "is set without dedup_key",
                ));
            }
            None
        } else {
            validate::max_len(&f("dedup_key"), &req.dedup_key, validate::MAX_ID_LEN)?;
            let ttl_ms = match optional_ms(&f("dedup_ttl"), &req.dedup_ttl)? {
                None => {
                    return Err(ApiError::invalid(
                        f("dedup_ttl"),
                        "is required with dedup_key",
                    ))
                }
                Some(ms) if ms <= 0 || ms > MAX_DEDUP_TTL_MS => {
                    return Err(ApiError::invalid(
                        f("dedup_ttl"),
                        "must be between 1 ms and 365 days",
                    ))
                }
                Some(ms) => ms,
            };
            let mode = match proto::DedupMode::try_from(req.dedup_mode) {
                Ok(proto::DedupMode::Unspecified | proto::DedupMode::Skip) => DedupMode::Skip,
                Ok(proto::DedupMode::Replace) => DedupMode::Replace,
                Ok(proto::DedupMode::Extend) => DedupMode::Extend,
                Err(_) => {
                    return Err(ApiError::invalid(
                        f("dedup_mode"),
                        format!("unknown mode {}", req.dedup_mode),
                    ))
                }
            };
            Some(Dedup {
                key: req.dedup_key,
                ttl_ms,
                mode,
            })
        };
        Ok(JobSpec {
            id,
            queue: req.queue,
            name: req.name,
            payload: req.payload,
            headers: req.headers.into_iter().collect::<BTreeMap<_, _>>(),
            priority: req.priority,
            run_at,
            max_attempts,
            backoff,
            lease_ms,
            dedup,
        })
    }

    fn validate_backoff(&self, at: &str, b: &proto::Backoff) -> Result<Backoff, ApiError> {
        let f = |name: &str| format!("{at}backoff.{name}");
        let kind = match proto::BackoffKind::try_from(b.kind) {
            Ok(proto::BackoffKind::Fixed) => BackoffKind::Fixed,
            Ok(proto::BackoffKind::Exponential) => BackoffKind::Exponential,
            _ => {
                return Err(ApiError::invalid(
                    f("kind"),
                    format!(
                        "unknown backoff {}: use BACKOFF_KIND_FIXED or BACKOFF_KIND_EXPONENTIAL",
                        b.kind
                    ),
                ))
            }
        };
        let base_ms = optional_ms(&f("base"), &b.base)?
            .ok_or_else(|| ApiError::invalid(f("base"), "is required"))?;
        let cap_ms = optional_ms(&f("cap"), &b.cap)?.unwrap_or(DEFAULT_BACKOFF_CAP_MS.max(base_ms));
        if kind == BackoffKind::Exponential && cap_ms < base_ms {
            return Err(ApiError::invalid(f("cap"), "must not be less than base"));
        }
        if !(0.0..=1.0).contains(&b.jitter) {
            return Err(ApiError::invalid(f("jitter"), "must be between 0 and 1"));
        }
        Ok(Backoff {
            kind,
            base_ms,
            cap_ms,
            jitter: b.jitter,
        })
    }

    /// Tells this instance's job timer that work became claimable.
    fn observe_enqueued(&self, namespace: &str, results: &[Enqueued]) {
        if results.iter().any(|e| {
            e.outcome == EnqueueOutcome::Created
                && matches!(e.state, JobState::Pending | JobState::Delayed)
        }) {
            self.wakers
                .observe_jobs(namespace, Some(self.schedules.clock().now_ms()));
        }
    }

    #[tracing::instrument(name = "enqueue", skip_all, fields(namespace = %request.get_ref().namespace, queue = %request.get_ref().queue))]
    pub(super) async fn enqueue_rpc(
        &self,
        request: Request<proto::EnqueueRequest>,
    ) -> Result<Response<proto::EnqueueResponse>, Status> {
        let req = request.into_inner();
        let namespace = validate::namespace(&req.namespace)?.to_owned();
        let spec = self.validate_job("", req)?;
        let result = self
            .jobs
            .enqueue_one(&namespace, spec)
            .await
            .map_err(|e| self.status(e))?;
        self.observe_enqueued(&namespace, std::slice::from_ref(&result));
        tracing::debug!(job_id = %result.id, outcome = ?result.outcome, "enqueued");
        Ok(Response::new(convert::enqueued_to_proto(result)))
    }

    #[tracing::instrument(name = "enqueue_batch", skip_all, fields(namespace = %request.get_ref().namespace, jobs = request.get_ref().jobs.len()))]
    pub(super) async fn enqueue_batch_rpc(
        &self,
        request: Request<proto::EnqueueBatchRequest>,
    ) -> Result<Response<proto::EnqueueBatchResponse>, Status> {
        let req = request.into_inner();
        let namespace = validate::namespace(&req.namespace)?.to_owned();
        let limit = self.limits.max_batch as usize;
        if req.jobs.len() > limit {
            return Err(ApiError::invalid(
                "jobs",
                format!("at most {limit} jobs per batch, got {}", req.jobs.len()),
            )
            .into());
        }
        // Validate every item first; only the valid ones go to Redis, in one call.
        let mut errors: Vec<(usize, Status)> = Vec::new();
        let mut specs = Vec::with_capacity(req.jobs.len());
        let mut positions = Vec::with_capacity(req.jobs.len());
        for (i, item) in req.jobs.into_iter().enumerate() {
            let at = format!("jobs[{i}].");
            if !item.namespace.is_empty() && item.namespace != namespace {
                let e = ApiError::invalid(
                    format!("{at}namespace"),
                    "must be empty or the batch's namespace",
                );
                errors.push((i, e.into()));
                continue;
            }
            match self.validate_job(&at, item) {
                Ok(spec) => {
                    specs.push(spec);
                    positions.push(i);
                }
                Err(e) => errors.push((i, e.into())),
            }
        }
        let stored = self
            .jobs
            .enqueue(&namespace, &specs)
            .await
            .map_err(|e| self.status(e))?;
        self.observe_enqueued(&namespace, &stored);
        let mut results: Vec<proto::EnqueueBatchResult> = positions
            .into_iter()
            .zip(stored)
            .map(|(i, e)| proto::EnqueueBatchResult {
                index: i as u32,
                result: Some(proto::enqueue_batch_result::Result::Ok(
                    convert::enqueued_to_proto(e),
                )),
            })
            .chain(
                errors
                    .into_iter()
                    .map(|(i, status)| proto::EnqueueBatchResult {
                        index: i as u32,
                        result: Some(proto::enqueue_batch_result::Result::Error(
                            proto::ItemError {
                                code: status.code() as i32,
                                message: status.message().to_owned(),
                            },
                        )),
                    }),
            )
            .collect();
        results.sort_by_key(|r| r.index);
        Ok(Response::new(proto::EnqueueBatchResponse { results }))
    }

    async fn claim_jobs_with_wait(
        &self,
        namespace: &str,
        queues: &[String],
        worker: &str,
        lease_ms: Option<i64>,
        max_jobs: u32,
        wait: Duration,
    ) -> Result<Vec<JobRecord>, ApiError> {
        let deadline = Instant::now() + wait;
        let waker = (!wait.is_zero()).then(|| self.wakers.job_waker(namespace, queues));
        let mut empty_retries = 0;
        loop {
            // Boxed for the same reason as the schedule long-poll: an idle waiter
            // should not carry the Redis call's multi-KB future through its wait.
            let batch = Box::pin(
                self.jobs
                    .claim_once(namespace, queues, worker, lease_ms, max_jobs),
            )
            .await?;
            self.wakers.observe_jobs(namespace, batch.next_ms);
            if !batch.jobs.is_empty() {
                if batch.more {
                    if let Some(waker) = &waker {
                        waker.pass_baton();
                    }
                }
                return Ok(batch.jobs);
            }
            let Some(waker) = &waker else {
                return Ok(Vec::new());
            };
            if Instant::now() >= deadline || self.shutdown.is_cancelled() {
                return Ok(Vec::new());
            }
            if batch.more && empty_retries < MAX_EMPTY_RETRIES {
                empty_retries += 1;
                continue;
            }
            empty_retries = 0;
            match waker.wait(deadline, &self.shutdown).await {
                Woken::Notified => continue,
                Woken::Deadline | Woken::Shutdown => return Ok(Vec::new()),
            }
        }
    }

    #[tracing::instrument(name = "claim_job", skip_all, fields(namespace = %request.get_ref().namespace, worker_id = %request.get_ref().worker_id))]
    pub(super) async fn claim_job_rpc(
        &self,
        request: Request<proto::ClaimJobRequest>,
    ) -> Result<Response<proto::ClaimJobResponse>, Status> {
        let requested = match &request.get_ref().wait {
            Some(d) => Duration::from_millis(validate::duration_ms("wait", d)? as u64),
            None => Duration::ZERO,
        };
        let wait = deadline::effective_wait(requested, self.limits.max_wait, request.metadata());
        let req = request.into_inner();
        let namespace = validate::namespace(&req.namespace)?;
        validate::max_len("worker_id", &req.worker_id, validate::MAX_ID_LEN)?;
        if req.queues.is_empty() || req.queues.len() > MAX_CLAIM_QUEUES {
            return Err(ApiError::invalid(
                "queues",
                format!("give 1-{MAX_CLAIM_QUEUES} queues, got {}", req.queues.len()),
            )
            .into());
        }
        for (i, q) in req.queues.iter().enumerate() {
            validate::id(&format!("queues[{i}]"), q)?;
        }
        let mut queues = req.queues.clone();
        queues.sort();
        queues.dedup();
        let lease_ms = req
            .lease
            .as_ref()
            .map(|d| self.lease_ms("lease", d))
            .transpose()?;
        let max_jobs = match req.max_jobs {
            0 => 1,
            n if n > MAX_CLAIM_JOBS => {
                return Err(ApiError::invalid(
                    "max_jobs",
                    format!("must be at most {MAX_CLAIM_JOBS}"),
                )
                .into())
            }
            n => n,
        };
        let jobs = self
            .claim_jobs_with_wait(namespace, &queues, &req.worker_id, lease_ms, max_jobs, wait)
            .await?;
        tracing::debug!(claimed = jobs.len(), "jobs claimed");
        Ok(Response::new(proto::ClaimJobResponse {
            jobs: jobs.into_iter().map(convert::claimed_to_proto).collect(),
        }))
    }

    #[tracing::instrument(name = "ack_job", skip_all, fields(namespace = %request.get_ref().namespace, job_id = %request.get_ref().job_id))]
    pub(super) async fn ack_job_rpc(
        &self,
        request: Request<proto::AckJobRequest>,
    ) -> Result<Response<proto::AckJobResponse>, Status> {
        let req = request.into_inner();
        let namespace = validate::namespace(&req.namespace)?;
        let id = validate::id("job_id", &req.job_id)?;
        validate::id("lease_token", &req.lease_token)?;
        self.jobs
            .ack(namespace, id, &req.lease_token)
            .await
            .map_err(|e| self.status(e))?;
        Ok(Response::new(proto::AckJobResponse {}))
    }

    #[tracing::instrument(name = "fail_job", skip_all, fields(namespace = %request.get_ref().namespace, job_id = %request.get_ref().job_id))]
    pub(super) async fn fail_job_rpc(
        &self,
        request: Request<proto::FailJobRequest>,
    ) -> Result<Response<proto::FailJobResponse>, Status> {
        let req = request.into_inner();
        let namespace = validate::namespace(&req.namespace)?;
        let id = validate::id("job_id", &req.job_id)?;
        validate::id("lease_token", &req.lease_token)?;
        validate::max_len("error", &req.error, MAX_ERROR_LEN)?;
        let failure = Failure {
            error: req.error,
            retry_after_ms: optional_ms("retry_after", &req.retry_after)?,
            non_retryable: req.non_retryable,
        };
        let failed = self
            .jobs
            .fail(namespace, id, &req.lease_token, &failure)
            .await
            .map_err(|e| self.status(e))?;
        if failed.state != JobState::Dead {
            self.wakers.observe_jobs(namespace, failed.run_at_ms);
        }
        Ok(Response::new(proto::FailJobResponse {
            state: convert::state_to_proto(failed.state) as i32,
            run_at: failed.run_at_ms.map(super::convert::timestamp),
        }))
    }

    #[tracing::instrument(name = "extend_lease", skip_all, fields(namespace = %request.get_ref().namespace, job_id = %request.get_ref().job_id))]
    pub(super) async fn extend_lease_rpc(
        &self,
        request: Request<proto::ExtendLeaseRequest>,
    ) -> Result<Response<proto::ExtendLeaseResponse>, Status> {
        let req = request.into_inner();
        let namespace = validate::namespace(&req.namespace)?;
        let id = validate::id("job_id", &req.job_id)?;
        validate::id("lease_token", &req.lease_token)?;
        let lease = req
            .lease
            .as_ref()
            .ok_or_else(|| ApiError::invalid("lease", "is required"))?;
        let lease_ms = self.lease_ms("lease", lease)?;
        let until = self
            .jobs
            .extend(namespace, id, &req.lease_token, lease_ms)
            .await
            .map_err(|e| self.status(e))?;
        Ok(Response::new(proto::ExtendLeaseResponse {
            lease_deadline: Some(super::convert::timestamp(until)),
        }))
    }

    #[tracing::instrument(name = "get_job", skip_all, fields(namespace = %request.get_ref().namespace, job_id = %request.get_ref().job_id))]
    pub(super) async fn get_job_rpc(
        &self,
        request: Request<proto::GetJobRequest>,
    ) -> Result<Response<proto::GetJobResponse>, Status> {
        let req = request.into_inner();
        let namespace = validate::namespace(&req.namespace)?;
        let id = validate::id("job_id", &req.job_id)?;
        let record = self
            .jobs
            .get(namespace, id)
            .await
            .map_err(|e| self.status(e))?;
        Ok(Response::new(proto::GetJobResponse {
            job: Some(convert::job_to_proto(record)),
        }))
    }

    #[tracing::instrument(name = "list_jobs", skip_all, fields(namespace = %request.get_ref().namespace, queue = %request.get_ref().queue))]
    pub(super) async fn list_jobs_rpc(
        &self,
        request: Request<proto::ListJobsRequest>,
    ) -> Result<Response<proto::ListJobsResponse>, Status> {
        let req = request.into_inner();
        let namespace = validate::namespace(&req.namespace)?;
        let queue = validate::id("queue", &req.queue)?;
        let page_size = match req.page_size {
            0 => DEFAULT_PAGE_SIZE,
            n if n > MAX_PAGE_SIZE => {
                return Err(ApiError::invalid(
                    "page_size",
                    format!("must be at most {MAX_PAGE_SIZE}"),
                )
                .into())
            }
            n => n,
        };
        let after = convert::parse_page_token(&req.page_token)?;
        let state = convert::state_filter("state", req.state)?;
        let (records, next) = self
            .jobs
            .list(namespace, queue, after, page_size as usize, state)
            .await
            .map_err(|e| self.status(e))?;
        Ok(Response::new(proto::ListJobsResponse {
            jobs: records.into_iter().map(convert::job_to_proto).collect(),
            next_page_token: next.map(convert::page_token).unwrap_or_default(),
        }))
    }

    #[tracing::instrument(name = "cancel_job", skip_all, fields(namespace = %request.get_ref().namespace, job_id = %request.get_ref().job_id))]
    pub(super) async fn cancel_job_rpc(
        &self,
        request: Request<proto::CancelJobRequest>,
    ) -> Result<Response<proto::CancelJobResponse>, Status> {
        let req = request.into_inner();
        let namespace = validate::namespace(&req.namespace)?;
        let id = validate::id("job_id", &req.job_id)?;
        let record = self
            .jobs
            .cancel(namespace, id)
            .await
            .map_err(|e| self.status(e))?;
        Ok(Response::new(proto::CancelJobResponse {
            job: Some(convert::job_to_proto(record)),
        }))
    }

    #[tracing::instrument(name = "retry_job", skip_all, fields(namespace = %request.get_ref().namespace, job_id = %request.get_ref().job_id))]
    pub(super) async fn retry_job_rpc(
        &self,
        request: Request<proto::RetryJobRequest>,
    ) -> Result<Response<proto::RetryJobResponse>, Status> {
        let req = request.into_inner();
        let namespace = validate::namespace(&req.namespace)?;
        let id = validate::id("job_id", &req.job_id)?;
        let record = self
            .jobs
            .retry(namespace, id)
            .await
            .map_err(|e| self.status(e))?;
        self.wakers
            .observe_jobs(namespace, Some(self.schedules.clock().now_ms()));
        Ok(Response::new(proto::RetryJobResponse {
            job: Some(convert::job_to_proto(record)),
        }))
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    /// Same as the schedule long-poll: a waiting ClaimJob must not carry the Redis
    /// call's multi-KB future through its wait.
    #[tokio::test]
    async fn an_idle_job_long_poll_is_small() {
        let api = super::super::offline_api();
        let queues = vec!["q".to_owned()];
        let wait = api.claim_jobs_with_wait("ns", &queues, "w", None, 1, Duration::from_secs(30));
        let size = std::mem::size_of_val(&wait);
        assert!(size < 2048, "claim_jobs_with_wait future is {size} bytes");
    }
}
