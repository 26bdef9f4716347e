//! The ceiling: the very scripts dueq runs (enqueue_jobs, claim_due), called straight
//! on Redis with EVALSHA at the same concurrency, one call in flight per connection
//! (unpipelined) or `batch` calls per pipeline. The denominators of the gRPC ratios.

use deadpool_redis::redis::{self, Cmd, Script};

use super::{
    env::Env,
    load::{drive, Stats},
    report::{Report, Row},
    seed, Plan, Result,
};
use crate::store::scripts;

const S: &str = "ceiling";

/// Ceiling throughputs, in items per second.
#[derive(Debug, Default, Clone)]
pub struct Ceiling {
    pub enqueue: f64,
    pub enqueue_pipelined: f64,
    pub claim: f64,
    pub claim_pipelined: f64,
}

fn evalsha(script: &Script, keys: &[String], args: &[Vec<u8>]) -> Cmd {
    let mut cmd = redis::cmd("EVALSHA");
    cmd.arg(script.get_hash()).arg(keys.len());
    for k in keys {
        cmd.arg(k);
    }
    for a in args {
        cmd.arg(a.as_slice());
    }
    cmd
}

/// KEYS and the fixed ARGV head of enqueue_jobs for `n` jobs.
fn enqueue_head(ns: &str, n: usize) -> (Vec<String>, Vec<Vec<u8>>) {
    let b = seed::base(ns);
    let keys = crate::store::NamespaceKeys::new(super::env::PREFIX, ns);
    let mut args: Vec<Vec<u8>> = keys.job_prefixes().args().map(<[u8]>::to_vec).collect();
    args.push(b"2".to_vec());
    args.push(n.to_string().into_bytes());
    (vec![format!("{b}meta")], args)
}

/// The 17 per-job values, as the service sends them for a plain Enqueue.
pub fn job_args(args: &mut Vec<Vec<u8>>, queue: &str) {
    let id = uuid::Uuid::new_v4().to_string();
    for v in [
        id.as_str(),
        queue,
        "bench",
        "{\"n\":1}",
        "{}",
        "0",
        "",
        "",
        "3",
        "exp",
        "1000",
        "300000",
        "0",
        "30000",
        "",
        "",
        "",
    ] {
        args.push(v.as_bytes().to_vec());
    }
}

fn enqueue_cmd(ns: &str, jobs: usize) -> Cmd {
    let (keys, mut args) = enqueue_head(ns, jobs);
    for _ in 0..jobs {
        job_args(&mut args, "ceil");
    }
    evalsha(&scripts::ENQUEUE_JOBS, &keys, &args)
}

fn claim_cmd(ns: &str) -> Cmd {
    let b = seed::base(ns);
    let keys = vec![
        format!("{b}due"),
        format!("{b}oleases"),
        format!("{b}ids"),
        format!("{b}meta"),
    ];
    let mut args = vec![format!("{b}s:").into_bytes(), b"32".to_vec()];
    args.extend(std::iter::repeat_n(Vec::new(), 8));
    args.push(ns.as_bytes().to_vec());
    args.push(format!("{b}o:").into_bytes());
    evalsha(&scripts::CLAIM_DUE, &keys, &args)
}

async fn unpipelined(
    plan: &Plan,
    env: &Env,
    items: u64,
    make: impl Fn() -> Cmd + Clone + Send + 'static,
) -> Result<Stats> {
    let mut conns = Vec::new();
    for _ in 0..plan.concurrency {
        conns.push(env.conn().await?);
    }
    drive(plan.concurrency, plan.duration, |i| {
        let conn = conns[i].clone();
        let make = make.clone();
        move || {
            let mut conn = conn.clone();
            let cmd = make();
            async move {
                cmd.query_async::<redis::Value>(&mut conn).await?;
                Ok(items)
            }
        }
    })
    .await
}

async fn pipelined(
    plan: &Plan,
    env: &Env,
    make: impl Fn() -> Cmd + Clone + Send + 'static,
) -> Result<Stats> {
    let mut conns = Vec::new();
    for _ in 0..plan.concurrency {
        conns.push(env.conn().await?);
    }
    let batch = plan.batch;
    drive(plan.concurrency, plan.duration, |i| {
        let conn = conns[i].clone();
        let make = make.clone();
        move || {
            let mut conn = conn.clone();
            let mut pipe = redis::pipe();
            for _ in 0..batch {
                pipe.add_command(make()).ignore();
            }
            async move {
                pipe.query_async::<()>(&mut conn).await?;
                Ok(batch as u64)
            }
        }
    })
    .await
}

pub async fn run(plan: &Plan, env: &Env, report: &mut Report) -> Result<Ceiling> {
    let mut conn = env.conn().await?;
    for script in [&scripts::ENQUEUE_JOBS, &scripts::CLAIM_DUE] {
        script.prepare_invoke().load_async(&mut conn).await?;
    }
    let mut client = env.client().await?;
    seed::ensure_namespace(&mut client, "ceilclaim").await?;
    let ns = "ceil";
    let mut c = Ceiling::default();

    let s = unpipelined(plan, env, 1, move || enqueue_cmd(ns, 1)).await?;
    c.enqueue = s.ops_s();
    report.push(Row::stats(S, "EVALSHA enqueue_jobs x1", &s).note("one job per call"));

    let s = pipelined(plan, env, move || enqueue_cmd(ns, 1)).await?;
    c.enqueue_pipelined = s.ops_s();
    report.push(
        Row::stats(S, "EVALSHA enqueue_jobs x1, pipelined", &s).note(format!(
            "{} calls per pipeline; latency per pipeline",
            plan.batch
        )),
    );

    let batch = plan.batch;
    let s = unpipelined(plan, env, batch as u64, move || enqueue_cmd(ns, batch)).await?;
    report.push(
        Row::stats(S, format!("EVALSHA enqueue_jobs x{batch} (one call)"), &s)
            .note("what EnqueueBatch runs; ops = jobs"),
    );

    let s = unpipelined(plan, env, 1, move || claim_cmd("ceilclaim")).await?;
    c.claim = s.ops_s();
    report.push(Row::stats(S, "EVALSHA claim_due (nothing due)", &s));

    let s = pipelined(plan, env, move || claim_cmd("ceilclaim")).await?;
    c.claim_pipelined = s.ops_s();
    report.push(
        Row::stats(S, "EVALSHA claim_due (nothing due), pipelined", &s)
            .note(format!("{} calls per pipeline", plan.batch)),
    );
    report.note(
        S,
        format!(
            "concurrency {}: one connection per caller, as many callers as the gRPC phases",
            plan.concurrency
        ),
    );
    Ok(c)
}
