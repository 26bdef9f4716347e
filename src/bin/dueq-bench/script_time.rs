//! How long Redis spent in the scripts of one phase: the mean per script call (FCALL,
//! FCALL_RO; EVALSHA and EVAL for the bench's seeding tools) from
//! INFO commandstats, and the longest call of one script from SLOWLOG (every script
//! over 100 µs is logged while the phase runs).

use deadpool_redis::redis::aio::MultiplexedConnection;

use crate::{
    cpu::is_script_call,
    migrate::{read_slowlog, restore_slowlog, script_entry, start_slowlog},
    redis_info::info,
    Result,
};

/// Script calls and the µs Redis spent in them so far.
#[derive(Debug, Clone, Copy)]
struct Calls {
    calls: u64,
    usec: u64,
}

impl Calls {
    async fn take(conn: &mut MultiplexedConnection) -> Result<Calls> {
        let stats = info(conn, "commandstats").await?;
        let field = |line: &str, name: &str| {
            line.split([':', ','])
                .find_map(|kv| kv.strip_prefix(name))
                .and_then(|v| v.parse::<u64>().ok())
                .unwrap_or(0)
        };
        let lines = stats.lines().filter(|l| is_script_call(l));
        Ok(lines.fold(Calls { calls: 0, usec: 0 }, |sum, l| Calls {
            calls: sum.calls + field(l, "calls="),
            usec: sum.usec + field(l, "usec="),
        }))
    }
}

/// Script time measured over one phase.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ScriptTime {
    /// Mean µs per script call (any script) during the phase.
    pub(crate) mean_us: f64,
    /// The longest call of the watched script SLOWLOG caught, in µs (0: none over
    /// 100 µs).
    pub(crate) longest_us: u64,
    /// Calls of the watched script over 10 ms.
    pub(crate) over_10ms: u64,
}

/// Runs `phase`, timing the scripts Redis ran meanwhile; `script` names the one
/// whose longest call is reported.
pub(crate) async fn timed<T>(
    conn: &mut MultiplexedConnection,
    script: &str,
    phase: impl std::future::Future<Output = Result<T>>,
) -> Result<(T, ScriptTime)> {
    timed_any(conn, &[script], phase).await
}

/// `timed`, reporting the longest call of any of `scripts`.
pub(crate) async fn timed_any<T>(
    conn: &mut MultiplexedConnection,
    scripts: &[&str],
    phase: impl std::future::Future<Output = Result<T>>,
) -> Result<(T, ScriptTime)> {
    let threshold = start_slowlog(conn).await?;
    let before = Calls::take(conn).await?;
    let out = phase.await;
    let after = Calls::take(conn).await?;
    let entries = read_slowlog(conn).await?;
    restore_slowlog(conn, threshold).await?;
    let durations: Vec<u64> = entries
        .iter()
        .filter_map(script_entry)
        .filter(|(_, name)| scripts.contains(name))
        .map(|(us, _)| us)
        .collect();
    let calls = after.calls.saturating_sub(before.calls);
    let time = ScriptTime {
        mean_us: after.usec.saturating_sub(before.usec) as f64 / calls.max(1) as f64,
        longest_us: durations.iter().copied().max().unwrap_or(0),
        over_10ms: durations.iter().filter(|&&us| us > 10_000).count() as u64,
    };
    Ok((out?, time))
}
