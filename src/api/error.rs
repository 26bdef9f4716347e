//! The API layer's error, and the one place errors become gRPC statuses.

use tonic::{Code, Status};

use crate::{jobs::JobError, schedules::ScheduleError, store::StoreError};

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
    #[error(transparent)]
    Schedule(#[from] ScheduleError),
    #[error(transparent)]
    Job(#[from] JobError),
}

impl ApiError {
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
        StoreError::Redis(_) | StoreError::Corrupt { .. } => Code::Internal,
    }
}

impl From<ApiError> for Status {
    fn from(error: ApiError) -> Status {
        let code = match &error {
            ApiError::InvalidArgument { .. } => Code::InvalidArgument,
            ApiError::TooLarge { .. } => Code::ResourceExhausted,
            ApiError::Schedule(ScheduleError::NotFound(_)) => Code::NotFound,
            ApiError::Schedule(ScheduleError::Timing(_)) => Code::InvalidArgument,
            ApiError::Schedule(ScheduleError::OccurrenceNotFound(_)) => Code::NotFound,
            ApiError::Schedule(ScheduleError::OccurrenceLeaseLost { .. }) => Code::Aborted,
            ApiError::Schedule(ScheduleError::Store(store)) => store_code(store),
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
        Status::new(code, error.to_string())
    }
}
