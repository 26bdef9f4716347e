//! How long a long-poll may wait.
//!
//! tonic answers an expired `grpc-timeout` with CANCELLED and drops the handler, so a
//! long-poll reads the client's deadline itself and answers empty just before it.

use std::time::Duration;

use tonic::metadata::MetadataMap;

/// Answer this much before the client's deadline, so the empty reply arrives in time.
const DEADLINE_MARGIN: Duration = Duration::from_millis(50);

/// The client's `grpc-timeout`, if it sent one (e.g. "1500m", "30S", "2H").
fn client_timeout(metadata: &MetadataMap) -> Option<Duration> {
    let value = metadata.get("grpc-timeout")?.to_str().ok()?;
    let (digits, unit) = value.split_at(value.len().checked_sub(1)?);
    let amount: u64 = digits.parse().ok()?;
    Some(match unit {
        "H" => Duration::from_secs(amount.saturating_mul(3600)),
        "M" => Duration::from_secs(amount.saturating_mul(60)),
        "S" => Duration::from_secs(amount),
        "m" => Duration::from_millis(amount),
        "u" => Duration::from_micros(amount),
        "n" => Duration::from_nanos(amount),
        _ => return None,
    })
}

/// The wait to honour: the request's, capped by the server and the client deadline.
pub(super) fn effective_wait(
    requested: Duration,
    cap: Duration,
    metadata: &MetadataMap,
) -> Duration {
    let mut wait = requested.min(cap);
    if let Some(timeout) = client_timeout(metadata) {
        let margin = DEADLINE_MARGIN.min(timeout / 10);
        wait = wait.min(timeout.saturating_sub(margin));
    }
    wait
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_timeout(v: &'static str) -> MetadataMap {
        let mut m = MetadataMap::new();
        m.insert("grpc-timeout", v.parse().expect("static ascii"));
        m
    }

    #[test]
    fn parses_every_unit() {
        assert_eq!(
            client_timeout(&with_timeout("2H")),
            Some(Duration::from_secs(7200))
        );
        assert_eq!(
            client_timeout(&with_timeout("1500m")),
            Some(Duration::from_millis(1500))
        );
        assert_eq!(client_timeout(&with_timeout("7x")), None);
        assert_eq!(client_timeout(&MetadataMap::new()), None);
    }

    #[test]
    fn answers_before_the_deadline() {
        let wait = effective_wait(
            Duration::from_secs(30),
            Duration::from_secs(60),
            &with_timeout("1S"),
        );
        assert_eq!(wait, Duration::from_millis(950));
        let capped = effective_wait(
            Duration::from_secs(300),
            Duration::from_secs(60),
            &MetadataMap::new(),
        );
        assert_eq!(capped, Duration::from_secs(60));
    }
}
