//! Errors of the store layer. The API layer alone maps them to gRPC statuses.

use deadpool_redis::redis::RedisError;

#[derive(Debug, Clone, thiserror::Error)]
pub enum StoreError {
    /// Redis cannot be reached (refused, dropped, timed out, pool exhausted).
    #[error("redis at {url} is unavailable: {reason}")]
    Unavailable { url: String, reason: String },
    /// Redis refused a write because it reached `maxmemory` (with `noeviction`).
    /// Redis refuses a script's write at OOM only while the script has written
    /// nothing yet (later writes go through, so it never stops half-way), so the
    /// refused call changed nothing.
    #[error(
        "redis at {url} is out of memory (maxmemory reached): nothing was written; \
         raise maxmemory, or let finished jobs be pruned (--job-retention), then retry"
    )]
    OutOfMemory { url: String },
    /// Redis answered with an error we did not expect (a bug or a misconfigured server).
    #[error("redis error: {0}")]
    Redis(#[source] RedisError),
    /// The namespace's store layout is not the one this dueq reads and writes; the
    /// script refused before touching anything. `found` is the schema version it saw
    /// ("1": the pre-index layout, "unknown": metadata missing).
    #[error(
        "namespace {namespace:?} needs Migrate: store schema {found}, this dueq uses {}",
        super::keys::SCHEMA_VERSION
    )]
    NeedsMigrate { namespace: String, found: String },
    /// The namespace's jobs are stored in another job layout (`found`); the job script
    /// refused before touching anything.
    #[error(
        "namespace {namespace:?} needs Migrate: its jobs use layout {found}, this dueq uses {}",
        super::keys::JOBS_LAYOUT
    )]
    JobsNeedMigrate { namespace: String, found: String },
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
        } else if err.code() == Some("OOM") {
            StoreError::OutOfMemory {
                url: url.to_owned(),
            }
        } else if err.code() == Some("DUEQ_MIGRATE") {
            needs_migrate(err.detail().unwrap_or_default())
        } else if err.code() == Some("DUEQ_MIGRATE_JOBS") {
            match needs_migrate(err.detail().unwrap_or_default()) {
                StoreError::NeedsMigrate { namespace, found } => {
                    StoreError::JobsNeedMigrate { namespace, found }
                }
                other => other,
            }
        } else if err.code() == Some("DUEQ_CORRUPT") {
            StoreError::corrupt(
                err.detail().unwrap_or_default(),
                "not a job record of this dueq's layout",
            )
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

/// Decodes the guard's "<found> <prefix>:{<namespace>}:meta" error detail.
fn needs_migrate(detail: &str) -> StoreError {
    let (found, meta_key) = detail.split_once(' ').unwrap_or((detail, ""));
    // Namespaces cannot contain braces, so the first `{` opens the hash tag.
    let namespace = meta_key
        .split_once('{')
        .and_then(|(_, rest)| rest.rsplit_once("}:meta"))
        .map(|(ns, _)| ns)
        .unwrap_or(meta_key);
    StoreError::NeedsMigrate {
        namespace: namespace.to_owned(),
        found: found.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_the_guard_error() {
        match needs_migrate("1 dueq:prod:{billing.eu}:meta") {
            StoreError::NeedsMigrate { namespace, found } => {
                assert_eq!(namespace, "billing.eu");
                assert_eq!(found, "1");
            }
            other => panic!("{other:?}"),
        }
    }
}
