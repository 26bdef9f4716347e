//! Exact cron fire sequences around the real 2026 DST transitions.

use super::{cron, ms, offset_at, seq, utc, BERLIN, LORD_HOWE, NY};

const H: i32 = 3600;

#[test]
fn transition_dates_are_real() {
    let cases = [
        (
            NY,
            "2026-03-08T06:59:59Z",
            -5 * H,
            "2026-03-08T07:00:00Z",
            -4 * H,
        ),
        (
            NY,
            "2026-11-01T05:59:59Z",
            -4 * H,
            "2026-11-01T06:00:00Z",
            -5 * H,
        ),
        (
            BERLIN,
            "2026-03-29T00:59:59Z",
            H,
            "2026-03-29T01:00:00Z",
            2 * H,
        ),
        (
            BERLIN,
            "2026-10-25T00:59:59Z",
            2 * H,
            "2026-10-25T01:00:00Z",
            H,
        ),
        (
            LORD_HOWE,
            "2026-04-04T14:59:59Z",
            11 * H,
            "2026-04-04T15:00:00Z",
            10 * H + 1800,
        ),
        (
            LORD_HOWE,
            "2026-10-03T15:29:59Z",
            10 * H + 1800,
            "2026-10-03T15:30:00Z",
            11 * H,
        ),
    ];
    for (tz, before, off_before, after, off_after) in cases {
        assert_eq!(offset_at(tz, before), off_before, "{tz} {before}");
        assert_eq!(offset_at(tz, after), off_after, "{tz} {after}");
    }
}

#[test]
fn daily_in_spring_gap_fires_once_at_gap_end() {
    let ny = cron("30 2 * * *", NY);
    assert_eq!(
        seq(&ny, "2026-03-07T00:00:00Z", 3),
        [
            "2026-03-07T07:30:00Z",
            "2026-03-08T07:00:00Z",
            "2026-03-09T06:30:00Z"
        ]
    );
    let berlin = cron("30 2 * * *", BERLIN);
    assert_eq!(
        seq(&berlin, "2026-03-28T00:00:00Z", 3),
        [
            "2026-03-28T01:30:00Z",
            "2026-03-29T01:00:00Z",
            "2026-03-30T00:30:00Z"
        ]
    );
    // Exactly one fire on the local day 2026-03-08 (05:00Z..04:00Z next day).
    let day: Vec<_> = seq(&ny, "2026-03-08T05:00:00Z", 5)
        .into_iter()
        .filter(|s| ms(s) < ms("2026-03-09T04:00:00Z"))
        .collect();
    assert_eq!(day, ["2026-03-08T07:00:00Z"]);
}

#[test]
fn daily_in_repeated_hour_fires_once_at_first_pass() {
    let ny = cron("30 1 * * *", NY);
    assert_eq!(
        seq(&ny, "2026-10-31T00:00:00Z", 3),
        [
            "2026-10-31T05:30:00Z",
            "2026-11-01T05:30:00Z",
            "2026-11-02T06:30:00Z"
        ]
    );
    let tomorrow = Some(ms("2026-11-02T06:30:00Z"));
    assert_eq!(ny.next_after(ms("2026-11-01T05:30:00Z")), tomorrow);
    // From inside the second pass (01:15 EST), and exactly at 01:30 EST.
    assert_eq!(ny.next_after(ms("2026-11-01T06:15:00Z")), tomorrow);
    assert_eq!(ny.first_at_or_after(ms("2026-11-01T06:30:00Z")), tomorrow);
    assert_eq!(ny.first_at_or_after(ms("2026-11-01T06:00:00Z")), tomorrow);

    let berlin = cron("30 2 * * *", BERLIN);
    assert_eq!(
        seq(&berlin, "2026-10-24T00:00:00Z", 3),
        [
            "2026-10-24T00:30:00Z",
            "2026-10-25T00:30:00Z",
            "2026-10-26T01:30:00Z"
        ]
    );
    let tomorrow = Some(ms("2026-10-26T01:30:00Z"));
    assert_eq!(
        berlin.first_at_or_after(ms("2026-10-25T01:30:00Z")),
        tomorrow
    );
}

/// `*/30` is an interval job: slots in the gap are skipped, slots in the
/// repeated hour fire on both passes. In UTC the sequence stays exactly
/// 30 minutes apart across all four transitions.
#[test]
fn every_half_hour_across_transitions() {
    let cases = [
        (
            NY,
            "2026-03-08T05:00:00Z",
            "00:00 EST, 00:30, 01:00, 01:30, 03:00 EDT, 03:30, 04:00",
        ),
        (
            NY,
            "2026-11-01T04:00:00Z",
            "00:00 EDT .. 01:30 EDT, 01:00 EST, 01:30 EST, 02:00",
        ),
        (
            BERLIN,
            "2026-03-29T00:00:00Z",
            "01:00 CET, 01:30, 03:00 CEST, 03:30, 04:00",
        ),
        (
            BERLIN,
            "2026-10-24T23:00:00Z",
            "01:00 .. 02:30 CEST, 02:00 CET, 02:30, 03:00",
        ),
    ];
    for (tz, from, _local) in cases {
        let t = cron("*/30 * * * *", tz);
        let got = seq(&t, from, 8);
        let want: Vec<_> = (0..8).map(|i| utc(ms(from) + i * 1_800_000)).collect();
        assert_eq!(got, want, "{tz} from {from}");
    }
    // Spot-check the wall clock on the NY fall-back day.
    let t = cron("*/30 * * * *", NY);
    let locals: Vec<_> = t
        .preview(ms("2026-11-01T04:00:00Z"), 8)
        .into_iter()
        .map(|p| p.local)
        .collect();
    assert_eq!(
        locals,
        [
            "2026-11-01T00:00:00-04:00",
            "2026-11-01T00:30:00-04:00",
            "2026-11-01T01:00:00-04:00",
            "2026-11-01T01:30:00-04:00",
            "2026-11-01T01:00:00-05:00",
            "2026-11-01T01:30:00-05:00",
            "2026-11-01T02:00:00-05:00",
            "2026-11-01T02:30:00-05:00",
        ]
    );
}

/// croner only treats single-valued times as fixed; these multi-valued ones
/// would lose the 02:00 run / double the 01:30 run without the module's fix.
#[test]
fn multi_valued_fixed_times_follow_the_fixed_policy() {
    assert_eq!(
        seq(&cron("0 2,14 * * *", NY), "2026-03-07T00:00:00Z", 5),
        [
            "2026-03-07T07:00:00Z",
            "2026-03-07T19:00:00Z",
            "2026-03-08T07:00:00Z",
            "2026-03-08T18:00:00Z",
            "2026-03-09T06:00:00Z",
        ]
    );
    assert_eq!(
        seq(&cron("30 1,13 * * *", NY), "2026-10-31T00:00:00Z", 5),
        [
            "2026-10-31T05:30:00Z",
            "2026-10-31T17:30:00Z",
            "2026-11-01T05:30:00Z",
            "2026-11-01T18:30:00Z",
            "2026-11-02T06:30:00Z",
        ]
    );
    // 02:00 and 02:30 both fall in the gap: one fire at its end, not two.
    assert_eq!(
        seq(&cron("0,30 2 * * *", NY), "2026-03-07T12:00:00Z", 3),
        [
            "2026-03-08T07:00:00Z",
            "2026-03-09T06:00:00Z",
            "2026-03-09T06:30:00Z"
        ]
    );
    assert_eq!(
        seq(&cron("0,30 2 * * *", BERLIN), "2026-10-25T00:00:00Z", 3),
        [
            "2026-10-25T00:00:00Z",
            "2026-10-25T00:30:00Z",
            "2026-10-26T01:00:00Z"
        ]
    );
}

#[test]
fn interval_jobs_skip_the_gap_and_repeat_the_fold() {
    assert_eq!(
        seq(&cron("*/15 2 * * *", NY), "2026-03-07T07:00:00Z", 5),
        [
            "2026-03-07T07:00:00Z",
            "2026-03-07T07:15:00Z",
            "2026-03-07T07:30:00Z",
            "2026-03-07T07:45:00Z",
            "2026-03-09T06:00:00Z",
        ]
    );
    assert_eq!(
        seq(&cron("*/20 1 * * *", NY), "2026-11-01T00:00:00Z", 7),
        [
            "2026-11-01T05:00:00Z",
            "2026-11-01T05:20:00Z",
            "2026-11-01T05:40:00Z",
            "2026-11-01T06:00:00Z",
            "2026-11-01T06:20:00Z",
            "2026-11-01T06:40:00Z",
            "2026-11-02T06:00:00Z",
        ]
    );
}

#[test]
fn seconds_field_and_half_hour_zone() {
    // 02:30:15 does not exist; the gap ends at 03:00:00 EDT.
    assert_eq!(
        seq(&cron("15 30 2 * * *", NY), "2026-03-07T12:00:00Z", 2),
        ["2026-03-08T07:00:00Z", "2026-03-09T06:30:15Z"]
    );
    // Lord Howe springs forward 02:00→02:30 (+10:30→+11).
    assert_eq!(
        seq(&cron("15 2 * * *", LORD_HOWE), "2026-10-02T00:00:00Z", 3),
        [
            "2026-10-02T15:45:00Z",
            "2026-10-03T15:30:00Z",
            "2026-10-04T15:15:00Z"
        ]
    );
    // ...and falls back 02:00→01:30: 01:45 happens twice, fires once.
    assert_eq!(
        seq(&cron("45 1 * * *", LORD_HOWE), "2026-04-03T00:00:00Z", 3),
        [
            "2026-04-03T14:45:00Z",
            "2026-04-04T14:45:00Z",
            "2026-04-05T15:15:00Z"
        ]
    );
}
