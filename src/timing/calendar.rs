//! Whether a cron pattern's date fields match any date at all, decided without a
//! search through the years.
//!
//! Only the month, day-of-month and day-of-week fields depend on the calendar (a
//! pattern has no year field, and every day has the times of day its other fields
//! name). Whether a day matches depends on its month, the month's length and the
//! day's weekday only: croner's `day_match` takes the weekday as an argument and
//! uses the year for nothing but the month's length. And every combination of a
//! month, its length (28 or 29 for February) and the weekday of its first day
//! occurs in every 400-year Gregorian cycle, so in croner's range from any start.
//! Trying each day of each such month therefore answers "ever?" exactly, in at most
//! [`MAX_PROBES`] calls, however the fields combine (OR of day-of-month and
//! day-of-week as in Vixie cron, AND with croner's `+`, `L`, `W`, `#`).
//!
//! Searching instead cost 77 ms of CPU for `0 0 31 2,4,6,9,11 *`: croner walks
//! every day of the matching months up to the year 5000 before it gives up.

use croner::{CronPattern, Weekday};

/// Most `day_match` calls one answer takes: 12 months, 2 lengths for February
/// (counted for every month to keep the bound simple), 7 weekdays, 31 days.
pub(super) const MAX_PROBES: u32 = 12 * 2 * 7 * 31;

/// Longest stretch, in days, between two dates that a satisfiable pattern matches:
/// every kind of month (its number, its length, the weekday of its 1st) recurs within
/// 14,609 days (Feb 29 on a given weekday, across a century year without one), plus
/// the month itself. So each search croner still makes (the next fire time) walks at
/// most this many days, about 40 years, never the 3,000 to its year 5000 that an
/// impossible pattern cost. `tests::calendar` recomputes both numbers.
pub(super) const MAX_GAP_DAYS: i64 = 14_609 + 31;

const WEEKDAYS: [Weekday; 7] = [
    Weekday::Sunday,
    Weekday::Monday,
    Weekday::Tuesday,
    Weekday::Wednesday,
    Weekday::Thursday,
    Weekday::Friday,
    Weekday::Saturday,
];

/// The answer and what it cost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Verdict {
    pub(super) some_day_matches: bool,
    /// `day_match` calls made; at most [`MAX_PROBES`].
    pub(super) probes: u32,
}

/// Whether any date matches `pattern`'s month, day-of-month and day-of-week fields.
pub(super) fn some_day_matches(pattern: &CronPattern) -> Verdict {
    let mut probes = 0;
    for month in pattern.months.values() {
        let month = u32::from(month);
        // A leap and a common year: they differ only in February's length.
        let years: &[i32] = if month == 2 { &[2000, 2001] } else { &[2001] };
        for &year in years {
            let length = days_in_month(year, month);
            for first in 0..7 {
                for day in 1..=length {
                    probes += 1;
                    let weekday = WEEKDAYS[((first + day - 1) % 7) as usize];
                    if matches!(pattern.day_match(year, month, day, weekday), Ok(true)) {
                        return Verdict {
                            some_day_matches: true,
                            probes,
                        };
                    }
                }
            }
        }
    }
    debug_assert!(probes <= MAX_PROBES);
    Verdict {
        some_day_matches: false,
        probes,
    }
}

fn days_in_month(year: i32, month: u32) -> u32 {
    match month {
        4 | 6 | 9 | 11 => 30,
        2 if year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) => 29,
        2 => 28,
        _ => 31,
    }
}
