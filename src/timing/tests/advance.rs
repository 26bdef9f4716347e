//! `advance`: missed-slot counting and rescheduling.

use super::super::{Advance, MAX_SKIP_COUNT};
use super::{cron, every, ms, BERLIN, NY};

const SEC: i64 = 1_000;
const DAY: i64 = 86_400_000;

#[test]
fn on_time_claims_skip_nothing() {
    let t = cron("30 2 * * *", NY);
    let due = ms("2026-03-07T07:30:00Z");
    assert_eq!(
        t.advance(due, due),
        Advance {
            skipped: 0,
            next_ms: Some(ms("2026-03-08T07:00:00Z"))
        }
    );
    let t = every(60 * SEC, None, None);
    assert_eq!(
        t.advance(120 * SEC, 120 * SEC + 59_999),
        Advance {
            skipped: 0,
            next_ms: Some(180 * SEC)
        }
    );
}

/// A per-second cron claimed a day late: the slots in (due, due + 1 day]
/// are 86 400 whole seconds, the last one being `now` itself.
#[test]
fn per_second_cron_a_day_late() {
    let t = cron("* * * * * *", NY);
    let due = ms("2026-03-08T00:00:00Z");
    assert_eq!(
        t.advance(due, due + DAY),
        Advance {
            skipped: 86_400,
            next_ms: Some(due + DAY + SEC)
        }
    );
    // Half a second later: same count, next is the following whole second.
    assert_eq!(
        t.advance(due, due + DAY + 500),
        Advance {
            skipped: 86_400,
            next_ms: Some(due + DAY + SEC)
        }
    );
}

#[test]
fn cron_skips_saturate_and_next_stays_fast() {
    let t = cron("* * * * * *", BERLIN);
    let due = ms("2025-06-01T00:00:00Z");
    let now = due + 365 * DAY + 250;
    let adv = t.advance(due, now);
    assert_eq!(adv.skipped, MAX_SKIP_COUNT);
    assert_eq!(adv.next_ms, Some(due + 365 * DAY + SEC));
}

#[test]
fn cron_counts_across_dst() {
    // */30 on the NY spring day: from 00:00 EST (05:00Z) to 04:00 EDT (08:00Z)
    // the slots 00:30, 01:00, 01:30, 03:00, 03:30, 04:00 were missed.
    let t = cron("*/30 * * * *", NY);
    let adv = t.advance(ms("2026-03-08T05:00:00Z"), ms("2026-03-08T08:00:00Z"));
    assert_eq!(adv.skipped, 6);
    assert_eq!(adv.next_ms, Some(ms("2026-03-08T08:30:00Z")));
    // Fall-back day, 00:00 EDT to 02:00 EST: both 01:00 and 01:30 passes.
    let adv = t.advance(ms("2026-11-01T04:00:00Z"), ms("2026-11-01T07:00:00Z"));
    assert_eq!(adv.skipped, 6);
    // A daily 01:30 over the same stretch missed only one run.
    let t = cron("30 1 * * *", NY);
    let adv = t.advance(ms("2026-10-31T05:30:00Z"), ms("2026-11-02T06:00:00Z"));
    assert_eq!(adv.skipped, 1);
    assert_eq!(adv.next_ms, Some(ms("2026-11-02T06:30:00Z")));
}

#[test]
fn every_counts_arithmetically() {
    let t = every(SEC, None, None);
    assert_eq!(t.advance(0, 10 * SEC).skipped, 10);
    assert_eq!(t.advance(0, 10 * SEC + 999).skipped, 10);
    assert_eq!(t.advance(500, 10 * SEC).skipped, 10);
    assert_eq!(t.advance(0, 10 * SEC).next_ms, Some(11 * SEC));
    // Saturates without iterating, even over the whole i64 range (an iterating
    // advance would not finish these).
    let adv = t.advance(0, i64::MAX / 2);
    assert_eq!(adv.skipped, MAX_SKIP_COUNT);
    // Past the year 9999: the schedule is over.
    assert_eq!(adv.next_ms, None);
    let late = 200_000_000_000_000; // 8307: still a time a Timestamp carries.
    assert_eq!(t.advance(0, late).next_ms, Some(late + SEC));
    let adv = t.advance(i64::MIN, i64::MAX);
    assert_eq!(
        adv,
        Advance {
            skipped: MAX_SKIP_COUNT,
            next_ms: None
        }
    );
    assert_eq!(
        t.advance(0, MAX_SKIP_COUNT as i64 * SEC).skipped,
        MAX_SKIP_COUNT
    );
    assert_eq!(
        t.advance(0, (MAX_SKIP_COUNT as i64 - 1) * SEC).skipped,
        MAX_SKIP_COUNT - 1
    );
}

#[test]
fn window_limits_skips_and_next() {
    let t = every(SEC, Some(5 * SEC), Some(20 * SEC));
    // Slots before start are not slots; slots after end are not either.
    assert_eq!(
        t.advance(0, 8 * SEC),
        Advance {
            skipped: 4,
            next_ms: Some(9 * SEC)
        }
    );
    assert_eq!(
        t.advance(15 * SEC, 100 * SEC),
        Advance {
            skipped: 5,
            next_ms: None
        }
    );
    assert_eq!(
        t.advance(20 * SEC, 20 * SEC),
        Advance {
            skipped: 0,
            next_ms: None
        }
    );
    let bounded = super::super::Timing::parse(&super::super::TimingSpec {
        cron: Some("* * * * * *"),
        end_ms: Some(10 * SEC),
        ..Default::default()
    })
    .expect("valid");
    assert_eq!(
        bounded.advance(0, 100 * SEC),
        Advance {
            skipped: 10,
            next_ms: None
        }
    );
}

#[test]
fn early_claim_never_refires_due() {
    let t = every(60 * SEC, None, None);
    assert_eq!(
        t.advance(120 * SEC, 100 * SEC),
        Advance {
            skipped: 0,
            next_ms: Some(180 * SEC)
        }
    );
    let t = cron("0 * * * *", NY);
    let due = ms("2026-03-08T07:00:00Z");
    assert_eq!(
        t.advance(due, due - 10 * SEC),
        Advance {
            skipped: 0,
            next_ms: Some(due + 3_600 * SEC)
        }
    );
}
