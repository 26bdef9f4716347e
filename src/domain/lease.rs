//! What a lease-guarded transition (ack, fail, extend; an occurrence ack) finds when
//! the caller's lease is not, or no longer, the one that counts.

use std::fmt;

use super::JobState;

/// What a lease-guarded transition found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum LeaseCheck<T> {
    Done(T),
    Missing,
    Lost(LeaseLoss),
}

/// Why a caller's lease no longer counts. Nothing was changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LeaseLoss {
    /// The token is current but its lease ran out: the work is (or will be) handed
    /// to the next claimer.
    Expired,
    /// The job was handed to another worker (or finished): it is in this state now.
    JobMoved(JobState),
    /// The occurrence was handed out again with a new token.
    Rehanded,
    /// The occurrence was acked already.
    Acked,
}

impl fmt::Display for LeaseLoss {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LeaseLoss::Expired => f.write_str("the lease expired"),
            LeaseLoss::JobMoved(state) => write!(
                f,
                "the lease token is not the current one (the job is {})",
                state.as_str()
            ),
            LeaseLoss::Rehanded => {
                f.write_str("the lease token is not the current one (it was re-handed)")
            }
            LeaseLoss::Acked => f.write_str("already acked"),
        }
    }
}
