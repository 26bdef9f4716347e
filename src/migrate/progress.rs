//! Migrate's progress: cumulative counts per namespace, streamed as it goes.

use std::time::Duration;

use tokio::{sync::mpsc, time::Instant};

use crate::{error::Error, store::ops::migrate_apply::ApplyCounts};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    Started,
    Records,
    Index,
    Import,
    /// Converting jobs to this dueq's job layout.
    Jobs,
    Done,
}

/// Cumulative progress of one namespace's migration.
#[derive(Debug, Clone)]
pub(crate) struct Progress {
    pub(crate) namespace: String,
    pub(crate) phase: Phase,
    pub(crate) scanned: u64,
    /// Schedule ids visited in the listing (not reported; counts a lost `listed`).
    pub(crate) scanned_listed: u64,
    pub(crate) indexed: u64,
    pub(crate) repaired: u64,
    pub(crate) removed: u64,
    pub(crate) estimated_total: u64,
    pub(crate) imported: u64,
    pub(crate) already_present: u64,
    /// (id, reason) of records that could not be used.
    pub(crate) problems: Vec<(String, String)>,
    pub(crate) from_schema: u32,
    pub(crate) to_schema: u32,
    pub(crate) dry_run: bool,
    pub(crate) batches: u64,
    pub(crate) longest_batch: Duration,
    pub(crate) jobs_converted: u64,
    /// Schedule records rewritten into the packed record (schema 3).
    pub(crate) schedules_converted: u64,
    pub(crate) from_jobs_layout: u32,
    pub(crate) to_jobs_layout: u32,
}

impl Progress {
    pub(crate) fn new(namespace: &str, dry_run: bool) -> Self {
        Progress {
            namespace: namespace.to_owned(),
            phase: Phase::Started,
            scanned: 0,
            scanned_listed: 0,
            indexed: 0,
            repaired: 0,
            removed: 0,
            estimated_total: 0,
            imported: 0,
            already_present: 0,
            problems: Vec::new(),
            from_schema: 0,
            to_schema: 0,
            dry_run,
            batches: 0,
            longest_batch: Duration::ZERO,
            jobs_converted: 0,
            schedules_converted: 0,
            from_jobs_layout: 0,
            to_jobs_layout: 0,
        }
    }

    pub(crate) fn add(&mut self, counts: ApplyCounts) {
        self.indexed += counts.indexed;
        self.repaired += counts.repaired;
        self.removed += counts.removed;
        self.schedules_converted += counts.converted;
    }

    /// Counts one batch that started at `started`.
    pub(crate) fn timed(&mut self, started: Instant) {
        self.batches += 1;
        self.longest_batch = self.longest_batch.max(started.elapsed());
    }
}

/// Where progress goes. A send error means the client is gone: stop.
pub(crate) type ProgressTx = mpsc::Sender<Progress>;

pub(crate) async fn send(tx: &ProgressTx, progress: &Progress) -> Result<(), Error> {
    tx.send(progress.clone())
        .await
        .map_err(|_| Error::Cancelled)
}
