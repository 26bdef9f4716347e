//! `dueq queue policy set|get` (SetQueuePolicy, GetQueuePolicy), `dueq queue
//! key-limit` (SetKeyLimit), `dueq queue throttle` (ThrottleKey) and `dueq queue
//! keys` (ListFlowKeys): flow control (docs/flow.md).

use dueq::{
    config::ctl::{
        FairnessArg, FlowKeyOrderArg, KeyLimitArgs, KeysArgs, PolicySetArgs, QueueTarget, RateArg,
        ThrottleArgs,
    },
    proto,
};
use serde_json::{json, Value};

use super::{
    connect::connect,
    render::{self, emit},
    Failure,
};

fn duration(d: std::time::Duration) -> prost_types::Duration {
    prost_types::Duration {
        seconds: i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
        nanos: i32::try_from(d.subsec_nanos()).unwrap_or(0),
    }
}

fn rate(rate: Option<RateArg>, burst: Option<u32>) -> Option<proto::RateLimit> {
    rate.map(|r| proto::RateLimit {
        limit: r.limit,
        period: Some(duration(r.period)),
        burst: burst.unwrap_or(0),
    })
}

fn fairness_name(value: i32) -> &'static str {
    match proto::Fairness::try_from(value) {
        Ok(proto::Fairness::RoundRobin) => "round-robin",
        Ok(proto::Fairness::Weighted) => "weighted",
        _ => "fifo",
    }
}

/// "100/1s +5" (burst), or "-".
fn rate_cell(rate: &Option<proto::RateLimit>) -> String {
    match rate {
        Some(r) => {
            let mut text = format!("{}/{}", r.limit, render::duration_cell(&r.period));
            if r.burst > 0 {
                text.push_str(&format!(" +{}", r.burst));
            }
            text
        }
        None => "-".into(),
    }
}

fn rate_json(rate: &Option<proto::RateLimit>) -> Value {
    match rate {
        Some(r) => json!({
            "limit": r.limit,
            "period_seconds": render::seconds(&r.period),
            "burst": r.burst,
        }),
        None => Value::Null,
    }
}

fn limit_cell(n: u32) -> String {
    if n == 0 {
        "-".into()
    } else {
        n.to_string()
    }
}

/// A policy as JSON (null for none).
pub(crate) fn policy_json(policy: &Option<proto::QueuePolicy>) -> Value {
    let Some(p) = policy else {
        return Value::Null;
    };
    let weights: std::collections::BTreeMap<&String, &u32> = p.weights.iter().collect();
    json!({
        "max_running": p.max_running,
        "rate": rate_json(&p.rate),
        "per_key_max_running": p.per_key_max_running,
        "per_key_rate": rate_json(&p.per_key_rate),
        "fairness": fairness_name(p.fairness),
        "weights": weights,
        "default_weight": p.default_weight,
    })
}

/// A policy in one short cell ("max 10, rate 100/1s, per key 2, round-robin"), or "-".
pub(crate) fn policy_cell(policy: &Option<proto::QueuePolicy>) -> String {
    let Some(p) = policy else {
        return "-".into();
    };
    let mut parts = Vec::new();
    if p.max_running > 0 {
        parts.push(format!("max {}", p.max_running));
    }
    if p.rate.is_some() {
        parts.push(format!("rate {}", rate_cell(&p.rate)));
    }
    if p.per_key_max_running > 0 {
        parts.push(format!("per key max {}", p.per_key_max_running));
    }
    if p.per_key_rate.is_some() {
        parts.push(format!("per key rate {}", rate_cell(&p.per_key_rate)));
    }
    parts.push(fairness_name(p.fairness).to_owned());
    parts.join(", ")
}

fn policy_table(policy: &Option<proto::QueuePolicy>, key_limits: Option<u32>) -> String {
    let Some(p) = policy else {
        return "no policy: FIFO, no limits".into();
    };
    let mut weights: Vec<String> = p.weights.iter().map(|(k, w)| format!("{k}={w}")).collect();
    weights.sort();
    let mut rows = vec![
        ("max_running", limit_cell(p.max_running)),
        ("rate", rate_cell(&p.rate)),
        ("per_key_max_running", limit_cell(p.per_key_max_running)),
        ("per_key_rate", rate_cell(&p.per_key_rate)),
        ("fairness", fairness_name(p.fairness).to_owned()),
    ];
    if p.fairness == proto::Fairness::Weighted as i32 {
        rows.push(("weights", render::or_dash(&weights.join(" "))));
        rows.push(("default_weight", p.default_weight.to_string()));
    }
    if let Some(n) = key_limits {
        rows.push(("key_limits", n.to_string()));
    }
    render::fields(rows).to_string()
}

pub(crate) async fn set_policy(args: PolicySetArgs) -> Result<(), Failure> {
    let mut client = connect(&args.client, true).await?;
    let fairness = match args.fairness {
        None | Some(FairnessArg::Fifo) => proto::Fairness::Fifo,
        Some(FairnessArg::RoundRobin) => proto::Fairness::RoundRobin,
        Some(FairnessArg::Weighted) => proto::Fairness::Weighted,
    };
    let policy = proto::QueuePolicy {
        max_running: args.max_running.unwrap_or(0),
        rate: rate(args.rate, args.burst),
        per_key_max_running: args.per_key_max_running.unwrap_or(0),
        per_key_rate: rate(args.per_key_rate, args.per_key_burst),
        fairness: fairness as i32,
        weights: args.weight.iter().cloned().collect(),
        default_weight: args.default_weight.unwrap_or(0),
    };
    let stored = client
        .set_queue_policy(proto::SetQueuePolicyRequest {
            namespace: args.namespace.clone(),
            queue: args.queue.clone(),
            policy: Some(policy),
        })
        .await?
        .into_inner()
        .policy;
    let doc = json!({
        "namespace": args.namespace,
        "queue": args.queue,
        "policy": policy_json(&stored),
    });
    emit(args.client.output, doc, || {
        format!(
            "queue {} policy set\n{}",
            args.queue,
            policy_table(&stored, None)
        )
    });
    Ok(())
}

pub(crate) async fn get_policy(target: QueueTarget) -> Result<(), Failure> {
    let mut client = connect(&target.client, true).await?;
    let answer = client
        .get_queue_policy(proto::GetQueuePolicyRequest {
            namespace: target.namespace.clone(),
            queue: target.queue.clone(),
        })
        .await?
        .into_inner();
    let doc = json!({
        "namespace": target.namespace,
        "queue": target.queue,
        "policy": policy_json(&answer.policy),
        "key_limits": answer.key_limits,
    });
    emit(target.client.output, doc, || {
        policy_table(&answer.policy, Some(answer.key_limits))
    });
    Ok(())
}

pub(crate) async fn key_limit(args: KeyLimitArgs) -> Result<(), Failure> {
    let mut client = connect(&args.client, true).await?;
    let changed = client
        .set_key_limit(proto::SetKeyLimitRequest {
            namespace: args.namespace.clone(),
            queue: args.queue.clone(),
            key: args.key.clone(),
            max_running: args.max_running,
            rate: rate(args.rate, args.burst),
        })
        .await?
        .into_inner()
        .changed;
    let removed = args.max_running.is_none() && args.rate.is_none();
    let doc = json!({
        "namespace": args.namespace,
        "queue": args.queue,
        "key": args.key,
        "changed": changed,
    });
    emit(args.client.output, doc, || match (changed, removed) {
        (false, _) => format!("key {} of {}: nothing changed", args.key, args.queue),
        (true, true) => format!(
            "key {} of {}: its own limits removed (the policy's per-key limits apply)",
            args.key, args.queue
        ),
        (true, false) => format!("key {} of {}: limits set", args.key, args.queue),
    });
    Ok(())
}

pub(crate) async fn throttle(args: ThrottleArgs) -> Result<(), Failure> {
    let mut client = connect(&args.client, true).await?;
    let until = client
        .throttle_key(proto::ThrottleKeyRequest {
            namespace: args.namespace.clone(),
            queue: args.queue.clone(),
            key: args.key.clone(),
            r#for: Some(duration(args.duration)),
        })
        .await?
        .into_inner()
        .until;
    let doc = json!({
        "namespace": args.namespace,
        "queue": args.queue,
        "key": args.key,
        "until": render::time_json(&until),
    });
    emit(args.client.output, doc, || match &until {
        Some(_) => format!(
            "key {} of {} throttled until {}",
            args.key,
            args.queue,
            render::time_cell(&until)
        ),
        None => format!("key {} of {}: throttle lifted", args.key, args.queue),
    });
    Ok(())
}

pub(crate) async fn keys(args: KeysArgs) -> Result<(), Failure> {
    let mut client = connect(&args.client, true).await?;
    let order = match args.order_by {
        FlowKeyOrderArg::Backlog => proto::FlowKeyOrder::Backlog,
        FlowKeyOrderArg::Running => proto::FlowKeyOrder::Running,
        FlowKeyOrderArg::Throttled => proto::FlowKeyOrder::Throttled,
    };
    let limit = args.limit as usize;
    let mut keys = Vec::new();
    let mut token = String::new();
    let mut read_time = None;
    let more = loop {
        let page = client
            .list_flow_keys(proto::ListFlowKeysRequest {
                namespace: args.namespace.clone(),
                queue: args.queue.clone(),
                order_by: order as i32,
                page_size: (limit - keys.len()).min(1000) as u32,
                page_token: token,
            })
            .await?
            .into_inner();
        keys.extend(page.keys);
        read_time = read_time.or(page.read_time);
        token = page.next_page_token;
        if token.is_empty() {
            break false;
        }
        if keys.len() >= limit {
            break true;
        }
    };
    keys.truncate(limit);
    let doc = json!({
        "namespace": args.namespace,
        "queue": args.queue,
        "read_time": render::time_json(&read_time),
        "keys": keys.iter().map(|k| json!({
            "key": k.key,
            "backlog": k.backlog,
            "running": k.running,
            "throttled_until": render::time_json(&k.throttled_until),
            "max_running": k.max_running,
            "rate": rate_json(&k.rate),
        })).collect::<Vec<_>>(),
        "more": more,
    });
    emit(args.client.output, doc, || {
        let mut table = render::table(&[
            "KEY",
            "BACKLOG",
            "RUNNING",
            "THROTTLED UNTIL",
            "MAX RUNNING",
            "RATE",
        ]);
        for k in &keys {
            table.add_row(vec![
                k.key.clone(),
                k.backlog.to_string(),
                k.running.to_string(),
                render::time_cell(&k.throttled_until),
                k.max_running.map_or("-".into(), |n| n.to_string()),
                rate_cell(&k.rate),
            ]);
        }
        let mut text = table.to_string();
        if more {
            text.push_str(&format!(
                "\nmore keys follow; raise --limit (now {limit}) to see them"
            ));
        }
        text
    });
    Ok(())
}
