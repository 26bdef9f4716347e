//! Validation and error messages.

use super::super::{Timing, TimingError, TimingSpec};
use super::NY;

fn parse(cron: Option<&str>, every_ms: Option<i64>, timezone: &str) -> Result<Timing, TimingError> {
    Timing::parse(&TimingSpec {
        cron,
        every_ms,
        timezone,
        start_ms: None,
        end_ms: None,
        offset_ms: None,
    })
}

fn err(cron: Option<&str>, every_ms: Option<i64>, timezone: &str) -> TimingError {
    parse(cron, every_ms, timezone).expect_err("should be rejected")
}

#[test]
fn exactly_one_of_cron_or_every() {
    for (c, e) in [
        (None, None),
        (Some(""), None),
        (Some("* * * * *"), Some(60_000)),
    ] {
        let error = err(c, e, "");
        assert_eq!(error, TimingError::CronXorEvery);
        assert_eq!(
            error.to_string(),
            "exactly one of cron or every must be set"
        );
        assert_eq!(error.field(), "cron");
    }
    // An empty cron next to every is just "every".
    assert!(parse(Some(""), Some(60_000), "").is_ok());
}

#[test]
fn field_counts() {
    for (expr, found) in [
        ("* * *", 3),
        ("* * * *", 4),
        ("0 0 0 * * * 2026", 7),
        ("   ", 0),
    ] {
        let error = err(Some(expr), None, "");
        assert_eq!(error, TimingError::CronFieldCount { found });
        assert_eq!(
            error.to_string(),
            format!(
                "cron: must have 5 fields (minute granularity) or 6 fields (seconds first), \
                 got {found}"
            )
        );
        assert_eq!(error.field(), "cron");
    }
    for ok in [
        "30 2 * * *",
        "  0 30 2 * * *  ",
        "0 0 1 * +MON",
        "0 0 L * *",
        "0 9 * * MON-FRI",
    ] {
        assert!(parse(Some(ok), None, NY).is_ok(), "{ok}");
    }
}

#[test]
fn syntax_errors_carry_crone_message() {
    for expr in ["* * * * foo", "1-2-3 * * * *"] {
        let error = err(Some(expr), None, "");
        let TimingError::CronSyntax { expr: e, reason } = &error else {
            panic!("{expr}: {error:?}");
        };
        assert_eq!(e, expr);
        assert!(!reason.is_empty());
        assert_eq!(
            error.to_string(),
            format!("cron: cannot parse {expr:?}: {reason}")
        );
        assert_eq!(error.field(), "cron");
    }
}

#[test]
fn field_errors_name_the_field_and_its_range() {
    for (expr, message) in [
        (
            "61 * * * *",
            "cron field 1 (minute) value 61 is out of range 0-59",
        ),
        (
            "0 24 * * *",
            "cron field 2 (hour) value 24 is out of range 0-23",
        ),
        (
            "0 0 0 * *",
            "cron field 3 (day of month) value 0 is out of range 1-31",
        ),
        (
            "0 0 32 * *",
            "cron field 3 (day of month) value 32 is out of range 1-31",
        ),
        (
            "0 0 1 13 *",
            "cron field 4 (month) value 13 is out of range 1-12",
        ),
        (
            "0 0 * * 8",
            "cron field 5 (day of week) value 8 is out of range 0-7",
        ),
        (
            "0 0 * * 9#2",
            "cron field 5 (day of week) value 9 is out of range 0-7",
        ),
        (
            "0 0 1-40 * *",
            "cron field 3 (day of month) value 40 is out of range 1-31",
        ),
        (
            "5,70 * * * *",
            "cron field 1 (minute) value 70 is out of range 0-59",
        ),
        (
            "60 0 0 * * *",
            "cron field 1 (second) value 60 is out of range 0-59",
        ),
        (
            "0 99999999999 0 * * *",
            "cron field 2 (minute) value 4294967295 is out of range 0-59",
        ),
        (
            "*/0 * * * *",
            "cron field 1 (minute) step 0 must be at least 1",
        ),
    ] {
        let error = err(Some(expr), None, "");
        assert_eq!(error.to_string(), format!("cron: {message}"), "{expr}");
        assert_eq!(error.field(), "cron");
    }
}

#[test]
fn an_at_word_that_is_not_an_alias_points_to_every() {
    for expr in ["@every 5m", "@reboot", "@daily extra"] {
        let error = err(Some(expr), None, "");
        let message = error.to_string();
        assert!(
            message.starts_with(&format!("cron: {expr:?} is not a cron expression")),
            "{message}"
        );
        assert!(message.contains("set every instead"), "{message}");
        assert!(!message.contains("years"), "{message}");
        assert_eq!(error.field(), "cron");
    }
    assert!(parse(Some("@DAILY"), None, "").is_ok());
}

#[test]
fn never_matching_cron_is_rejected() {
    for expr in ["0 0 30 2 *", "0 0 31 4,6,9,11 *"] {
        let error = err(Some(expr), None, "");
        assert_eq!(error, TimingError::CronNeverMatches { expr: expr.into() });
        assert_eq!(
            error.to_string(),
            format!("cron: {expr:?} never matches any date")
        );
    }
    // Rare but real: Feb 29 that is also a Monday.
    assert!(parse(Some("0 0 29 2 +MON"), None, "").is_ok());
}

#[test]
fn timezones() {
    let error = err(Some("* * * * *"), None, "Mars/Base");
    assert_eq!(
        error.to_string(),
        "timezone: unknown IANA time zone \"Mars/Base\""
    );
    assert_eq!(error.field(), "timezone");
    assert_eq!(
        err(Some("* * * * *"), None, "Europe/berlin").to_string(),
        "timezone: unknown IANA time zone \"Europe/berlin\"; did you mean Europe/Berlin?"
    );
    // Validated for every too, and names are exact.
    assert_eq!(
        err(None, Some(60_000), "america/new_york").field(),
        "timezone"
    );
    assert_eq!(err(None, Some(60_000), " UTC").field(), "timezone");

    let name = |tz: &str| parse(None, Some(60_000), tz).map(|t| t.timezone_name().to_string());
    assert_eq!(name(""), Ok("UTC".into()));
    assert_eq!(name("UTC"), Ok("UTC".into()));
    assert_eq!(name(NY), Ok(NY.into()));
    assert_eq!(name("US/Eastern"), Ok("US/Eastern".into()));
}

#[test]
fn every_bounds() {
    let cases = [
        (
            0,
            Some(TimingError::EveryNotPositive),
            "every: must be positive",
        ),
        (
            -1,
            Some(TimingError::EveryNotPositive),
            "every: must be positive",
        ),
        (
            i64::MIN,
            Some(TimingError::EveryNotPositive),
            "every: must be positive",
        ),
        (
            999,
            Some(TimingError::EveryTooShort),
            "every: must be at least 1s",
        ),
        (
            366 * 86_400_000 + 1,
            Some(TimingError::EveryTooLong),
            "every: must be at most 366 days",
        ),
        (
            i64::MAX,
            Some(TimingError::EveryTooLong),
            "every: must be at most 366 days",
        ),
        (1_000, None, ""),
        (366 * 86_400_000, None, ""),
    ];
    for (every_ms, want, msg) in cases {
        match (parse(None, Some(every_ms), ""), want) {
            (Ok(t), None) => {
                // Slots are anchored at the epoch: the first one after it is `every`.
                assert_eq!(t.next_after(0), Some(every_ms));
                assert!(!t.is_cron());
            }
            (Err(e), Some(w)) => {
                assert_eq!(e, w);
                assert_eq!(e.to_string(), msg);
                assert_eq!(e.field(), "every");
            }
            (got, want) => panic!("{every_ms}: got {got:?}, want {want:?}"),
        }
    }
}

#[test]
fn window() {
    let spec = |start_ms, end_ms| TimingSpec {
        cron: Some("* * * * *"),
        start_ms,
        end_ms,
        ..TimingSpec::default()
    };
    for (start, end) in [(10, 10), (10, 9), (i64::MAX, i64::MIN)] {
        let error = Timing::parse(&spec(Some(start), Some(end))).expect_err("end <= start");
        assert_eq!(error, TimingError::EndNotAfterStart);
        assert_eq!(error.to_string(), "end_time: must be after start_time");
        assert_eq!(error.field(), "end_time");
    }
    for (start, end) in [
        (Some(10), Some(11)),
        (None, Some(0)),
        (Some(0), None),
        (Some(i64::MIN), Some(i64::MAX)),
    ] {
        assert!(Timing::parse(&spec(start, end)).is_ok());
    }
}

#[test]
fn accessors() {
    let t = parse(Some("  30 2 * * *  "), None, NY).expect("valid");
    assert!(t.is_cron());
    assert_eq!(t.timezone_name(), NY);
}

fn parse_new(
    cron: Option<&str>,
    every_ms: Option<i64>,
    timezone: &str,
) -> Result<Timing, TimingError> {
    Timing::parse_new(&TimingSpec {
        cron,
        every_ms,
        timezone,
        start_ms: None,
        end_ms: None,
        offset_ms: None,
    })
}

#[test]
fn new_schedules_name_region_zones_and_no_zone_with_every() {
    for legacy in [
        "EST", "MST", "HST", "EST5EDT", "CST6CDT", "MST7MDT", "PST8PDT", "CET",
    ] {
        let error = parse_new(Some("0 9 * * *"), None, legacy).expect_err(legacy);
        assert_eq!(error.field(), "timezone");
        assert!(error.to_string().contains("legacy zone"), "{error}");
        // Stored schedules that name one keep working.
        assert!(parse(Some("0 9 * * *"), None, legacy).is_ok(), "{legacy}");
    }
    let est = parse_new(Some("0 9 * * *"), None, "EST").expect_err("EST");
    assert!(est.to_string().contains("America/New_York"), "{est}");
    assert!(est.to_string().contains("Etc/GMT+5"), "{est}");
    for fine in ["UTC", "Etc/GMT+5", "America/New_York", "US/Eastern", ""] {
        assert!(parse_new(Some("0 9 * * *"), None, fine).is_ok(), "{fine}");
    }
    let error = parse_new(None, Some(60_000), NY).expect_err("every with a zone");
    assert_eq!(error, TimingError::TimezoneWithEvery);
    assert_eq!(error.field(), "timezone");
    assert!(
        parse(None, Some(60_000), NY).is_ok(),
        "stored ones still parse"
    );
    for fine in ["", "UTC"] {
        assert!(parse_new(None, Some(60_000), fine).is_ok(), "{fine}");
    }
}

/// `offset` (issue 17): `every` only, within [0, every); slots move by it.
#[test]
fn every_offset_moves_slots_and_stays_within_the_interval() {
    let with = |cron: Option<&str>, every_ms: Option<i64>, offset: i64| {
        Timing::parse(&TimingSpec {
            cron,
            every_ms,
            offset_ms: Some(offset),
            ..TimingSpec::default()
        })
    };
    let hourly = with(None, Some(3_600_000), 900_000).expect("valid");
    assert_eq!(hourly.first_at_or_after(1), Some(900_000));
    assert_eq!(hourly.next_after(900_000), Some(4_500_000));
    for bad in [3_600_000, 3_600_001, -1] {
        assert_eq!(
            with(None, Some(3_600_000), bad).err(),
            Some(TimingError::OffsetNotWithinInterval),
            "{bad}"
        );
    }
    let cron = with(Some("0 * * * *"), None, 0).err();
    assert_eq!(cron, Some(TimingError::OffsetWithCron));
    assert_eq!(cron.map(|e| e.field()), Some("offset"));
}
