//! Fairness between tenants (fairness keys):
//!
//! - round-robin: one key with 1,000,000 ready jobs, enqueued first, and 1,000 keys
//!   with 10 each (--smoke: 10,000 and 100); Jain's index of the claims per key over
//!   the first 10,000 claims (--smoke: 1,000), every key with ready work counted
//!   (target `flow fairness Jain >= 0.99`; oldest-first would give the big key all
//!   of them, an index near 1/1,001).
//! - weighted: four keys of weights 1, 2, 3 and 4, each with more ready jobs than the
//!   claims counted; each key's share of the first claims against weight / 10.
//!
//! Claims are ClaimJob calls of 100 jobs, one after another, never acked (nothing
//! limits them); a claimed job's name is its fairness key.

use std::{collections::HashMap, sync::Arc};

use dueq::proto;

use super::{count_names, enqueue_all, jain, job, set_policy, NS, S};
use crate::{
    env::Env,
    plan::Plan,
    report::{Report, Row},
    Result,
};

/// The rows the target reads.
pub(crate) const JAIN_ROW: &str = "round-robin, one huge backlog";
const WEIGHTED_ROW: &str = "weighted shares";

const RR_QUEUE: &str = "rr";
const W_QUEUE: &str = "w";
const JOBS_PER_SMALL_KEY: u64 = 10;
const WEIGHTS: [(&str, u32); 4] = [("w1", 1), ("w2", 2), ("w3", 3), ("w4", 4)];

/// Sizes: the big key's jobs, the small keys, the claims counted.
fn sizes(plan: &Plan) -> (u64, u64, u64) {
    if plan.smoke {
        (10_000, 100, 1_000)
    } else {
        (1_000_000, 1_000, 10_000)
    }
}

pub(super) async fn run(plan: &Plan, env: &Env, report: &mut Report) -> Result<()> {
    round_robin(plan, env, report).await?;
    env.reset().await?;
    weighted(plan, env, report).await
}

/// A job of `queue` whose fairness key and name are `key`.
fn tenant_job(queue: &str, key: &str) -> proto::EnqueueRequest {
    proto::EnqueueRequest {
        fairness_key: key.into(),
        ..job(queue, key)
    }
}

/// The names of the first `n` jobs claimed from `queue` (fewer if it runs dry).
async fn first_claims(env: &Env, queue: &str, n: u64) -> Result<Vec<String>> {
    let mut client = env.client().await?;
    let mut names = Vec::with_capacity(n as usize);
    while (names.len() as u64) < n {
        let jobs = client
            .claim_job(proto::ClaimJobRequest {
                namespace: NS.into(),
                queues: vec![queue.into()],
                worker_id: "bench".into(),
                lease: Some(prost_types::Duration {
                    seconds: 3_600,
                    nanos: 0,
                }),
                max_jobs: 100,
                ..Default::default()
            })
            .await?
            .into_inner()
            .jobs;
        if jobs.is_empty() {
            break;
        }
        names.extend(jobs.into_iter().map(|j| j.name));
    }
    names.truncate(n as usize);
    Ok(names)
}

async fn round_robin(plan: &Plan, env: &Env, report: &mut Report) -> Result<()> {
    let (big, small, claims) = sizes(plan);
    set_policy(
        env,
        RR_QUEUE,
        Some(proto::QueuePolicy {
            fairness: proto::Fairness::RoundRobin as i32,
            ..Default::default()
        }),
    )
    .await?;
    enqueue_all(env, big, 4, Arc::new(|_| tenant_job(RR_QUEUE, "big"))).await?;
    let small_job = move |i: u64| tenant_job(RR_QUEUE, &format!("s{}", i % small));
    enqueue_all(env, small * JOBS_PER_SMALL_KEY, 4, Arc::new(small_job)).await?;
    let names = first_claims(env, RR_QUEUE, claims).await?;
    let counts = count_names(names.iter().map(String::as_str));
    let mut x = vec![*counts.get("big").unwrap_or(&0) as f64];
    x.extend((0..small).map(|i| *counts.get(&format!("s{i}")).unwrap_or(&0) as f64));
    let index = jain(&x);
    let served = x.iter().filter(|&&v| v > 0.0).count();
    let big_got = x[0];
    report.push(
        Row::new(S, JAIN_ROW)
            .with("jain", index)
            .with("claims", names.len() as u64)
            .with("keys", small + 1)
            .with("keys_served", served as u64)
            .with("big_key_claims", big_got)
            .note(format!(
                "Jain {index:.4} over the first {} claims: one key with {big} ready jobs (enqueued first), {small} keys with {JOBS_PER_SMALL_KEY} each; {served} of {} keys served, the big key got {big_got:.0}",
                names.len(),
                small + 1
            )),
    );
    Ok(())
}

async fn weighted(plan: &Plan, env: &Env, report: &mut Report) -> Result<()> {
    let (_, _, claims) = sizes(plan);
    let weights: HashMap<String, u32> = WEIGHTS.iter().map(|&(k, w)| (k.into(), w)).collect();
    set_policy(
        env,
        W_QUEUE,
        Some(proto::QueuePolicy {
            fairness: proto::Fairness::Weighted as i32,
            weights,
            ..Default::default()
        }),
    )
    .await?;
    let n = WEIGHTS.len() as u64;
    let make = move |i: u64| tenant_job(W_QUEUE, WEIGHTS[(i % n) as usize].0);
    enqueue_all(env, claims * n, 4, Arc::new(make)).await?;
    let names = first_claims(env, W_QUEUE, claims).await?;
    let counts = count_names(names.iter().map(String::as_str));
    let total: u32 = WEIGHTS.iter().map(|&(_, w)| w).sum();
    let mut worst = 0.0f64;
    let mut each = Vec::new();
    for (key, w) in WEIGHTS {
        let expected = f64::from(w) / f64::from(total);
        let got = *counts.get(key).unwrap_or(&0) as f64 / names.len().max(1) as f64;
        worst = worst.max((got - expected).abs() / expected);
        each.push(format!(
            "{key} (weight {w}) {:.1}% vs {:.1}%",
            got * 100.0,
            expected * 100.0
        ));
    }
    report.push(
        Row::new(S, WEIGHTED_ROW)
            .with("claims", names.len() as u64)
            .with("worst_relative_deviation", worst)
            .note(format!(
                "first {} claims: {}; worst share off by {:.1}% of its expected share",
                names.len(),
                each.join(", "),
                worst * 100.0
            )),
    );
    Ok(())
}
