//! DeleteJob and ReleaseJob (issue 36): validate, call `crate::jobs`, convert.

use tonic::Request;

use super::{convert, MAX_ERROR_LEN};
use crate::{
    api::{validate as check, ApiError, QueueApi},
    domain::Namespace,
    jobs::DEFAULT_RELEASE_REASON,
    proto,
};

pub(in crate::api) async fn delete(
    api: &QueueApi,
    namespace: &Namespace,
    request: Request<proto::DeleteJobRequest>,
) -> Result<proto::DeleteJobResponse, ApiError> {
    let req = request.into_inner();
    let id = check::id("job_id", &req.job_id)?;
    let record = api.jobs.delete(namespace, id).await?;
    tracing::debug!(job_id = %record.id, "deleted");
    Ok(proto::DeleteJobResponse {
        job: Some(convert::job_to_proto(record)),
    })
}

pub(in crate::api) async fn release(
    api: &QueueApi,
    namespace: &Namespace,
    request: Request<proto::ReleaseJobRequest>,
) -> Result<proto::ReleaseJobResponse, ApiError> {
    let req = request.into_inner();
    let id = check::id("job_id", &req.job_id)?;
    check::max_len("reason", &req.reason, MAX_ERROR_LEN)?;
    let reason = if req.reason.is_empty() {
        DEFAULT_RELEASE_REASON
    } else {
        req.reason.as_str()
    };
    let record = api
        .jobs
        .release_one(namespace, id, req.count_attempt, reason)
        .await?;
    Ok(proto::ReleaseJobResponse {
        job: Some(convert::job_to_proto(record)),
    })
}
