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
    /// A field holds a number outside its range, or a step of zero.
    #[error("cron: cron field {position} ({name}) {problem}")]
    CronField {
        /// 1-based position of the field in the expression as written.
        position: usize,
        /// The field's name ("minute", "day of month").
        name: &'static str,
        /// What is wrong, with the field's range.
        problem: String,
    },
    /// An `@` word that is not one of croner's aliases (`@every 5m` is another tool's).
    #[error(
        "cron: {expr:?} is not a cron expression (the @ aliases are @yearly, @annually, \
         @monthly, @weekly, @daily and @hourly); for a fixed interval set every instead \
         of cron, e.g. \"every\": \"300s\""
    )]
    CronUnknownAlias {
        /// The expression as given (trimmed).
        expr: String,
    },
    /// The expression is longer than any real one.
    #[error(
        "cron: must be at most {} bytes, got {len}",
        super::cron_fields::MAX_CRON_LEN
    )]
    CronTooLong {
        /// Its length in bytes.
        len: usize,
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
    #[error(
        "timezone: unknown IANA time zone {name:?}{}",
        did_you_mean(suggestion)
    )]
    UnknownTimezone {
        /// The name as given.
        name: String,
        /// A real zone whose name differs only in case.
        suggestion: Option<String>,
    },
    /// A legacy zone (`EST`, `CST6CDT`, `CET`) that a new schedule may not name.
    #[error(
        "timezone: {name:?} is a legacy zone that does not follow any region's clock \
         changes; name a region zone ({region}, or another Area/Location zone) for local \
         time, or {fixed} for a fixed offset (Etc/GMT+N is UTC-N)"
    )]
    LegacyTimezone {
        /// The name as given.
        name: String,
        /// The region zone usually meant.
        region: String,
        /// The same standard offset as an `Etc/GMT±N` zone.
        fixed: String,
    },
    /// A zone next to `every`, where it changes nothing.
    #[error(
        "timezone: has no effect with every (an interval counts elapsed time, not the \
         wall clock); leave it empty, or use cron for times of day in a zone"
    )]
    TimezoneWithEvery,
    /// `every` was zero or negative.
    #[error("every: must be positive")]
    EveryNotPositive,
    /// `every` was below one second.
    #[error("every: must be at least 1s")]
    EveryTooShort,
    /// `every` was above 366 days.
    #[error("every: must be at most 366 days")]
    EveryTooLong,
    /// A cron schedule starting past the range cron times are computed in.
    #[error(
        "start_time: cron times are computed up to the year 5000, so a cron schedule \
         must start by 4999-12-30"
    )]
    CronStartTooLate,
    /// `end_time` was not strictly after `start_time`.
    #[error("end_time: must be after start_time")]
    EndNotAfterStart,
    /// `offset` with a cron timing.
    #[error("offset: only an every timing takes an offset")]
    OffsetWithCron,
    /// `offset` not in [0, every).
    #[error("offset: must be at least 0 and shorter than every")]
    OffsetNotWithinInterval,
}

impl TimingError {
    /// The API field the error is about.
    pub(crate) fn field(&self) -> &'static str {
        match self {
            TimingError::CronXorEvery
            | TimingError::CronFieldCount { .. }
            | TimingError::CronSyntax { .. }
            | TimingError::CronField { .. }
            | TimingError::CronTooLong { .. }
            | TimingError::CronUnknownAlias { .. }
            | TimingError::CronNeverMatches { .. } => "cron",
            TimingError::UnknownTimezone { .. }
            | TimingError::LegacyTimezone { .. }
            | TimingError::TimezoneWithEvery => "timezone",
            TimingError::EveryNotPositive
            | TimingError::EveryTooShort
            | TimingError::EveryTooLong => "every",
            TimingError::EndNotAfterStart => "end_time",
            TimingError::CronStartTooLate => "start_time",
            TimingError::OffsetWithCron | TimingError::OffsetNotWithinInterval => "offset",
        }
    }
}

fn did_you_mean(suggestion: &Option<String>) -> String {
    suggestion
        .as_ref()
        .map(|name| format!("; did you mean {name}?"))
        .unwrap_or_default()
}
