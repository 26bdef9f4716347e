//! Reading Redis's own view of itself: INFO sections and its clock.

use deadpool_redis::redis::{self, aio::MultiplexedConnection};

use crate::Result;

/// One INFO section (`memory`, `cpu`, `commandstats`, ...).
// Redis's own view of itself (INFO) is what the bench measures with.
#[allow(clippy::disallowed_methods)]
pub(crate) async fn info(conn: &mut MultiplexedConnection, section: &str) -> Result<String> {
    Ok(redis::cmd("INFO").arg(section).query_async(conn).await?)
}

/// One `field:value` line of an INFO reply.
pub(crate) fn info_field(info: &str, field: &str) -> Option<String> {
    info.lines().find_map(|line| {
        line.strip_prefix(field)
            .and_then(|rest| rest.strip_prefix(':'))
            .map(|v| v.trim().to_owned())
    })
}

/// Calls per command, summed over the INFO commandstats lines `keep` accepts.
pub(crate) fn command_calls(commandstats: &str, keep: impl Fn(&str) -> bool) -> u64 {
    commandstats
        .lines()
        .filter(|l| keep(l))
        .filter_map(|l| l.split_once(":calls="))
        .filter_map(|(_, rest)| rest.split(',').next()?.parse::<u64>().ok())
        .sum()
}

/// Redis's clock, in epoch ms.
// Redis's own clock (TIME), to compare with what the service stored.
#[allow(clippy::disallowed_methods)]
pub(crate) async fn redis_now(conn: &mut MultiplexedConnection) -> Result<i64> {
    let (s, us): (i64, i64) = redis::cmd("TIME").query_async(conn).await?;
    Ok(s * 1000 + us / 1000)
}
