//! What kind of failure an error is, independent of the transport that reports it.
//! Each layer's error says which kind it is; the edge alone maps kinds to statuses.

/// The kinds a caller can act on differently.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FailureKind {
    /// The request is wrong; nothing was written.
    Invalid,
    /// A request value exceeds a configured limit; nothing was written.
    TooLarge,
    NotFound,
    /// The caller's principal may not make this call; nothing was written.
    Denied,
    /// The store or the record is not in a state the request applies to; fixing the
    /// state (Migrate, a retry of the job) lets it pass.
    Precondition,
    /// The caller lost a race for the work (a lease, the Migrate lock): start again.
    Lost,
    /// Redis is full (maxmemory); nothing was written.
    Full,
    /// Redis cannot be reached now; retry.
    Unavailable,
    /// The caller went away.
    Cancelled,
    /// A bug, or data this build cannot read.
    Internal,
}
