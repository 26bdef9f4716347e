//! The use cases' one error kind (schedules, jobs, Migrate). It wraps the store's and
//! adds what the use cases decide; the API's rescue point alone maps it to a status.

use std::fmt;

use crate::{
    domain::{FailureKind, JobState, LeaseLoss},
    store::StoreError,
    timing::TimingError,
};

#[derive(Debug, thiserror::Error)]
pub(crate) enum Error {
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A stored or requested timing that cannot be evaluated.
    #[error(transparent)]
    Timing(#[from] TimingError),
    #[error("{0}")]
    NotFound(Missing),
    /// The caller's lease is not (or no longer) the one that counts. Nothing changed.
    #[error("{0}")]
    LeaseLost(LostLease),
    /// A job is not in a state the operation applies to. Nothing changed.
    #[error("job {id:?} is {}; {} needs {}", state.as_str(), action.rpc(), action.needs())]
    WrongState {
        id: String,
        state: JobState,
        action: JobAction,
    },
    #[error(
        "another Migrate of namespace {namespace:?} is running (its lock expires in {ttl_ms} ms \
         unless renewed); wait for it to finish, then run Migrate again"
    )]
    MigrateBusy { namespace: String, ttl_ms: i64 },
    #[error(
        "Migrate of namespace {0:?} lost its lock (it stalled longer than the lock ttl); \
         nothing more was written, run Migrate again"
    )]
    MigrateLockLost(String),
    /// The store is newer than this build: converting it "back" would lose data.
    #[error(
        "namespace {namespace:?} has {layout} {found}, newer than this dueq's {current}; \
         upgrade dueq instead"
    )]
    Newer {
        namespace: String,
        layout: &'static str,
        found: String,
        current: u32,
    },
    #[error("namespace {namespace:?}: {problem}")]
    Foreign {
        namespace: String,
        problem: ForeignData,
    },
    #[error("the client went away; the namespace is left consistent, run Migrate again to finish")]
    Cancelled,
    /// TriggerSchedule or BackfillSchedule cannot act on the schedule now. Nothing
    /// changed.
    #[error("schedule {id:?} {why}")]
    Refused { id: String, why: String },
    /// SetScheduleNextRun's `expected_revision` is not the schedule's revision: its
    /// timing changed since the caller read it. Nothing changed.
    #[error(
        "schedule {id:?} is at revision {current}, not the expected_revision {expected}: its \
         timing changed; read it again (GetSchedule) and decide again"
    )]
    RevisionMismatch {
        id: String,
        expected: u64,
        current: u64,
    },
    /// A per-server cap is reached (the message names its flag). Nothing changed.
    #[error("server busy: {0}")]
    Busy(String),
    /// EnqueueFlow lost a race for its flow id (another call stores it, or this
    /// store was given up). Nothing of this call is kept.
    #[error("{0}")]
    FlowBusy(String),
    /// EnqueueFlow cannot store the flow as asked (a job id is taken). Nothing was
    /// stored.
    #[error("{0}")]
    FlowRefused(String),
}

impl Error {
    pub(crate) fn kind(&self) -> FailureKind {
        match self {
            Error::Store(store) => store.kind(),
            Error::Timing(_) => FailureKind::Invalid,
            Error::NotFound(_) => FailureKind::NotFound,
            Error::LeaseLost(_)
            | Error::MigrateBusy { .. }
            | Error::MigrateLockLost(_)
            | Error::RevisionMismatch { .. }
            | Error::FlowBusy(_) => FailureKind::Lost,
            Error::WrongState { .. }
            | Error::Newer { .. }
            | Error::Foreign { .. }
            | Error::Refused { .. }
            | Error::FlowRefused(_) => FailureKind::Precondition,
            Error::Cancelled => FailureKind::Cancelled,
            Error::Busy(_) => FailureKind::TooLarge,
        }
    }

    /// The namespace, when the store refused it until Migrate runs.
    pub(crate) fn needs_migrate(&self) -> Option<&str> {
        match self {
            Error::Store(StoreError::NeedsMigrate { namespace, .. }) => Some(namespace),
            _ => None,
        }
    }
}

/// What was not found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Missing {
    Schedule(String),
    Job(String),
    /// A leased occurrence (never leased, or its acked record expired).
    Occurrence(String),
    /// A namespace Migrate was asked about that holds no dueq data.
    Namespace(String),
    /// A flow of jobs (issue 34): never stored, still being stored, or pruned.
    Flow(String),
}

impl fmt::Display for Missing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Missing::Schedule(id) => write!(f, "schedule {id:?} not found"),
            Missing::Job(id) => write!(f, "job {id:?} not found"),
            Missing::Occurrence(id) => write!(
                f,
                "no leased occurrence {id:?} (never leased, or its acked record expired)"
            ),
            Missing::Namespace(ns) => write!(f, "namespace {ns:?} holds no dueq data"),
            Missing::Flow(id) => write!(
                f,
                "flow {id:?} not found (never stored, still being stored, or pruned with its jobs)"
            ),
        }
    }
}

/// A lease that no longer counts, and whose it was.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum LostLease {
    Job { id: String, why: LeaseLoss },
    Occurrence { id: String, why: LeaseLoss },
}

impl fmt::Display for LostLease {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LostLease::Job { id, why } => write!(
                f,
                "job {id:?}: {why}; the job was or will be handed to another worker, drop this attempt"
            ),
            LostLease::Occurrence { id, why } => {
                write!(f, "occurrence {id:?}: {why}")?;
                if *why == LeaseLoss::Expired {
                    f.write_str("; it is handed to the next leased claim")?;
                }
                Ok(())
            }
        }
    }
}

/// A state-guarded job operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum JobAction {
    Cancel,
    Retry,
    /// DeleteJob (issue 36): refused for an active job.
    Delete,
    /// ReleaseJob (issue 36): only an active job.
    Release,
}

impl JobAction {
    fn rpc(self) -> &'static str {
        match self {
            JobAction::Cancel => "CancelJob",
            JobAction::Retry => "RetryJob",
            JobAction::Delete => "DeleteJob",
            JobAction::Release => "ReleaseJob",
        }
    }

    fn needs(self) -> &'static str {
        match self {
            JobAction::Cancel => "pending, delayed or waiting",
            JobAction::Retry => "dead",
            JobAction::Delete => {
                "a job no worker holds and no flow waits on: release an active job first \
                 with ReleaseJob, or cancel it (CancelJob) and let its worker stop; cancel \
                 an unfinished node of a flow with CancelJob or CancelFlow"
            }
            JobAction::Release => "active",
        }
    }
}

/// Data Migrate found that is not dueq's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ForeignData {
    /// Where the listing should be, a key of another type.
    Listing(String),
    /// An import source with nothing to import.
    EmptySource(String),
}

impl fmt::Display for ForeignData {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ForeignData::Listing(kind) => write!(
                f,
                "its listing key is a {kind}, not a dueq listing; move it away first"
            ),
            ForeignData::EmptySource(index) => write!(
                f,
                "the source {index:?} holds no schedules (check source_prefix)"
            ),
        }
    }
}
