//! Impossible dates are decided from the calendar, in a bounded number of probes,
//! and agree with croner's own search.

use std::time::Instant;

use chrono::NaiveDate;
use croner::parser::{CronParser, Seconds, Year};
use croner::Cron;

use std::collections::HashMap;

use chrono::Datelike;

use super::super::calendar::{some_day_matches, MAX_GAP_DAYS, MAX_PROBES};
use super::{cron, ms, utc};

fn croner(expr: &str) -> Cron {
    CronParser::builder()
        .seconds(Seconds::Optional)
        .year(Year::Disallowed)
        .build()
        .parse(expr)
        .unwrap_or_else(|e| panic!("{expr}: {e}"))
}

/// What validation used to do: search croner's whole range from 1970.
fn searched(cron: &Cron) -> bool {
    let epoch = NaiveDate::from_ymd_opt(1970, 1, 1)
        .and_then(|d| d.and_hms_opt(0, 0, 0))
        .expect("epoch");
    cron.find_next_occurrence(&epoch, true).is_ok()
}

const NEVER: [&str; 8] = [
    "0 0 31 2,4,6,9,11 *",
    "0 0 30 2 *",
    "0 0 31 4,6,9,11 *",
    "0 0 30,31 2 *",
    "0 0 31 2 +MON",
    "0 0 30W 2 *",
    "0 0 31 2 * ",
    "0 0 0 31 2,4 *",
];

const SOMETIMES: [&str; 14] = [
    "0 0 29 2 *",
    "0 0 29 2 +MON",
    "0 0 13 * +FRI",
    "0 0 31 2,4,6,9,11 MON",
    "0 0 L 2 *",
    "0 0 LW * *",
    "0 0 * * 5#5",
    "0 0 * 2 1#5",
    "0 0 * * 5L",
    "0 0 30W * *",
    "0 0 1W * *",
    "0 0 31 * +SUN",
    "@yearly",
    "*/15 * * * *",
];

#[test]
fn the_verdict_agrees_with_a_search_and_is_bounded() {
    for expr in NEVER {
        let verdict = some_day_matches(&croner(expr.trim()).pattern);
        assert!(!verdict.some_day_matches, "{expr}");
        assert!(verdict.probes <= MAX_PROBES, "{expr}: {verdict:?}");
        assert!(
            !searched(&croner(expr.trim())),
            "croner disagrees on {expr}"
        );
    }
    for expr in SOMETIMES {
        let verdict = some_day_matches(&croner(expr).pattern);
        assert!(verdict.some_day_matches, "{expr}");
        assert!(verdict.probes <= MAX_PROBES, "{expr}: {verdict:?}");
        assert!(searched(&croner(expr)), "croner disagrees on {expr}");
    }
    // The worst case visits every day of every month the field names, each way.
    let verdict = some_day_matches(&croner("0 0 31 2,4,6,9,11 *").pattern);
    assert_eq!(verdict.probes, 7 * (28 + 29) + 4 * 7 * 30);
}

/// CPU per validation of the pattern, before (croner's search) and after
/// (the calendar). `cargo test --locked --lib calendar -- --ignored --nocapture`.
#[test]
#[ignore = "a measurement, not a check"]
fn measure_never_matching_validation() {
    let expr = "0 0 31 2,4,6,9,11 *";
    let cron = croner(expr);
    let rounds = 20u32;
    let started = Instant::now();
    for _ in 0..rounds {
        assert!(!searched(&cron));
    }
    let before = started.elapsed() / rounds;
    let rounds = 2000u32;
    let started = Instant::now();
    for _ in 0..rounds {
        assert!(!some_day_matches(&cron.pattern).some_day_matches);
    }
    let after = started.elapsed() / rounds;
    println!("{expr}: search {before:?} per validation, calendar {after:?}");
}

/// The bound on every search croner still makes: each kind of month recurs within
/// 14,609 days over a whole 400-year Gregorian cycle (which then repeats).
#[test]
fn every_kind_of_month_recurs_within_the_gap_bound() {
    let mut first = HashMap::new();
    let mut last: HashMap<(u32, u32, u32), i64> = HashMap::new();
    let mut longest = 0;
    for year in 1970..1970 + 400 {
        for month in 1..=12 {
            let day1 = NaiveDate::from_ymd_opt(year, month, 1).expect("date");
            let next = NaiveDate::from_ymd_opt(year + i32::from(month == 12), month % 12 + 1, 1)
                .expect("date");
            let length = (next - day1).num_days() as u32;
            let kind = (month, length, day1.weekday().num_days_from_sunday());
            let at = i64::from(day1.num_days_from_ce());
            if let Some(before) = last.insert(kind, at) {
                longest = longest.max(at - before);
            } else {
                first.insert(kind, at);
            }
        }
    }
    // 11 months of one length and February of two, each starting on 7 weekdays.
    assert_eq!(last.len(), 11 * 7 + 2 * 7);
    for (kind, at) in &last {
        longest = longest.max(first[kind] + 146_097 - at);
    }
    assert_eq!(longest + 31, MAX_GAP_DAYS);
}

/// The rarest satisfiable dates (Feb 29 on a Monday) fire within the bound, over a
/// whole cycle: the number of searches is the number of fires, each walking at most
/// MAX_GAP_DAYS.
#[test]
fn the_rarest_pattern_fires_within_the_gap_bound() {
    let t = cron("0 0 29 2 +MON", "UTC");
    let mut at = ms("1970-01-01T00:00:00Z");
    let end = ms("2370-01-01T00:00:00Z");
    let mut searches = 0;
    while at < end {
        let next = t.next_after(at).expect("fires again");
        assert!(
            next - at <= MAX_GAP_DAYS * 86_400_000,
            "{} to {}",
            utc(at),
            utc(next)
        );
        searches += 1;
        at = next;
    }
    // 97 leap days in 400 years, about a seventh of them Mondays.
    assert!((10..=20).contains(&searches), "{searches}");
}
