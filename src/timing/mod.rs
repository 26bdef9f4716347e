//! When schedules fire: cron expressions in IANA time zones, and fixed intervals.
//! Pure functions over epoch milliseconds; no I/O, no clock.
//!
//! Cron evaluation uses `croner`, not the `cron` crate: cron 0.17 rejects 5-field
//! expressions, numbers Sunday as 1, skipped a daily 02:30 on a spring-forward day,
//! fired 01:30 twice on fall-back and went back in time across it. croner fires a time
//! inside a spring-forward gap once, at the first valid instant after the gap, and a
//! time inside a repeated fall-back hour once, at its first occurrence (the tests in
//! `tests.rs` pin this on real transition dates).

mod preview;
#[cfg(test)]
mod tests;

use chrono::{DateTime, TimeZone, Utc};
use chrono_tz::Tz;
use croner::{
    parser::{CronParser, Seconds, Year},
    Cron,
};

pub use preview::PreviewItem;

/// Missed slots are counted one by one up to this many, then the count saturates.
pub const MAX_SKIP_COUNT: u64 = 10_000;
/// Shortest and longest `every`.
pub const MIN_EVERY_MS: i64 = 1_000;
pub const MAX_EVERY_MS: i64 = 366 * 24 * 3_600_000;
/// Fire times beyond 9999-12-31 are not representable in RFC 3339: treat as never.
const MAX_MS: i64 = 253_402_300_799_999;

/// A timing as received from the API.
#[derive(Debug, Clone, Copy, Default)]
pub struct TimingSpec<'a> {
    pub cron: Option<&'a str>,
    pub every_ms: Option<i64>,
    /// "" means UTC.
    pub timezone: &'a str,
    pub start_ms: Option<i64>,
    pub end_ms: Option<i64>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TimingError {
    #[error("exactly one of cron or every must be set")]
    NeitherOrBoth,
    #[error("cron: must have 5 fields (minute hour day-of-month month day-of-week) or 6 with seconds first, got {0}")]
    CronFieldCount(usize),
    #[error("cron: cannot parse {expr:?}: {reason}")]
    CronParse { expr: String, reason: String },
    #[error("timezone: unknown IANA time zone {0:?}")]
    UnknownZone(String),
    #[error("every: must be positive")]
    EveryNotPositive,
    #[error("every: must be at least 1s")]
    EveryTooShort,
    #[error("every: must be at most 366 days")]
    EveryTooLong,
    #[error("end_time: must be after start_time")]
    EndBeforeStart,
}

impl TimingError {
    /// The API field the error is about.
    pub fn field(&self) -> &'static str {
        match self {
            TimingError::NeitherOrBoth => "timing",
            TimingError::CronFieldCount(_) | TimingError::CronParse { .. } => "cron",
            TimingError::UnknownZone(_) => "timezone",
            TimingError::EveryNotPositive
            | TimingError::EveryTooShort
            | TimingError::EveryTooLong => "every",
            TimingError::EndBeforeStart => "end_time",
        }
    }
}

#[derive(Debug, Clone)]
enum Rule {
    Cron(Box<Cron>),
    /// Slots are anchor + k * every.
    Every {
        every_ms: i64,
        anchor_ms: i64,
    },
}

/// A parsed, validated timing.
#[derive(Debug, Clone)]
pub struct Timing {
    rule: Rule,
    zone: Tz,
    start_ms: Option<i64>,
    end_ms: Option<i64>,
}

/// Result of claiming slot `due_ms` at `now_ms`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Advance {
    /// Slots in (due, now] that were missed and are skipped.
    pub skipped: u64,
    /// First slot after now, None if the schedule has ended.
    pub next_ms: Option<i64>,
}

impl Timing {
    pub fn parse(spec: &TimingSpec) -> Result<Timing, TimingError> {
        let cron = spec.cron.map(str::trim).filter(|c| !c.is_empty());
        let zone_name = if spec.timezone.is_empty() {
            "UTC"
        } else {
            spec.timezone
        };
        let zone: Tz = zone_name
            .parse()
            .map_err(|_| TimingError::UnknownZone(spec.timezone.to_owned()))?;
        if let (Some(start), Some(end)) = (spec.start_ms, spec.end_ms) {
            if end <= start {
                return Err(TimingError::EndBeforeStart);
            }
        }
        let rule = match (cron, spec.every_ms) {
            (Some(expr), None) => Rule::Cron(Box::new(parse_cron(expr)?)),
            (None, Some(every_ms)) => {
                if every_ms <= 0 {
                    return Err(TimingError::EveryNotPositive);
                }
                if every_ms < MIN_EVERY_MS {
                    return Err(TimingError::EveryTooShort);
                }
                if every_ms > MAX_EVERY_MS {
                    return Err(TimingError::EveryTooLong);
                }
                Rule::Every {
                    every_ms,
                    anchor_ms: spec.start_ms.unwrap_or(0),
                }
            }
            _ => return Err(TimingError::NeitherOrBoth),
        };
        Ok(Timing {
            rule,
            zone,
            start_ms: spec.start_ms,
            end_ms: spec.end_ms,
        })
    }

    pub fn is_cron(&self) -> bool {
        matches!(self.rule, Rule::Cron(_))
    }

    pub fn every_ms(&self) -> Option<i64> {
        match self.rule {
            Rule::Every { every_ms, .. } => Some(every_ms),
            Rule::Cron(_) => None,
        }
    }

    pub fn timezone_name(&self) -> &str {
        self.zone.name()
    }

    pub(crate) fn zone(&self) -> Tz {
        self.zone
    }

    /// The first fire time >= at_ms, within start/end.
    pub fn first_at_or_after(&self, at_ms: i64) -> Option<i64> {
        let at_ms = self.start_ms.map_or(at_ms, |start| at_ms.max(start));
        let slot = match &self.rule {
            Rule::Every {
                every_ms,
                anchor_ms,
            } => {
                let k = (at_ms.checked_sub(*anchor_ms)?).div_euclid(*every_ms);
                let mut slot = anchor_ms.checked_add(k.checked_mul(*every_ms)?)?;
                if slot < at_ms {
                    slot = slot.checked_add(*every_ms)?;
                }
                slot
            }
            Rule::Cron(cron) => self.cron_from(cron, at_ms, true)?,
        };
        self.within_end(slot)
    }

    /// The first fire time strictly after after_ms, within start/end.
    pub fn next_after(&self, after_ms: i64) -> Option<i64> {
        self.first_at_or_after(after_ms.checked_add(1)?)
    }

    /// Claiming slot `due_ms` at `now_ms`: the missed slots and the next one after now.
    pub fn advance(&self, due_ms: i64, now_ms: i64) -> Advance {
        let next_ms = self.next_after(now_ms.max(due_ms));
        let skipped = match &self.rule {
            Rule::Every { every_ms, .. } => {
                let missed = (now_ms.saturating_sub(due_ms)).max(0) / every_ms;
                u64::try_from(missed).unwrap_or(0).min(MAX_SKIP_COUNT)
            }
            Rule::Cron(_) => {
                let mut skipped = 0;
                let mut cursor = due_ms;
                while skipped < MAX_SKIP_COUNT {
                    match self.next_after(cursor) {
                        Some(slot) if slot <= now_ms => {
                            skipped += 1;
                            cursor = slot;
                        }
                        _ => break,
                    }
                }
                skipped
            }
        };
        Advance { skipped, next_ms }
    }

    /// The next `count` fire times from `from_ms` (inclusive).
    pub fn preview(&self, from_ms: i64, count: usize) -> Vec<PreviewItem> {
        let mut items = Vec::with_capacity(count.min(1000));
        let mut next = self.first_at_or_after(from_ms);
        while let Some(ms) = next {
            if items.len() >= count {
                break;
            }
            items.push(preview::describe(self, ms));
            next = self.next_after(ms);
        }
        items
    }

    pub(crate) fn cron(&self) -> Option<&Cron> {
        match &self.rule {
            Rule::Cron(cron) => Some(cron),
            Rule::Every { .. } => None,
        }
    }

    fn within_end(&self, slot: i64) -> Option<i64> {
        if slot > MAX_MS || self.end_ms.is_some_and(|end| slot > end) {
            return None;
        }
        Some(slot)
    }

    /// croner works in whole seconds of the zone's wall clock; keep its answer >= at.
    fn cron_from(&self, cron: &Cron, at_ms: i64, inclusive: bool) -> Option<i64> {
        if !(0..=MAX_MS).contains(&at_ms) {
            return None;
        }
        let at: DateTime<Tz> = self.zone.timestamp_millis_opt(at_ms).single()?;
        let mut found = cron.find_next_occurrence(&at, inclusive).ok()?;
        let mut ms = found.with_timezone(&Utc).timestamp_millis();
        // Sub-second starts: croner truncates them, so an inclusive search can return
        // the whole second before `at`. Step forward until we are not in the past.
        let mut guard = 0;
        while ms < at_ms && guard < 4 {
            found = cron.find_next_occurrence(&found, false).ok()?;
            ms = found.with_timezone(&Utc).timestamp_millis();
            guard += 1;
        }
        (ms >= at_ms).then_some(ms)
    }
}

fn parse_cron(expr: &str) -> Result<Cron, TimingError> {
    let fields = expr.split_whitespace().count();
    if !expr.starts_with('@') && !(5..=6).contains(&fields) {
        return Err(TimingError::CronFieldCount(fields));
    }
    CronParser::builder()
        .seconds(Seconds::Optional)
        .year(Year::Disallowed)
        .build()
        .parse(expr)
        .map_err(|e| TimingError::CronParse {
            expr: expr.to_owned(),
            reason: e.to_string(),
        })
}
