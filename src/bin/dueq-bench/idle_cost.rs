//! Idle cost per namespace: Redis commands/s over an idle window with N namespaces
//! that each ran one job (enqueued, claimed, acked, so each keeps a finished job),
//! then with one idle ClaimJob long-poll in each, both divided by N. The first
//! must be about zero however large N is; the second stays a few commands/s (one
//! job timer's peek per re-check interval).

use std::time::Duration;

use deadpool_redis::redis::{self, aio::MultiplexedConnection};
use dueq::proto;
use tokio_util::sync::CancellationToken;

use crate::{
    env::{Client, Env, PREFIX},
    plan::Plan,
    redis_info::{command_calls, info, redis_now},
    report::{Report, Row},
    Result,
};

const S: &str = "longpoll";
/// Long-polls per HTTP/2 connection.
const PER_CONNECTION: usize = 100;
/// Longest the bench waits for the pruner's first visits to the new namespaces.
const SETTLE: Duration = Duration::from_secs(20);

pub(crate) async fn run(
    plan: &Plan,
    env: &Env,
    report: &mut Report,
    window: Duration,
) -> Result<()> {
    let n: usize = if plan.smoke { 200 } else { 2_000 };
    let mut conn = env.conn().await?;
    let mut client = env.client().await?;
    let base = commands_per_s(&mut conn, window).await?;
    for i in 0..n {
        run_one_job(&mut client, &namespace(i)).await?;
    }
    settle(&mut conn).await?;
    let idle = commands_per_s(&mut conn, window).await?;

    let cancel = CancellationToken::new();
    let mut clients = Vec::new();
    for _ in 0..n.div_ceil(PER_CONNECTION) {
        clients.push(env.client().await?);
    }
    let tasks: Vec<_> = (0..n)
        .map(|i| {
            let client = clients[i % clients.len()].clone();
            tokio::spawn(long_poll(client, namespace(i), cancel.clone()))
        })
        .collect();
    // Real time for the long-polls to park before the window; one late to park makes
    // the reading a little high, not wrong.
    #[allow(clippy::disallowed_methods)]
    tokio::time::sleep(Duration::from_millis(500 + n as u64 / 2)).await;
    let polled = commands_per_s(&mut conn, window).await?;
    cancel.cancel();
    for task in tasks {
        let _ = task.await;
    }

    let per_ns = |total: f64| (total - base).max(0.0) / n as f64;
    let (idle_ns, polled_ns) = (per_ns(idle), per_ns(polled));
    report.push(
        Row::new(S, "idle cost per namespace")
            .with("namespaces", n as u64)
            .with("baseline_per_s", base)
            .with("idle_per_s", idle)
            .with("idle_per_namespace_per_s", idle_ns)
            .with("long_polled_per_s", polled)
            .with("long_polled_per_namespace_per_s", polled_ns)
            .note(format!(
                "Redis commands/s per namespace: {idle_ns:.3} for {n} idle namespaces that each ran a job, {polled_ns:.2} with one idle ClaimJob long-poll in each ({base:.1}/s baseline)"
            )),
    );
    Ok(())
}

fn namespace(i: usize) -> String {
    format!("idle{i}")
}

/// Enqueues, claims and acks one job in `ns`.
async fn run_one_job(client: &mut Client, ns: &str) -> Result<()> {
    let enqueued = client
        .enqueue(proto::EnqueueRequest {
            namespace: ns.into(),
            queue: "q".into(),
            name: "once".into(),
            ..Default::default()
        })
        .await?
        .into_inner();
    let claimed = client
        .claim_job(proto::ClaimJobRequest {
            namespace: ns.into(),
            queues: vec!["q".into()],
            worker_id: "bench".into(),
            max_jobs: 1,
            ..Default::default()
        })
        .await?
        .into_inner();
    let job = claimed
        .jobs
        .into_iter()
        .next()
        .ok_or("the job was not claimed")?;
    client
        .ack_job(proto::AckJobRequest {
            result: Vec::new(),
            namespace: ns.into(),
            job_id: enqueued.job_id,
            lease_token: job.lease_token,
        })
        .await?;
    Ok(())
}

/// Waits until no namespace is due in the prune due-set: the pruner's first visit
/// has scheduled each at its retention time.
// Reads the pruner's due-set to know the idle service has settled.
#[allow(clippy::disallowed_methods)]
async fn settle(conn: &mut MultiplexedConnection) -> Result<()> {
    let give_up = tokio::time::Instant::now() + SETTLE;
    while tokio::time::Instant::now() < give_up {
        let now = redis_now(conn).await?;
        let due: u64 = redis::cmd("ZCOUNT")
            .arg(format!("{PREFIX}:prune-due"))
            .arg("-inf")
            .arg(now)
            .query_async(conn)
            .await?;
        if due == 0 {
            return Ok(());
        }
        crate::local::pause(Duration::from_millis(100)).await;
    }
    Err("the pruner did not visit the new namespaces".into())
}

/// One idle ClaimJob long-poll after another until cancelled.
async fn long_poll(mut client: Client, ns: String, cancel: CancellationToken) {
    loop {
        let req = proto::ClaimJobRequest {
            namespace: ns.clone(),
            queues: vec!["q".into()],
            worker_id: "bench".into(),
            max_jobs: 1,
            wait: Some(prost_types::Duration {
                seconds: 30,
                nanos: 0,
            }),
            ..Default::default()
        };
        tokio::select! {
            _ = client.claim_job(req) => {}
            _ = cancel.cancelled() => return,
        }
    }
}

async fn commands_per_s(conn: &mut MultiplexedConnection, window: Duration) -> Result<f64> {
    let before = command_calls(&info(conn, "commandstats").await?, |_| true);
    // The measurement window: the rate is counted over real time.
    #[allow(clippy::disallowed_methods)]
    tokio::time::sleep(window).await;
    let after = command_calls(&info(conn, "commandstats").await?, |_| true);
    // One INFO of ours falls inside the window.
    Ok(after.saturating_sub(before).saturating_sub(1) as f64 / window.as_secs_f64())
}
