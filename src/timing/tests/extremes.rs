//! Nothing panics, whatever the input.

use super::super::{Advance, Timing, MAX_SKIP_COUNT};
use super::{cron, every, ms, utc, BERLIN, NY};

fn all_timings() -> Vec<Timing> {
    vec![
        cron("30 2 * * *", NY),
        cron("*/30 * * * *", BERLIN),
        cron("* * * * * *", "UTC"),
        cron("0 0 29 2 +MON", NY),
        cron("0 0 1 1 *", "Pacific/Kiritimati"),
        every(1_000, None, None),
        every(1_024, None, None),
        every(366 * 86_400_000, Some(i64::MIN), Some(i64::MAX)),
        every(1_000, Some(i64::MAX - 5), None),
    ]
}

fn probes() -> Vec<i64> {
    let mut v = vec![
        i64::MIN,
        i64::MIN + 1,
        -62_135_596_800_001, // 0000-12-31T23:59:59.999Z
        -62_135_596_800_000, // 0001-01-01T00:00:00Z
        -1,
        0,
        1,
        95_617_584_000_000,  // 5000-01-01T00:00:00Z
        253_402_300_799_999, // 9999-12-31T23:59:59.999Z
        8_210_266_876_799_999,
        i64::MAX - 1,
        i64::MAX,
    ];
    let step = i64::MAX / 64;
    v.extend((-64..=64).map(|i| i * step));
    v
}

#[test]
fn no_panics_anywhere() {
    for t in all_timings() {
        for &a in &probes() {
            let first = t.first_at_or_after(a);
            assert!(first.is_none_or(|f| f >= a));
            let next = t.next_after(a);
            assert!(next.is_none_or(|n| n > a));
            let _ = t.preview(a, 3);
            // `now` far past `due` is covered (and timed) in `advance`.
            for &b in &[i64::MIN, a, a.saturating_add(86_400_000)] {
                let adv = t.advance(a, b);
                assert!(adv.skipped <= MAX_SKIP_COUNT);
                assert!(adv.next_ms.is_none_or(|n| n > a.max(b)));
            }
        }
    }
}

#[test]
fn cron_range_edges() {
    let t = cron("0 0 1 1 *", "UTC");
    assert_eq!(t.next_after(i64::MAX), None);
    assert_eq!(
        t.first_at_or_after(i64::MIN).map(utc),
        Some("0002-01-01T00:00:00Z".into())
    );
    let last = t.first_at_or_after(ms("4999-06-01T00:00:00Z"));
    assert_eq!(last.map(utc), Some("5000-01-01T00:00:00Z".into()));
    assert_eq!(t.next_after(ms("5000-01-01T00:00:00Z")), None);
    assert_eq!(t.first_at_or_after(ms("6000-01-01T00:00:00Z")), None);
    // The first second of the search range.
    let t = cron("* * * * * *", "UTC");
    assert_eq!(
        t.first_at_or_after(i64::MIN).map(utc),
        Some("0001-01-02T00:00:01Z".into())
    );
    assert_eq!(
        t.advance(i64::MIN, i64::MAX),
        Advance {
            skipped: MAX_SKIP_COUNT,
            next_ms: None
        }
    );
}

#[test]
fn every_range_edges() {
    let t = every(1_024, None, None);
    assert_eq!(t.first_at_or_after(i64::MIN), Some(i64::MIN));
    assert_eq!(t.next_after(i64::MIN), Some(i64::MIN + 1_024));
    assert_eq!(t.first_at_or_after(i64::MAX), None);
    // Past the year 9999 nothing fires (see nothing_fires_past_the_year_9999).
    assert_eq!(t.next_after(i64::MAX - 1_024), None);
    let t = every(1_000, None, None);
    assert_eq!(
        t.first_at_or_after(i64::MIN),
        Some(-9_223_372_036_854_775_000)
    );
    assert_eq!(t.next_after(9_223_372_036_854_775_000), None);
    let t = every(1_000, Some(i64::MAX - 5), None);
    assert_eq!(t.first_at_or_after(0), None);
    assert_eq!(t.next_after(i64::MAX - 5), None);
    // Unrepresentable as a calendar date: preview stops instead of panicking.
    assert!(t.preview(0, 3).is_empty());
    assert!(every(1_000, None, None).preview(i64::MIN, 3).is_empty());
}

/// No fire time is past 9999-12-31T23:59:59.999Z, the last a protobuf Timestamp can
/// carry: a schedule whose next run would be is over (`None`), in Rust as in Lua
/// (`store::pins` runs both near the end).
#[test]
fn nothing_fires_past_the_year_9999() {
    use super::super::MAX_TIME_MS;
    let t = every(60_000, None, None);
    let last = t.next_after(MAX_TIME_MS - 60_000).expect("a slot in 9999");
    assert!(last <= MAX_TIME_MS);
    assert_eq!(t.next_after(last), None);
    assert_eq!(t.first_at_or_after(MAX_TIME_MS + 1), None);
    let advance = t.advance(last, last + 3_600_000);
    assert_eq!(advance.next_ms, None, "a late claim ends it too");
    for t in all_timings() {
        for probe in probes() {
            assert!(t.next_after(probe).is_none_or(|at| at <= MAX_TIME_MS));
        }
    }
}
