//! Migrate's queue-count phase (issue 14): a namespace whose jobs predate the queue
//! counts (meta `counts` unset) gets each queue's pending count and dead set rebuilt
//! from its job records, one bounded batch per script call (lua/migrate_counts.lua),
//! while the service keeps serving it: the transitions count a job only once the walk
//! has passed it, so the counts come out exact. Every queue named in meta is
//! registered on the way. A namespace counted already costs one call.

use tokio::time::Instant;

use super::{lock::Lease, Migrator, Options, Run};
use crate::{
    error::Error,
    store::ops::migrate_counts::{CountStep, MigrateCounts},
};

impl Migrator {
    pub(super) async fn count_queues(&self, run: &mut Run<'_, '_>) -> Result<(), Error> {
        if run.options.dry_run {
            return Ok(());
        }
        if self.store.queue_counts_kept(run.namespace).await? {
            return Ok(());
        }
        let mut queues = self.store.meta_queues(run.namespace).await?;
        queues.sort();
        for queue in &queues {
            loop {
                run.lease.keep().await?;
                let started = Instant::now();
                let step = self
                    .count_step(run.namespace, run.lease, Some(queue), run.options)
                    .await?;
                run.progress.timed(started);
                run.progress.scanned += step.visited;
                if step.done {
                    break;
                }
            }
        }
        run.lease.keep().await?;
        self.count_step(run.namespace, run.lease, None, run.options)
            .await?;
        Ok(())
    }

    /// One call: a batch of `queue`, or (`None`) the record that every queue is
    /// counted.
    async fn count_step(
        &self,
        namespace: &str,
        lease: &Lease<'_>,
        queue: Option<&str>,
        options: Options,
    ) -> Result<CountStep, Error> {
        let op = MigrateCounts {
            token: &lease.token,
            queue,
            batch: options.batch,
        };
        self.store
            .run(namespace, &op)
            .await?
            .ok_or_else(|| lease.lost())
    }
}
