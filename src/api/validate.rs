//! Request validation. Runs before anything is written (invariant 8); every error
//! names the field.

use super::ApiError;

pub const MAX_NAMESPACE_LEN: usize = 64;
pub const MAX_ID_LEN: usize = 256;
pub const MAX_NAME_LEN: usize = 256;
pub const MAX_HEADERS: usize = 64;
pub const MAX_HEADER_KEY_LEN: usize = 256;
pub const MAX_HEADER_VALUE_LEN: usize = 8192;
/// Lua numbers are doubles: counts above 2^53 would silently lose precision.
pub const MAX_RUN_LIMIT: u64 = 1 << 53;
/// 9999-12-31T23:59:59Z: the last instant RFC 3339 (and every client library) can show.
pub const MAX_TIMESTAMP_SECS: i64 = 253_402_300_799;

/// Namespaces become part of Redis keys and the Cluster hash tag, so they are limited
/// to characters that cannot move the tag or collide with the key separators' meaning.
pub fn namespace(value: &str) -> Result<&str, ApiError> {
    if value.is_empty() {
        return Err(ApiError::invalid("namespace", "must not be empty"));
    }
    if value.len() > MAX_NAMESPACE_LEN {
        return Err(ApiError::invalid(
            "namespace",
            format!("must be at most {MAX_NAMESPACE_LEN} characters"),
        ));
    }
    if !value
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
    {
        return Err(ApiError::invalid(
            "namespace",
            format!("{value:?} may only contain A-Z a-z 0-9 _ - ."),
        ));
    }
    Ok(value)
}

/// Key prefixes follow the namespace rules, plus `:` for nesting (`app:dueq`).
pub fn key_prefix(value: &str) -> Result<&str, String> {
    let ok = !value.is_empty()
        && value.len() <= 64
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b':'));
    if ok {
        Ok(value)
    } else {
        Err(format!(
            "key prefix {value:?} must be 1-64 characters of A-Z a-z 0-9 _ - . :"
        ))
    }
}

/// A record id: any UTF-8, 1-256 bytes. Ids come last in their key, so none aliases.
pub fn id<'a>(field: &str, value: &'a str) -> Result<&'a str, ApiError> {
    if value.is_empty() {
        return Err(ApiError::invalid(field, "must not be empty"));
    }
    max_len(field, value, MAX_ID_LEN)
}

pub fn max_len<'a>(field: &str, value: &'a str, max: usize) -> Result<&'a str, ApiError> {
    if value.len() > max {
        return Err(ApiError::invalid(
            field,
            format!("must be at most {max} bytes, got {}", value.len()),
        ));
    }
    Ok(value)
}

/// String metadata: at most MAX_HEADERS entries, non-empty bounded keys, bounded values.
pub fn headers<'a>(
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
pub fn timestamp_ms(field: &str, ts: &prost_types::Timestamp) -> Result<i64, ApiError> {
    if !(0..=MAX_TIMESTAMP_SECS).contains(&ts.seconds) || !(0..1_000_000_000).contains(&ts.nanos) {
        return Err(ApiError::invalid(
            field,
            "must be between 1970-01-01 and 9999-12-31 with nanos in 0..1e9",
        ));
    }
    Ok(ts.seconds * 1000 + i64::from(ts.nanos) / 1_000_000)
}

/// A protobuf Duration as ms; negative durations are refused.
pub fn duration_ms(field: &str, d: &prost_types::Duration) -> Result<i64, ApiError> {
    if d.seconds < 0 || d.nanos < 0 {
        return Err(ApiError::invalid(field, "must not be negative"));
    }
    if !(0..1_000_000_000).contains(&d.nanos) || d.seconds > 315_576_000_000 {
        return Err(ApiError::invalid(field, "is out of range"));
    }
    Ok(d.seconds.saturating_mul(1000) + i64::from(d.nanos) / 1_000_000)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn namespaces_that_would_break_keys_are_refused() {
        for bad in ["", "a{b", "a}b", "a:b", "a b", "ü", &"x".repeat(65)] {
            assert!(namespace(bad).is_err(), "{bad:?} accepted");
        }
        for good in ["a", "tenant-1", "prod.eu_west", &"x".repeat(64)] {
            assert!(namespace(good).is_ok(), "{good:?} refused");
        }
    }

    #[test]
    fn prefixes_cannot_hold_hash_tags() {
        assert!(key_prefix("dueq").is_ok());
        assert!(key_prefix("app:dueq").is_ok());
        assert!(key_prefix("a{b}").is_err());
        assert!(key_prefix("").is_err());
    }

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
