//! Errors of the store layer. The API layer alone maps them to gRPC statuses.

use deadpool_redis::redis::RedisError;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// Redis cannot be reached (refused, dropped, timed out, pool exhausted).
    #[error("redis at {url} is unavailable: {reason}")]
    Unavailable { url: String, reason: String },
    /// Redis answered with an error we did not expect (a bug or a misconfigured server).
    #[error("redis error: {0}")]
    Redis(#[source] RedisError),
    /// A record or script reply did not have the expected shape.
    #[error("corrupt record {what}: {detail}")]
    Corrupt { what: String, detail: String },
}

impl StoreError {
    pub(crate) fn from_redis(url: &str, err: RedisError) -> Self {
        if err.is_io_error()
            || err.is_connection_dropped()
            || err.is_connection_refusal()
            || err.is_timeout()
            || err.is_unrecoverable_error()
        {
            StoreError::Unavailable {
                url: url.to_owned(),
                reason: err.to_string(),
            }
        } else if err.code() == Some("LOADING") || err.code() == Some("BUSY") {
            // Redis is starting up or stuck in a long script: transient.
            StoreError::Unavailable {
                url: url.to_owned(),
                reason: err.to_string(),
            }
        } else {
            StoreError::Redis(err)
        }
    }

    pub(crate) fn corrupt(what: impl Into<String>, detail: impl Into<String>) -> Self {
        StoreError::Corrupt {
            what: what.into(),
            detail: detail.into(),
        }
    }

    /// True when the connection that produced this error should be replaced.
    pub(crate) fn is_unavailable(&self) -> bool {
        matches!(self, StoreError::Unavailable { .. })
    }
}
