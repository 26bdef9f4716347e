//! The wait before reconnecting: exponential, capped, with full jitter.

use std::{
    collections::hash_map::RandomState,
    hash::{BuildHasher, Hasher},
    time::Duration,
};

/// Reconnect backoff: the n-th consecutive failure waits a random time in
/// [base * 2^n / 2, base * 2^n], at most `cap`.
#[derive(Debug, Clone)]
pub(crate) struct Backoff {
    base: Duration,
    cap: Duration,
    failures: u32,
}

impl Backoff {
    pub(crate) fn new(base: Duration, cap: Duration) -> Backoff {
        Backoff {
            base,
            cap,
            failures: 0,
        }
    }

    /// The wait before the next attempt; each call doubles the next.
    pub(crate) fn next_wait(&mut self) -> Duration {
        let exp = self.base.saturating_mul(1u32 << self.failures.min(16));
        self.failures = self.failures.saturating_add(1);
        let ceiling = exp.min(self.cap);
        // Half fixed, half random: never a thundering herd, never zero.
        let half = ceiling / 2;
        half + half.mul_f64(random_fraction())
    }

    /// A connection worked: the next failure starts from `base` again.
    pub(crate) fn reset(&mut self) {
        self.failures = 0;
    }
}

/// A random number in [0, 1) from the std hasher's random keys (no crate for it).
fn random_fraction() -> f64 {
    let mut hasher = RandomState::new().build_hasher();
    hasher.write_u64(0x9e37_79b9_7f4a_7c15);
    (hasher.finish() >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_grow_to_the_cap_and_stay_jittered() {
        let mut b = Backoff::new(Duration::from_millis(100), Duration::from_secs(2));
        let first = b.next_wait();
        assert!(
            first >= Duration::from_millis(50) && first <= Duration::from_millis(100),
            "{first:?}"
        );
        let second = b.next_wait();
        assert!(
            second >= Duration::from_millis(100) && second <= Duration::from_millis(200),
            "{second:?}"
        );
        for _ in 0..3 {
            b.next_wait(); // 400 ms, 800 ms, 1.6 s
        }
        for _ in 0..40 {
            let w = b.next_wait();
            assert!(
                w >= Duration::from_secs(1) && w <= Duration::from_secs(2),
                "{w:?}"
            );
        }
        b.reset();
        assert!(b.next_wait() <= Duration::from_millis(100));
    }
}
