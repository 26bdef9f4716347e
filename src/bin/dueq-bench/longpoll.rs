//! Long-poll cost: `waiters` idle ClaimDueSchedule long-polls on one namespace.
//! Redis commands per second while idle (INFO commandstats deltas, with and without
//! the waiters), the service process's RSS and CPU (the bench's client side, which
//! holds the other end of every waiter, is reported apart), and wake precision for
//! schedules due at spread times while the waiters wait. Then the idle cost per
//! namespace (`idle_cost`).

use std::{
    sync::Arc,
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use deadpool_redis::redis::aio::MultiplexedConnection;
use dueq::proto;
use tokio::{sync::Mutex, task::JoinHandle};
use tokio_util::sync::CancellationToken;

use crate::{
    env::{Client, Env},
    load::Stats,
    plan::Plan,
    procfs::{process_cpu_s, process_rss_mb},
    redis_info::{command_calls, info, redis_now},
    report::{Report, Row},
    seed, Result,
};

const S: &str = "longpoll";
const NS: &str = "lp";
/// Waiters per HTTP/2 connection.
const WAITERS_PER_CONNECTION: usize = 100;
/// How long the wake-precision schedules may take to be claimed in all.
const CLAIM_BUDGET: Duration = Duration::from_secs(15);

/// What an idle window showed.
struct Idle {
    redis_commands_per_s: f64,
    service_cpu_pct: f64,
    service_rss_mb: f64,
    bench_rss_mb: f64,
}

pub(crate) async fn run(plan: &Plan, env: &Env, report: &mut Report) -> Result<()> {
    let mut conn = env.conn().await?;
    let mut client = env.client().await?;
    seed::ensure_namespace(&mut client, NS).await?;
    let window = if plan.smoke {
        Duration::from_secs(1)
    } else {
        Duration::from_secs(3)
    };
    // Let the service settle (namespace timer armed), then the baseline: real time
    // for the idle service to go quiet.
    #[allow(clippy::disallowed_methods)]
    tokio::time::sleep(Duration::from_millis(300)).await;
    let pid = env.service_pid();
    let before = idle(&mut conn, pid, window).await?;

    let waiters = Waiters::start(env, plan.waiters as usize).await?;
    // Every waiter has its request parked before the idle window starts: real time for
    // them to park (one late makes the reading a little high, not wrong).
    #[allow(clippy::disallowed_methods)]
    tokio::time::sleep(Duration::from_millis(500 + plan.waiters / 10)).await;
    let with = idle(&mut conn, pid, window).await?;

    // Wake precision: schedules due at spread times while the waiters wait.
    // (The target: 1,000 due at spread times; 4 ms apart they span 4 s.)
    let due_count: usize = if plan.smoke { 5 } else { 1_000 };
    let first_due = redis_now(&mut conn).await? + 1_000;
    upsert_due_4ms_apart(&mut client, first_due, due_count).await?;
    let delays = waiters.stop_after(due_count, CLAIM_BUDGET).await;

    push_idle_rows(report, &before, &with, plan.waiters);
    push_wake_row(report, &delays, due_count);
    crate::idle_cost::run(plan, env, report, window).await?;
    report.note(
        S,
        format!(
            "{} waiters over {} HTTP/2 connections; idle window {:.0}s",
            plan.waiters,
            connections(plan.waiters as usize),
            window.as_secs_f64()
        ),
    );
    Ok(())
}

fn connections(waiters: usize) -> usize {
    waiters.div_ceil(WAITERS_PER_CONNECTION).max(1)
}

async fn commands(conn: &mut MultiplexedConnection) -> Result<u64> {
    Ok(command_calls(&info(conn, "commandstats").await?, |_| true))
}

/// Redis commands/s, the service's CPU share and both processes' RSS over an idle
/// window.
async fn idle(conn: &mut MultiplexedConnection, pid: u32, window: Duration) -> Result<Idle> {
    let (c0, cpu0) = (commands(conn).await?, process_cpu_s(Some(pid)).await);
    // The measurement window: the rates are counted over real time.
    #[allow(clippy::disallowed_methods)]
    tokio::time::sleep(window).await;
    let (c1, cpu1) = (commands(conn).await?, process_cpu_s(Some(pid)).await);
    let secs = window.as_secs_f64();
    // One INFO of ours falls inside the window.
    let cmds = c1.saturating_sub(c0).saturating_sub(1) as f64 / secs;
    Ok(Idle {
        redis_commands_per_s: cmds,
        service_cpu_pct: (cpu1 - cpu0) / secs * 100.0,
        service_rss_mb: process_rss_mb(Some(pid)).await,
        bench_rss_mb: process_rss_mb(None).await,
    })
}

// The host clock against the service's timestamps on the same host: a measured
// delay, not a decision of what is due.
#[allow(clippy::disallowed_methods)]
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

/// A wake's delay after its due time, in µs: (client receipt, server claim_time).
type Delay = (i64, i64);

/// Idle long-polls, each re-polling after every claim, recording the wake delays.
struct Waiters {
    cancel: CancellationToken,
    tasks: Vec<JoinHandle<()>>,
    delays: Arc<Mutex<Vec<Delay>>>,
}

impl Waiters {
    async fn start(env: &Env, waiters: usize) -> Result<Waiters> {
        let mut shared = Vec::new();
        for _ in 0..connections(waiters) {
            shared.push(env.client().await?);
        }
        let cancel = CancellationToken::new();
        let delays = Arc::new(Mutex::new(Vec::new()));
        let tasks = (0..waiters)
            .map(|i| {
                let client = shared[i % shared.len()].clone();
                tokio::spawn(wait(client, i, cancel.clone(), delays.clone()))
            })
            .collect();
        Ok(Waiters {
            cancel,
            tasks,
            delays,
        })
    }

    /// Waits until `claims` wakes were recorded (or `budget` passed), stops every
    /// waiter and returns the delays.
    async fn stop_after(self, claims: usize, budget: Duration) -> Vec<Delay> {
        let give_up = tokio::time::Instant::now() + budget;
        while self.delays.lock().await.len() < claims && tokio::time::Instant::now() < give_up {
            crate::local::pause(Duration::from_millis(20)).await;
        }
        self.cancel.cancel();
        for task in self.tasks {
            let _ = task.await;
        }
        let delays = self.delays.lock().await.clone();
        delays
    }
}

/// One waiter: 30 s long-polls back to back until cancelled.
async fn wait(
    mut client: Client,
    i: usize,
    cancel: CancellationToken,
    delays: Arc<Mutex<Vec<Delay>>>,
) {
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
            r = client.claim_due_schedule(req) => r,
            _ = cancel.cancelled() => return,
        };
        let received = now_us();
        let Some(o) = got.ok().and_then(|r| r.into_inner().occurrence) else {
            continue;
        };
        if let (Some(due), Some(claimed)) = (ts_us(&o.due_time), ts_us(&o.claim_time)) {
            delays.lock().await.push((received - due, claimed - due));
        }
    }
}

/// Upserts `count` hourly schedules whose first runs are 4 ms apart from `first_ms`.
async fn upsert_due_4ms_apart(client: &mut Client, first_ms: i64, count: usize) -> Result<()> {
    for k in 0..count {
        let mut s = seed::every_1h(&format!("wake{k}"));
        let at = first_ms + (k as i64) * 4;
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
    Ok(())
}

fn push_idle_rows(report: &mut Report, before: &Idle, with: &Idle, waiters: u64) {
    let (base_cmds, w_cmds) = (before.redis_commands_per_s, with.redis_commands_per_s);
    report.push(
        Row::new(S, "idle Redis commands")
            .with("baseline_per_s", base_cmds)
            .with("with_waiters_per_s", w_cmds)
            .with("waiters", waiters)
            .note(format!(
                "{w_cmds:.1}/s with {waiters} waiters, {base_cmds:.1}/s with none"
            )),
    );
    let (base_rss, w_rss, client_rss) = (
        before.service_rss_mb,
        with.service_rss_mb,
        with.bench_rss_mb,
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
    let (base_cpu, w_cpu) = (before.service_cpu_pct, with.service_cpu_pct);
    report.push(
        Row::new(S, "service CPU while idle")
            .with("baseline_pct", base_cpu)
            .with("with_waiters_pct", w_cpu)
            .note(format!(
                "{w_cpu:.1}% of a core with waiters, {base_cpu:.1}% before"
            )),
    );
}

fn push_wake_row(report: &mut Report, delays: &[Delay], due_count: usize) {
    let ns_of = |us: i64| us.max(0) as u64 * 1_000;
    let e2e: Vec<u64> = delays.iter().map(|&(e, _)| ns_of(e)).collect();
    let server: Vec<u64> = delays.iter().map(|&(_, s)| ns_of(s)).collect();
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
            format!(
                "only {n} of {due_count} due schedules were claimed within {} s",
                CLAIM_BUDGET.as_secs()
            ),
        );
    }
}
