//! When schedules fire: cron expressions in IANA time zones, and fixed
//! intervals. Pure functions over epoch milliseconds; no I/O, no clock.
//!
//! The rules themselves live in [`cron`] (including the DST policy) and
//! [`every`]; this module adds what both share: the optional
//! `[start_time, end_time]` window (both ends inclusive), missed-slot
//! counting and previews.

mod calendar;
mod catchup;
mod cron;
mod cron_fields;
mod error;
mod every;
mod preview;
mod zone;
mod zone_name;

#[cfg(test)]
mod tests;

use chrono_tz::Tz;

use cron::{CronRule, Fire};
use every::Every;

pub(crate) use catchup::{CatchUp, CatchUpRule, MAX_CATCHUP_LIMIT};
pub(crate) use error::TimingError;
pub(crate) use preview::PreviewItem;

/// Missed slots are counted up to this many, then the count saturates: a cron
/// count costs one search per slot, and past this the exact number tells an
/// operator nothing more than "a lot".
pub(crate) const MAX_SKIP_COUNT: u64 = 100_000;

/// 9999-12-31T23:59:59.999Z, the last instant a protobuf Timestamp (RFC 3339) can
/// carry. No fire time is later: a schedule whose next run would be is over, rather
/// than stored with a time its clients cannot parse. `lua/lib/rules.lua` keeps the
/// same bound for `every`.
pub(crate) const MAX_TIME_MS: i64 = 253_402_300_799_999;

/// Cron times are computed up to the year 5000 (croner's range); a cron schedule
/// starting later would never fire, so a new one may not (4999-12-30T00:00:00Z,
/// leaving room for any zone's offset).
const CRON_LAST_START_MS: i64 = 95_617_411_200_000;

/// Most fire times one preview returns; matches the API's `count` limit.
pub(crate) const MAX_PREVIEW_COUNT: usize = 1000;

/// A timing as received from the API.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct TimingSpec<'a> {
    /// A cron expression; `Some("")` counts as absent so that an API message
    /// with an unset string field does not conflict with `every`.
    pub(crate) cron: Option<&'a str>,
    pub(crate) every_ms: Option<i64>,
    /// An IANA zone name; "" means UTC.
    pub(crate) timezone: &'a str,
    pub(crate) start_ms: Option<i64>,
    pub(crate) end_ms: Option<i64>,
    /// `every` only: slots are (start_time or the epoch) + offset + k*every.
    pub(crate) offset_ms: Option<i64>,
}

#[derive(Debug, Clone)]
enum Rule {
    // Boxed because croner's pattern is far larger than `Every`.
    Cron(Box<CronRule>),
    Every(Every),
}

/// A parsed, validated timing.
#[derive(Debug, Clone)]
pub(crate) struct Timing {
    rule: Rule,
    tz: Tz,
    start_ms: Option<i64>,
    end_ms: Option<i64>,
}

/// Result of claiming slot `due_ms` at `now_ms`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Advance {
    /// Slots in `(due, now]` that were missed, saturating at [`MAX_SKIP_COUNT`].
    pub(crate) skipped: u64,
    /// The first slot after both `due` and `now`; `None` once the schedule
    /// has ended.
    pub(crate) next_ms: Option<i64>,
}

impl Timing {
    /// Validates a spec. `every` is anchored at `start_ms`, else the epoch.
    pub(crate) fn parse(spec: &TimingSpec) -> Result<Timing, TimingError> {
        let cron = spec.cron.filter(|c| !c.is_empty());
        let tz = zone_name::parse(spec.timezone)?;
        let rule = match (cron, spec.every_ms) {
            (Some(_), None) if spec.offset_ms.is_some() => return Err(TimingError::OffsetWithCron),
            (Some(expr), None) => Rule::Cron(Box::new(CronRule::parse(expr)?)),
            (None, Some(every_ms)) => {
                let offset = spec.offset_ms.unwrap_or(0);
                let every =
                    Every::new(every_ms, spec.start_ms.unwrap_or(0).saturating_add(offset))?;
                if !(0..every_ms).contains(&offset) {
                    return Err(TimingError::OffsetNotWithinInterval);
                }
                Rule::Every(every)
            }
            _ => return Err(TimingError::CronXorEvery),
        };
        if let (Some(start), Some(end)) = (spec.start_ms, spec.end_ms) {
            if end <= start {
                return Err(TimingError::EndNotAfterStart);
            }
        }
        Ok(Timing {
            rule,
            tz,
            start_ms: spec.start_ms,
            end_ms: spec.end_ms,
        })
    }

    /// Validates a spec for a new or changed schedule: [`Timing::parse`], plus the
    /// rules that only bind what is written from now on (stored schedules keep
    /// parsing with [`Timing::parse`]): no legacy zone, and no zone beside `every`.
    pub(crate) fn parse_new(spec: &TimingSpec) -> Result<Timing, TimingError> {
        let timing = Timing::parse(spec)?;
        zone_name::check_new(timing.tz)?;
        if timing.is_cron()
            && spec
                .start_ms
                .is_some_and(|start| start > CRON_LAST_START_MS)
        {
            return Err(TimingError::CronStartTooLate);
        }
        if !timing.is_cron() && !spec.timezone.is_empty() && timing.tz != Tz::UTC {
            return Err(TimingError::TimezoneWithEvery);
        }
        Ok(timing)
    }

    pub(crate) fn is_cron(&self) -> bool {
        matches!(self.rule, Rule::Cron(_))
    }

    /// The zone as the client named it (links such as `US/Eastern` are kept).
    pub(crate) fn timezone_name(&self) -> &str {
        self.tz.name()
    }

    /// The first fire time `>= at_ms`.
    pub(crate) fn first_at_or_after(&self, at_ms: i64) -> Option<i64> {
        match &self.rule {
            Rule::Cron(rule) => self
                .cron_fire_after(rule, at_ms.saturating_sub(1))
                .map(|fire| fire.at_ms),
            Rule::Every(every) => {
                let from = self.start_ms.map_or(at_ms, |start| at_ms.max(start));
                every
                    .first_at_or_after(from)
                    .filter(|&at| self.before_end(at))
            }
        }
    }

    /// The first fire time `> after_ms`.
    pub(crate) fn next_after(&self, after_ms: i64) -> Option<i64> {
        match &self.rule {
            Rule::Cron(rule) => self.cron_fire_after(rule, after_ms).map(|fire| fire.at_ms),
            Rule::Every(every) => every
                .next_after(self.clip_to_start(after_ms))
                .filter(|&at| self.before_end(at)),
        }
    }

    /// Claiming slot `due_ms` at `now_ms`: how many later slots were missed,
    /// and the next one to run. An early claim (`now < due`) skips nothing
    /// and never hands `due` out again.
    pub(crate) fn advance(&self, due_ms: i64, now_ms: i64) -> Advance {
        if now_ms <= due_ms {
            return Advance {
                skipped: 0,
                next_ms: self.next_after(due_ms),
            };
        }
        match &self.rule {
            Rule::Every(every) => self.advance_every(every, due_ms, now_ms),
            Rule::Cron(rule) => self.advance_cron(rule, due_ms, now_ms),
        }
    }

    fn advance_every(&self, every: &Every, due_ms: i64, now_ms: i64) -> Advance {
        // Slots before start or after end are not slots, so clip (due, now]
        // to the window before counting.
        let lo = self.clip_to_start(due_ms);
        let hi = self.end_ms.map_or(now_ms, |end| now_ms.min(end));
        let missed = every.count_in(lo, hi);
        Advance {
            skipped: u64::try_from(missed).map_or(MAX_SKIP_COUNT, |n| n.min(MAX_SKIP_COUNT)),
            next_ms: self.next_after(now_ms),
        }
    }

    fn advance_cron(&self, rule: &CronRule, due_ms: i64, now_ms: i64) -> Advance {
        let mut skipped = 0;
        let mut cursor = due_ms;
        while skipped < MAX_SKIP_COUNT {
            match self.cron_fire_after(rule, cursor) {
                Some(fire) if fire.at_ms <= now_ms => {
                    skipped += 1;
                    cursor = fire.at_ms;
                }
                // No slot lies in (cursor, now], so this search already
                // answered "first slot after now".
                other => {
                    return Advance {
                        skipped,
                        next_ms: other.map(|fire| fire.at_ms),
                    }
                }
            }
        }
        Advance {
            skipped,
            next_ms: self.next_after(now_ms),
        }
    }

    /// Up to `count` (at most [`MAX_PREVIEW_COUNT`]) fire times from
    /// `from_ms` inclusive, each with its wall-clock reading and what DST did
    /// to it. Stops early at a fire time RFC 3339 cannot render.
    pub(crate) fn preview(&self, from_ms: i64, count: usize) -> Vec<PreviewItem> {
        let count = count.min(MAX_PREVIEW_COUNT);
        let mut items = Vec::with_capacity(count.min(64));
        match &self.rule {
            Rule::Cron(rule) => {
                let mut next = self.cron_fire_after(rule, from_ms.saturating_sub(1));
                while let Some(fire) = next.filter(|_| items.len() < count) {
                    let Some(item) = preview::cron_item(self.tz, rule, &fire) else {
                        break;
                    };
                    items.push(item);
                    next = self.cron_fire_after(rule, fire.at_ms);
                }
            }
            Rule::Every(_) => {
                let mut next = self.first_at_or_after(from_ms);
                while let Some(at_ms) = next.filter(|_| items.len() < count) {
                    let Some(item) = preview::every_item(self.tz, at_ms) else {
                        break;
                    };
                    items.push(item);
                    next = self.next_after(at_ms);
                }
            }
        }
        items
    }

    /// The first cron fire `> after_ms` inside the window.
    fn cron_fire_after(&self, rule: &CronRule, after_ms: i64) -> Option<Fire> {
        rule.next_after(self.tz, self.clip_to_start(after_ms))
            .filter(|fire| self.before_end(fire.at_ms))
    }

    /// Raises an exclusive lower bound so that nothing before `start_ms`
    /// passes it. At `start_ms == i64::MIN` the saturation is harmless: no
    /// slot lies strictly after `i64::MIN` and before it.
    fn clip_to_start(&self, after_ms: i64) -> i64 {
        self.start_ms
            .map_or(after_ms, |start| after_ms.max(start.saturating_sub(1)))
    }

    fn before_end(&self, at_ms: i64) -> bool {
        at_ms <= MAX_TIME_MS && self.end_ms.is_none_or(|end| at_ms <= end)
    }
}
