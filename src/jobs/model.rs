//! Job types shared by the store, the use cases and the API. No tonic, no redis.

use std::collections::BTreeMap;

/// Where a job is in its lifecycle, as stored in its hash.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobState {
    Pending,
    Delayed,
    Active,
    Completed,
    Dead,
    Cancelled,
}

impl JobState {
    pub fn as_str(self) -> &'static str {
        match self {
            JobState::Pending => "pending",
            JobState::Delayed => "delayed",
            JobState::Active => "active",
            JobState::Completed => "completed",
            JobState::Dead => "dead",
            JobState::Cancelled => "cancelled",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        Some(match text {
            "pending" => JobState::Pending,
            "delayed" => JobState::Delayed,
            "active" => JobState::Active,
            "completed" => JobState::Completed,
            "dead" => JobState::Dead,
            "cancelled" => JobState::Cancelled,
            _ => return None,
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackoffKind {
    Fixed,
    Exponential,
}

impl BackoffKind {
    pub fn as_str(self) -> &'static str {
        match self {
            BackoffKind::Fixed => "fixed",
            BackoffKind::Exponential => "exp",
        }
    }
}

/// The wait before a retry: fixed `base_ms`, or `base_ms * 2^(attempt-1)` up to
/// `cap_ms`; each wait shortened by a random fraction of up to `jitter`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Backoff {
    pub kind: BackoffKind,
    pub base_ms: i64,
    pub cap_ms: i64,
    pub jitter: f64,
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff {
            kind: BackoffKind::Exponential,
            base_ms: 1_000,
            cap_ms: 3_600_000,
            jitter: 0.0,
        }
    }
}

/// When a new job first becomes claimable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunAt {
    Now,
    AtMs(i64),
    DelayMs(i64),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DedupMode {
    Skip,
    Replace,
    Extend,
}

impl DedupMode {
    pub fn as_str(self) -> &'static str {
        match self {
            DedupMode::Skip => "skip",
            DedupMode::Replace => "replace",
            DedupMode::Extend => "extend",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dedup {
    pub key: String,
    pub ttl_ms: i64,
    pub mode: DedupMode,
}

/// A validated job to enqueue.
#[derive(Debug, Clone)]
pub struct JobSpec {
    /// Caller's id, or a generated UUID.
    pub id: String,
    pub queue: String,
    pub name: String,
    pub payload: Vec<u8>,
    pub headers: BTreeMap<String, String>,
    pub priority: i32,
    pub run_at: RunAt,
    pub max_attempts: u32,
    pub backoff: Backoff,
    pub lease_ms: i64,
    pub dedup: Option<Dedup>,
}

/// What an enqueue did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EnqueueOutcome {
    Created,
    Duplicate,
    Replaced,
    Extended,
}

impl EnqueueOutcome {
    pub fn parse(text: &str) -> Option<Self> {
        Some(match text {
            "created" => EnqueueOutcome::Created,
            "duplicate" => EnqueueOutcome::Duplicate,
            "replaced" => EnqueueOutcome::Replaced,
            "extended" => EnqueueOutcome::Extended,
            _ => return None,
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Enqueued {
    pub id: String,
    pub outcome: EnqueueOutcome,
    pub state: JobState,
}

/// One failed attempt in a job's history.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobErrorEntry {
    pub attempt: u32,
    pub message: String,
    pub at_ms: i64,
}

/// A stored job.
#[derive(Debug, Clone)]
pub struct JobRecord {
    pub id: String,
    pub queue: String,
    pub name: String,
    pub payload: Vec<u8>,
    pub headers: BTreeMap<String, String>,
    pub priority: i32,
    pub state: JobState,
    pub attempts: u32,
    pub max_attempts: u32,
    pub backoff: Backoff,
    pub lease_ms: i64,
    pub errors: Vec<JobErrorEntry>,
    pub create_ms: i64,
    pub update_ms: i64,
    pub run_at_ms: Option<i64>,
    pub lease_until_ms: Option<i64>,
    pub lease_token: String,
    pub worker: String,
    pub finish_ms: Option<i64>,
    pub dedup_key: String,
    /// The job's number within its queue, in enqueue order (listing order).
    pub seq: i64,
}

/// What a lease-guarded transition (ack, fail, extend) found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LeaseCheck<T> {
    Done(T),
    Missing,
    /// The token is not the job's current one (the job is in `state` now).
    Stale(JobState),
    /// The token is current but its lease has run out.
    Expired,
}

/// What a worker reports with FailJob.
#[derive(Debug, Clone)]
pub struct Failure {
    pub error: String,
    /// Overrides the backoff.
    pub retry_after_ms: Option<i64>,
    pub non_retryable: bool,
}

/// Outcome of a successful FailJob.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Failed {
    pub state: JobState,
    pub run_at_ms: Option<i64>,
}

/// What a state-guarded transition (cancel, retry) found.
#[derive(Debug, Clone)]
pub enum StateCheck {
    Done(Box<JobRecord>),
    Missing,
    WrongState(JobState),
}
