//! The store layer's one error kind. The API's rescue point alone turns it into a
//! gRPC status (src/api/rescue.rs).

use deadpool_redis::redis::RedisError;

use crate::domain::{FailureKind, Found, Layout, NeedsMigrate};

#[derive(Debug, Clone, thiserror::Error)]
pub(crate) enum StoreError {
    /// Redis cannot be reached (refused, dropped, timed out, pool exhausted, busy).
    #[error("redis at {url} is unavailable: {reason}")]
    Unavailable { url: String, reason: String },
    /// Redis refused a script because it reached `maxmemory` (with `noeviction`).
    /// Every script that adds or hands out work is flagged so that Redis refuses it
    /// before it runs (src/store/script.rs), so the refused call changed nothing;
    /// what finishes or releases work still runs.
    #[error(
        "redis at {url} is out of memory (maxmemory reached): nothing was written, and \
         no work is handed out until it has room; raise maxmemory, or let workers drain \
         it (acks, failures, lease extensions and cancels still run, and finished jobs \
         are pruned after --job-retention), then retry"
    )]
    OutOfMemory { url: String },
    /// Redis answered with an error we did not expect (a bug or a misconfigured server).
    #[error("redis error: {0}")]
    Redis(#[source] RedisError),
    /// The namespace is stored in a layout this dueq does not read; the script refused
    /// before touching anything.
    #[error("namespace {namespace:?} needs Migrate: {needs}")]
    NeedsMigrate {
        namespace: String,
        needs: NeedsMigrate,
    },
    /// A create would take the namespace beyond a per-namespace quota; the script
    /// refused before writing.
    #[error(
        "namespace {namespace:?} holds the most {what} the server's --max-{what}-per-namespace \
         allows ({limit}); nothing was written: make room (finish, cancel or delete some), or \
         raise the limit"
    )]
    Quota {
        namespace: String,
        what: String,
        limit: u64,
    },
    /// A record or script reply did not have the expected shape.
    #[error("corrupt data in {what}: {detail}")]
    Corrupt { what: String, detail: String },
}

/// A script's DUEQ_QUOTA refusal: "<what> <limit>".
fn quota(namespace: &str, detail: &str) -> StoreError {
    let (what, limit) = detail.trim().split_once(' ').unwrap_or((detail, ""));
    StoreError::Quota {
        namespace: namespace.to_owned(),
        what: what.to_owned(),
        limit: limit.parse().unwrap_or_default(),
    }
}

impl StoreError {
    /// Classifies a Redis error from a call made for `namespace` (the scripts' own
    /// refusals carry the layout they found, not the namespace).
    pub(crate) fn from_redis(url: &str, namespace: &str, err: RedisError) -> Self {
        let unavailable = err.is_io_error()
            || err.is_connection_dropped()
            || err.is_connection_refusal()
            || err.is_timeout()
            || err.is_unrecoverable_error()
            // Redis is starting up or stuck in a long script: transient. A cluster
            // without a master for a slot, a slot moving, a sentinel master demoted to
            // a replica: transient too, until the failover completes.
            || matches!(
                err.code(),
                Some(
                    "LOADING"
                        | "BUSY"
                        | "CLUSTERDOWN"
                        | "TRYAGAIN"
                        | "MASTERDOWN"
                        | "READONLY"
                        | "NOREPLICAS"
                )
            );
        let needs = |layout| StoreError::NeedsMigrate {
            namespace: namespace.to_owned(),
            needs: NeedsMigrate {
                layout,
                found: Found::parse(err.detail().unwrap_or_default().trim()),
            },
        };
        match err.code() {
            _ if unavailable => StoreError::Unavailable {
                url: url.to_owned(),
                reason: err.to_string(),
            },
            Some("OOM") => StoreError::OutOfMemory {
                url: url.to_owned(),
            },
            Some("DUEQ_MIGRATE") => needs(Layout::Schedules),
            Some("DUEQ_MIGRATE_JOBS") => needs(Layout::Jobs),
            Some("DUEQ_QUOTA") => quota(namespace, err.detail().unwrap_or_default()),
            Some("DUEQ_CORRUPT") => StoreError::corrupt(
                err.detail().unwrap_or_default(),
                "not a record of this dueq's layout",
            ),
            _ => StoreError::Redis(err),
        }
    }

    pub(crate) fn corrupt(what: impl Into<String>, detail: impl Into<String>) -> Self {
        StoreError::Corrupt {
            what: what.into(),
            detail: detail.into(),
        }
    }

    pub(crate) fn kind(&self) -> FailureKind {
        match self {
            StoreError::Unavailable { .. } => FailureKind::Unavailable,
            StoreError::NeedsMigrate { .. } => FailureKind::Precondition,
            StoreError::OutOfMemory { .. } => FailureKind::Full,
            StoreError::Quota { .. } => FailureKind::TooLarge,
            StoreError::Redis(_) | StoreError::Corrupt { .. } => FailureKind::Internal,
        }
    }

    /// True when the connection that produced this error should be replaced.
    pub(crate) fn is_unavailable(&self) -> bool {
        matches!(self, StoreError::Unavailable { .. })
    }
}
