//! `every`: epoch- or start-anchored slots, window, DST independence.

use super::super::{Timing, TimingSpec};
use super::{every, ms, seq, utc, NY};

const HOUR: i64 = 3_600_000;

#[test]
fn anchored_to_epoch_without_start() {
    let t = every(HOUR, None, None);
    assert_eq!(t.first_at_or_after(0), Some(0));
    assert_eq!(t.first_at_or_after(1), Some(HOUR));
    assert_eq!(t.first_at_or_after(HOUR), Some(HOUR));
    assert_eq!(t.next_after(HOUR - 1), Some(HOUR));
    assert_eq!(t.next_after(HOUR), Some(2 * HOUR));
    // Before the epoch the grid continues.
    assert_eq!(t.first_at_or_after(-1), Some(0));
    assert_eq!(t.next_after(-HOUR - 1), Some(-HOUR));
    assert_eq!(
        seq(&t, "2026-03-08T05:10:00Z", 3),
        [
            "2026-03-08T06:00:00Z",
            "2026-03-08T07:00:00Z",
            "2026-03-08T08:00:00Z"
        ]
    );
}

#[test]
fn anchored_to_start() {
    let start = ms("2026-03-08T05:10:00.123Z");
    let t = every(HOUR, Some(start), None);
    assert_eq!(t.first_at_or_after(0), Some(start));
    assert_eq!(t.first_at_or_after(start), Some(start));
    assert_eq!(t.next_after(i64::MIN), Some(start));
    assert_eq!(t.next_after(start - 1), Some(start));
    assert_eq!(t.next_after(start), Some(start + HOUR));
    assert_eq!(t.first_at_or_after(start + 1), Some(start + HOUR));
    assert_eq!(
        seq(&t, "2026-03-08T07:00:00Z", 2),
        ["2026-03-08T07:10:00.123Z", "2026-03-08T08:10:00.123Z"]
    );
}

#[test]
fn end_is_inclusive() {
    let t = every(HOUR, Some(0), Some(3 * HOUR));
    assert_eq!(seq(&t, "1970-01-01T00:00:00Z", 10).len(), 4);
    assert_eq!(t.first_at_or_after(3 * HOUR), Some(3 * HOUR));
    assert_eq!(t.next_after(3 * HOUR - 1), Some(3 * HOUR));
    assert_eq!(t.next_after(3 * HOUR), None);
    assert_eq!(t.first_at_or_after(3 * HOUR + 1), None);
    // End between slots.
    let t = every(HOUR, None, Some(HOUR + 5));
    assert_eq!(t.next_after(HOUR), None);
}

#[test]
fn dst_does_not_affect_every() {
    let t = Timing::parse(&TimingSpec {
        every_ms: Some(HOUR),
        timezone: NY,
        ..TimingSpec::default()
    })
    .expect("valid");
    let from = ms("2026-03-08T05:00:00Z");
    let got = seq(&t, "2026-03-08T05:00:00Z", 4);
    let want: Vec<_> = (0..4).map(|i| utc(from + i * HOUR)).collect();
    assert_eq!(got, want);
    let from = ms("2026-11-01T04:00:00Z");
    let got = seq(&t, "2026-11-01T04:00:00Z", 4);
    let want: Vec<_> = (0..4).map(|i| utc(from + i * HOUR)).collect();
    assert_eq!(got, want);
}

#[test]
fn odd_intervals() {
    // 90 minutes from a start; 7 seconds from the epoch.
    let t = every(90 * 60_000, Some(ms("2026-01-01T00:00:00Z")), None);
    assert_eq!(
        seq(&t, "2026-01-01T01:00:00Z", 3),
        [
            "2026-01-01T01:30:00Z",
            "2026-01-01T03:00:00Z",
            "2026-01-01T04:30:00Z"
        ]
    );
    let t = every(7_000, None, None);
    assert_eq!(t.first_at_or_after(1), Some(7_000));
    assert_eq!(t.first_at_or_after(-6_999), Some(0));
    assert_eq!(t.first_at_or_after(-7_001), Some(-7_000));
}
