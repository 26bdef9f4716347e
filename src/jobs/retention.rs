//! Retention: finished (completed, dead, cancelled) jobs are pruned in bounded
//! batches, off the request path, in the namespaces this instance serves jobs for.

use std::{sync::Arc, time::Duration};

use tokio_util::sync::CancellationToken;

use crate::{
    namespaces::{Entry, Namespaces},
    store::{ops::prune_jobs::PruneJobs, Store, StoreError},
};

/// Finished jobs deleted per prune script call.
const PRUNE_BATCH: u32 = 500;
/// Prune calls per namespace per tick (so one namespace cannot starve the others).
const PRUNE_ROUNDS: usize = 20;

/// Retention of finished jobs.
#[derive(Debug, Clone)]
pub(crate) struct Retention {
    pub(crate) max_age: Duration,
    pub(crate) max_count: u64,
    pub(crate) interval: Duration,
}

pub(crate) struct Pruner {
    store: Arc<Store>,
    namespaces: Arc<Namespaces>,
    retention: Retention,
}

impl Pruner {
    pub(crate) fn new(
        store: Arc<Store>,
        namespaces: Arc<Namespaces>,
        retention: Retention,
    ) -> Self {
        Self {
            store,
            namespaces,
            retention,
        }
    }

    /// Prunes one namespace in bounded batches; returns how many were deleted.
    async fn prune(&self, entry: &Entry) -> Result<u64, StoreError> {
        let op = PruneJobs {
            max_age_ms: i64::try_from(self.retention.max_age.as_millis()).unwrap_or(i64::MAX),
            keep: self.retention.max_count,
            batch: PRUNE_BATCH,
        };
        let mut total = 0;
        for _ in 0..PRUNE_ROUNDS {
            let pruned = self.store.run(entry.name(), &op).await?;
            total += pruned.deleted;
            entry.pruned(pruned.kept);
            if !pruned.more {
                break;
            }
        }
        Ok(total)
    }

    /// Every interval, prunes each namespace that served job calls. Every replica runs
    /// one; the script is atomic, so two replicas pruning one namespace only share the
    /// work.
    pub(crate) async fn run(self, shutdown: CancellationToken) {
        loop {
            tokio::select! {
                _ = tokio::time::sleep(self.retention.interval) => {}
                _ = shutdown.cancelled() => return,
            }
            for entry in self.namespaces.all() {
                if !entry.has_jobs() {
                    continue;
                }
                let namespace = entry.name();
                match self.prune(&entry).await {
                    Ok(0) => {}
                    Ok(deleted) => tracing::debug!(%namespace, deleted, "pruned finished jobs"),
                    Err(error) => tracing::debug!(%namespace, %error, "job pruning failed"),
                }
            }
        }
    }
}
