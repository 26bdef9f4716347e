//! Property-style checks against a brute-force oracle across DST days.
//!
//! The oracle walks every minute (or second) of UTC time and decides from
//! the zone's wall clock alone whether it fires, using croner only to ask
//! "does this wall-clock reading match the pattern". It encodes the policy
//! directly: an interval job fires whenever the wall clock matches; a
//! fixed-time job fires the first time the wall clock reaches or jumps past
//! a matching reading.

use std::str::FromStr;

use chrono::{DateTime, NaiveDateTime, TimeDelta};
use chrono_tz::Tz;
use croner::parser::{CronParser, Seconds};

use super::{cron, ms, utc, BERLIN, LORD_HOWE, NY};

fn wall(tz: Tz, secs: i64) -> NaiveDateTime {
    DateTime::from_timestamp(secs, 0)
        .expect("in range")
        .with_timezone(&tz)
        .naive_local()
}

fn oracle(expr: &str, fixed: bool, tz: Tz, from: i64, to: i64, step: i64) -> Vec<i64> {
    let pattern = CronParser::builder()
        .seconds(Seconds::Optional)
        .build()
        .parse(expr)
        .expect("valid");
    let matches = |w: &NaiveDateTime| pattern.is_time_matching(w).expect("match");
    let mut fires = Vec::new();
    let mut high = wall(tz, from - step);
    let mut secs = from;
    while secs <= to {
        let w = wall(tz, secs);
        if !fixed {
            if matches(&w) {
                fires.push(secs * 1000);
            }
        } else if w > high {
            // Every reading in (high, w] is reached first at `secs`.
            let mut n = high + TimeDelta::seconds(step);
            while n <= w {
                if matches(&n) {
                    fires.push(secs * 1000);
                    break;
                }
                n += TimeDelta::seconds(step);
            }
            high = w;
        }
        secs += step;
    }
    fires
}

/// Checks `next_after`/`first_at_or_after` from many start points against the
/// oracle over `[day_start - 1 day, day_start + 2 days]`.
fn check(tz_name: &str, expr: &str, fixed: bool, day_start: &str, step: i64, span_secs: i64) {
    let tz = Tz::from_str(tz_name).expect("zone");
    let t = cron(expr, tz_name);
    let from = ms(day_start) / 1000 - span_secs / 4;
    let to = from + span_secs + 86_400;
    let want = oracle(expr, fixed, tz, from, to, step);
    assert!(!want.is_empty(), "{expr} {tz_name} {day_start}");
    let got: Vec<i64> =
        std::iter::successors(t.first_at_or_after(from * 1000), |&a| t.next_after(a))
            .take_while(|&a| a <= to * 1000)
            .collect();
    let show = |v: &[i64]| v.iter().map(|&m| utc(m)).collect::<Vec<_>>();
    assert_eq!(
        show(&got),
        show(&want),
        "{expr} in {tz_name} around {day_start}"
    );
    assert!(got.windows(2).all(|w| w[0] < w[1]), "strictly increasing");

    // From many odd start points: the answer is the first oracle fire after.
    let mut probe = from * 1000 + 17;
    let last = want[want.len() - 1];
    while probe < (from + span_secs) * 1000 {
        let expect_next = want.iter().copied().find(|&f| f > probe);
        let expect_first = want.iter().copied().find(|&f| f >= probe);
        if expect_next.is_some_and(|f| f <= last) {
            assert_eq!(
                t.next_after(probe).map(utc),
                expect_next.map(utc),
                "{expr} {tz_name} after {}",
                utc(probe)
            );
        }
        if expect_first.is_some_and(|f| f <= last) {
            assert_eq!(
                t.first_at_or_after(probe).map(utc),
                expect_first.map(utc),
                "{expr} at {}",
                utc(probe)
            );
        }
        for exact in [
            probe - probe.rem_euclid(60_000),
            expect_next.unwrap_or(probe),
        ] {
            if let Some(n) = t.next_after(exact) {
                assert!(n > exact);
            }
        }
        probe += 7 * 60_000 + 13_017;
    }
}

const DAYS: [(&str, &str); 6] = [
    (NY, "2026-03-08T00:00:00-05:00"),
    (NY, "2026-11-01T00:00:00-04:00"),
    (BERLIN, "2026-03-29T00:00:00+01:00"),
    (BERLIN, "2026-10-25T00:00:00+02:00"),
    (LORD_HOWE, "2026-04-05T00:00:00+11:00"),
    (LORD_HOWE, "2026-10-04T00:00:00+10:30"),
];

#[test]
fn minute_patterns_match_oracle() {
    let patterns = [
        ("30 2 * * *", true),
        ("30 1 * * *", true),
        ("0 2 * * *", true),
        ("0 3 * * *", true),
        ("59 1 * * *", true),
        ("45 1 * * *", true),
        ("15 2 * * *", true),
        ("0 2,14 * * *", true),
        ("30 1,13 * * *", true),
        ("0,30 2 * * *", true),
        ("45 0-3 * * *", true),
        ("*/30 * * * *", false),
        ("*/15 2 * * *", false),
        ("*/20 1 * * *", false),
        ("0 * * * *", false),
        ("*/7 1-3 * * *", false),
    ];
    for (tz, day) in DAYS {
        for (expr, fixed) in patterns {
            check(tz, expr, fixed, day, 60, 2 * 86_400);
        }
    }
}

#[test]
fn second_patterns_match_oracle() {
    let patterns = [
        ("15 30 1 * * *", true),
        ("15 30 2 * * *", true),
        ("0,30 0-59 1 * * *", true),
        ("*/20 30 1 * * *", false),
        ("*/10 * 2 * * *", false),
    ];
    for (tz, day) in DAYS {
        for (expr, fixed) in patterns {
            check(tz, expr, fixed, day, 1, 6 * 3_600);
        }
    }
}

/// For single-valued fixed times croner's own zoned search applies the same
/// policy, so the module's wall-clock mapping must agree with it exactly.
#[test]
fn single_valued_fixed_times_agree_with_croner() {
    let parser = CronParser::builder().seconds(Seconds::Optional).build();
    for (tz_name, day) in DAYS {
        let tz = Tz::from_str(tz_name).expect("zone");
        for expr in [
            "30 2 * * *",
            "30 1 * * *",
            "0 2 * * *",
            "45 1 * * *",
            "15 30 2 * * *",
        ] {
            let pattern = parser.parse(expr).expect("valid");
            let start = DateTime::from_timestamp_millis(ms(day) - 86_400_000)
                .expect("in range")
                .with_timezone(&tz);
            let theirs: Vec<i64> = pattern
                .iter_after(start)
                .take(4)
                .map(|d| d.timestamp_millis())
                .collect();
            let t = cron(expr, tz_name);
            let ours: Vec<i64> =
                std::iter::successors(t.next_after(ms(day) - 86_400_000), |&a| t.next_after(a))
                    .take(4)
                    .collect();
            assert_eq!(ours, theirs, "{expr} in {tz_name} around {day}");
        }
    }
}
