//! The API layer's error, and the one place errors become gRPC statuses.

use tonic::{Code, Status};

use crate::{schedules::ScheduleError, store::StoreError};

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
}

impl ApiError {
    pub fn invalid(field: impl Into<String>, reason: impl Into<String>) -> Self {
        ApiError::InvalidArgument {
            field: field.into(),
            reason: reason.into(),
        }
    }
}

impl From<ApiError> for Status {
    fn from(error: ApiError) -> Status {
        let code = match &error {
            ApiError::InvalidArgument { .. } => Code::InvalidArgument,
            ApiError::TooLarge { .. } => Code::ResourceExhausted,
            ApiError::Schedule(ScheduleError::NotFound(_)) => Code::NotFound,
            ApiError::Schedule(ScheduleError::Timing(_)) => Code::InvalidArgument,
            ApiError::Schedule(ScheduleError::Store(store)) => match store {
                StoreError::Unavailable { .. } => Code::Unavailable,
                StoreError::Redis(_) | StoreError::Corrupt { .. } => Code::Internal,
            },
        };
        if code == Code::Internal {
            tracing::error!(%error, "internal error");
        }
        Status::new(code, error.to_string())
    }
}
