//! Zone names as clients send them: what is unknown (with the name it probably
//! meant), and what a new schedule may not use.
//!
//! The tz database keeps a few legacy zones for compatibility whose names look like
//! what people mean and are not: `EST` is UTC-5 all year (a 09:00 schedule runs at
//! 10:00 New York time in summer), `EST5EDT` follows today's US rules with none of
//! the history, `CET` is one country's rules. New schedules must name a region zone
//! (`America/New_York`), a UTC alias, or an `Etc/GMT±N` fixed offset, which says
//! what it is. Stored schedules keep working whatever they name.

use chrono_tz::{Tz, TZ_VARIANTS};

use super::TimingError;

/// Zones without a `/` that a new schedule may still name: UTC under other names,
/// and the old country-name links, which are exact aliases of one region zone
/// (`Japan` is `Asia/Tokyo`, with all its history).
const ALLOWED_WITHOUT_AREA: [&str; 35] = [
    "UTC",
    "UCT",
    "GMT",
    "GMT0",
    "GMT+0",
    "GMT-0",
    "Greenwich",
    "Universal",
    "Zulu",
    "Cuba",
    "Egypt",
    "Eire",
    "GB",
    "GB-Eire",
    "Hongkong",
    "Iceland",
    "Iran",
    "Israel",
    "Jamaica",
    "Japan",
    "Kwajalein",
    "Libya",
    "NZ",
    "NZ-CHAT",
    "Navajo",
    "PRC",
    "Poland",
    "Portugal",
    "ROC",
    "ROK",
    "Singapore",
    "Turkey",
    "W-SU",
    "Factory",
    "Etc",
];

/// The legacy zones refused for new schedules: the region zone people usually mean,
/// and the `Etc/GMT±N` form of their standard offset (POSIX signs: `Etc/GMT+5` is
/// UTC-5).
const LEGACY: [(&str, &str, &str); 11] = [
    ("EST", "America/New_York", "Etc/GMT+5"),
    (
        "MST",
        "America/Denver (America/Phoenix has no DST)",
        "Etc/GMT+7",
    ),
    ("HST", "Pacific/Honolulu", "Etc/GMT+10"),
    ("EST5EDT", "America/New_York", "Etc/GMT+5"),
    ("CST6CDT", "America/Chicago", "Etc/GMT+6"),
    ("MST7MDT", "America/Denver", "Etc/GMT+7"),
    ("PST8PDT", "America/Los_Angeles", "Etc/GMT+8"),
    ("CET", "Europe/Paris", "Etc/GMT-1"),
    ("MET", "Europe/Paris", "Etc/GMT-1"),
    ("EET", "Europe/Athens", "Etc/GMT-2"),
    ("WET", "Europe/Lisbon", "Etc/GMT"),
];

/// The zone called `name` ("" is UTC); an unknown name that differs from a real one
/// only in case is answered with the real one.
pub(super) fn parse(name: &str) -> Result<Tz, TimingError> {
    if name.is_empty() {
        return Ok(Tz::UTC);
    }
    name.parse().map_err(|_| TimingError::UnknownTimezone {
        name: name.to_owned(),
        suggestion: TZ_VARIANTS
            .iter()
            .find(|tz| tz.name().eq_ignore_ascii_case(name.trim()))
            .map(|tz| tz.name().to_owned()),
    })
}

/// Refuses the legacy zones for a new schedule.
pub(super) fn check_new(tz: Tz) -> Result<(), TimingError> {
    let name = tz.name();
    if name.contains('/') || ALLOWED_WITHOUT_AREA.contains(&name) {
        return Ok(());
    }
    let (region, fixed) = LEGACY.iter().find(|(legacy, ..)| *legacy == name).map_or(
        ("a region zone such as America/New_York", "Etc/GMT+5"),
        |(_, r, f)| (*r, *f),
    );
    Err(TimingError::LegacyTimezone {
        name: name.to_owned(),
        region: region.to_owned(),
        fixed: fixed.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every zone chrono-tz knows without an area is either allowed on purpose or
    /// refused with a hint of its own: a tz release that adds one fails here.
    #[test]
    fn every_zone_without_an_area_is_decided() {
        for tz in TZ_VARIANTS {
            let name = tz.name();
            if name.contains('/') || ALLOWED_WITHOUT_AREA.contains(&name) {
                assert!(check_new(tz).is_ok(), "{name}");
                continue;
            }
            assert!(
                LEGACY.iter().any(|(legacy, ..)| *legacy == name),
                "{name} is neither allowed nor in LEGACY"
            );
            let refused = check_new(tz).expect_err(name).to_string();
            assert!(refused.contains("Etc/GMT"), "{refused}");
        }
    }

    #[test]
    fn the_hint_names_the_region_and_the_fixed_offset() {
        let refused = check_new(parse("EST").expect("known")).expect_err("legacy");
        assert_eq!(
            refused.to_string(),
            "timezone: \"EST\" is a legacy zone that does not follow any region's \
             clock changes; name a region zone (America/New_York, or another \
             Area/Location zone) for local time, or Etc/GMT+5 for a fixed offset \
             (Etc/GMT+N is UTC-N)"
        );
        for good in [
            "UTC",
            "Etc/GMT+5",
            "Etc/UTC",
            "America/New_York",
            "US/Eastern",
            "Japan",
        ] {
            assert!(check_new(parse(good).expect(good)).is_ok(), "{good}");
        }
    }

    #[test]
    fn a_case_mistake_is_answered_with_the_real_name() {
        let error = parse("Europe/berlin").expect_err("unknown");
        assert_eq!(
            error.to_string(),
            "timezone: unknown IANA time zone \"Europe/berlin\"; did you mean Europe/Berlin?"
        );
        let error = parse("Mars/Base").expect_err("unknown");
        assert_eq!(
            error.to_string(),
            "timezone: unknown IANA time zone \"Mars/Base\""
        );
    }
}
