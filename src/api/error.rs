//! The API layer's error, and the one place errors become gRPC statuses.

use tonic::{Code, Status};

use crate::{jobs::JobError, migrate::MigrateError, schedules::ScheduleError, store::StoreError};

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// A request field is invalid; nothing was written.
    #[error("{field}: {reason}")]
    InvalidArgument { field: String, reason: String },
    /// A field exceeds a configured size limit; nothing was written.
    #[error("{field}: {size} bytes exceeds the limit of {limit} bytes")]
    TooLarge {
        field: String,
        size: usize,
        limit: usize,
    },
    /// The namespace must be migrated first; `address` is where operators reach dueq.
    #[error(
        "namespace {namespace:?} needs Migrate: its store has schema {found}{}, this dueq uses schema {current}. \
         Nothing was changed. Run: grpcurl -plaintext -d '{{\"namespace\": \"{namespace}\"}}' {address} dueq.v1.AdminService/Migrate",
        describe_schema(found)
    )]
    NeedsMigrate {
        namespace: String,
        found: String,
        current: u32,
        address: String,
    },
    /// The namespace's jobs must be migrated to this dueq's job layout first.
    #[error(
        "namespace {namespace:?} needs Migrate: its jobs are stored in job layout {found}, this dueq uses job layout {}. \
         Nothing was changed. Run: grpcurl -plaintext -d '{{\"namespace\": \"{namespace}\"}}' {address} dueq.v1.AdminService/Migrate",
        crate::store::keys::JOBS_LAYOUT
    )]
    JobsNeedMigrate {
        namespace: String,
        found: String,
        address: String,
    },
    #[error(transparent)]
    Schedule(#[from] ScheduleError),
    #[error(transparent)]
    Migrate(#[from] MigrateError),
    #[error(transparent)]
    Job(#[from] JobError),
}

fn describe_schema(found: &str) -> &'static str {
    match found {
        "1" => " (the pre-index layout)",
        "unknown" => " (its metadata is missing)",
        _ => "",
    }
}

impl ApiError {
    /// Attaches the Migrate command to a store's needs-migrate refusal.
    pub fn with_migrate_address(self, address: &str) -> Self {
        match self {
            ApiError::Schedule(ScheduleError::Store(StoreError::NeedsMigrate {
                namespace,
                found,
            })) => ApiError::NeedsMigrate {
                namespace,
                found,
                current: crate::store::keys::SCHEMA_VERSION,
                address: address.to_owned(),
            },
            ApiError::Job(JobError::Store(StoreError::JobsNeedMigrate { namespace, found })) => {
                ApiError::JobsNeedMigrate {
                    namespace,
                    found,
                    address: address.to_owned(),
                }
            }
            other => other,
        }
    }

    pub fn invalid(field: impl Into<String>, reason: impl Into<String>) -> Self {
        ApiError::InvalidArgument {
            field: field.into(),
            reason: reason.into(),
        }
    }
}

fn store_code(error: &StoreError) -> Code {
    match error {
        StoreError::Unavailable { .. } => Code::Unavailable,
        StoreError::NeedsMigrate { .. } | StoreError::JobsNeedMigrate { .. } => {
            Code::FailedPrecondition
        }
        StoreError::OutOfMemory { .. } => Code::ResourceExhausted,
        StoreError::Redis(_) | StoreError::Corrupt { .. } => Code::Internal,
    }
}

impl From<ApiError> for Status {
    fn from(error: ApiError) -> Status {
        let code = match &error {
            ApiError::InvalidArgument { .. } => Code::InvalidArgument,
            ApiError::TooLarge { .. } => Code::ResourceExhausted,
            ApiError::NeedsMigrate { .. } | ApiError::JobsNeedMigrate { .. } => {
                Code::FailedPrecondition
            }
            ApiError::Schedule(ScheduleError::NotFound(_)) => Code::NotFound,
            ApiError::Schedule(ScheduleError::Timing(_)) => Code::InvalidArgument,
            ApiError::Schedule(ScheduleError::Store(store)) => store_code(store),
            ApiError::Migrate(migrate) => match migrate {
                MigrateError::Store(store) => store_code(store),
                MigrateError::NotFound(_) => Code::NotFound,
                MigrateError::Busy { .. } | MigrateError::LockLost(_) => Code::Aborted,
                MigrateError::Newer { .. }
                | MigrateError::NewerJobs { .. }
                | MigrateError::Foreign { .. } => Code::FailedPrecondition,
                MigrateError::Cancelled => Code::Cancelled,
            },
            ApiError::Schedule(ScheduleError::OccurrenceNotFound(_)) => Code::NotFound,
            ApiError::Schedule(ScheduleError::OccurrenceLeaseLost { .. }) => Code::Aborted,
            ApiError::Job(JobError::NotFound(_)) => Code::NotFound,
            // The worker lost the job (stale token, expired lease): it should drop this
            // attempt and claim again, i.e. retry at a higher level.
            ApiError::Job(JobError::LeaseLost { .. }) => Code::Aborted,
            ApiError::Job(JobError::WrongState { .. }) => Code::FailedPrecondition,
            ApiError::Job(JobError::Store(store)) => store_code(store),
        };
        if code == Code::Internal {
            tracing::error!(%error, "internal error");
        }
        Status::new(code, bounded(error.to_string()))
    }
}

/// Longest status message sent. It travels in an HTTP/2 header (`grpc-message`,
/// percent-encoded) and messages echo request values, which can be megabytes: an
/// oversized header breaks the response and the client sees an h2 protocol error
/// instead of the real status.
const MAX_MESSAGE_LEN: usize = 1024;

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
