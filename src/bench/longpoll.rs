//! Long-poll cost: `waiters` idle ClaimDueSchedule long-polls on one namespace.
//! Redis commands per second while idle (INFO commandstats deltas, with and without
//! the waiters), the service process's RSS and CPU (the bench's client side, which
//! holds the other end of every waiter, is reported apart), and wake precision for
//! schedules due at spread times while the waiters wait.

use std::{
    sync::Arc,
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use deadpool_redis::redis::{self, aio::MultiplexedConnection};
use tokio::sync::Mutex;
use tokio_util::sync::CancellationToken;

use super::{
    env::{process_cpu_s, process_rss_mb, redis_now, Env},
    load::Stats,
    report::{Report, Row},
    seed, Plan, Result,
};
use crate::proto;

const S: &str = "longpoll";
const NS: &str = "lp";

async fn commands(conn: &mut MultiplexedConnection) -> Result<u64> {
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query_async(conn)
        .await?;
    Ok(info
        .lines()
        .filter_map(|l| l.split_once(":calls="))
        .filter_map(|(_, rest)| rest.split(',').next()?.parse::<u64>().ok())
        .sum())
}

fn now_us() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_micros() as i64)
        .unwrap_or(0)
}

fn ts_us(ts: &Option<prost_types::Timestamp>) -> Option<i64> {
    ts.as_ref()
        .map(|t| t.seconds * 1_000_000 + i64::from(t.nanos) / 1_000)
}

/// Over an idle window: Redis commands/s, the service's CPU share, its RSS (MB)
/// and the bench process's RSS (MB).
async fn idle(
    conn: &mut MultiplexedConnection,
    pid: u32,
    window: Duration,
) -> Result<(f64, f64, f64, f64)> {
    let (c0, cpu0) = (commands(conn).await?, process_cpu_s(Some(pid)));
    tokio::time::sleep(window).await;
    let (c1, cpu1) = (commands(conn).await?, process_cpu_s(Some(pid)));
    let secs = window.as_secs_f64();
    // One INFO of ours falls inside the window.
    let cmds = c1.saturating_sub(c0).saturating_sub(1) as f64 / secs;
    Ok((
        cmds,
        (cpu1 - cpu0) / secs * 100.0,
        process_rss_mb(Some(pid)),
        process_rss_mb(None),
    ))
}

pub async fn run(plan: &Plan, env: &Env, report: &mut Report) -> Result<()> {
    let mut conn = env.conn().await?;
    let mut client = env.client().await?;
    seed::ensure_namespace(&mut client, NS).await?;
    let window = if plan.smoke {
        Duration::from_secs(1)
    } else {
        Duration::from_secs(3)
    };
    // Let the service settle (namespace timer armed), then the baseline.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let pid = env.service_pid();
    let (base_cmds, base_cpu, base_rss, _) = idle(&mut conn, pid, window).await?;

    let waiters = plan.waiters as usize;
    let nconns = waiters.div_ceil(100).max(1);
    let mut channels = Vec::with_capacity(nconns);
    for _ in 0..nconns {
        channels.push(env.client().await?);
    }
    let cancel = CancellationToken::new();
    let delays = Arc::new(Mutex::new(Vec::<(i64, i64)>::new()));
    let mut tasks = Vec::with_capacity(waiters);
    for i in 0..waiters {
        let mut c = channels[i % nconns].clone();
        let cancel = cancel.clone();
        let delays = delays.clone();
        tasks.push(tokio::spawn(async move {
            loop {
                let req = proto::ClaimDueScheduleRequest {
                    namespace: NS.into(),
                    worker_id: format!("w{i}"),
                    wait: Some(prost_types::Duration {
                        seconds: 30,
                        nanos: 0,
                    }),
                    lease: None,
                };
                let got = tokio::select! {
                    r = c.claim_due_schedule(req) => r,
                    _ = cancel.cancelled() => return,
                };
                let received = now_us();
                if let Ok(r) = got {
                    if let Some(o) = r.into_inner().occurrence {
                        if let (Some(due), Some(claimed)) =
                            (ts_us(&o.due_time), ts_us(&o.claim_time))
                        {
                            delays.lock().await.push((received - due, claimed - due));
                        }
                    }
                }
            }
        }));
    }
    // Every waiter has its request parked before the idle window starts.
    tokio::time::sleep(Duration::from_millis(500 + waiters as u64 / 10)).await;
    let (w_cmds, w_cpu, w_rss, client_rss) = idle(&mut conn, pid, window).await?;

    // Wake precision: schedules due at spread times while the waiters wait.
    // (The issue: 1,000 due at spread times; 4 ms apart they span 4 s.)
    let due_count: usize = if plan.smoke { 5 } else { 1_000 };
    let start = redis_now(&mut conn).await? + 1_000;
    for k in 0..due_count {
        let mut s = seed::every_1h(&format!("wake{k}"));
        let at = start + (k as i64) * 4;
        s.start_time = Some(prost_types::Timestamp {
            seconds: at.div_euclid(1000),
            nanos: (at.rem_euclid(1000) * 1_000_000) as i32,
        });
        client
            .upsert_schedule(proto::UpsertScheduleRequest {
                namespace: NS.into(),
                schedule: Some(s),
            })
            .await?;
    }
    let give_up = tokio::time::Instant::now() + Duration::from_secs(15);
    while delays.lock().await.len() < due_count && tokio::time::Instant::now() < give_up {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    cancel.cancel();
    for t in tasks {
        let _ = t.await;
    }
    let got = delays.lock().await.clone();

    report.push(
        Row::new(S, "idle Redis commands")
            .with("baseline_per_s", base_cmds)
            .with("with_waiters_per_s", w_cmds)
            .with("waiters", waiters as u64)
            .note(format!(
                "{w_cmds:.1}/s with {waiters} waiters, {base_cmds:.1}/s with none"
            )),
    );
    report.push(
        Row::new(S, "service RSS")
            .with("baseline_mb", base_rss)
            .with("with_waiters_mb", w_rss)
            .with("bench_client_mb", client_rss)
            .note(format!(
                "{w_rss:.1} MB with {waiters} waiters, {base_rss:.1} MB before (dueq serve process; the bench's client side: {client_rss:.1} MB)"
            )),
    );
    report.push(
        Row::new(S, "service CPU while idle")
            .with("baseline_pct", base_cpu)
            .with("with_waiters_pct", w_cpu)
            .note(format!(
                "{w_cpu:.1}% of a core with waiters, {base_cpu:.1}% before"
            )),
    );
    let e2e: Vec<u64> = got
        .iter()
        .map(|(e, _)| (*e).max(0) as u64 * 1_000)
        .collect();
    let server: Vec<u64> = got
        .iter()
        .map(|(_, s)| (*s).max(0) as u64 * 1_000)
        .collect();
    let n = e2e.len() as u64;
    let s = Stats::from_latencies(e2e, n, 0.0);
    let sv = Stats::from_latencies(server, n, 0.0);
    report.push(
        Row::latency(S, "wake delay", &s)
            .with("claimed", n)
            .with("due", due_count as u64)
            .with("server_p50_ms", sv.p50_ms)
            .with("server_p99_ms", sv.p99_ms)
            .note(format!(
                "client receipt - due_time, {n}/{due_count} claimed; server claim_time - due_time p50 {:.1} p99 {:.1} ms",
                sv.p50_ms, sv.p99_ms
            )),
    );
    if (n as usize) < due_count {
        report.note(
            S,
            format!("only {n} of {due_count} due schedules were claimed within 15 s"),
        );
    }
    report.note(
        S,
        format!(
            "{waiters} waiters over {nconns} HTTP/2 connections; idle window {:.0}s",
            window.as_secs_f64()
        ),
    );
    Ok(())
}
