//! Retention: finished (completed, dead, cancelled) jobs are pruned in bounded
//! batches, off the request path. What to prune is driven by the prune due-set in
//! Redis (`store::prune_due`), not by what this instance has served: every replica
//! visits the namespaces that are due, whichever replica finished their jobs, and a
//! namespace with nothing left to prune drops out of the set, so idle namespaces cost
//! no background work however many there have been (docs/DESIGN.md, "Pruning").

use std::{sync::Arc, time::Duration};

use tokio_util::sync::CancellationToken;

use crate::{
    clock::Clock,
    domain::limits,
    store::{
        ops::prune_jobs::{PruneJobs, Pruned},
        Store, StoreError,
    },
};

/// Finished jobs deleted per prune script call.
const PRUNE_BATCH: u32 = 500;
/// Prune calls per namespace per visit (so one namespace cannot starve the others);
/// a namespace with more to delete stays due for the next tick.
const PRUNE_ROUNDS: usize = 20;
/// Due namespaces read from the due-set per page, and most visited per tick.
const DUE_PAGE: usize = 100;
const VISITS_PER_TICK: usize = 1000;
/// A namespace whose prune failed (Redis away, jobs awaiting Migrate) is tried again
/// after this, not every tick.
const RETRY_AFTER: Duration = Duration::from_secs(60);
/// Retention ages are capped here (about 300 years) so an age plus a time stays an
/// exact integer in Lua.
const MAX_AGE_MS: i64 = 10_000_000_000_000;

/// Retention of finished jobs.
#[derive(Debug, Clone)]
pub(crate) struct Retention {
    pub(crate) max_age: Duration,
    pub(crate) max_count: u64,
    pub(crate) interval: Duration,
}

pub(crate) struct Pruner {
    store: Arc<Store>,
    clock: Arc<Clock>,
    retention: Retention,
}

impl Pruner {
    pub(crate) fn new(store: Arc<Store>, clock: Arc<Clock>, retention: Retention) -> Self {
        Self {
            store,
            clock,
            retention,
        }
    }

    fn op(&self) -> PruneJobs {
        PruneJobs {
            max_age_ms: i64::try_from(self.retention.max_age.as_millis())
                .unwrap_or(i64::MAX)
                .min(MAX_AGE_MS),
            keep: self.retention.max_count,
            batch: PRUNE_BATCH,
        }
    }

    /// Prunes one namespace in bounded batches; returns how many were deleted and
    /// what the last call left.
    async fn prune(&self, namespace: &str) -> Result<(u64, Pruned), StoreError> {
        let op = self.op();
        let mut total = 0;
        let mut rounds = 0;
        loop {
            let pruned = self.store.run(namespace, &op).await?;
            total += pruned.deleted;
            rounds += 1;
            if !pruned.more || rounds == PRUNE_ROUNDS {
                return Ok((total, pruned));
            }
        }
    }

    /// Prunes a due namespace and schedules its next visit, or drops it from the
    /// due-set when it keeps no finished jobs.
    async fn visit(&self, namespace: &str) -> Result<u64, StoreError> {
        let (deleted, last) = self.prune(namespace).await?;
        let next = if last.more {
            Some(self.clock.now_ms())
        } else {
            last.next_ms
        };
        if let Some(at) = next {
            self.store.prune_at(namespace, at).await?;
            // Looked at again after the reschedule: a job that finished during the
            // visit (after its prune, before the reschedule, which would have put
            // back its registration "now" to `at`) is pruned now; one that finishes
            // later registers after the reschedule, and the sooner time wins.
            let again = self.store.run(namespace, &self.op()).await?;
            match again.next_ms {
                _ if again.more => {
                    self.store
                        .prune_soon(namespace, self.clock.now_ms())
                        .await?
                }
                Some(sooner) if sooner < at => self.store.prune_soon(namespace, sooner).await?,
                _ => {}
            }
            return Ok(deleted + again.deleted);
        }
        // Dropped first, then looked at again: a job that finished after the prune
        // above either is seen now, or its script ran after the drop, so its own
        // registration (lib/job.lua `finish_entry`: the set was empty) comes later.
        self.store.prune_forget(namespace).await?;
        if let Some(at) = self.store.run(namespace, &self.op()).await?.next_ms {
            self.store.prune_at(namespace, at).await?;
        }
        Ok(deleted)
    }

    /// One tick: visits the namespaces due now, a bounded number.
    async fn tick(&self) -> Result<(), StoreError> {
        let mut visited = 0;
        while visited < VISITS_PER_TICK {
            let due = self.store.prune_due(self.clock.now_ms(), DUE_PAGE).await?;
            if due.is_empty() {
                return Ok(());
            }
            for namespace in &due {
                visited += 1;
                if !limits::is_namespace(namespace) {
                    // Not written by dueq: its name could not make a key.
                    tracing::warn!(%namespace, "dropping an invalid name from the prune due-set");
                    self.store.prune_forget(namespace).await?;
                    continue;
                }
                match self.visit(namespace).await {
                    Ok(0) => {}
                    Ok(deleted) => tracing::debug!(%namespace, deleted, "pruned finished jobs"),
                    Err(error) => {
                        tracing::debug!(%namespace, %error, "job pruning failed");
                        let later = self.clock.now_ms() + RETRY_AFTER.as_millis() as i64;
                        self.store.prune_at(namespace, later).await?;
                    }
                }
            }
        }
        Ok(())
    }

    /// Every interval, prunes the namespaces the due-set says are due. Every replica
    /// runs one; the script is atomic, so two replicas visiting one namespace at once
    /// only share the work.
    pub(crate) async fn run(self, shutdown: CancellationToken) {
        loop {
            // The pruning interval: real time between visits of the due-set.
            #[allow(clippy::disallowed_methods)]
            let tick = tokio::time::sleep(self.retention.interval);
            tokio::select! {
                _ = tick => {}
                _ = shutdown.cancelled() => return,
            }
            if let Err(error) = self.tick().await {
                tracing::debug!(%error, "job pruning paused until the next tick");
            }
        }
    }
}
