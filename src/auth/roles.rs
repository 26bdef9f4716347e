//! The role table (README, Security): which RPCs each role may call. Names are the
//! proto method names; an RPC not listed is admin-only, so an RPC added later is
//! closed until it is placed here.

use serde::Deserialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Role {
    Producer,
    Worker,
    Reader,
    Admin,
}

/// What every role may call: reading schedules, jobs and namespace status.
pub(crate) const READS: &[&str] = &[
    "GetSchedule",
    "ListSchedules",
    "GetJob",
    "ListJobs",
    "PreviewSchedule",
    "GetNamespaceStatus",
    "ListNamespaces",
    "ListQueues",
];

pub(crate) const PRODUCER: &[&str] = &[
    "Enqueue",
    "EnqueueBatch",
    "UpsertSchedule",
    "PauseSchedule",
    "ResumeSchedule",
    "DeleteSchedule",
    "TriggerSchedule",
    "BackfillSchedule",
    "CancelJob",
    "PreviewSchedule",
];

pub(crate) const WORKER: &[&str] = &[
    "ClaimJob",
    "AckJob",
    "AckJobs",
    "Work",
    "FailJob",
    "ExtendLease",
    "ClaimDueSchedule",
    "AckOccurrence",
];

impl Role {
    pub(crate) fn allows(self, method: &str) -> bool {
        let listed = |list: &[&str]| list.contains(&method);
        match self {
            Role::Admin => true,
            Role::Reader => listed(READS),
            Role::Producer => listed(READS) || listed(PRODUCER),
            Role::Worker => listed(READS) || listed(WORKER),
        }
    }
}
