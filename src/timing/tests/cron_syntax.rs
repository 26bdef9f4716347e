//! Cron field semantics: weekdays, aliases, seconds.

use super::{cron, seq, BERLIN, NY};

#[test]
fn sunday_is_zero_and_seven() {
    let sun0 = seq(&cron("0 12 * * 0", NY), "2026-03-01T00:00:00Z", 4);
    let sun7 = seq(&cron("0 12 * * 7", NY), "2026-03-01T00:00:00Z", 4);
    let named = seq(&cron("0 12 * * SUN", NY), "2026-03-01T00:00:00Z", 4);
    // 2026-03-01 is a Sunday; 03-08 is the DST day (noon EDT = 16:00Z).
    let want = [
        "2026-03-01T17:00:00Z",
        "2026-03-08T16:00:00Z",
        "2026-03-15T16:00:00Z",
        "2026-03-22T16:00:00Z",
    ];
    assert_eq!(sun0, want);
    assert_eq!(sun7, want);
    assert_eq!(named, want);
    let weekend = seq(&cron("0 12 * * 6-7", "UTC"), "2026-03-01T00:00:00Z", 3);
    assert_eq!(
        weekend,
        [
            "2026-03-01T12:00:00Z",
            "2026-03-07T12:00:00Z",
            "2026-03-08T12:00:00Z"
        ]
    );
}

#[test]
fn aliases() {
    assert_eq!(
        seq(&cron("@hourly", BERLIN), "2026-03-29T00:10:00Z", 2),
        ["2026-03-29T01:00:00Z", "2026-03-29T02:00:00Z"]
    );
    assert_eq!(
        seq(&cron("@daily", NY), "2026-03-08T00:00:00Z", 2),
        ["2026-03-08T05:00:00Z", "2026-03-09T04:00:00Z"]
    );
}

#[test]
fn sub_second_inputs() {
    let t = cron("* * * * * *", "UTC");
    assert_eq!(t.first_at_or_after(1_500), Some(2_000));
    assert_eq!(t.first_at_or_after(2_000), Some(2_000));
    assert_eq!(t.next_after(1_999), Some(2_000));
    assert_eq!(t.next_after(2_000), Some(3_000));
    assert_eq!(t.next_after(-1), Some(0));
    assert_eq!(t.next_after(-1_001), Some(-1_000));
}
