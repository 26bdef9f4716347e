//! An Enqueue request, validated into a [`NewJob`] (what it leaves unset the use case
//! fills in). Every error names its field, with the item's position in a batch.

use std::borrow::Cow;

use crate::{
    api::{validate, ApiError, QueueApi},
    domain::{
        limits::{MAX_CHECKPOINT_LEN, MAX_PROGRESS_MESSAGE_LEN, MAX_RESULT_LEN},
        Backoff, BackoffKind, Dedup, DedupMode, FlowKeys, JobRetention, NewJob, ProgressReport,
        RetentionRule, RunAt, MAX_FLOW_KEY_LEN, MAX_RATE,
    },
    proto,
};

const MAX_ATTEMPTS: u32 = 1000;
const MAX_DEDUP_TTL_MS: i64 = 365 * 24 * 3_600_000;
/// Bounds of a job's own retention (issue 36).
const MAX_KEEP_LAST: u32 = 1_000_000;
const MAX_KEEP_FOR_MS: i64 = 365 * 24 * 3_600_000;

/// Validates one EnqueueRequest; `at` prefixes every field name ("jobs[3].").
pub(in crate::api) fn new_job(
    api: &QueueApi,
    at: &str,
    req: proto::EnqueueRequest,
) -> Result<NewJob, ApiError> {
    let f = |name: &'static str| field(at, name);
    let now_ms = api.schedules.now_ms();
    validate::id(&f("queue"), &req.queue)?;
    validate::id(&f("name"), &req.name)?;
    validate::payload(&f("payload"), &req.payload, api.limits.max_payload_size)?;
    validate::headers(&f("headers"), req.headers.iter())?;
    let run_at = match &req.when {
        None => RunAt::Now,
        Some(proto::enqueue_request::When::RunAt(t)) => {
            RunAt::AtMs(validate::timestamp_ms(&f("run_at"), t)?)
        }
        Some(proto::enqueue_request::When::Delay(d)) => {
            RunAt::DelayMs(validate::later_ms(&f("delay"), d, now_ms)?)
        }
    };
    if let Some(n) = req.max_attempts.filter(|n| !(1..=MAX_ATTEMPTS).contains(n)) {
        return Err(ApiError::invalid(
            f("max_attempts"),
            format!("must be 1-{MAX_ATTEMPTS}, got {n}"),
        ));
    }
    let backoff = req
        .backoff
        .as_ref()
        .map(|b| backoff(at, b, now_ms))
        .transpose()?;
    let lease_ms = req
        .lease
        .as_ref()
        .map(|d| api.limits.lease_ms(&f("lease"), d))
        .transpose()?;
    let id = if req.job_id.is_empty() {
        None
    } else {
        Some(validate::id(&f("job_id"), &req.job_id)?.to_owned())
    };
    let dedup = dedup(at, &req)?;
    let retention = match &req.retention {
        None => JobRetention::default(),
        Some(r) => JobRetention {
            on_complete: retention_rule(&f("retention.on_complete"), r.on_complete.as_ref())?,
            on_fail: retention_rule(&f("retention.on_fail"), r.on_fail.as_ref())?,
        },
    };
    let flow = flow_keys(at, &req)?;
    Ok(NewJob {
        id,
        queue: req.queue,
        name: req.name,
        payload: req.payload,
        headers: req.headers.into_iter().collect(),
        priority: req.priority,
        run_at,
        max_attempts: req.max_attempts,
        backoff,
        lease_ms,
        dedup,
        retention,
        flow,
    })
}

/// Field `name` of the item at `at` ("jobs[3]."): a single Enqueue (`at` empty)
/// names its fields without composing a string per field per call (issue 35).
fn field<'a>(at: &str, name: &'a str) -> Cow<'a, str> {
    if at.is_empty() {
        Cow::Borrowed(name)
    } else {
        Cow::Owned(format!("{at}{name}"))
    }
}

/// The job's flow keys (issue 32): each at most 128 bytes, cost 0-1,000,000 (unset: 1).
fn flow_keys(at: &str, req: &proto::EnqueueRequest) -> Result<FlowKeys, ApiError> {
    for (name, key) in [
        ("fairness_key", &req.fairness_key),
        ("concurrency_key", &req.concurrency_key),
        ("rate_key", &req.rate_key),
    ] {
        validate::max_len(&field(at, name), key, MAX_FLOW_KEY_LEN)?;
    }
    let cost = match req.cost {
        None => 1,
        Some(c) => u32::try_from(c)
            .ok()
            .filter(|&c| c <= MAX_RATE)
            .ok_or_else(|| {
                ApiError::invalid(
                    format!("{at}cost"),
                    format!("must be 0-{MAX_RATE}, got {c}"),
                )
            })?,
    };
    Ok(FlowKeys {
        fairness: req.fairness_key.clone(),
        concurrency: req.concurrency_key.clone(),
        rate: req.rate_key.clone(),
        cost,
    })
}

/// One retention rule under `field` ("jobs[3].retention.on_fail"): unset is the
/// server default; remove must be true, keep_last 1-1,000,000, keep_for 1 ms-365 days.
fn retention_rule(
    field: &str,
    rule: Option<&proto::RetentionRule>,
) -> Result<RetentionRule, ApiError> {
    use proto::retention_rule::Rule;
    Ok(match rule.and_then(|r| r.rule.as_ref()) {
        None => RetentionRule::ServerDefault,
        Some(Rule::Remove(true)) => RetentionRule::Remove,
        Some(Rule::Remove(false)) => {
            return Err(ApiError::invalid(
                format!("{field}.remove"),
                "must be true (leave the rule unset for the server default)",
            ))
        }
        Some(Rule::KeepLast(n)) if (1..=MAX_KEEP_LAST).contains(n) => RetentionRule::KeepLast(*n),
        Some(Rule::KeepLast(n)) => {
            return Err(ApiError::invalid(
                format!("{field}.keep_last"),
                format!("must be 1-{MAX_KEEP_LAST}, got {n}"),
            ))
        }
        Some(Rule::KeepFor(d)) => {
            let name = format!("{field}.keep_for");
            match validate::duration_ms(&name, d)? {
                ms if (1..=MAX_KEEP_FOR_MS).contains(&ms) => RetentionRule::KeepForMs(ms),
                _ => return Err(ApiError::invalid(name, "must be between 1 ms and 365 days")),
            }
        }
    })
}

fn dedup(at: &str, req: &proto::EnqueueRequest) -> Result<Option<Dedup>, ApiError> {
    let f = |name: &str| format!("{at}{name}");
    if req.dedup_key.is_empty() {
        if req.dedup_ttl.is_some() {
            return Err(ApiError::invalid(
                f("dedup_ttl"),
                "is set without dedup_key",
            ));
        }
        return Ok(None);
    }
    validate::max_len(&f("dedup_key"), &req.dedup_key, validate::MAX_ID_LEN)?;
    let ttl_ms = match validate::optional_ms(&f("dedup_ttl"), &req.dedup_ttl)? {
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
    Ok(Some(Dedup {
        key: req.dedup_key.clone(),
        ttl_ms,
        mode,
    }))
}

fn backoff(at: &str, b: &proto::Backoff, now_ms: i64) -> Result<Backoff, ApiError> {
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
    let base_ms = validate::optional_later_ms(&f("base"), &b.base, now_ms)?
        .ok_or_else(|| ApiError::invalid(f("base"), "is required"))?;
    let cap_ms = validate::optional_later_ms(&f("cap"), &b.cap, now_ms)?
        .unwrap_or(Backoff::DEFAULT_CAP_MS.max(base_ms));
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

/// A result an ack carries (issue 30): at most `limits::MAX_RESULT_LEN` bytes.
pub(super) fn result(field: &str, result: &[u8]) -> Result<(), ApiError> {
    bytes_at_most(field, result, MAX_RESULT_LEN)
}

/// A progress report (ExtendLease.progress, issue 30), under `field` ("progress",
/// "extend.progress"): fraction in 0..=1 (NaN refused), message and checkpoint within
/// their limits.
pub(super) fn progress(field: &str, p: &proto::JobProgress) -> Result<ProgressReport, ApiError> {
    if let Some(fraction) = p.fraction {
        if !(0.0..=1.0).contains(&fraction) {
            return Err(ApiError::invalid(
                format!("{field}.fraction"),
                format!("must be in 0..1, got {fraction}"),
            ));
        }
    }
    if let Some(message) = &p.message {
        validate::max_len(
            &format!("{field}.message"),
            message,
            MAX_PROGRESS_MESSAGE_LEN,
        )?;
    }
    if let Some(checkpoint) = &p.checkpoint {
        bytes_at_most(
            &format!("{field}.checkpoint"),
            checkpoint,
            MAX_CHECKPOINT_LEN,
        )?;
    }
    Ok(ProgressReport {
        fraction: p.fraction,
        message: p.message.clone(),
        checkpoint: p.checkpoint.clone(),
    })
}

fn bytes_at_most(field: &str, value: &[u8], max: usize) -> Result<(), ApiError> {
    if value.len() > max {
        return Err(ApiError::invalid(
            field,
            format!("must be at most {max} bytes, got {}", value.len()),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use super::field;

    /// A single Enqueue's field names are the static names themselves; a batch
    /// item's carry its position (issue 35 made the first allocation-free).
    #[test]
    fn field_names_carry_the_item_position_only_in_a_batch() {
        assert!(matches!(field("", "queue"), Cow::Borrowed("queue")));
        assert_eq!(field("jobs[3].", "queue"), "jobs[3].queue");
    }
}
