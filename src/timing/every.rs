//! Fixed intervals in absolute time: slots are `anchor + k * every`.
//!
//! The anchor is `start_time` when given, else the Unix epoch, the way
//! Temporal's interval schedules work: the slots are then the same whichever
//! server computes them and whenever, so a restart or a late claim never
//! shifts the phase. All arithmetic is O(1) in `i128`, so no `i64` input can
//! overflow, and results that do not fit back into `i64` become `None`.

use super::TimingError;

/// Smallest accepted interval.
pub(super) const MIN_EVERY_MS: i64 = 1_000;
/// Largest accepted interval: a leap year.
pub(super) const MAX_EVERY_MS: i64 = 366 * 86_400_000;

#[derive(Debug, Clone, Copy)]
pub(super) struct Every {
    pub(super) every_ms: i64,
    pub(super) anchor_ms: i64,
}

impl Every {
    pub(super) fn new(every_ms: i64, anchor_ms: i64) -> Result<Every, TimingError> {
        if every_ms <= 0 {
            return Err(TimingError::EveryNotPositive);
        }
        if every_ms < MIN_EVERY_MS {
            return Err(TimingError::EveryTooShort);
        }
        if every_ms > MAX_EVERY_MS {
            return Err(TimingError::EveryTooLong);
        }
        Ok(Every {
            every_ms,
            anchor_ms,
        })
    }

    /// Index of the last slot at or before `t` (may be negative).
    fn index_at_or_before(&self, t: i64) -> i128 {
        (i128::from(t) - i128::from(self.anchor_ms)).div_euclid(i128::from(self.every_ms))
    }

    fn slot(&self, k: i128) -> Option<i64> {
        let at = i128::from(self.anchor_ms) + k * i128::from(self.every_ms);
        i64::try_from(at).ok()
    }

    /// The first slot `>= at_ms`.
    pub(super) fn first_at_or_after(&self, at_ms: i64) -> Option<i64> {
        let k = self.index_at_or_before(at_ms);
        let exact = self.slot(k) == Some(at_ms);
        self.slot(if exact { k } else { k + 1 })
    }

    /// The first slot `> after_ms`.
    pub(super) fn next_after(&self, after_ms: i64) -> Option<i64> {
        self.slot(self.index_at_or_before(after_ms) + 1)
    }

    /// How many slots lie in `(lo_excl, hi_incl]`.
    pub(super) fn count_in(&self, lo_excl: i64, hi_incl: i64) -> u128 {
        if hi_incl <= lo_excl {
            return 0;
        }
        let n = self.index_at_or_before(hi_incl) - self.index_at_or_before(lo_excl);
        u128::try_from(n).unwrap_or(0)
    }
}
