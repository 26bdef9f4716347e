//! Unit tests for `timing`, with real zones and real 2026 transition dates.
//!
//! 2026 transitions (checked by `transitions::dates_are_real`):
//! America/New_York springs forward 2026-03-08 02:00→03:00 EST→EDT (07:00Z)
//! and falls back 2026-11-01 02:00→01:00 EDT→EST (06:00Z); Europe/Berlin
//! springs forward 2026-03-29 02:00→03:00 (01:00Z) and falls back 2026-10-25
//! 03:00→02:00 (01:00Z); Australia/Lord_Howe (30-minute DST) falls back
//! 2026-04-05 02:00→01:30 and springs forward 2026-10-04 02:00→02:30.

mod advance;
mod calendar;
mod cron_dst;
mod cron_syntax;
mod every;
mod extremes;
mod parse;
mod preview;
mod properties;

use chrono::{DateTime, Offset, SecondsFormat, Utc};
use chrono_tz::Tz;

use super::{Timing, TimingSpec};

pub(super) const NY: &str = "America/New_York";
pub(super) const BERLIN: &str = "Europe/Berlin";
pub(super) const LORD_HOWE: &str = "Australia/Lord_Howe";

/// RFC 3339 → epoch ms.
pub(super) fn ms(s: &str) -> i64 {
    DateTime::parse_from_rfc3339(s)
        .unwrap_or_else(|e| panic!("bad test time {s}: {e}"))
        .timestamp_millis()
}

/// Epoch ms → `2026-03-08T07:00:00Z` (millis only when non-zero).
pub(super) fn utc(ms: i64) -> String {
    DateTime::<Utc>::from_timestamp_millis(ms)
        .expect("representable")
        .to_rfc3339_opts(SecondsFormat::AutoSi, true)
}

pub(super) fn cron(expr: &str, tz: &str) -> Timing {
    Timing::parse(&TimingSpec {
        cron: Some(expr),
        timezone: tz,
        ..TimingSpec::default()
    })
    .unwrap_or_else(|e| panic!("{expr} in {tz}: {e}"))
}

pub(super) fn every(every_ms: i64, start_ms: Option<i64>, end_ms: Option<i64>) -> Timing {
    Timing::parse(&TimingSpec {
        every_ms: Some(every_ms),
        start_ms,
        end_ms,
        ..TimingSpec::default()
    })
    .expect("valid every")
}

/// The first `n` fire times from `from` (inclusive), as UTC strings.
pub(super) fn seq(t: &Timing, from: &str, n: usize) -> Vec<String> {
    let mut out = Vec::new();
    let mut next = t.first_at_or_after(ms(from));
    while let Some(at) = next {
        if out.len() == n {
            break;
        }
        out.push(utc(at));
        next = t.next_after(at);
    }
    out
}

pub(super) fn offset_at(tz: &str, at: &str) -> i32 {
    let tz: Tz = tz.parse().expect("zone");
    DateTime::from_timestamp_millis(ms(at))
        .expect("representable")
        .with_timezone(&tz)
        .offset()
        .fix()
        .local_minus_utc()
}
