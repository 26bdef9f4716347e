//! Handlers of the schedule RPCs.

use std::time::Duration;

use tokio::time::Instant;
use tonic::{Request, Response, Status};

use super::{convert, deadline, validate, ApiError, QueueApi};
use crate::{
    domain::TimingDef,
    proto::{self, queue_service_server::QueueService},
    schedules::timing_of,
    timing::{Timing, TimingSpec},
    wake::Woken,
};

const DEFAULT_PAGE_SIZE: u32 = 100;
const MAX_PAGE_SIZE: u32 = 1000;
const DEFAULT_PREVIEW: u32 = 10;
const MAX_PREVIEW: u32 = 1000;

/// Parses the timing of a proto schedule; errors name `<field>.<timing field>`.
fn parse_timing(
    field: &str,
    s: &proto::Schedule,
) -> Result<(Timing, convert::RawTiming), ApiError> {
    let raw = convert::raw_timing(field, s)?;
    let timing = Timing::parse(&TimingSpec {
        cron: raw.cron.as_deref(),
        every_ms: raw.every_ms,
        timezone: &s.timezone,
        start_ms: raw.start_ms,
        end_ms: raw.end_ms,
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

impl QueueApi {
    fn validate_schedule(
        &self,
        s: proto::Schedule,
    ) -> Result<(crate::domain::ScheduleDef, Timing), ApiError> {
        let id = if s.id.is_empty() {
            uuid::Uuid::new_v4().to_string()
        } else {
            validate::id("schedule.id", &s.id)?.to_owned()
        };
        let (timing, raw) = parse_timing("schedule", &s)?;
        if s.run_limit > validate::MAX_RUN_LIMIT {
            return Err(ApiError::invalid(
                "schedule.run_limit",
                format!("must be at most {}", validate::MAX_RUN_LIMIT),
            ));
        }
        validate::max_len("schedule.job_name", &s.job_name, validate::MAX_NAME_LEN)?;
        if s.payload.len() > self.limits.max_payload_size {
            return Err(ApiError::TooLarge {
                field: "schedule.payload".into(),
                size: s.payload.len(),
                limit: self.limits.max_payload_size,
            });
        }
        validate::headers("schedule.headers", s.headers.iter())?;
        let kind = match (&raw.cron, raw.every_ms) {
            (Some(expr), _) => TimingDef::Cron(expr.trim().to_owned()),
            (None, Some(ms)) => TimingDef::EveryMs(ms),
            (None, None) => return Err(ApiError::invalid("schedule.timing", "set cron or every")),
        };
        let timezone = timing.timezone_name().to_owned();
        Ok((convert::schedule_def(s, id, kind, timezone, &raw), timing))
    }

    async fn claim_with_wait(
        &self,
        namespace: &str,
        wait: Duration,
        lease_ms: Option<i64>,
    ) -> Result<Option<proto::Occurrence>, ApiError> {
        let deadline = Instant::now() + wait;
        let waker = (!wait.is_zero()).then(|| self.wakers.waker(namespace));
        loop {
            // Boxed: the Redis call's future is several KB, and a long-poll that held
            // its space inline would keep it for the whole wait (10k waiters: ~80 MB).
            let outcome = Box::pin(self.schedules.claim_once(namespace, lease_ms)).await?;
            self.wakers.observe(namespace, outcome.earliest_ms);
            let more_due = outcome.more_due();
            if let Some(occurrence) = outcome.occurrence {
                if more_due {
                    if let Some(waker) = &waker {
                        waker.pass_baton();
                    }
                }
                return Ok(Some(convert::occurrence_to_proto(occurrence)));
            }
            let Some(waker) = &waker else { return Ok(None) };
            if Instant::now() >= deadline || self.shutdown.is_cancelled() {
                return Ok(None);
            }
            match waker.wait(deadline, &self.shutdown).await {
                Woken::Notified => continue,
                Woken::Deadline | Woken::Shutdown => return Ok(None),
            }
        }
    }
}

#[tonic::async_trait]
impl QueueService for QueueApi {
    #[tracing::instrument(skip_all, fields(namespace = %request.get_ref().namespace))]
    async fn upsert_schedule(
        &self,
        request: Request<proto::UpsertScheduleRequest>,
    ) -> Result<Response<proto::UpsertScheduleResponse>, Status> {
        let req = request.into_inner();
        let namespace = validate::namespace(&req.namespace)?;
        self.monitor.touch(namespace);
        let schedule = req
            .schedule
            .ok_or_else(|| ApiError::invalid("schedule", "is required"))?;
        let (def, timing) = self.validate_schedule(schedule)?;
        let (created, record) = self
            .schedules
            .upsert(namespace, &def, &timing)
            .await
            .map_err(|e| self.status(e))?;
        self.wakers.observe(namespace, record.next_run_ms);
        tracing::debug!(schedule_id = %record.def.id, created, "schedule upserted");
        Ok(Response::new(proto::UpsertScheduleResponse {
            schedule: Some(convert::schedule_to_proto(record)),
            created,
        }))
    }

    #[tracing::instrument(skip_all, fields(namespace = %request.get_ref().namespace))]
    async fn get_schedule(
        &self,
        request: Request<proto::GetScheduleRequest>,
    ) -> Result<Response<proto::GetScheduleResponse>, Status> {
        let req = request.into_inner();
        let namespace = validate::namespace(&req.namespace)?;
        let id = validate::id("id", &req.id)?;
        let record = self
            .schedules
            .get(namespace, id)
            .await
            .map_err(|e| self.status(e))?;
        Ok(Response::new(proto::GetScheduleResponse {
            schedule: Some(convert::schedule_to_proto(record)),
        }))
    }

    #[tracing::instrument(skip_all, fields(namespace = %request.get_ref().namespace))]
    async fn list_schedules(
        &self,
        request: Request<proto::ListSchedulesRequest>,
    ) -> Result<Response<proto::ListSchedulesResponse>, Status> {
        let req = request.into_inner();
        let namespace = validate::namespace(&req.namespace)?;
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
        let after = if req.page_token.is_empty() {
            String::new()
        } else {
            convert::parse_page_token(&req.page_token)?
        };
        let status = convert::status_filter("status", req.status)?;
        let (records, next) = self
            .schedules
            .list(namespace, &after, page_size as usize, status)
            .await
            .map_err(|e| self.status(e))?;
        Ok(Response::new(proto::ListSchedulesResponse {
            schedules: records
                .into_iter()
                .map(convert::schedule_to_proto)
                .collect(),
            next_page_token: next.map(|id| convert::page_token(&id)).unwrap_or_default(),
        }))
    }

    #[tracing::instrument(skip_all, fields(namespace = %request.get_ref().namespace))]
    async fn delete_schedule(
        &self,
        request: Request<proto::DeleteScheduleRequest>,
    ) -> Result<Response<proto::DeleteScheduleResponse>, Status> {
        let req = request.into_inner();
        let namespace = validate::namespace(&req.namespace)?;
        let id = validate::id("id", &req.id)?;
        self.schedules
            .delete(namespace, id)
            .await
            .map_err(|e| self.status(e))?;
        Ok(Response::new(proto::DeleteScheduleResponse {}))
    }

    #[tracing::instrument(skip_all, fields(namespace = %request.get_ref().namespace))]
    async fn pause_schedule(
        &self,
        request: Request<proto::PauseScheduleRequest>,
    ) -> Result<Response<proto::PauseScheduleResponse>, Status> {
        let req = request.into_inner();
        let namespace = validate::namespace(&req.namespace)?;
        let id = validate::id("id", &req.id)?;
        let record = self
            .schedules
            .pause(namespace, id)
            .await
            .map_err(|e| self.status(e))?;
        Ok(Response::new(proto::PauseScheduleResponse {
            schedule: Some(convert::schedule_to_proto(record)),
        }))
    }

    #[tracing::instrument(skip_all, fields(namespace = %request.get_ref().namespace))]
    async fn resume_schedule(
        &self,
        request: Request<proto::ResumeScheduleRequest>,
    ) -> Result<Response<proto::ResumeScheduleResponse>, Status> {
        let req = request.into_inner();
        let namespace = validate::namespace(&req.namespace)?;
        let id = validate::id("id", &req.id)?;
        let record = self
            .schedules
            .resume(namespace, id)
            .await
            .map_err(|e| self.status(e))?;
        self.wakers.observe(namespace, record.next_run_ms);
        Ok(Response::new(proto::ResumeScheduleResponse {
            schedule: Some(convert::schedule_to_proto(record)),
        }))
    }

    #[tracing::instrument(skip_all, fields(namespace = %request.get_ref().namespace, worker_id = %request.get_ref().worker_id))]
    async fn claim_due_schedule(
        &self,
        request: Request<proto::ClaimDueScheduleRequest>,
    ) -> Result<Response<proto::ClaimDueScheduleResponse>, Status> {
        let requested = match &request.get_ref().wait {
            Some(d) => Duration::from_millis(validate::duration_ms("wait", d)? as u64),
            None => Duration::ZERO,
        };
        let wait = deadline::effective_wait(requested, self.limits.max_wait, request.metadata());
        let req = request.into_inner();
        let namespace = validate::namespace(&req.namespace)?;
        self.monitor.touch(namespace);
        validate::max_len("worker_id", &req.worker_id, validate::MAX_ID_LEN)?;
        let lease_ms = req
            .lease
            .as_ref()
            .map(|d| self.lease_ms("lease", d))
            .transpose()?;
        let occurrence = self
            .claim_with_wait(namespace, wait, lease_ms)
            .await
            .map_err(|e| self.status(e))?;
        if let Some(o) = &occurrence {
            tracing::debug!(occurrence_id = %o.occurrence_id, "occurrence claimed");
        }
        Ok(Response::new(proto::ClaimDueScheduleResponse {
            occurrence,
        }))
    }

    #[tracing::instrument(skip_all, fields(namespace = %request.get_ref().namespace, occurrence_id = %request.get_ref().occurrence_id))]
    async fn ack_occurrence(
        &self,
        request: Request<proto::AckOccurrenceRequest>,
    ) -> Result<Response<proto::AckOccurrenceResponse>, Status> {
        let req = request.into_inner();
        let namespace = validate::namespace(&req.namespace)?;
        let id = validate::id("occurrence_id", &req.occurrence_id)?;
        validate::id("lease_token", &req.lease_token)?;
        self.schedules
            .ack_occurrence(namespace, id, &req.lease_token)
            .await
            .map_err(ApiError::from)?;
        Ok(Response::new(proto::AckOccurrenceResponse {}))
    }

    #[tracing::instrument(skip_all, fields(namespace = %request.get_ref().namespace))]
    async fn preview_schedule(
        &self,
        request: Request<proto::PreviewScheduleRequest>,
    ) -> Result<Response<proto::PreviewScheduleResponse>, Status> {
        let req = request.into_inner();
        let count = match req.count {
            0 => DEFAULT_PREVIEW,
            n if n > MAX_PREVIEW => {
                return Err(
                    ApiError::invalid("count", format!("must be at most {MAX_PREVIEW}")).into(),
                )
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
                let namespace = validate::namespace(&req.namespace)?;
                let id = validate::id("id", &id)?;
                let record = self
                    .schedules
                    .get(namespace, id)
                    .await
                    .map_err(|e| self.status(e))?;
                let timing = timing_of(&record.def).map_err(|e| {
                    ApiError::invalid("id", format!("stored timing is invalid: {e}"))
                })?;
                (timing, record.next_run_ms)
            }
            Some(proto::preview_schedule_request::Target::Schedule(s)) => {
                (parse_timing("schedule", &s)?.0, None)
            }
            None => return Err(ApiError::invalid("target", "set id or schedule").into()),
        };
        let from = from
            .or(default_from)
            .unwrap_or_else(|| self.schedules.clock().now_ms());
        let fire_times = timing
            .preview(from, count as usize)
            .into_iter()
            .map(|item| proto::FireTime {
                time: Some(convert::timestamp(item.utc_ms)),
                local_time: item.local,
                utc_offset_seconds: item.utc_offset_seconds,
                dst_adjusted: item.dst_adjusted,
                note: item.note,
            })
            .collect();
        Ok(Response::new(proto::PreviewScheduleResponse {
            fire_times,
            timezone: timing.timezone_name().to_owned(),
        }))
    }

    // ---- jobs: the bodies (and their tracing spans) are in api/jobs.rs ----

    async fn enqueue(
        &self,
        request: Request<proto::EnqueueRequest>,
    ) -> Result<Response<proto::EnqueueResponse>, Status> {
        self.enqueue_rpc(request).await
    }

    async fn enqueue_batch(
        &self,
        request: Request<proto::EnqueueBatchRequest>,
    ) -> Result<Response<proto::EnqueueBatchResponse>, Status> {
        self.enqueue_batch_rpc(request).await
    }

    async fn claim_job(
        &self,
        request: Request<proto::ClaimJobRequest>,
    ) -> Result<Response<proto::ClaimJobResponse>, Status> {
        self.claim_job_rpc(request).await
    }

    async fn ack_job(
        &self,
        request: Request<proto::AckJobRequest>,
    ) -> Result<Response<proto::AckJobResponse>, Status> {
        self.ack_job_rpc(request).await
    }

    async fn fail_job(
        &self,
        request: Request<proto::FailJobRequest>,
    ) -> Result<Response<proto::FailJobResponse>, Status> {
        self.fail_job_rpc(request).await
    }

    async fn extend_lease(
        &self,
        request: Request<proto::ExtendLeaseRequest>,
    ) -> Result<Response<proto::ExtendLeaseResponse>, Status> {
        self.extend_lease_rpc(request).await
    }

    async fn get_job(
        &self,
        request: Request<proto::GetJobRequest>,
    ) -> Result<Response<proto::GetJobResponse>, Status> {
        self.get_job_rpc(request).await
    }

    async fn list_jobs(
        &self,
        request: Request<proto::ListJobsRequest>,
    ) -> Result<Response<proto::ListJobsResponse>, Status> {
        self.list_jobs_rpc(request).await
    }

    async fn cancel_job(
        &self,
        request: Request<proto::CancelJobRequest>,
    ) -> Result<Response<proto::CancelJobResponse>, Status> {
        self.cancel_job_rpc(request).await
    }

    async fn retry_job(
        &self,
        request: Request<proto::RetryJobRequest>,
    ) -> Result<Response<proto::RetryJobResponse>, Status> {
        self.retry_job_rpc(request).await
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    /// Each idle long-poll holds its future for the whole wait; 10,000 of them at
    /// 8 KB (the Redis call's state kept inline) cost 80 MB. Boxing that call keeps
    /// a waiter under 2 KB.
    #[tokio::test]
    async fn an_idle_schedule_long_poll_is_small() {
        let api = super::super::offline_api();
        let wait = api.claim_with_wait("ns", Duration::from_secs(30), None);
        let size = std::mem::size_of_val(&wait);
        assert!(size < 2048, "claim_with_wait future is {size} bytes");
    }
}
