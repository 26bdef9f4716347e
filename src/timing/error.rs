//! Validation errors for [`super::TimingSpec`].

/// Why a [`super::TimingSpec`] was rejected.
///
/// Every message starts with the API field it is about (`cron`, `every`,
/// `timezone`, `start_time`, `end_time`) so the API layer can hand it to the
/// client verbatim; [`TimingError::field`] returns the same name for
/// structured error details.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub(crate) enum TimingError {
    /// Neither or both of `cron` and `every` were given.
    #[error("exactly one of cron or every must be set")]
    CronXorEvery,
    /// The expression does not have 5 or 6 whitespace-separated fields.
    #[error(
        "cron: must have 5 fields (minute granularity) or 6 fields (seconds first), got {found}"
    )]
    CronFieldCount {
        /// How many fields the expression had.
        found: usize,
    },
    /// croner rejected the expression.
    #[error("cron: cannot parse {expr:?}: {reason}")]
    CronSyntax {
        /// The expression as given (trimmed).
        expr: String,
        /// croner's message.
        reason: String,
    },
    /// The expression is valid but no date ever matches it (e.g. `0 0 30 2 *`).
    #[error("cron: {expr:?} never matches any date")]
    CronNeverMatches {
        /// The expression as given (trimmed).
        expr: String,
    },
    /// The zone is not in the IANA database compiled into chrono-tz.
    #[error("timezone: unknown IANA time zone {name:?}")]
    UnknownTimezone {
        /// The name as given.
        name: String,
    },
    /// `every` was zero or negative.
    #[error("every: must be positive")]
    EveryNotPositive,
    /// `every` was below one second.
    #[error("every: must be at least 1s")]
    EveryTooShort,
    /// `every` was above 366 days.
    #[error("every: must be at most 366 days")]
    EveryTooLong,
    /// `end_time` was not strictly after `start_time`.
    #[error("end_time: must be after start_time")]
    EndNotAfterStart,
}

impl TimingError {
    /// The API field the error is about.
    pub(crate) fn field(&self) -> &'static str {
        match self {
            TimingError::CronXorEvery
            | TimingError::CronFieldCount { .. }
            | TimingError::CronSyntax { .. }
            | TimingError::CronNeverMatches { .. } => "cron",
            TimingError::UnknownTimezone { .. } => "timezone",
            TimingError::EveryNotPositive
            | TimingError::EveryTooShort
            | TimingError::EveryTooLong => "every",
            TimingError::EndNotAfterStart => "end_time",
        }
    }
}
