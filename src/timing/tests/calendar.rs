//! Impossible dates are decided from the calendar, in a bounded number of probes,
//! and agree with croner's own search.

use std::time::Instant;

use chrono::NaiveDate;
use croner::parser::{CronParser, Seconds, Year};
use croner::Cron;

use super::super::calendar::{some_day_matches, MAX_PROBES};

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
