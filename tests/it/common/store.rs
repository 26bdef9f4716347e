//! Looking at Redis directly: its clock, what it holds, how many scripts it ran.

use std::collections::BTreeMap;

use deadpool_redis::redis::{self, aio::MultiplexedConnection};

use super::{patience::Patience, raw::cmd};

/// Runs one command, failing the test on a Redis error.
pub async fn query<T: redis::FromRedisValue>(
    conn: &mut MultiplexedConnection,
    cmd: &mut redis::Cmd,
) -> T {
    cmd.query_async(conn).await.expect("redis command")
}

/// Redis's clock, in epoch ms: the one clock dueq goes by.
pub async fn redis_now(conn: &mut MultiplexedConnection) -> i64 {
    let (s, us): (i64, i64) = query(conn, &mut cmd("TIME")).await;
    s * 1000 + us / 1000
}

/// Waits until Redis's clock is past `ms` (epoch ms): for a test that lets real time
/// run out (a lease, a TTL), on the clock dueq goes by.
pub async fn wait_redis_past(conn: &mut MultiplexedConnection, ms: i64) {
    let patience = Patience::new(format!("Redis's clock to pass {ms}"));
    while redis_now(conn).await <= ms {
        patience.wait().await;
    }
}

/// Every key with its DUMP (type, encoding and contents, byte for byte), to prove a
/// call wrote nothing.
pub type Snapshot = BTreeMap<String, Vec<u8>>;

/// Whether `key` is one of the service's records about calls rather than data: a
/// namespace's audit log (an audited call is recorded, refused or not, after its
/// answer) and its worker sessions (issue 33). Snapshots and key counts leave them
/// out.
pub fn is_call_record(key: &str) -> bool {
    key.ends_with(":meta:audit") || key.ends_with(":meta:workers")
}

pub async fn snapshot(conn: &mut MultiplexedConnection) -> Snapshot {
    let keys: Vec<String> = query(conn, cmd("KEYS").arg("*")).await;
    let mut out = Snapshot::new();
    for key in keys.into_iter().filter(|key| !is_call_record(key)) {
        let dump: Option<Vec<u8>> = query(conn, cmd("DUMP").arg(&key)).await;
        // A key that expired between KEYS and DUMP is not there any more.
        if let Some(dump) = dump {
            out.insert(key, dump);
        }
    }
    out
}

/// The store's instance id, which every service writes when it first connects.
pub const INSTANCE_KEY: &str = "dueq:instance";

/// How many keys Redis holds besides the store's instance id (which the service
/// writes once when it connects, whatever calls it answers) and the records of
/// calls (`is_call_record`).
pub async fn dbsize(conn: &mut MultiplexedConnection) -> i64 {
    let all: i64 = query(conn, &mut cmd("DBSIZE")).await;
    let records: Vec<String> = query(conn, cmd("KEYS").arg("*:meta:[aw][uo][dr]*")).await;
    let records = records.iter().filter(|key| is_call_record(key)).count();
    all - i64::from(exists(conn, INSTANCE_KEY).await) - i64::try_from(records).unwrap_or(0)
}

pub async fn exists(conn: &mut MultiplexedConnection, key: &str) -> bool {
    query(conn, cmd("EXISTS").arg(key)).await
}

pub async fn key_type(conn: &mut MultiplexedConnection, key: &str) -> String {
    query(conn, cmd("TYPE").arg(key)).await
}

pub async fn zcard(conn: &mut MultiplexedConnection, key: &str) -> u64 {
    query(conn, cmd("ZCARD").arg(key)).await
}

/// The due-index score of schedule `id` (its next run, epoch ms), if indexed.
pub async fn due_score(conn: &mut MultiplexedConnection, ns: &str, id: &str) -> Option<i64> {
    let score: Option<f64> = query(
        conn,
        cmd("ZSCORE").arg(format!("dueq:{{{ns}}}:due")).arg(id),
    )
    .await;
    score.map(|s| s as i64)
}

/// Script calls (EVALSHA and EVAL) Redis has served since start or the last
/// `reset_stats`: every dueq access that touches data is a script.
pub async fn script_calls(conn: &mut MultiplexedConnection) -> u64 {
    let info: String = query(conn, cmd("INFO").arg("commandstats")).await;
    info.lines()
        .filter(|l| {
            [
                "cmdstat_evalsha:",
                "cmdstat_eval:",
                "cmdstat_fcall:",
                "cmdstat_fcall_ro:",
            ]
            .iter()
            .any(|c| l.starts_with(c))
        })
        .filter_map(|l| {
            l.split([':', ','])
                .find_map(|kv| kv.strip_prefix("calls="))
                .and_then(|n| n.parse::<u64>().ok())
        })
        .sum()
}

pub async fn reset_stats(conn: &mut MultiplexedConnection) {
    let _: () = query(conn, cmd("CONFIG").arg("RESETSTAT")).await;
}

/// Waits until `n` long-polls started after `before` was counted are parked: each ran
/// its claim (a script), and the namespace timer, woken by the first waiter, peeked
/// (one more).
pub async fn wait_parked(conn: &mut MultiplexedConnection, before: u64, n: u64) {
    let patience = Patience::new(format!("{n} long-poll(s) to park"));
    while script_calls(conn).await < before + n + 1 {
        patience.wait().await;
    }
}

/// Waits until the service sends Redis no script for `quiet_checks` checks in a row
/// (20 ms or more apart): its namespace timers have gone idle.
pub async fn wait_quiet(conn: &mut MultiplexedConnection, quiet_checks: u32) {
    let patience = Patience::new(format!("no script call for {quiet_checks} checks in a row"));
    let mut last = script_calls(conn).await;
    let mut quiet = 0;
    while quiet < quiet_checks {
        patience.wait().await;
        let now = script_calls(conn).await;
        quiet = if now == last { quiet + 1 } else { 0 };
        last = now;
    }
}
