//! Handlers of the flow-control RPCs (issue 32; docs/flow.md): validate, call
//! `crate::jobs`, convert. Every field is checked before anything is written, and
//! every refusal names the field.

use tonic::Request;

use super::{
    convert::{duration, timestamp},
    validate as check, ApiError, QueueApi,
};
use crate::{
    domain::{
        Fairness, KeyLimit, Namespace, QueuePolicy, Rate, MAX_FLOW_KEY_LEN, MAX_RATE,
        MAX_RATE_PERIOD_MS, MAX_THROTTLE_MS, MAX_WEIGHT, MAX_WEIGHTS,
    },
    proto,
    store::ops::list_flow_keys::{FlowKeyOrder, FlowKeyPage, MAX_PAGE},
};

const DEFAULT_PAGE_SIZE: u32 = 100;
/// Largest ListFlowKeys offset a page token may carry (Lua numbers are exact far
/// beyond it; no queue holds that many keys).
const MAX_OFFSET: u64 = 1_000_000_000_000;

/// A rate: limit 1-1,000,000, period 1 ms-1 day, burst at most 1,000,000.
fn rate(field: &str, r: &proto::RateLimit) -> Result<Rate, ApiError> {
    if r.limit == 0 || r.limit > MAX_RATE {
        return Err(ApiError::invalid(
            format!("{field}.limit"),
            format!("must be 1-{MAX_RATE}, got {}", r.limit),
        ));
    }
    let period_field = format!("{field}.period");
    let Some(period) = &r.period else {
        return Err(ApiError::invalid(period_field, "is required"));
    };
    let period_ms = check::duration_ms(&period_field, period)?;
    if !(1..=MAX_RATE_PERIOD_MS).contains(&period_ms) {
        return Err(ApiError::invalid(
            period_field,
            "must be 1 ms to 1 day (86400s)",
        ));
    }
    if r.burst > MAX_RATE {
        return Err(ApiError::invalid(
            format!("{field}.burst"),
            format!("must be at most {MAX_RATE}, got {}", r.burst),
        ));
    }
    Ok(Rate {
        limit: r.limit,
        period_ms,
        burst: r.burst,
    })
}

fn rate_to_proto(r: Rate) -> proto::RateLimit {
    proto::RateLimit {
        limit: r.limit,
        period: Some(duration(r.period_ms)),
        burst: r.burst,
    }
}

/// A flow key: 1-128 bytes.
fn flow_key<'a>(field: &str, key: &'a str) -> Result<&'a str, ApiError> {
    if key.is_empty() {
        return Err(ApiError::invalid(field, "is required"));
    }
    check::max_len(field, key, MAX_FLOW_KEY_LEN)
}

fn fairness(value: i32) -> Result<Fairness, ApiError> {
    match proto::Fairness::try_from(value) {
        Ok(proto::Fairness::Unspecified | proto::Fairness::Fifo) => Ok(Fairness::Fifo),
        Ok(proto::Fairness::RoundRobin) => Ok(Fairness::RoundRobin),
        Ok(proto::Fairness::Weighted) => Ok(Fairness::Weighted),
        Err(_) => Err(ApiError::invalid(
            "policy.fairness",
            format!("unknown fairness {value}"),
        )),
    }
}

/// The weights of a weighted policy: at most 1,000, keys 1-128 bytes, 1-10,000 each.
fn weights(
    p: &proto::QueuePolicy,
    fairness: Fairness,
) -> Result<std::collections::BTreeMap<String, u32>, ApiError> {
    if p.weights.is_empty() {
        return Ok(Default::default());
    }
    if fairness != Fairness::Weighted {
        return Err(ApiError::invalid(
            "policy.weights",
            "are for FAIRNESS_WEIGHTED only",
        ));
    }
    if p.weights.len() > MAX_WEIGHTS {
        return Err(ApiError::invalid(
            "policy.weights",
            format!("at most {MAX_WEIGHTS} entries, got {}", p.weights.len()),
        ));
    }
    for (key, &weight) in &p.weights {
        let field = format!("policy.weights[{key:?}]");
        if key.is_empty() || key.len() > MAX_FLOW_KEY_LEN {
            return Err(ApiError::invalid(
                field,
                format!("the key must be 1-{MAX_FLOW_KEY_LEN} bytes"),
            ));
        }
        if weight == 0 || weight > MAX_WEIGHT {
            return Err(ApiError::invalid(
                field,
                format!("must be 1-{MAX_WEIGHT}, got {weight}"),
            ));
        }
    }
    Ok(p.weights.clone().into_iter().collect())
}

/// A policy from its message; `None` (unset) is no policy.
pub(super) fn policy(p: Option<&proto::QueuePolicy>) -> Result<QueuePolicy, ApiError> {
    let Some(p) = p else {
        return Ok(QueuePolicy::default());
    };
    let fairness = fairness(p.fairness)?;
    let weights = weights(p, fairness)?;
    if p.default_weight > MAX_WEIGHT {
        return Err(ApiError::invalid(
            "policy.default_weight",
            format!(
                "must be 0-{MAX_WEIGHT} (0 means 1), got {}",
                p.default_weight
            ),
        ));
    }
    Ok(QueuePolicy {
        max_running: p.max_running,
        rate: p
            .rate
            .as_ref()
            .map(|r| rate("policy.rate", r))
            .transpose()?,
        per_key_max_running: p.per_key_max_running,
        per_key_rate: p
            .per_key_rate
            .as_ref()
            .map(|r| rate("policy.per_key_rate", r))
            .transpose()?,
        fairness,
        weights,
        default_weight: p.default_weight.max(1),
    })
}

pub(super) fn policy_to_proto(p: QueuePolicy) -> proto::QueuePolicy {
    let fairness = match p.fairness {
        Fairness::Fifo => proto::Fairness::Fifo,
        Fairness::RoundRobin => proto::Fairness::RoundRobin,
        Fairness::Weighted => proto::Fairness::Weighted,
    };
    let weighted = p.fairness == Fairness::Weighted;
    proto::QueuePolicy {
        max_running: p.max_running,
        rate: p.rate.map(rate_to_proto),
        per_key_max_running: p.per_key_max_running,
        per_key_rate: p.per_key_rate.map(rate_to_proto),
        fairness: fairness as i32,
        weights: p.weights.into_iter().collect(),
        default_weight: if weighted { p.default_weight.max(1) } else { 0 },
    }
}

pub(super) async fn set_policy(
    api: &QueueApi,
    namespace: &Namespace,
    request: Request<proto::SetQueuePolicyRequest>,
) -> Result<proto::SetQueuePolicyResponse, ApiError> {
    let req = request.into_inner();
    let queue = check::queue(&req.queue)?;
    let policy = policy(req.policy.as_ref())?;
    api.jobs.set_queue_policy(namespace, queue, &policy).await?;
    Ok(proto::SetQueuePolicyResponse {
        policy: (!policy.is_empty()).then(|| policy_to_proto(policy)),
    })
}

pub(super) async fn get_policy(
    api: &QueueApi,
    namespace: &Namespace,
    request: Request<proto::GetQueuePolicyRequest>,
) -> Result<proto::GetQueuePolicyResponse, ApiError> {
    let req = request.into_inner();
    let queue = check::queue(&req.queue)?;
    let stored = api.jobs.get_queue_policy(namespace, queue).await?;
    Ok(proto::GetQueuePolicyResponse {
        policy: stored.policy.map(policy_to_proto),
        key_limits: u32::try_from(stored.key_limits).unwrap_or(u32::MAX),
    })
}

pub(super) async fn set_key_limit(
    api: &QueueApi,
    namespace: &Namespace,
    request: Request<proto::SetKeyLimitRequest>,
) -> Result<proto::SetKeyLimitResponse, ApiError> {
    let req = request.into_inner();
    let queue = check::queue(&req.queue)?;
    let key = flow_key("key", &req.key)?;
    let limit = KeyLimit {
        max_running: req.max_running,
        rate: req.rate.as_ref().map(|r| rate("rate", r)).transpose()?,
    };
    let changed = api.jobs.set_key_limit(namespace, queue, key, limit).await?;
    Ok(proto::SetKeyLimitResponse { changed })
}

/// ThrottleKey's `for`: required (0 lifts), at most a day; a positive duration
/// under a millisecond is one.
fn throttle_ms(d: Option<&prost_types::Duration>) -> Result<i64, ApiError> {
    let Some(d) = d else {
        return Err(ApiError::invalid(
            "for",
            "is required (0s lifts the throttle)",
        ));
    };
    let ms = check::duration_ms("for", d)?;
    if ms > MAX_THROTTLE_MS {
        return Err(ApiError::invalid("for", "must be at most 1 day (86400s)"));
    }
    let positive = d.seconds > 0 || d.nanos > 0;
    Ok(if positive { ms.max(1) } else { 0 })
}

pub(super) async fn throttle_key(
    api: &QueueApi,
    namespace: &Namespace,
    request: Request<proto::ThrottleKeyRequest>,
) -> Result<proto::ThrottleKeyResponse, ApiError> {
    let req = request.into_inner();
    let queue = check::queue(&req.queue)?;
    let key = flow_key("key", &req.key)?;
    let for_ms = throttle_ms(req.r#for.as_ref())?;
    let until = api.jobs.throttle_key(namespace, queue, key, for_ms).await?;
    Ok(proto::ThrottleKeyResponse {
        until: until.map(timestamp),
    })
}

fn order(value: i32) -> Result<FlowKeyOrder, ApiError> {
    match proto::FlowKeyOrder::try_from(value) {
        Ok(proto::FlowKeyOrder::Unspecified | proto::FlowKeyOrder::Backlog) => {
            Ok(FlowKeyOrder::Backlog)
        }
        Ok(proto::FlowKeyOrder::Running) => Ok(FlowKeyOrder::Running),
        Ok(proto::FlowKeyOrder::Throttled) => Ok(FlowKeyOrder::Throttled),
        Err(_) => Err(ApiError::invalid(
            "order_by",
            format!("unknown order {value}"),
        )),
    }
}

/// The page token: the offset of the page, as ListFlowKeys returned it.
fn offset(token: &str) -> Result<u64, ApiError> {
    if token.is_empty() {
        return Ok(0);
    }
    token
        .parse::<u64>()
        .ok()
        .filter(|&n| n <= MAX_OFFSET && token.bytes().all(|b| b.is_ascii_digit()))
        .ok_or_else(|| ApiError::invalid("page_token", "is not a token ListFlowKeys returned"))
}

pub(super) async fn list_keys(
    api: &QueueApi,
    namespace: &Namespace,
    request: Request<proto::ListFlowKeysRequest>,
) -> Result<proto::ListFlowKeysResponse, ApiError> {
    let req = request.into_inner();
    let queue = check::queue(&req.queue)?;
    let order = order(req.order_by)?;
    let size = check::page_size(req.page_size, DEFAULT_PAGE_SIZE, MAX_PAGE)?;
    let offset = offset(&req.page_token)?;
    let limit = u32::try_from(size).unwrap_or(MAX_PAGE);
    let page = api
        .jobs
        .list_flow_keys(namespace, queue, order, offset, limit)
        .await?;
    Ok(page_to_proto(page))
}

fn page_to_proto(page: FlowKeyPage) -> proto::ListFlowKeysResponse {
    let keys = page
        .keys
        .into_iter()
        .map(|k| {
            let limit = k.limit.unwrap_or_default();
            proto::FlowKey {
                key: k.key,
                backlog: k.backlog,
                running: k.running,
                throttled_until: k.throttled_until_ms.map(timestamp),
                max_running: limit.max_running,
                rate: limit.rate.map(rate_to_proto),
            }
        })
        .collect();
    proto::ListFlowKeysResponse {
        keys,
        next_page_token: page.next_offset.map(|n| n.to_string()).unwrap_or_default(),
        read_time: Some(timestamp(page.now_ms)),
    }
}
