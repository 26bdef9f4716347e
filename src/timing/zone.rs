//! Wall-clock helpers over chrono-tz, at whole-second resolution.
//!
//! chrono-tz does not expose its transition table, so the two places that
//! need a transition instant find it by bisection (about 17 zone lookups,
//! paid only on the rare call that lands in a DST gap or a repeated hour).

use chrono::{DateTime, LocalResult, NaiveDateTime, Offset, TimeZone, Utc};
use chrono_tz::Tz;

/// Wider than any offset chrono-tz knows (LMT offsets reach about ±16h) plus
/// the longest gap on record (Pacific/Apia skipped a whole day in 2011).
const GAP_SEARCH_MARGIN_SECS: i64 = 2 * 86_400;

/// Keeps zoned values a day inside chrono's range: chrono panics when a
/// zone offset pushes the wall clock of an in-range instant out of range.
const RANGE_MARGIN_SECS: i64 = 86_400;

/// The instant `secs` (UTC epoch seconds) as a zoned date-time, or `None`
/// near or beyond the ends of chrono's range.
pub(super) fn zoned(tz: Tz, secs: i64) -> Option<DateTime<Tz>> {
    let min = DateTime::<Utc>::MIN_UTC.timestamp() + RANGE_MARGIN_SECS;
    let max = DateTime::<Utc>::MAX_UTC.timestamp() - RANGE_MARGIN_SECS;
    if !(min..=max).contains(&secs) {
        return None;
    }
    DateTime::from_timestamp(secs, 0).map(|utc| utc.with_timezone(&tz))
}

/// Like [`zoned`], at millisecond precision.
pub(super) fn zoned_ms(tz: Tz, ms: i64) -> Option<DateTime<Tz>> {
    zoned(tz, ms.div_euclid(1000))?;
    DateTime::from_timestamp_millis(ms).map(|utc| utc.with_timezone(&tz))
}

/// The zone's wall clock at `secs`.
pub(super) fn wall_clock(tz: Tz, secs: i64) -> Option<NaiveDateTime> {
    zoned(tz, secs).map(|dt| dt.naive_local())
}

fn offset_secs(tz: Tz, secs: i64) -> Option<i32> {
    zoned(tz, secs).map(|dt| dt.offset().fix().local_minus_utc())
}

/// Both instants of a wall-clock reading that happens twice, earlier first.
pub(super) fn ambiguous(tz: Tz, wall: &NaiveDateTime) -> Option<(i64, i64)> {
    match tz.from_local_datetime(wall) {
        LocalResult::Ambiguous(a, b) => {
            let (a, b) = (a.timestamp(), b.timestamp());
            Some((a.min(b), a.max(b)))
        }
        _ => None,
    }
}

/// True when `wall` never appears on the zone's clock (a spring-forward gap).
pub(super) fn in_gap(tz: Tz, wall: &NaiveDateTime) -> bool {
    matches!(tz.from_local_datetime(wall), LocalResult::None)
}

/// The first instant at which the zone's wall clock reads `wall` or later.
///
/// This is the whole fixed-time DST policy in one definition: a reading that
/// happens once maps to that instant, a repeated one to its first occurrence,
/// and one inside a gap to the first instant after the gap. It never
/// decreases as `wall` grows, which is what keeps fire times in order.
pub(super) fn first_instant_reaching(tz: Tz, wall: &NaiveDateTime) -> Option<i64> {
    match tz.from_local_datetime(wall) {
        LocalResult::Single(dt) => Some(dt.timestamp()),
        LocalResult::Ambiguous(..) => ambiguous(tz, wall).map(|(earlier, _)| earlier),
        LocalResult::None => gap_end(tz, wall),
    }
}

/// Bisects for the smallest instant whose wall clock is at least `wall`.
fn gap_end(tz: Tz, wall: &NaiveDateTime) -> Option<i64> {
    let as_utc = wall.and_utc().timestamp();
    let mut lo = as_utc.checked_sub(GAP_SEARCH_MARGIN_SECS)?;
    let mut hi = as_utc.checked_add(GAP_SEARCH_MARGIN_SECS)?;
    if wall_clock(tz, lo)? >= *wall || wall_clock(tz, hi)? < *wall {
        return None;
    }
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if wall_clock(tz, mid)? >= *wall {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Some(hi)
}

/// The latest wall-clock reading the zone has shown at or before `secs`.
///
/// Usually that is the reading at `secs`. In the second pass of a repeated
/// hour the clock has already been further: the reading just before it went
/// back. Searching for fixed-time matches strictly after this reading is what
/// stops a repeated 01:30 from firing again on the second pass.
pub(super) fn high_water(tz: Tz, secs: i64) -> Option<NaiveDateTime> {
    let wall = wall_clock(tz, secs)?;
    let Some((earlier, later)) = ambiguous(tz, &wall) else {
        return Some(wall);
    };
    if secs != later {
        return Some(wall);
    }
    // Bisect for the moment the clock went back, between the two passes.
    let later_offset = offset_secs(tz, later)?;
    let (mut lo, mut hi) = (earlier, later);
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if offset_secs(tz, mid)? == later_offset {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    wall_clock(tz, lo)
}

/// The wall-clock reading just before the gap that ends at `gap_end_secs`,
/// plus one second: where the missing stretch starts.
pub(super) fn gap_start(tz: Tz, gap_end_secs: i64) -> Option<NaiveDateTime> {
    wall_clock(tz, gap_end_secs.checked_sub(1)?)?.checked_add_signed(chrono::TimeDelta::seconds(1))
}
