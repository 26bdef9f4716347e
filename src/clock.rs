//! The one clock: Redis's.
//!
//! Scripts read Redis `TIME` themselves, so whether something is due never depends on
//! which replica asks. Rust code needs "now" too (to compute a cron's next run on
//! upsert, to arm the wake-up timer); it uses the local clock corrected by the offset
//! to Redis measured by the health loop (half a round trip of uncertainty). A replica
//! whose clock is off by minutes therefore still computes next runs against Redis time.

use std::{
    sync::atomic::{AtomicI64, Ordering},
    time::{Duration, SystemTime, UNIX_EPOCH},
};

#[derive(Debug, Default)]
pub(crate) struct Clock {
    /// Redis time minus local time, in ms.
    offset_ms: AtomicI64,
}

impl Clock {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Best estimate of Redis's current time in epoch ms.
    pub(crate) fn now_ms(&self) -> i64 {
        local_ms() + self.offset_ms.load(Ordering::Relaxed)
    }

    /// Records a Redis `TIME` reading that took `rtt` to arrive.
    pub(crate) fn observe(&self, redis_ms: i64, rtt: Duration) {
        let half_rtt = i64::try_from(rtt.as_millis() / 2).unwrap_or(0);
        let offset = redis_ms + half_rtt - local_ms();
        self.offset_ms.store(offset, Ordering::Relaxed);
    }

    pub(crate) fn offset_ms(&self) -> i64 {
        self.offset_ms.load(Ordering::Relaxed)
    }
}

/// This host's clock in epoch ms, uncorrected: the one reading of the host clock
/// (invariant 7). For "now" use [`Clock::now_ms`]; this is for what Redis time must
/// not or need not decide (where a cron's gaps are measured, in `api::schedules`).
// The gateway clippy.toml points every other host-clock reader to.
#[allow(clippy::disallowed_methods)]
pub(crate) fn local_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn follows_a_skewed_redis_clock() {
        let clock = Clock::new();
        let skew = 3_600_000; // Redis is an hour ahead of this host.
        clock.observe(local_ms() + skew, Duration::from_millis(2));
        assert!((clock.now_ms() - local_ms() - skew).abs() < 50);
    }
}
