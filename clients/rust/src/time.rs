//! Conversions between std time and protobuf's Duration and Timestamp.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// `d` as a protobuf Duration (saturating at i64::MAX seconds).
pub(crate) fn duration(d: Duration) -> prost_types::Duration {
    prost_types::Duration {
        seconds: i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
        nanos: d.subsec_nanos() as i32,
    }
}

/// `at` as a protobuf Timestamp (instants before 1970 are negative seconds).
pub(crate) fn timestamp(at: SystemTime) -> prost_types::Timestamp {
    let (seconds, nanos) = match at.duration_since(UNIX_EPOCH) {
        Ok(d) => (
            i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
            d.subsec_nanos() as i32,
        ),
        Err(before) => {
            let d = before.duration();
            let secs = -i64::try_from(d.as_secs()).unwrap_or(i64::MAX);
            match d.subsec_nanos() {
                0 => (secs, 0),
                n => (secs - 1, 1_000_000_000 - n as i32),
            }
        }
    };
    prost_types::Timestamp { seconds, nanos }
}

/// A protobuf Timestamp as a SystemTime (None when unset or unrepresentable).
pub(crate) fn system_time(t: Option<&prost_types::Timestamp>) -> Option<SystemTime> {
    let t = t?;
    let secs = u64::try_from(t.seconds).ok()?;
    UNIX_EPOCH.checked_add(Duration::new(secs, u32::try_from(t.nanos).ok()?))
}
