//! ListJobs' filter and the bulk actions RetryJobs, CancelJobs and DeleteJobs
//! (issue 33): validate, call `crate::jobs`, convert.

use tonic::Request;

use super::convert;
use crate::{
    api::{validate as check, ApiError, QueueApi},
    domain::{BulkAction, JobFilter, Namespace},
    jobs::BulkSelection,
    proto,
};

/// Most ids one bulk call takes.
pub(in crate::api) const MAX_BULK_IDS: usize = 1000;
/// Most skips a bulk reply lists (it counts them all).
const MAX_SKIPS_LISTED: usize = 100;

/// A request's filter, validated; `field` names it in errors (`filter`,
/// `query.filter`). Absent: matches every job.
pub(in crate::api) fn filter(
    field: &str,
    filter: Option<&proto::JobFilter>,
) -> Result<JobFilter, ApiError> {
    let Some(f) = filter else {
        return Ok(JobFilter::default());
    };
    let part = |name: &str| format!("{field}.{name}");
    check::max_len(&part("name"), &f.name, check::MAX_NAME_LEN)?;
    check::max_len(&part("dedup_key"), &f.dedup_key, check::MAX_ID_LEN)?;
    check::max_len(
        &part("header_key"),
        &f.header_key,
        check::MAX_HEADER_KEY_LEN,
    )?;
    check::max_len(
        &part("header_value"),
        &f.header_value,
        check::MAX_HEADER_VALUE_LEN,
    )?;
    check::max_len(
        &part("error_contains"),
        &f.error_contains,
        check::MAX_NAME_LEN,
    )?;
    if f.header_key.is_empty() && !f.header_value.is_empty() {
        return Err(ApiError::invalid(
            part("header_key"),
            "is required with header_value",
        ));
    }
    let after = f
        .created_after
        .as_ref()
        .map(|ts| check::timestamp_ms(&part("created_after"), ts))
        .transpose()?;
    let before = f
        .created_before
        .as_ref()
        .map(|ts| check::timestamp_ms(&part("created_before"), ts))
        .transpose()?;
    if let (Some(after), Some(before)) = (after, before) {
        if after > before {
            return Err(ApiError::invalid(
                part("created_before"),
                "must not be before created_after",
            ));
        }
    }
    Ok(JobFilter {
        name: f.name.clone(),
        dedup_key: f.dedup_key.clone(),
        header_key: f.header_key.clone(),
        header_value: f.header_value.clone(),
        error_contains: f.error_contains.to_ascii_lowercase(),
        created_after: after,
        created_before: before,
    })
}

pub(in crate::api) async fn retry_jobs(
    api: &QueueApi,
    namespace: &Namespace,
    request: Request<proto::BulkJobsRequest>,
) -> Result<proto::BulkJobsResponse, ApiError> {
    bulk(api, namespace, BulkAction::Retry, request.into_inner()).await
}

pub(in crate::api) async fn cancel_jobs(
    api: &QueueApi,
    namespace: &Namespace,
    request: Request<proto::BulkJobsRequest>,
) -> Result<proto::BulkJobsResponse, ApiError> {
    bulk(api, namespace, BulkAction::Cancel, request.into_inner()).await
}

pub(in crate::api) async fn delete_jobs(
    api: &QueueApi,
    namespace: &Namespace,
    request: Request<proto::BulkJobsRequest>,
) -> Result<proto::BulkJobsResponse, ApiError> {
    bulk(api, namespace, BulkAction::Delete, request.into_inner()).await
}

async fn bulk(
    api: &QueueApi,
    namespace: &Namespace,
    action: BulkAction,
    req: proto::BulkJobsRequest,
) -> Result<proto::BulkJobsResponse, ApiError> {
    use proto::bulk_jobs_request::Selection;
    let queue = check::id("queue", &req.queue)?;
    let filter_of_query;
    let selection = match &req.selection {
        None => {
            return Err(ApiError::invalid(
                "selection",
                "job_ids or query is required",
            ))
        }
        Some(Selection::JobIds(ids)) => {
            let ids = &ids.job_ids;
            if ids.is_empty() || ids.len() > MAX_BULK_IDS {
                return Err(ApiError::invalid(
                    "job_ids",
                    format!("must hold 1-{MAX_BULK_IDS} ids, got {}", ids.len()),
                ));
            }
            for id in ids {
                check::id("job_ids", id)?;
            }
            BulkSelection::Ids(ids)
        }
        Some(Selection::Query(query)) => {
            filter_of_query = filter("query.filter", query.filter.as_ref())?;
            BulkSelection::Query {
                state: convert::state_filter("query.state", query.state)?,
                filter: &filter_of_query,
                after: convert::parse_page_token(&query.page_token)?,
            }
        }
    };
    let outcome = api.jobs.bulk(namespace, action, queue, selection).await?;
    tracing::debug!(
        action = action.as_str(),
        applied = outcome.applied,
        skipped = outcome.skips.len(),
        "bulk"
    );
    Ok(proto::BulkJobsResponse {
        applied: outcome.applied,
        skipped: outcome.skips.len() as u64,
        skips: outcome
            .skips
            .into_iter()
            .take(MAX_SKIPS_LISTED)
            .map(|(job_id, reason)| proto::BulkJobSkip {
                job_id,
                reason: skip_reason(&reason),
            })
            .collect(),
        scanned: outcome.scanned,
        next_page_token: outcome
            .next_after
            .map(convert::page_token)
            .unwrap_or_default(),
    })
}

/// A skip's reason as the reply says it: "not found", "state <state>" or "corrupt".
fn skip_reason(reason: &str) -> String {
    match reason {
        "missing" => "not found".to_owned(),
        "corrupt" => "corrupt record".to_owned(),
        state => format!("state {state}"),
    }
}
