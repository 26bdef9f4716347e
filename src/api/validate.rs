//! Request validation. Runs before anything is written (invariant 8 in
//! docs/DESIGN.md); every error names the field.

use super::ApiError;
use crate::domain::limits::{self, MAX_HEADERS};

pub(super) use limits::{
    MAX_HEADER_KEY_LEN, MAX_HEADER_VALUE_LEN, MAX_ID_LEN, MAX_NAME_LEN, MAX_RUN_LIMIT,
};

/// A record id: any UTF-8, 1-256 bytes.
pub(super) fn id<'a>(field: &str, value: &'a str) -> Result<&'a str, ApiError> {
    limits::check_id(value).map_err(|problem| ApiError::invalid(field, problem.to_string()))?;
    Ok(value)
}

pub(super) fn max_len<'a>(field: &str, value: &'a str, max: usize) -> Result<&'a str, ApiError> {
    if value.len() > max {
        return Err(ApiError::invalid(
            field,
            format!("must be at most {max} bytes, got {}", value.len()),
        ));
    }
    Ok(value)
}

/// A payload within the configured limit.
pub(super) fn payload(field: &str, payload: &[u8], limit: usize) -> Result<(), ApiError> {
    if payload.len() > limit {
        return Err(ApiError::TooLarge {
            field: field.to_owned(),
            size: payload.len(),
            limit,
            flag: "--max-payload-size",
        });
    }
    Ok(())
}

/// String metadata: at most MAX_HEADERS entries, non-empty bounded keys, bounded values.
pub(super) fn headers<'a>(
    field: &str,
    headers: impl ExactSizeIterator<Item = (&'a String, &'a String)>,
) -> Result<(), ApiError> {
    if headers.len() > MAX_HEADERS {
        return Err(ApiError::invalid(
            field,
            format!("at most {MAX_HEADERS} headers"),
        ));
    }
    for (key, value) in headers {
        if key.is_empty() {
            return Err(ApiError::invalid(field, "keys must not be empty"));
        }
        max_len(field, key, MAX_HEADER_KEY_LEN)?;
        max_len(field, value, MAX_HEADER_VALUE_LEN)?;
    }
    Ok(())
}

/// A protobuf Timestamp as epoch ms, within 1970..=9999.
pub(super) fn timestamp_ms(field: &str, ts: &prost_types::Timestamp) -> Result<i64, ApiError> {
    if !(0..=limits::MAX_TIMESTAMP_SECS).contains(&ts.seconds)
        || !(0..1_000_000_000).contains(&ts.nanos)
    {
        return Err(ApiError::invalid(
            field,
            "must be between 1970-01-01 and 9999-12-31 with nanos in 0..1e9",
        ));
    }
    Ok(ts.seconds * 1000 + i64::from(ts.nanos) / 1_000_000)
}

/// A protobuf Duration as ms; negative durations are refused.
pub(super) fn duration_ms(field: &str, d: &prost_types::Duration) -> Result<i64, ApiError> {
    if d.seconds < 0 || d.nanos < 0 {
        return Err(ApiError::invalid(field, "must not be negative"));
    }
    if !(0..1_000_000_000).contains(&d.nanos) || d.seconds > 315_576_000_000 {
        return Err(ApiError::invalid(field, "is out of range"));
    }
    Ok(d.seconds.saturating_mul(1000) + i64::from(d.nanos) / 1_000_000)
}

/// The last instant a protobuf Timestamp (RFC 3339) can carry, in ms.
const MAX_TIME_MS: i64 = limits::MAX_TIMESTAMP_SECS * 1000 + 999;

/// A Duration that is added to `now_ms` (a delay, a backoff, a retry): as ms, if the
/// time it leads to can still be written as a Timestamp. A time past the year 9999
/// would be stored and then returned in a form no client can parse.
pub(super) fn later_ms(
    field: &str,
    d: &prost_types::Duration,
    now_ms: i64,
) -> Result<i64, ApiError> {
    let ms = duration_ms(field, d)?;
    if now_ms.saturating_add(ms) > MAX_TIME_MS {
        return Err(ApiError::invalid(
            field,
            format!(
                "is {} days from now, past 9999-12-31T23:59:59Z, the last time a \
                 protobuf Timestamp can carry (at most {} days from now)",
                ms / 86_400_000,
                (MAX_TIME_MS - now_ms).max(0) / 86_400_000
            ),
        ));
    }
    Ok(ms)
}

/// An optional Duration as ms.
pub(super) fn optional_ms(
    field: &str,
    d: &Option<prost_types::Duration>,
) -> Result<Option<i64>, ApiError> {
    d.as_ref().map(|d| duration_ms(field, d)).transpose()
}

/// An optional [`later_ms`].
pub(super) fn optional_later_ms(
    field: &str,
    d: &Option<prost_types::Duration>,
    now_ms: i64,
) -> Result<Option<i64>, ApiError> {
    d.as_ref().map(|d| later_ms(field, d, now_ms)).transpose()
}

/// A page size: 0 means `default`, above `max` is refused.
pub(super) fn page_size(value: u32, default: u32, max: u32) -> Result<usize, ApiError> {
    match value {
        0 => Ok(default as usize),
        n if n > max => Err(ApiError::invalid(
            "page_size",
            format!("must be at most {max}"),
        )),
        n => Ok(n as usize),
    }
}

/// A queue name: required, an id's rules.
pub(super) fn queue(value: &str) -> Result<&str, ApiError> {
    if value.is_empty() {
        return Err(ApiError::invalid("queue", "is required"));
    }
    id("queue", value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negative_durations_are_refused() {
        let d = prost_types::Duration {
            seconds: -1,
            nanos: 0,
        };
        assert!(duration_ms("wait", &d).is_err());
        let d = prost_types::Duration {
            seconds: 1,
            nanos: 500_000_000,
        };
        assert_eq!(duration_ms("wait", &d).ok(), Some(1500));
    }
}
