//! Queues as an operator sees them (issue 14): counts by state, the oldest pending
//! job, whether claims skip the queue.

/// One queue's state, read in O(1) (plus the heads of its ready lists).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct QueueStats {
    pub(crate) queue: String,
    /// Jobs waiting to be claimed.
    pub(crate) pending: u64,
    /// Jobs waiting for their run time (including retries in backoff).
    pub(crate) delayed: u64,
    /// Jobs leased to a worker (a lease that expired counts until a claim reclaims it).
    pub(crate) active: u64,
    /// Dead jobs kept (until retention prunes them, a retry or a purge).
    pub(crate) dead: u64,
    /// When the oldest pending job found at the heads of the ready lists became
    /// claimable (epoch ms, Redis clock); `None` when no pending job was found.
    pub(crate) oldest_pending_ms: Option<i64>,
    /// Claims skip the queue (PauseQueue).
    pub(crate) paused: bool,
    /// False while the namespace's jobs predate the counts and Migrate has not
    /// recounted this queue: `pending` and `dead` are then not to be trusted.
    pub(crate) counted: bool,
    /// Finished jobs removed so far, by their own retention rule or the server's.
    pub(crate) removed: u64,
    /// Flow nodes waiting for their dependencies (state WAITING, issue 34).
    pub(crate) waiting: u64,
    /// Totals since the queue began (issue 33, the console's rates): jobs enqueued
    /// (numbered), jobs completed, attempts that failed or whose lease expired.
    pub(crate) enqueued: u64,
    pub(crate) completed: u64,
    pub(crate) failed: u64,
    /// Its flow policy (SetQueuePolicy), `None` when it has none.
    pub(crate) policy: Option<super::QueuePolicy>,
}

impl QueueStats {
    /// Milliseconds the oldest pending job has waited at `now_ms` (0 when none).
    pub(crate) fn oldest_pending_age_ms(&self, now_ms: i64) -> i64 {
        self.oldest_pending_ms
            .map_or(0, |at| now_ms.saturating_sub(at).max(0))
    }
}

/// A page of a namespace's queues, by name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct QueuePage {
    /// Redis TIME when the page was read (epoch ms), to turn run times into ages.
    pub(crate) now_ms: i64,
    pub(crate) queues: Vec<QueueStats>,
    /// The name to pass as `after` for the next page; `None` on the last page.
    pub(crate) next_after: Option<String>,
}

/// A page of registered namespaces, by name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NamespacePage {
    pub(crate) namespaces: Vec<String>,
    /// The name to pass as `after` for the next page; `None` on the last page.
    pub(crate) next_after: Option<String>,
}
