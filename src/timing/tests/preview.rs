//! Preview rendering and DST notes.

use super::super::{PreviewItem, Timing, TimingSpec, MAX_PREVIEW_COUNT};
use super::{cron, every, ms, BERLIN, NY};

fn item(utc: &str, local: &str, offset: i32, dst: bool, note: &str) -> PreviewItem {
    PreviewItem {
        utc_ms: ms(utc),
        local: local.into(),
        utc_offset_seconds: offset,
        dst_adjusted: dst,
        note: note.into(),
    }
}

#[test]
fn fixed_time_in_gap() {
    let got = cron("30 2 * * *", NY).preview(ms("2026-03-07T00:00:00Z"), 3);
    assert_eq!(
        got,
        [
            item(
                "2026-03-07T07:30:00Z",
                "2026-03-07T02:30:00-05:00",
                -18_000,
                false,
                ""
            ),
            item(
                "2026-03-08T07:00:00Z",
                "2026-03-08T03:00:00-04:00",
                -14_400,
                true,
                "02:30 does not exist on 2026-03-08 in America/New_York (DST gap); \
                 fires at 03:00 EDT"
            ),
            item(
                "2026-03-09T06:30:00Z",
                "2026-03-09T02:30:00-04:00",
                -14_400,
                false,
                ""
            ),
        ]
    );
    let got = cron("30 2 * * *", BERLIN).preview(ms("2026-03-29T00:00:00Z"), 1);
    assert_eq!(
        got,
        [item(
            "2026-03-29T01:00:00Z",
            "2026-03-29T03:00:00+02:00",
            7_200,
            true,
            "02:30 does not exist on 2026-03-29 in Europe/Berlin (DST gap); fires at 03:00 CEST"
        )]
    );
}

#[test]
fn fixed_time_in_repeated_hour() {
    let got = cron("30 1 * * *", NY).preview(ms("2026-11-01T00:00:00Z"), 2);
    assert_eq!(
        got,
        [
            item(
                "2026-11-01T05:30:00Z",
                "2026-11-01T01:30:00-04:00",
                -14_400,
                true,
                "01:30 occurs twice on 2026-11-01 in America/New_York (DST fall-back); \
                 fires once, at the first (EDT)"
            ),
            item(
                "2026-11-02T06:30:00Z",
                "2026-11-02T01:30:00-05:00",
                -18_000,
                false,
                ""
            ),
        ]
    );
    let got = cron("30 2 * * *", BERLIN).preview(ms("2026-10-25T00:00:00Z"), 1);
    assert_eq!(
        got,
        [item(
            "2026-10-25T00:30:00Z",
            "2026-10-25T02:30:00+02:00",
            7_200,
            true,
            "02:30 occurs twice on 2026-10-25 in Europe/Berlin (DST fall-back); \
             fires once, at the first (CEST)"
        )]
    );
}

#[test]
fn interval_job_notes() {
    let t = cron("*/30 * * * *", NY);
    let fall = t.preview(ms("2026-11-01T05:30:00Z"), 3);
    let twice = "01:30 occurs twice on 2026-11-01 in America/New_York (DST fall-back); \
                 interval schedules fire at both, this is the";
    assert_eq!(
        fall,
        [
            item(
                "2026-11-01T05:30:00Z",
                "2026-11-01T01:30:00-04:00",
                -14_400,
                true,
                &format!("{twice} first (EDT)")
            ),
            item(
                "2026-11-01T06:00:00Z",
                "2026-11-01T01:00:00-05:00",
                -18_000,
                true,
                "01:00 occurs twice on 2026-11-01 in America/New_York (DST fall-back); \
                 interval schedules fire at both, this is the second (EST)"
            ),
            item(
                "2026-11-01T06:30:00Z",
                "2026-11-01T01:30:00-05:00",
                -18_000,
                true,
                &format!("{twice} second (EST)")
            ),
        ]
    );
    let spring = t.preview(ms("2026-03-08T06:30:00Z"), 3);
    assert_eq!(
        spring,
        [
            item(
                "2026-03-08T06:30:00Z",
                "2026-03-08T01:30:00-05:00",
                -18_000,
                false,
                ""
            ),
            item(
                "2026-03-08T07:00:00Z",
                "2026-03-08T03:00:00-04:00",
                -14_400,
                false,
                "clock jumps from 02:00 to 03:00 on 2026-03-08 in America/New_York (DST gap); \
                 interval slots in between are skipped"
            ),
            item(
                "2026-03-08T07:30:00Z",
                "2026-03-08T03:30:00-04:00",
                -14_400,
                false,
                ""
            ),
        ]
    );
    // A slot swallowed by the gap is reported on the next fire, a day later.
    let t = cron("*/30 2 * * *", NY);
    let next = t.preview(ms("2026-03-08T00:00:00Z"), 1);
    assert_eq!(next[0].local, "2026-03-09T02:00:00-04:00");
    assert!(!next[0].dst_adjusted);
    assert!(
        next[0]
            .note
            .starts_with("clock jumps from 02:00 to 03:00 on 2026-03-08"),
        "{}",
        next[0].note
    );
}

#[test]
fn every_preview_shows_local_time_only() {
    let t = Timing::parse(&TimingSpec {
        every_ms: Some(3_600_000),
        timezone: NY,
        ..TimingSpec::default()
    })
    .expect("valid");
    let got = t.preview(ms("2026-03-08T06:00:00Z"), 2);
    assert_eq!(
        got,
        [
            item(
                "2026-03-08T06:00:00Z",
                "2026-03-08T01:00:00-05:00",
                -18_000,
                false,
                ""
            ),
            item(
                "2026-03-08T07:00:00Z",
                "2026-03-08T03:00:00-04:00",
                -14_400,
                false,
                ""
            ),
        ]
    );
    let utc = every(1_500, Some(0), None).preview(0, 2);
    assert_eq!(utc[0].local, "1970-01-01T00:00:00+00:00");
    assert_eq!(utc[1].local, "1970-01-01T00:00:01.500+00:00");
    assert_eq!(utc[1].utc_offset_seconds, 0);
}

#[test]
fn counts_and_window() {
    let t = every(1_000, Some(10_000), Some(12_000));
    assert!(t.preview(0, 0).is_empty());
    let got: Vec<_> = t.preview(0, 10).into_iter().map(|p| p.utc_ms).collect();
    assert_eq!(got, [10_000, 11_000, 12_000]);
    assert!(t.preview(12_001, 10).is_empty());
    assert_eq!(
        every(1_000, None, None).preview(0, usize::MAX).len(),
        MAX_PREVIEW_COUNT
    );
}
