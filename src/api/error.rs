//! The API layer's one error kind: what validation refuses, or what the use case
//! answered. `rescue` alone turns it into a gRPC status.

use crate::{domain::FailureKind, error::Error};

#[derive(Debug, thiserror::Error)]
pub(crate) enum ApiError {
    /// A request field is invalid; nothing was written.
    #[error("{field}: {reason}")]
    Invalid { field: String, reason: String },
    /// A field exceeds a configured size limit; nothing was written.
    #[error("{field}: {size} bytes exceeds the limit of {limit} bytes ({flag})")]
    TooLarge {
        field: String,
        size: usize,
        limit: usize,
        /// The server flag that sets the limit, so the caller knows what to ask for.
        flag: &'static str,
    },
    /// The caller may not make this call; nothing was written.
    #[error("{0}")]
    Denied(String),
    /// The caller's principal is at one of its own limits (`max_namespaces`,
    /// `max_jobs`, `max_schedules`); the message says what was written.
    #[error("{0}")]
    OverQuota(String),
    #[error(transparent)]
    App(#[from] Error),
}

impl ApiError {
    pub(crate) fn kind(&self) -> FailureKind {
        match self {
            ApiError::Invalid { .. } => FailureKind::Invalid,
            ApiError::TooLarge { .. } => FailureKind::TooLarge,
            ApiError::Denied(_) => FailureKind::Denied,
            ApiError::OverQuota(_) => FailureKind::TooLarge,
            ApiError::App(error) => error.kind(),
        }
    }

    pub(crate) fn invalid(field: impl Into<String>, reason: impl Into<String>) -> Self {
        ApiError::Invalid {
            field: field.into(),
            reason: reason.into(),
        }
    }
}

impl From<crate::store::StoreError> for ApiError {
    fn from(error: crate::store::StoreError) -> Self {
        ApiError::App(Error::Store(error))
    }
}
