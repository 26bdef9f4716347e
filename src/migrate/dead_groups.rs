//! Migrate's dead-letter phase (issue 33): dead jobs stored before the error groups
//! existed (lib/job.lua `dg`) join their group. Every queue's dead set is walked, a
//! bounded number of entries a call (lua/migrate_dead_groups.lua); each dead job in
//! no group counts in `repaired`, and a real run indexes it. Idempotent: a job in a
//! group already is left alone.

use tokio::time::Instant;

use super::{Migrator, Run};

/// Most dead-set entries one call visits (each costs a record decode and a hash).
const DEAD_STEP: u32 = 500;
use crate::{
    error::Error,
    store::ops::migrate_dead_groups::{DeadCursor, MigrateDeadGroups},
};

impl Migrator {
    pub(super) async fn index_dead_groups(&self, run: &mut Run<'_, '_>) -> Result<(), Error> {
        let mut cursor = DeadCursor::default();
        let mut indexed = 0;
        loop {
            run.lease.keep().await?;
            let started = Instant::now();
            let op = MigrateDeadGroups {
                token: &run.lease.token,
                dry_run: run.options.dry_run,
                cursor: &cursor,
                batch: run.options.batch.min(DEAD_STEP),
            };
            let reply = self
                .store
                .run(run.namespace, &op)
                .await?
                .ok_or_else(|| run.lease.lost())?;
            run.progress.timed(started);
            indexed += reply.indexed;
            run.progress.repaired += reply.indexed;
            match reply.next {
                Some(next) => cursor = next,
                None => break,
            }
        }
        if indexed > 0 {
            tracing::info!(
                namespace = %run.namespace,
                dry_run = run.options.dry_run,
                indexed,
                "migrate: dead jobs indexed by error group"
            );
        }
        Ok(())
    }
}
