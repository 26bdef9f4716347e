//! Migration: `migrate` pre-index (schema 1) schedules upgraded by AdminService
//! Migrate; the longest batch (DONE's longest_batch, and the longest Migrate script
//! in SLOWLOG), and ClaimDueSchedule latency on another namespace while it runs.

use std::{
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc,
    },
    time::Instant,
};

use deadpool_redis::redis::{self, Value};

use super::{
    claim_scaling::claim,
    env::{redis_now, Env},
    load::Stats,
    report::{Report, Row},
    seed, Plan, Result,
};
use crate::{proto, store::scripts};

const S: &str = "migrate";

fn as_i64(v: &Value) -> Option<i64> {
    match v {
        Value::Int(i) => Some(*i),
        _ => None,
    }
}

fn as_text(v: &Value) -> Option<String> {
    match v {
        Value::BulkString(b) => Some(String::from_utf8_lossy(b).into_owned()),
        Value::SimpleString(s) => Some(s.clone()),
        _ => None,
    }
}

pub async fn run(plan: &Plan, env: &Env, report: &mut Report) -> Result<()> {
    let n = plan.migrate;
    let tpl = seed::template(env).await?;
    let mut conn = env.conn().await?;
    let now = redis_now(&mut conn).await?;
    seed::schedules(
        &mut conn,
        &tpl,
        "mig",
        n,
        now + 3_600_000,
        seed::Layout::PreIndex,
    )
    .await?;
    let mut claimer = env.client().await?;
    seed::ensure_namespace(&mut claimer, "migclaim").await?;

    let old: Vec<String> = redis::cmd("CONFIG")
        .arg("GET")
        .arg("slowlog-log-slower-than")
        .query_async(&mut conn)
        .await?;
    redis::pipe()
        .cmd("CONFIG")
        .arg("SET")
        .arg("slowlog-log-slower-than")
        .arg(100)
        .ignore()
        .cmd("CONFIG")
        .arg("SET")
        .arg("slowlog-max-len")
        .arg(100_000)
        .ignore()
        .cmd("SLOWLOG")
        .arg("RESET")
        .ignore()
        .query_async::<()>(&mut conn)
        .await?;

    let running = Arc::new(AtomicBool::new(true));
    let flag = running.clone();
    let claims = tokio::spawn(async move {
        let mut lat = Vec::new();
        while flag.load(Ordering::Relaxed) {
            let t = Instant::now();
            claim(&mut claimer, "migclaim").await?;
            lat.push(t.elapsed().as_nanos() as u64);
        }
        Ok::<_, super::BenchError>(lat)
    });

    let mut admin = env.admin().await?;
    let t = Instant::now();
    let result = async {
        let mut stream = admin
            .migrate(proto::MigrateRequest {
                namespace: "mig".into(),
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
        done.ok_or_else(|| super::BenchError::from("Migrate ended without a DONE message"))
    }
    .await;
    let took = t.elapsed().as_secs_f64();
    running.store(false, Ordering::Relaxed);
    let lat = claims.await??;

    let log: Vec<Value> = redis::cmd("SLOWLOG")
        .arg("GET")
        .arg(100_000)
        .query_async(&mut conn)
        .await?;
    let threshold = old.get(1).cloned().unwrap_or_else(|| "10000".into());
    redis::cmd("CONFIG")
        .arg("SET")
        .arg("slowlog-log-slower-than")
        .arg(threshold)
        .query_async::<()>(&mut conn)
        .await?;
    let done = result?;

    let names = [
        ("migrate_lock", &scripts::MIGRATE_LOCK),
        ("migrate_scan", &scripts::MIGRATE_SCAN),
        ("migrate_apply", &scripts::MIGRATE_APPLY),
        ("migrate_index", &scripts::MIGRATE_INDEX),
        ("migrate_finish", &scripts::MIGRATE_FINISH),
    ];
    let mut longest_us = 0i64;
    let mut longest_name = "-";
    let mut durations: Vec<u64> = Vec::new();
    for entry in &log {
        let Value::Array(parts) = entry else { continue };
        let (Some(us), Some(Value::Array(args))) = (parts.get(2).and_then(as_i64), parts.get(3))
        else {
            continue;
        };
        let sha = args.get(1).and_then(as_text).unwrap_or_default();
        if let Some((name, _)) = names.iter().find(|(_, s)| s.get_hash() == sha) {
            durations.push(us.max(0) as u64);
            if us > longest_us {
                longest_us = us;
                longest_name = name;
            }
        }
    }
    let logged = durations.len() as u64;
    let over_10ms = durations.iter().filter(|&&us| us > 10_000).count();
    durations.sort_unstable();
    let p999_ms = durations
        .get((durations.len() * 999 / 1000).min(durations.len().saturating_sub(1)))
        .map_or(0.0, |&us| us as f64 / 1000.0);
    let longest_batch_ms = done
        .longest_batch
        .map(|d| d.seconds as f64 * 1000.0 + f64::from(d.nanos) / 1e6)
        .unwrap_or(0.0);
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
    report.push(
        Row::new(S, "longest batch (DONE longest_batch)")
            .with("ms", longest_batch_ms)
            .note(format!("{longest_batch_ms:.2} ms round trip")),
    );
    report.push(
        Row::new(S, "longest script (SLOWLOG)")
            .with("ms", longest_us as f64 / 1000.0)
            .with("entries_over_100us", logged)
            .with("over_10ms", over_10ms as u64)
            .with("p999_of_logged_ms", p999_ms)
            .note(format!(
                "{:.2} ms ({longest_name}); {over_10ms} over 10 ms; {logged} Migrate scripts over 0.1 ms, p999 of those {p999_ms:.2} ms",
                longest_us as f64 / 1000.0
            )),
    );
    let count = lat.len() as u64;
    let s = Stats::from_latencies(lat, count, took);
    report.push(
        Row::latency(S, "ClaimDueSchedule during Migrate", &s)
            .note(format!("{count} claims on another namespace while it ran")),
    );
    Ok(())
}
