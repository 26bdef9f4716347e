//! Jobs: what a caller enqueues, what is stored, and what the transitions report.

use std::collections::BTreeMap;

/// Where a job is in its lifecycle, as stored in its hash.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum JobState {
    Pending,
    Delayed,
    Active,
    Completed,
    Dead,
    Cancelled,
    /// A flow's node waiting for its dependencies (issue 34).
    Waiting,
    /// A flow's node not run: a dependency failed under its skip rule (issue 34).
    Skipped,
}

impl JobState {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            JobState::Pending => "pending",
            JobState::Delayed => "delayed",
            JobState::Active => "active",
            JobState::Completed => "completed",
            JobState::Dead => "dead",
            JobState::Cancelled => "cancelled",
            JobState::Waiting => "waiting",
            JobState::Skipped => "skipped",
        }
    }

    pub(crate) fn parse(text: &str) -> Option<Self> {
        Some(match text {
            "pending" => JobState::Pending,
            "delayed" => JobState::Delayed,
            "active" => JobState::Active,
            "completed" => JobState::Completed,
            "dead" => JobState::Dead,
            "cancelled" => JobState::Cancelled,
            "waiting" => JobState::Waiting,
            "skipped" => JobState::Skipped,
            _ => return None,
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BackoffKind {
    Fixed,
    Exponential,
}

impl BackoffKind {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            BackoffKind::Fixed => "fixed",
            BackoffKind::Exponential => "exp",
        }
    }
}

/// The wait before a retry: fixed `base_ms`, or `base_ms * 2^(attempt-1)` up to
/// `cap_ms`; each wait shortened by a random fraction of up to `jitter`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Backoff {
    pub(crate) kind: BackoffKind,
    pub(crate) base_ms: i64,
    pub(crate) cap_ms: i64,
    pub(crate) jitter: f64,
}

impl Backoff {
    /// The cap of an exponential backoff that names none (at least its base).
    pub(crate) const DEFAULT_CAP_MS: i64 = 3_600_000;
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff {
            kind: BackoffKind::Exponential,
            base_ms: 1_000,
            cap_ms: Backoff::DEFAULT_CAP_MS,
            jitter: 0.0,
        }
    }
}

/// When a new job first becomes claimable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RunAt {
    Now,
    AtMs(i64),
    DelayMs(i64),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DedupMode {
    Skip,
    Replace,
    Extend,
}

impl DedupMode {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            DedupMode::Skip => "skip",
            DedupMode::Replace => "replace",
            DedupMode::Extend => "extend",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Dedup {
    pub(crate) key: String,
    pub(crate) ttl_ms: i64,
    pub(crate) mode: DedupMode,
}

/// What happens to a finished job of one outcome (issue 36; lib/job.lua
/// `retention.finish`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) enum RetentionRule {
    /// The server's `--job-retention` / `--job-retention-count`.
    #[default]
    ServerDefault,
    /// Deleted by the script that finishes it.
    Remove,
    /// Kept while among the last N finished jobs of its queue and state.
    KeepLast(u32),
    /// Kept this many ms after it finished.
    KeepForMs(i64),
}

impl RetentionRule {
    fn record_text(self) -> String {
        match self {
            Self::ServerDefault => String::new(),
            Self::Remove => "r".into(),
            Self::KeepLast(n) => format!("n{n}"),
            Self::KeepForMs(ms) => format!("t{ms}"),
        }
    }
}

/// A job's own retention: `on_complete` for a completed job, `on_fail` for a dead or
/// cancelled one.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct JobRetention {
    pub(crate) on_complete: RetentionRule,
    pub(crate) on_fail: RetentionRule,
}

impl JobRetention {
    /// As the record keeps it (lib/job.lua position retain): empty for the server
    /// default both ways, else "<on_complete>;<on_fail>".
    pub(crate) fn record_text(self) -> String {
        if self == Self::default() {
            return String::new();
        }
        format!(
            "{};{}",
            self.on_complete.record_text(),
            self.on_fail.record_text()
        )
    }
}

/// A validated job as the caller asked for it: what it left unset takes the defaults
/// ([`NewJob::into_spec`]).
#[derive(Debug, Clone)]
pub(crate) struct NewJob {
    /// `None`: a new UUID.
    pub(crate) id: Option<String>,
    pub(crate) queue: String,
    pub(crate) name: String,
    pub(crate) payload: Vec<u8>,
    pub(crate) headers: BTreeMap<String, String>,
    pub(crate) priority: i32,
    pub(crate) run_at: RunAt,
    pub(crate) max_attempts: Option<u32>,
    pub(crate) backoff: Option<Backoff>,
    pub(crate) lease_ms: Option<i64>,
    pub(crate) dedup: Option<Dedup>,
    pub(crate) retention: JobRetention,
    /// Flow keys and cost (issue 32).
    pub(crate) flow: super::FlowKeys,
}

impl NewJob {
    /// Attempts a job gets unless it says otherwise.
    pub(crate) const DEFAULT_MAX_ATTEMPTS: u32 = 3;
    /// The lease a job's claims get unless it (or the claim) says otherwise, capped by
    /// the service's longest lease.
    pub(crate) const DEFAULT_LEASE_MS: i64 = 30_000;

    /// The job with an id and every default filled in.
    pub(crate) fn into_spec(self, max_lease_ms: i64) -> JobSpec {
        JobSpec {
            id: self.id.unwrap_or_else(|| uuid::Uuid::new_v4().to_string()),
            queue: self.queue,
            name: self.name,
            payload: self.payload,
            headers: self.headers,
            priority: self.priority,
            run_at: self.run_at,
            max_attempts: self.max_attempts.unwrap_or(Self::DEFAULT_MAX_ATTEMPTS),
            backoff: self.backoff.unwrap_or_default(),
            lease_ms: self
                .lease_ms
                .unwrap_or(Self::DEFAULT_LEASE_MS.min(max_lease_ms)),
            dedup: self.dedup,
            retention: self.retention,
            flow: self.flow,
        }
    }
}

/// A job ready to store.
#[derive(Debug, Clone)]
pub(crate) struct JobSpec {
    pub(crate) id: String,
    pub(crate) queue: String,
    pub(crate) name: String,
    pub(crate) payload: Vec<u8>,
    pub(crate) headers: BTreeMap<String, String>,
    pub(crate) priority: i32,
    pub(crate) run_at: RunAt,
    pub(crate) max_attempts: u32,
    pub(crate) backoff: Backoff,
    pub(crate) lease_ms: i64,
    pub(crate) dedup: Option<Dedup>,
    pub(crate) retention: JobRetention,
    /// Flow keys and cost (issue 32).
    pub(crate) flow: super::FlowKeys,
}

/// What an enqueue did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EnqueueOutcome {
    Created,
    Duplicate,
    Replaced,
    Extended,
}

impl EnqueueOutcome {
    pub(crate) fn parse(text: &str) -> Option<Self> {
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
pub(crate) struct Enqueued {
    pub(crate) id: String,
    pub(crate) outcome: EnqueueOutcome,
    pub(crate) state: JobState,
}

/// One failed attempt in a job's history.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct JobErrorEntry {
    pub(crate) attempt: u32,
    pub(crate) message: String,
    pub(crate) at_ms: i64,
    /// The worker that held the attempt ("" when none did, or stored before it was
    /// kept).
    pub(crate) worker: String,
}

/// A stored job.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct JobRecord {
    pub(crate) id: String,
    pub(crate) queue: String,
    pub(crate) name: String,
    pub(crate) payload: Vec<u8>,
    pub(crate) headers: BTreeMap<String, String>,
    pub(crate) priority: i32,
    pub(crate) state: JobState,
    pub(crate) attempts: u32,
    pub(crate) max_attempts: u32,
    pub(crate) backoff: Backoff,
    pub(crate) lease_ms: i64,
    pub(crate) errors: Vec<JobErrorEntry>,
    pub(crate) create_ms: i64,
    pub(crate) update_ms: i64,
    pub(crate) run_at_ms: Option<i64>,
    pub(crate) lease_until_ms: Option<i64>,
    pub(crate) lease_token: String,
    pub(crate) worker: String,
    pub(crate) finish_ms: Option<i64>,
    pub(crate) dedup_key: String,
    /// The job's number within its queue: where a listing continues after it.
    pub(crate) seq: i64,
    /// 1 as created (or as written before versions were kept), then one more for
    /// each write.
    pub(crate) version: u64,
    /// CancelJob asked the worker of the active job to stop.
    pub(crate) cancel_requested: bool,
    /// The worker's last progress report.
    pub(crate) progress: Option<JobProgress>,
    /// The last checkpoint reported, handed to the next attempt.
    pub(crate) checkpoint: Vec<u8>,
    /// What AckJob returned.
    pub(crate) result: Vec<u8>,
    /// The schedule slot that enqueued the job (a schedule's target).
    pub(crate) schedule: Option<JobSchedule>,
    /// Its flow keys and cost, as enqueued (issue 32).
    pub(crate) flow: super::FlowKeys,
    /// The flow it is a node of (issue 34).
    pub(crate) graph: Option<super::FlowMembership>,
    /// A claimed node's dependencies (filled in by a claim only).
    pub(crate) dependencies: Vec<super::Dependency>,
}

/// A worker's last progress report (the checkpoint is kept apart, in
/// [`JobRecord::checkpoint`]).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct JobProgress {
    pub(crate) fraction: Option<f64>,
    pub(crate) message: Option<String>,
    /// When it was reported, epoch ms.
    pub(crate) at_ms: i64,
}

/// The schedule slot a job was enqueued for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct JobSchedule {
    pub(crate) schedule_id: String,
    /// The slot's nominal time, epoch ms.
    pub(crate) due_ms: i64,
    /// The schedule's run count for this slot.
    pub(crate) run: u64,
}

/// What a worker reports with FailJob.
#[derive(Debug, Clone)]
pub(crate) struct Failure {
    pub(crate) error: String,
    /// Overrides the backoff.
    pub(crate) retry_after_ms: Option<i64>,
    pub(crate) non_retryable: bool,
}

/// A worker's progress report (ExtendLease.progress, issue 30): each field that is
/// set replaces the stored one, each unset one keeps it. Validated by the API layer
/// (`limits::MAX_PROGRESS_MESSAGE_LEN`, `limits::MAX_CHECKPOINT_LEN`).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct ProgressReport {
    /// In 0..=1.
    pub(crate) fraction: Option<f64>,
    /// Empty clears the stored message.
    pub(crate) message: Option<String>,
    /// Empty clears the stored checkpoint.
    pub(crate) checkpoint: Option<Vec<u8>>,
}

/// Outcome of a successful ExtendLease.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Extended {
    /// The lease's end, epoch ms (unchanged when only progress was reported).
    pub(crate) until_ms: i64,
    /// CancelJob asked the worker to stop.
    pub(crate) cancel_requested: bool,
}

/// Outcome of a successful FailJob.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Failed {
    pub(crate) state: JobState,
    pub(crate) run_at_ms: Option<i64>,
}

/// What a state-guarded transition (cancel, retry) found.
#[derive(Debug, Clone)]
pub(crate) enum StateCheck {
    Done(Box<JobRecord>),
    Missing,
    WrongState(JobState),
}

/// Which jobs a listing or a bulk action takes (issue 33): every part that is set
/// must match. `error_contains` is kept lower-case (matched ignoring ASCII case).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct JobFilter {
    pub(crate) name: String,
    pub(crate) dedup_key: String,
    pub(crate) header_key: String,
    /// Empty: any value of `header_key`.
    pub(crate) header_value: String,
    pub(crate) error_contains: String,
    /// Created at or after (epoch ms).
    pub(crate) created_after: Option<i64>,
    /// Created before (epoch ms).
    pub(crate) created_before: Option<i64>,
}

impl JobFilter {
    /// Whether no part is set (matches every job).
    pub(crate) fn is_empty(&self) -> bool {
        *self == JobFilter::default()
    }
}

/// A bulk action (issue 33): the single-job RPC it repeats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BulkAction {
    Retry,
    Cancel,
    Delete,
}

impl BulkAction {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            BulkAction::Retry => "retry",
            BulkAction::Cancel => "cancel",
            BulkAction::Delete => "delete",
        }
    }
}
