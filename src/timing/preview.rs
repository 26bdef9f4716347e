//! Describing fire times for PreviewSchedule, including what DST did to them.
//!
//! The notes exist so a user can check a schedule against their intent on the
//! days the wall clock misbehaves, so each names the wall-clock reading, the
//! local date and the zone, and says which policy applied (see [`super::cron`]).

use chrono::{DateTime, Datelike, NaiveDateTime, Offset, SecondsFormat, Timelike};
use chrono_tz::{OffsetName, Tz};

use super::cron::{CronRule, Fire};
use super::zone;

/// One fire time as a user wants to check it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PreviewItem {
    pub(crate) utc_ms: i64,
    /// RFC 3339 wall-clock time in the schedule's zone, with its offset.
    pub(crate) local: String,
    pub(crate) utc_offset_seconds: i32,
    /// A DST transition moved this fire time out of a gap, or its wall-clock
    /// reading happens twice that day.
    pub(crate) dst_adjusted: bool,
    /// Human-readable explanation when DST shaped this fire; empty otherwise.
    pub(crate) note: String,
}

use super::MAX_TIME_MS as RFC3339_MAX_MS;

/// Renders an `every` fire. Intervals run in absolute time, so DST never
/// moves them and there is nothing to note.
pub(super) fn every_item(tz: Tz, utc_ms: i64) -> Option<PreviewItem> {
    let local = local_time(tz, utc_ms)?;
    Some(item(utc_ms, &local, false, String::new()))
}

/// Renders a cron fire with its DST note.
pub(super) fn cron_item(tz: Tz, rule: &CronRule, fire: &Fire) -> Option<PreviewItem> {
    let local = local_time(tz, fire.at_ms)?;
    let (dst_adjusted, note) = dst_note(tz, rule, fire, &local);
    Some(item(fire.at_ms, &local, dst_adjusted, note))
}

/// The zoned time, or `None` when its RFC 3339 rendering would be invalid:
/// before year 0 or after 9999, in UTC or on the local clock.
fn local_time(tz: Tz, utc_ms: i64) -> Option<DateTime<Tz>> {
    if utc_ms > RFC3339_MAX_MS {
        return None;
    }
    zone::zoned_ms(tz, utc_ms).filter(|local| (0..=9999).contains(&local.year()))
}

fn item(utc_ms: i64, local: &DateTime<Tz>, dst_adjusted: bool, note: String) -> PreviewItem {
    PreviewItem {
        utc_ms,
        local: local.to_rfc3339_opts(SecondsFormat::AutoSi, false),
        utc_offset_seconds: local.offset().fix().local_minus_utc(),
        dst_adjusted,
        note,
    }
}

fn dst_note(tz: Tz, rule: &CronRule, fire: &Fire, local: &DateTime<Tz>) -> (bool, String) {
    let wall = local.naive_local();
    let zone_name = tz.name();
    let abbr = abbreviation(local);
    if let Some((earlier, _)) = zone::ambiguous(tz, &wall) {
        let head = format!(
            "{} occurs twice on {} in {zone_name} (DST fall-back)",
            clock(&wall),
            day(&wall)
        );
        if rule.is_fixed_time() {
            return (true, format!("{head}; fires once, at the first ({abbr})"));
        }
        let pass = if local.timestamp() == earlier {
            "first"
        } else {
            "second"
        };
        return (
            true,
            format!("{head}; interval schedules fire at both, this is the {pass} ({abbr})"),
        );
    }
    if rule.is_fixed_time() {
        // The fixed-time search maps a reading to the first instant the clock
        // reaches it, so a mismatch means the reading was inside a gap.
        if fire.nominal != wall {
            return (
                true,
                format!(
                    "{} does not exist on {} in {zone_name} (DST gap); fires at {} {abbr}",
                    clock(&fire.nominal),
                    day(&fire.nominal),
                    clock(&wall)
                ),
            );
        }
        return (false, String::new());
    }
    // Interval slots in a gap are dropped, not moved, so nothing marks this
    // fire itself; the note tells the user why the slot before it is missing.
    // Only the nearest earlier match can be the swallowed one: any match
    // between it and this fire would itself have fired.
    match swallowed_by_gap(tz, rule, &wall) {
        Some((from, to)) => (
            false,
            format!(
                "clock jumps from {} to {} on {} in {zone_name} (DST gap); \
                 interval slots in between are skipped",
                clock(&from),
                clock(&to),
                day(&from)
            ),
        ),
        None => (false, String::new()),
    }
}

/// When the pattern's previous wall-clock match before `wall` fell in a gap,
/// the gap's first missing reading and the reading it jumped to.
fn swallowed_by_gap(
    tz: Tz,
    rule: &CronRule,
    wall: &NaiveDateTime,
) -> Option<(NaiveDateTime, NaiveDateTime)> {
    let previous = rule.previous_wall_match(wall)?;
    if !zone::in_gap(tz, &previous) {
        return None;
    }
    let gap_end = zone::first_instant_reaching(tz, &previous)?;
    Some((
        zone::gap_start(tz, gap_end)?,
        zone::wall_clock(tz, gap_end)?,
    ))
}

/// `EDT`, or the numeric offset for zones whose tzdb entry has no letters
/// (Australia/Lord_Howe's `+1030`).
fn abbreviation(local: &DateTime<Tz>) -> String {
    match local.offset().abbreviation() {
        Some(abbr) => abbr.to_string(),
        None => local.format("%:z").to_string(),
    }
}

/// `02:30`, with seconds only when the pattern has them.
fn clock(wall: &NaiveDateTime) -> String {
    if wall.second() == 0 {
        wall.format("%H:%M").to_string()
    } else {
        wall.format("%H:%M:%S").to_string()
    }
}

fn day(wall: &NaiveDateTime) -> String {
    wall.format("%Y-%m-%d").to_string()
}
