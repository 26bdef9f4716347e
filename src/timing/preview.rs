//! Describing fire times for PreviewSchedule, including what DST did to them.

use chrono::{DateTime, Duration, LocalResult, Offset, TimeZone, Utc};
use chrono_tz::Tz;

use super::Timing;

/// One fire time as a user wants to check it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreviewItem {
    pub utc_ms: i64,
    /// RFC 3339 wall-clock time in the schedule's zone, with its offset.
    pub local: String,
    pub utc_offset_seconds: i32,
    /// A DST transition moved this fire time (gap) or made its wall time ambiguous.
    pub dst_adjusted: bool,
    pub note: String,
}

pub(super) fn describe(timing: &Timing, utc_ms: i64) -> PreviewItem {
    let zone = timing.zone();
    let Some(local) = zone.timestamp_millis_opt(utc_ms).single() else {
        return PreviewItem {
            utc_ms,
            local: String::new(),
            utc_offset_seconds: 0,
            dst_adjusted: false,
            note: String::new(),
        };
    };
    let offset = local.offset().fix().local_minus_utc();
    let (dst_adjusted, note) = match timing.cron() {
        Some(_) => dst_note(timing, zone, &local),
        None => (false, String::new()),
    };
    PreviewItem {
        utc_ms,
        local: local.to_rfc3339(),
        utc_offset_seconds: offset,
        dst_adjusted,
        note,
    }
}

/// For a cron fire time: was it moved out of a gap, or is its wall time repeated?
fn dst_note(timing: &Timing, zone: Tz, local: &DateTime<Tz>) -> (bool, String) {
    let naive = local.naive_local();
    let zone_name = zone.name();
    // Ambiguous wall time (fall-back): it exists twice; croner fires the first.
    if let LocalResult::Ambiguous(_, _) = zone.from_local_datetime(&naive) {
        return (
            true,
            format!(
                "{} occurs twice on {} in {zone_name} (DST fall-back); fires once, at the first",
                naive.format("%H:%M"),
                naive.format("%Y-%m-%d")
            ),
        );
    }
    // Moved out of a gap: the instant just before has a different offset, and the cron
    // wanted a wall time that did not exist. Detect by the wall time one second before
    // not being one second earlier (a jump), and the pattern not matching this time
    // naturally in the previous minute's wall clock.
    let before = *local - Duration::seconds(1);
    let jumped = before.naive_local() != naive - Duration::seconds(1);
    if jumped && !matches_wall_time(timing, local) {
        let utc = local.with_timezone(&Utc);
        return (
            true,
            format!(
                "the scheduled wall time does not exist on {} in {zone_name} (DST gap); fires at {} ({})",
                naive.format("%Y-%m-%d"),
                naive.format("%H:%M"),
                utc.format("%H:%MZ")
            ),
        );
    }
    (false, String::new())
}

/// Does the cron pattern itself name this wall-clock time (as opposed to croner
/// having moved a gap time here)?
fn matches_wall_time(timing: &Timing, local: &DateTime<Tz>) -> bool {
    let Some(cron) = timing.cron() else {
        return true;
    };
    // Evaluate the same wall time in UTC, where no gap exists.
    let naive = local.naive_local();
    let as_utc = Utc.from_utc_datetime(&naive);
    cron.is_time_matching(&as_utc).unwrap_or(true)
}
