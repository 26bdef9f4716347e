//! Cron expressions, evaluated in an IANA zone.
//!
//! Why croner and not the `cron` crate: `cron` 0.17 rejects the 5-field Unix
//! form everybody writes, numbers Sunday as 1 instead of 0/7, and mishandles
//! DST (it can skip or repeat fixed-time runs). croner follows POSIX/Vixie
//! field semantics, accepts 5 or 6 fields and `@daily`-style aliases, and
//! documents its DST behaviour.
//!
//! DST policy (Vixie cron's): a *fixed-time* job, one whose second, minute and
//! hour fields contain no `*` and no `/` step (`30 2 * * *`, `0 2,14 * * *`),
//! fires once at the first instant the wall clock reaches its time: a time in
//! a spring-forward gap fires when the gap ends, a repeated fall-back time
//! fires at its first occurrence only. Any other job is an *interval* job:
//! slots inside a gap are skipped and slots in a repeated hour fire on both
//! passes, in real-time order.
//!
//! croner applies that fixed-time rule only when each of those fields holds a
//! single value, so on its own it skips `0 2,14 * * *`'s 02:00 run on the
//! spring-forward day and fires `30 1,13 * * *` twice on the fall-back day.
//! Fixed-time jobs are therefore searched on the naive wall clock with croner
//! and mapped to instants here (see [`zone::first_instant_reaching`]);
//! interval jobs use croner's own zoned search, which gets them right.

use chrono::{DateTime, NaiveDateTime};
use chrono_tz::Tz;
use croner::parser::{CronParser, Seconds, Year};
use croner::Cron;

use super::{calendar, cron_fields, zone, TimingError};

/// 0001-01-02T00:00:00Z. croner searches years 1..=5000 only; starting a
/// search earlier than this could put the wall clock in year 0, so searches
/// are clamped here. Nothing fires before it.
pub(super) const CRON_FLOOR_MS: i64 = -62_135_510_400_000;

/// Bound on re-searches by the monotonic guards below. One retry is the most
/// the logic needs; the bound only makes a croner bug cost `None`, not a hang.
const GUARD_RETRIES: usize = 4;

/// A parsed cron rule.
#[derive(Debug, Clone)]
pub(super) struct CronRule {
    cron: Cron,
    fixed: bool,
}

/// One fire time and the wall-clock reading the pattern matched for it.
/// They differ only when a fixed-time reading fell in a DST gap.
#[derive(Debug, Clone, Copy)]
pub(super) struct Fire {
    pub(crate) at_ms: i64,
    pub(crate) nominal: NaiveDateTime,
}

impl CronRule {
    /// Parses and validates `expr` (already known non-empty).
    pub(super) fn parse(expr: &str) -> Result<CronRule, TimingError> {
        let expr = expr.trim();
        cron_fields::check(expr)?;
        let parser = CronParser::builder()
            .seconds(Seconds::Optional)
            .year(Year::Disallowed)
            .build();
        let cron = parser.parse(expr).map_err(|e| TimingError::CronSyntax {
            expr: expr.to_string(),
            reason: e.to_string(),
        })?;
        let never = || TimingError::CronNeverMatches {
            expr: expr.to_string(),
        };
        // Decided from the calendar, not by a search through the years (which
        // cost tens of ms of CPU for a pattern that never matches).
        let p = &cron.pattern;
        let times = [&p.seconds, &p.minutes, &p.hours];
        if times.iter().any(|c| c.values().is_empty())
            || !calendar::some_day_matches(p).some_day_matches
        {
            return Err(never());
        }
        let fixed = [&p.seconds, &p.minutes, &p.hours]
            .iter()
            .all(|c| !c.from_wildcard && c.step == 1);
        Ok(CronRule { cron, fixed })
    }

    pub(super) fn is_fixed_time(&self) -> bool {
        self.fixed
    }

    /// The first fire strictly after `after_ms`.
    pub(super) fn next_after(&self, tz: Tz, after_ms: i64) -> Option<Fire> {
        // Fires are whole seconds, so "after x ms" is "after its second".
        let after_secs = after_ms.max(CRON_FLOOR_MS).div_euclid(1000);
        let fire = if self.fixed {
            self.fixed_next_after(tz, after_secs)
        } else {
            self.interval_next_after(tz, after_secs)
        }?;
        // The walk croner made is bounded (see calendar::MAX_GAP_DAYS); a DST shift
        // adds at most a day.
        debug_assert!(
            fire.at_ms / 1000 - after_secs <= (calendar::MAX_GAP_DAYS + 1) * 86_400,
            "{after_secs} -> {}",
            fire.at_ms
        );
        (fire.at_ms > after_ms).then_some(fire)
    }

    fn fixed_next_after(&self, tz: Tz, after_secs: i64) -> Option<Fire> {
        let mut from = zone::high_water(tz, after_secs)?;
        for _ in 0..GUARD_RETRIES {
            let nominal = self.cron.find_next_occurrence(&from, false).ok()?;
            let at_secs = zone::first_instant_reaching(tz, &nominal)?;
            if at_secs > after_secs {
                let at_ms = at_secs.checked_mul(1000)?;
                return Some(Fire { at_ms, nominal });
            }
            from = nominal;
        }
        None
    }

    fn interval_next_after(&self, tz: Tz, after_secs: i64) -> Option<Fire> {
        let mut from: DateTime<Tz> = zone::zoned(tz, after_secs)?;
        for _ in 0..GUARD_RETRIES {
            let next = self.cron.find_next_occurrence(&from, false).ok()?;
            if next.timestamp() > after_secs {
                let at_ms = next.timestamp().checked_mul(1000)?;
                return Some(Fire {
                    at_ms,
                    nominal: next.naive_local(),
                });
            }
            from = next;
        }
        None
    }

    /// The pattern's wall-clock match before `wall`, ignoring the zone. Used
    /// by preview to spot interval slots that a gap swallowed.
    pub(super) fn previous_wall_match(&self, wall: &NaiveDateTime) -> Option<NaiveDateTime> {
        self.cron.find_previous_occurrence(wall, false).ok()
    }
}
