//! dueq's vocabulary: schedules, occurrences, jobs, leases and namespace health, with
//! the rules that belong to them. No tonic and no redis: the store and the API each
//! translate to and from these types.

mod failure;
mod flow;
mod graph;
mod health;
mod job;
mod lease;
pub(crate) mod limits;
mod namespace;
mod occurrence;
mod queue;
mod schedule;

pub(crate) use failure::FailureKind;
pub(crate) use flow::{
    Fairness, FlowKeys, KeyLimit, QueuePolicy, Rate, MAX_FLOW_KEY_LEN, MAX_RATE,
    MAX_RATE_PERIOD_MS, MAX_THROTTLE_MS, MAX_WEIGHT, MAX_WEIGHTS,
};
pub(crate) use graph::{
    order as order_flow, Dependency, FlowCounts, FlowEnqueued, FlowMembership, FlowNodeSpec,
    FlowNodeStatus, FlowPage, FlowState, NewFlowNode, OnDependencyFailure, ShapeError,
    MAX_FLOW_EDGES, MAX_FLOW_NODES, MAX_REF_LEN,
};
pub(crate) use health::{
    Finding, Found, Layout, Listing, NamespaceHealth, NeedsMigrate, JOB_LAYOUT, SCHEDULE_SCHEMA,
};
pub(crate) use job::{
    Backoff, BackoffKind, Dedup, DedupMode, EnqueueOutcome, Enqueued, Extended, Failed, Failure,
    JobErrorEntry, JobProgress, JobRecord, JobRetention, JobSchedule, JobSpec, JobState, NewJob,
    ProgressReport, RetentionRule, RunAt, StateCheck,
};
pub(crate) use job::{BulkAction, JobFilter};
pub(crate) use lease::{LeaseCheck, LeaseLoss};
pub(crate) use namespace::Namespace;
pub(crate) use occurrence::occurrence_id;
pub(crate) use occurrence::{Occurrence, OccurrenceKind, OccurrenceLease};
pub(crate) use queue::{NamespacePage, QueuePage, QueueStats};
pub(crate) use schedule::{
    catchup_parse, catchup_word, jitter_offset_ms, EnqueueTarget, Follow, NextRun, Overlap,
    RecentRun, RunOutcome, ScheduleDef, ScheduleRecord, ScheduleStatus, SkipCounts, TimingDef,
};
