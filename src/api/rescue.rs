//! The one place an error becomes a gRPC status (in the spirit of linkerd2-proxy's
//! `errors/respond.rs`). Handlers return [`ApiError`] and cannot build a `Status`;
//! every RPC goes through [`Rescue::respond`] (see `rpcs.rs`), so no handler can
//! skip the mapping, the operator hint, the needs-Migrate notice or the bound on the
//! message.

use std::{
    sync::{Arc, Mutex},
    time::Duration,
};

use tokio::time::Instant;
use tonic::{Code, Response, Status};

use super::{audit::Audit, ApiError};
use crate::{
    domain::{FailureKind, Namespace},
    namespaces::Namespaces,
    sync::lock,
};

/// A namespace that needs Migrate is logged at most this often.
const MIGRATE_NOTICE_EVERY: Duration = Duration::from_secs(60);

/// A full Redis is logged at most this often.
const FULL_NOTICE_EVERY: Duration = Duration::from_secs(60);

/// Longest status message sent. It travels in an HTTP/2 header (`grpc-message`,
/// percent-encoded) and messages echo request values, which can be megabytes: an
/// oversized header breaks the response and the client sees an h2 protocol error
/// instead of the real status.
const MAX_MESSAGE_LEN: usize = 1024;

pub(crate) struct Rescue {
    /// Where operators reach this service, for the Migrate command in hints.
    address: String,
    namespaces: Arc<Namespaces>,
    /// When a full Redis was last logged.
    full_notice: Mutex<Option<Instant>>,
    /// Where the audited calls' records go (`super::audit`).
    audit: Arc<Audit>,
}

/// The operator's command that migrates `namespace`: the one wording of the hint.
pub(crate) fn migrate_command(namespace: &str, address: &str) -> String {
    format!(
        "grpcurl -plaintext -d '{{\"namespace\": \"{namespace}\"}}' {address} dueq.v1.QueueService/Migrate"
    )
}

impl Rescue {
    pub(crate) fn new(address: String, namespaces: Arc<Namespaces>) -> Self {
        Self {
            address,
            namespaces,
            full_notice: Mutex::new(None),
            audit: Arc::default(),
        }
    }

    /// Sends the audited calls' records to `audit` (the service's writer).
    pub(crate) fn with_audit(self, audit: Audit) -> Self {
        Self {
            audit: Arc::new(audit),
            ..self
        }
    }

    /// The audit of the calls answered here.
    pub(super) fn audit(&self) -> &Arc<Audit> {
        &self.audit
    }

    /// The answer to an RPC: its message, or the status for its error.
    pub(crate) fn respond<T>(&self, result: Result<T, ApiError>) -> Result<Response<T>, Status> {
        result
            .map(Response::new)
            .map_err(|error| self.status(error))
    }

    /// The status for an error.
    pub(crate) fn status(&self, error: ApiError) -> Status {
        let code = code(error.kind());
        let mut message = error.to_string();
        if let ApiError::App(app) = &error {
            if let Some(namespace) = app.needs_migrate() {
                self.notice(namespace, &message);
                message.push_str(&format!(
                    ". Nothing was changed. Run: {}",
                    migrate_command(namespace, &self.address)
                ));
            }
        }
        if code == Code::Internal {
            tracing::error!(%error, "internal error");
        }
        if error.kind() == FailureKind::Full {
            self.full_notice(&message);
        }
        Status::new(code, bounded(message))
    }

    /// Logs that Redis is full, at most once a minute: a full Redis refuses every
    /// claim of every worker, and one line says it as well as thousands.
    fn full_notice(&self, message: &str) {
        let mut last = lock(&self.full_notice);
        if last.is_none_or(|at| at.elapsed() >= FULL_NOTICE_EVERY) {
            *last = Some(Instant::now());
            tracing::error!(error = %message, "redis is full: work is not handed out");
        }
    }

    /// Logs that a namespace is refused until it is migrated, at most once a minute.
    fn notice(&self, namespace: &str, message: &str) {
        // The store names the namespace it was called with: one already validated.
        let Ok(namespace) = Namespace::parse(namespace) else {
            return;
        };
        let entry = self.namespaces.entry(&namespace);
        let mut last = lock(&entry.migrate_notice);
        if last.is_none_or(|at| at.elapsed() >= MIGRATE_NOTICE_EVERY) {
            *last = Some(Instant::now());
            tracing::warn!(%namespace, error = %message, "namespace refused until it is migrated");
        }
    }
}

/// The status code of each kind of failure.
fn code(kind: FailureKind) -> Code {
    match kind {
        FailureKind::Invalid => Code::InvalidArgument,
        FailureKind::TooLarge | FailureKind::Full => Code::ResourceExhausted,
        FailureKind::NotFound => Code::NotFound,
        FailureKind::Denied => Code::PermissionDenied,
        FailureKind::Precondition => Code::FailedPrecondition,
        // The caller lost the work (stale token, expired lease, another Migrate took
        // over): it should drop this attempt and start again, a retry at a higher level.
        FailureKind::Lost => Code::Aborted,
        FailureKind::Unavailable => Code::Unavailable,
        FailureKind::Cancelled => Code::Cancelled,
        FailureKind::Internal => Code::Internal,
    }
}

fn bounded(mut message: String) -> String {
    if message.len() > MAX_MESSAGE_LEN {
        let mut end = MAX_MESSAGE_LEN;
        while !message.is_char_boundary(end) {
            end -= 1;
        }
        message.truncate(end);
        message.push_str("... (truncated)");
    }
    message
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{
        domain::{Found, Layout, NeedsMigrate},
        store::StoreError,
    };

    fn rescue() -> Rescue {
        Rescue::new(
            "localhost:50051".into(),
            Namespaces::new(tokio_util::sync::CancellationToken::new()),
        )
    }

    #[tokio::test]
    async fn a_needs_migrate_refusal_carries_the_command_whatever_the_rpc() {
        for layout in [Layout::Schedules, Layout::Jobs] {
            let error = ApiError::from(StoreError::NeedsMigrate {
                namespace: "billing".into(),
                needs: NeedsMigrate {
                    layout,
                    found: Found::Version(1),
                },
            });
            let status = rescue().status(error);
            assert_eq!(status.code(), Code::FailedPrecondition);
            assert!(
                status.message().ends_with(
                    "Run: grpcurl -plaintext -d '{\"namespace\": \"billing\"}' localhost:50051 dueq.v1.QueueService/Migrate"
                ),
                "{}",
                status.message()
            );
        }
    }

    #[tokio::test]
    async fn messages_are_bounded() {
        let status = rescue().status(ApiError::invalid("id", "x".repeat(100_000)));
        assert!(status.message().len() < 2 * MAX_MESSAGE_LEN);
        assert!(status.message().ends_with("(truncated)"));
    }
}
