//! Migration: `migrate` pre-index (schema 1) schedules upgraded by QueueService
//! Migrate; the longest batch (DONE's longest_batch, and the longest Migrate script
//! in SLOWLOG), and ClaimDueSchedule latency on another namespace while it runs.

use std::{
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc,
    },
    time::Instant,
};

use deadpool_redis::redis::{self, aio::MultiplexedConnection, Value};
use dueq::{probe::script_name, proto};
use tokio::task::JoinHandle;

use crate::{
    claim_scaling::claim,
    env::{AdminClient, Client, Env},
    load::Stats,
    plan::Plan,
    redis_info::redis_now,
    report::{Report, Row},
    seed, BenchError, Result,
};

const S: &str = "migrate";
const NS: &str = "mig";
/// Namespace claimed from while Migrate runs: one schedule, not due for an hour.
const CLAIM_NS: &str = "migclaim";
/// Scripts slower than this (µs) are logged while Migrate runs.
const SLOWLOG_THRESHOLD_US: u64 = 100;
const SLOWLOG_MAX_LEN: u64 = 100_000;

pub(crate) async fn run(plan: &Plan, env: &Env, report: &mut Report) -> Result<()> {
    let n = plan.migrate;
    let mut conn = env.conn().await?;
    seed_pre_index(env, &mut conn, n).await?;
    let mut claimer = env.client().await?;
    seed::ensure_namespace(&mut claimer, CLAIM_NS).await?;

    let mut admin = env.admin().await?;
    let previous_threshold = start_slowlog(&mut conn).await?;
    let claims = ClaimsMeanwhile::start(claimer);
    let started = Instant::now();
    let done = migrate(&mut admin).await;
    let took = started.elapsed().as_secs_f64();
    let latencies = claims.stop().await;
    let slowlog = read_slowlog(&mut conn).await;
    // Whatever failed, a Redis given with --redis-url gets its threshold back.
    restore_slowlog(&mut conn, previous_threshold).await?;
    let (done, latencies, slowlog) = (done?, latencies?, slowlog?);

    push_migrate_rows(report, n, took, &done);
    push_slowlog_row(report, &MigrateScripts::from_slowlog(&slowlog));
    let count = latencies.len() as u64;
    let s = Stats::from_latencies(latencies, count, took);
    report.push(
        Row::latency(S, "ClaimDueSchedule during Migrate", &s)
            .note(format!("{count} claims on another namespace while it ran")),
    );
    Ok(())
}

/// Writes `n` schedules in the pre-index layout, the input of Migrate.
async fn seed_pre_index(env: &Env, conn: &mut MultiplexedConnection, n: u64) -> Result<()> {
    let tpl = seed::template(env).await?;
    let now = redis_now(conn).await?;
    seed::schedules(conn, &tpl, NS, n, now + 3_600_000, seed::Layout::PreIndex).await
}

/// Logs every script over SLOWLOG_THRESHOLD_US from now on, from an empty SLOWLOG;
/// returns the threshold it replaced.
// SLOWLOG settings of the bench's Redis: the longest Migrate script is measured.
#[allow(clippy::disallowed_methods)]
pub(crate) async fn start_slowlog(conn: &mut MultiplexedConnection) -> Result<Option<String>> {
    let previous: Vec<String> = redis::cmd("CONFIG")
        .arg("GET")
        .arg("slowlog-log-slower-than")
        .query_async(conn)
        .await?;
    redis::pipe()
        .cmd("CONFIG")
        .arg("SET")
        .arg("slowlog-log-slower-than")
        .arg(SLOWLOG_THRESHOLD_US)
        .ignore()
        .cmd("CONFIG")
        .arg("SET")
        .arg("slowlog-max-len")
        .arg(SLOWLOG_MAX_LEN)
        .ignore()
        .cmd("SLOWLOG")
        .arg("RESET")
        .ignore()
        .query_async::<()>(conn)
        .await?;
    // CONFIG GET answers [name, value].
    Ok(previous.into_iter().nth(1))
}

// SLOWLOG of the bench's Redis: the longest Migrate script is measured.
#[allow(clippy::disallowed_methods)]
pub(crate) async fn read_slowlog(conn: &mut MultiplexedConnection) -> Result<Vec<Value>> {
    Ok(redis::cmd("SLOWLOG")
        .arg("GET")
        .arg(SLOWLOG_MAX_LEN)
        .query_async(conn)
        .await?)
}

// SLOWLOG settings of the bench's Redis, put back as they were.
#[allow(clippy::disallowed_methods)]
pub(crate) async fn restore_slowlog(
    conn: &mut MultiplexedConnection,
    threshold: Option<String>,
) -> Result<()> {
    // Redis's default, should CONFIG GET have answered nothing.
    let threshold = threshold.unwrap_or_else(|| "10000".into());
    redis::cmd("CONFIG")
        .arg("SET")
        .arg("slowlog-log-slower-than")
        .arg(threshold)
        .query_async::<()>(conn)
        .await?;
    Ok(())
}

/// Back-to-back ClaimDueSchedule calls on another namespace, timed, until stopped.
struct ClaimsMeanwhile {
    running: Arc<AtomicBool>,
    task: JoinHandle<Result<Vec<u64>>>,
}

impl ClaimsMeanwhile {
    fn start(mut claimer: Client) -> ClaimsMeanwhile {
        let running = Arc::new(AtomicBool::new(true));
        let flag = running.clone();
        let task = tokio::spawn(async move {
            let mut latencies = Vec::new();
            while flag.load(Ordering::Relaxed) {
                let t = Instant::now();
                claim(&mut claimer, CLAIM_NS).await?;
                latencies.push(t.elapsed().as_nanos() as u64);
            }
            Ok(latencies)
        });
        ClaimsMeanwhile { running, task }
    }

    /// Stops the claims; their latencies in ns.
    async fn stop(self) -> Result<Vec<u64>> {
        self.running.store(false, Ordering::Relaxed);
        self.task.await?
    }
}

/// Runs Migrate on NS to the end; its DONE message.
async fn migrate(admin: &mut AdminClient) -> Result<proto::MigrateProgress> {
    let mut stream = admin
        .migrate(proto::MigrateRequest {
            namespace: NS.into(),
            ..Default::default()
        })
        .await?
        .into_inner();
    let mut done = None;
    while let Some(msg) = stream.message().await? {
        if msg.phase == proto::MigratePhase::Done as i32 {
            done = Some(msg);
        }
    }
    done.ok_or_else(|| BenchError::from("Migrate ended without a DONE message"))
}

fn push_migrate_rows(report: &mut Report, n: u64, took: f64, done: &proto::MigrateProgress) {
    report.push(
        Row::new(S, format!("Migrate {n} pre-index schedules"))
            .with("seconds", took)
            .with("schedules", n)
            .with("batches", done.batches)
            .note(format!(
                "{took:.2}s, {:.0} schedules/s, {} batches, scanned {}, indexed {}",
                n as f64 / took.max(1e-9),
                done.batches,
                done.scanned,
                done.indexed
            )),
    );
    let longest_batch_ms = done
        .longest_batch
        .map(|d| d.seconds as f64 * 1000.0 + f64::from(d.nanos) / 1e6)
        .unwrap_or(0.0);
    report.push(
        Row::new(S, "longest batch (DONE longest_batch)")
            .with("ms", longest_batch_ms)
            .note(format!("{longest_batch_ms:.2} ms round trip")),
    );
}

/// The Migrate scripts SLOWLOG caught: how long each took, and the longest.
struct MigrateScripts {
    /// Sorted, in µs.
    durations_us: Vec<u64>,
    longest_us: u64,
    longest_name: &'static str,
}

impl MigrateScripts {
    fn from_slowlog(entries: &[Value]) -> MigrateScripts {
        let mut found = MigrateScripts {
            durations_us: Vec::new(),
            longest_us: 0,
            longest_name: "-",
        };
        for (us, name) in entries.iter().filter_map(script_entry) {
            if !name.starts_with("migrate_") {
                continue;
            }
            found.durations_us.push(us);
            if us > found.longest_us {
                found.longest_us = us;
                found.longest_name = name;
            }
        }
        found.durations_us.sort_unstable();
        found
    }

    fn p999_ms(&self) -> f64 {
        let d = &self.durations_us;
        d.get((d.len() * 999 / 1000).min(d.len().saturating_sub(1)))
            .map_or(0.0, |&us| us as f64 / 1000.0)
    }
}

/// A SLOWLOG entry of one of dueq's scripts: its duration (µs) and the script's name.
/// An entry is [id, timestamp, duration, [command, args...], ...]; an FCALL's (or EVALSHA's)
/// first argument is the script's SHA1.
pub(crate) fn script_entry(entry: &Value) -> Option<(u64, &'static str)> {
    let Value::Array(parts) = entry else {
        return None;
    };
    let (Some(Value::Int(us)), Some(Value::Array(args))) = (parts.get(2), parts.get(3)) else {
        return None;
    };
    let sha = match args.get(1)? {
        Value::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
        Value::SimpleString(s) => s.clone(),
        _ => return None,
    };
    Some(((*us).max(0) as u64, script_name(&sha)?))
}

fn push_slowlog_row(report: &mut Report, scripts: &MigrateScripts) {
    let logged = scripts.durations_us.len() as u64;
    let over_10ms = scripts
        .durations_us
        .iter()
        .filter(|&&us| us > 10_000)
        .count();
    let longest_ms = scripts.longest_us as f64 / 1000.0;
    let p999_ms = scripts.p999_ms();
    report.push(
        Row::new(S, "longest script (SLOWLOG)")
            .with("ms", longest_ms)
            .with("entries_over_100us", logged)
            .with("over_10ms", over_10ms as u64)
            .with("p999_of_logged_ms", p999_ms)
            .note(format!(
                "{longest_ms:.2} ms ({}); {over_10ms} over 10 ms; {logged} Migrate scripts over 0.1 ms, p999 of those {p999_ms:.2} ms",
                scripts.longest_name
            )),
    );
}
