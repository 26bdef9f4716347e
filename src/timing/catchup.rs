//! Catch-up policies: which of a schedule's due slots a claim hands out and which it
//! skips, and why (issue 17). Pure: the claim script asks for a plan when a schedule
//! is behind under its policy and applies it under its revision/next-run check.

use std::collections::VecDeque;

use super::{Timing, MAX_SKIP_COUNT};

/// Most missed slots CATCHUP_POLICY_ALL hands out after one outage (the API's bound
/// on `catchup_limit`): a plan walks at most this many slots past the window.
pub(crate) const MAX_CATCHUP_LIMIT: u32 = 10_000;

/// What a claim does with slots missed while nothing claimed them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum CatchUp {
    /// One occurrence, for the oldest missed slot; the later ones are skipped.
    #[default]
    One,
    /// Nothing for missed slots; a late claim of the current slot still fires.
    Skip,
    /// One occurrence per missed slot, oldest first, at most `limit` (the most recent).
    All { limit: u32 },
}

/// A schedule's catch-up rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct CatchUpRule {
    pub(crate) policy: CatchUp,
    /// Slots older than this before the claim are skipped whatever the policy.
    pub(crate) window_ms: Option<i64>,
}

/// What one claim of a due schedule does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Plan {
    /// The slot to hand out, if any.
    pub(crate) hand_out: Option<i64>,
    /// The schedule's next run afterwards (may still be due under ALL: the cursor of
    /// the slots left to hand out); `None` once the schedule has ended.
    pub(crate) next_ms: Option<i64>,
    /// Slots skipped by the policy.
    pub(crate) skipped_catchup: u64,
    /// Slots skipped for being older than the window.
    pub(crate) skipped_window: u64,
}

/// Where the window leaves a late claim's slots.
enum Windowed {
    /// The slots from `first` on are inside the window; `skipped` older ones are not.
    From { first: i64, skipped: u64 },
    /// No slot up to now is inside the window: all `skipped`, the next run is `next_ms`.
    Past { next_ms: Option<i64>, skipped: u64 },
}

impl Timing {
    /// Claiming a schedule whose next run is slot `due_ms` at `now_ms` under `rule`.
    pub(crate) fn catch_up(&self, due_ms: i64, now_ms: i64, rule: CatchUpRule) -> Plan {
        if now_ms < due_ms {
            // An early claim (a hint raced the clock): nothing is missed.
            return Plan {
                hand_out: Some(due_ms),
                next_ms: self.next_after(due_ms),
                skipped_catchup: 0,
                skipped_window: 0,
            };
        }
        // 1. The window: slots before now - window are skipped.
        let (first, skipped_window) = match self.window(due_ms, now_ms, rule.window_ms) {
            Windowed::From { first, skipped } => (first, skipped),
            Windowed::Past { next_ms, skipped } => {
                return Plan {
                    hand_out: None,
                    next_ms,
                    skipped_catchup: 0,
                    skipped_window: skipped,
                }
            }
        };
        // 2. The policy, over the slots [first, now].
        Plan {
            skipped_window,
            ..self.policy(first, now_ms, rule.policy)
        }
    }

    /// Step 1 of a late claim (`due_ms <= now_ms`): the slots older than `window_ms`
    /// before now are skipped.
    fn window(&self, due_ms: i64, now_ms: i64, window_ms: Option<i64>) -> Windowed {
        let Some(window) = window_ms else {
            return Windowed::From {
                first: due_ms,
                skipped: 0,
            };
        };
        let from = now_ms.saturating_sub(window);
        if due_ms >= from {
            return Windowed::From {
                first: due_ms,
                skipped: 0,
            };
        }
        let to_window = self.advance(due_ms, from - 1);
        let skipped = (to_window.skipped + 1).min(MAX_SKIP_COUNT);
        match to_window.next_ms {
            Some(next) if next <= now_ms => Windowed::From {
                first: next,
                skipped,
            },
            next_ms => Windowed::Past { next_ms, skipped },
        }
    }

    /// Step 2 of a late claim: what `policy` does with the slots [`first`, `now_ms`]
    /// (`skipped_window` left 0 for the caller to fill in).
    fn policy(&self, first: i64, now_ms: i64, policy: CatchUp) -> Plan {
        let plan = |hand_out, next_ms, skipped_catchup| Plan {
            hand_out,
            next_ms,
            skipped_catchup,
            skipped_window: 0,
        };
        match policy {
            CatchUp::One => {
                let rest = self.advance(first, now_ms);
                plan(Some(first), rest.next_ms, rest.skipped)
            }
            CatchUp::Skip => {
                let rest = self.advance(first, now_ms);
                if rest.skipped == 0 {
                    plan(Some(first), rest.next_ms, 0)
                } else {
                    plan(None, rest.next_ms, (rest.skipped + 1).min(MAX_SKIP_COUNT))
                }
            }
            CatchUp::All { limit } => self.all_missed(first, now_ms, limit),
        }
    }

    /// CATCHUP_POLICY_ALL over the slots [`first`, `now_ms`]: the oldest of the last
    /// `limit` slots now, the next of them as the next run; the older ones skipped.
    /// The walk is bounded by MAX_SKIP_COUNT + limit slots.
    fn all_missed(&self, first: i64, now_ms: i64, limit: u32) -> Plan {
        let limit = limit.clamp(1, MAX_CATCHUP_LIMIT) as usize;
        let mut kept: VecDeque<i64> = VecDeque::with_capacity(limit.min(64) + 1);
        let mut dropped: u64 = 0;
        let mut slot = Some(first);
        let mut walked: u64 = 0;
        while let Some(at) = slot.filter(|&at| at <= now_ms) {
            kept.push_back(at);
            if kept.len() > limit {
                kept.pop_front();
                dropped += 1;
            }
            walked += 1;
            slot = self.next_after(at);
            if walked >= MAX_SKIP_COUNT + limit as u64 {
                // Saturated: the slots left are handed out from here on,
                // limit-bounded again by the next plan.
                break;
            }
        }
        let (hand_out, next_ms) = match kept.pop_front() {
            Some(hand_out) => (Some(hand_out), kept.front().copied().or(slot)),
            None => (None, slot),
        };
        Plan {
            hand_out,
            next_ms,
            skipped_catchup: dropped.min(MAX_SKIP_COUNT),
            skipped_window: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timing::TimingSpec;

    const MIN: i64 = 60_000;

    fn every_minute() -> Timing {
        Timing::parse(&TimingSpec {
            every_ms: Some(MIN),
            ..TimingSpec::default()
        })
        .unwrap_or_else(|e| panic!("{e}"))
    }

    fn rule(policy: CatchUp, window_ms: Option<i64>) -> CatchUpRule {
        CatchUpRule { policy, window_ms }
    }

    /// Ten missed minutes (slots 0..=9 due at 9:30) under each policy.
    #[test]
    fn each_policy_plans_ten_missed_slots() {
        let t = every_minute();
        let now = 9 * MIN + 30_000;
        assert_eq!(
            t.catch_up(0, now, rule(CatchUp::One, None)),
            Plan {
                hand_out: Some(0),
                next_ms: Some(10 * MIN),
                skipped_catchup: 9,
                skipped_window: 0
            }
        );
        assert_eq!(
            t.catch_up(0, now, rule(CatchUp::Skip, None)),
            Plan {
                hand_out: None,
                next_ms: Some(10 * MIN),
                skipped_catchup: 10,
                skipped_window: 0
            }
        );
        assert_eq!(
            t.catch_up(0, now, rule(CatchUp::All { limit: 3 }, None)),
            Plan {
                hand_out: Some(7 * MIN),
                next_ms: Some(8 * MIN),
                skipped_catchup: 7,
                skipped_window: 0
            }
        );
        assert_eq!(
            t.catch_up(0, now, rule(CatchUp::All { limit: 100 }, None)),
            Plan {
                hand_out: Some(0),
                next_ms: Some(MIN),
                skipped_catchup: 0,
                skipped_window: 0
            }
        );
        // A window of 2.5 minutes keeps slots 7, 8 and 9.
        let window = Some(2 * MIN + 30_000);
        assert_eq!(
            t.catch_up(0, now, rule(CatchUp::One, window)),
            Plan {
                hand_out: Some(7 * MIN),
                next_ms: Some(10 * MIN),
                skipped_catchup: 2,
                skipped_window: 7
            }
        );
        assert_eq!(
            t.catch_up(0, now, rule(CatchUp::All { limit: 2 }, window)),
            Plan {
                hand_out: Some(8 * MIN),
                next_ms: Some(9 * MIN),
                skipped_catchup: 1,
                skipped_window: 7
            }
        );
        // A window shorter than the gap to the last slot skips everything.
        assert_eq!(
            t.catch_up(0, now, rule(CatchUp::One, Some(10_000))),
            Plan {
                hand_out: None,
                next_ms: Some(10 * MIN),
                skipped_catchup: 0,
                skipped_window: 10
            }
        );
    }

    /// A late claim of the current slot is not a missed slot: SKIP hands it out.
    #[test]
    fn skip_hands_out_a_late_current_slot() {
        let t = every_minute();
        assert_eq!(
            t.catch_up(5 * MIN, 5 * MIN + 59_000, rule(CatchUp::Skip, None)),
            Plan {
                hand_out: Some(5 * MIN),
                next_ms: Some(6 * MIN),
                skipped_catchup: 0,
                skipped_window: 0
            }
        );
    }

    /// ALL drains one slot per plan from the cursor, never handing out a slot twice.
    #[test]
    fn all_drains_one_slot_per_plan() {
        let t = every_minute();
        let now = 9 * MIN + 30_000;
        let mut due = Some(0);
        let mut handed = Vec::new();
        while let Some(d) = due.filter(|&d| d <= now) {
            let p = t.catch_up(d, now, rule(CatchUp::All { limit: 4 }, None));
            handed.extend(p.hand_out);
            due = p.next_ms;
        }
        assert_eq!(handed, vec![6 * MIN, 7 * MIN, 8 * MIN, 9 * MIN]);
        assert_eq!(due, Some(10 * MIN));
    }
}
