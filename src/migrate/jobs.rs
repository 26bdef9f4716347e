//! Migrate's job phase: converts a namespace's jobs from job layout 1 (a hash per
//! job, sorted-set ready and listing indexes) to layout 2 (`lua/lib/job.lua`).
//!
//! Job calls are refused (FAILED_PRECONDITION) until the last step records layout 2,
//! so no job is read half-converted; every step is idempotent, so a Migrate killed
//! part-way is completed by the next one. Order is kept: ready jobs are moved in
//! claim order (priority, then enqueue sequence) before the remaining records, and
//! layout 1's namespace-wide sequence numbers become the listing's job numbers.

use tokio::time::Instant;

use super::{send, Lease, MigrateError, Migrator, Options, Phase, Progress, ProgressTx};
use crate::store::{
    keys::JOBS_LAYOUT,
    migrate_jobs::{JobStep, JobStepCounts, LegacyKeys, LegacyWalk, JOBS_PER_CALL},
};

impl Migrator {
    pub(super) async fn convert_jobs(
        &self,
        namespace: &str,
        options: Options,
        tx: &ProgressTx,
        progress: &mut Progress,
        lease: &mut Lease<'_>,
    ) -> Result<(), MigrateError> {
        progress.phase = Phase::Jobs;
        send(tx, progress).await?;

        // 1. Ready sets, in claim order. A dry run skips this pass: the record pass
        // below counts every job it would convert.
        if !options.dry_run {
            self.move_ready_sets(namespace, options, tx, progress, lease)
                .await?;
        }

        // 2. Every job record still in layout 1 (not ready, or ready without an entry).
        let mut walk = LegacyWalk::new(LegacyKeys::JobHashes);
        while let Some(found) = self.walk_step(&mut walk, namespace, options, lease).await? {
            let ids = self.store().job_ids_of(namespace, &found);
            for chunk in ids.chunks(JOBS_PER_CALL) {
                lease.keep().await?;
                let started = Instant::now();
                let counts = self
                    .step(namespace, lease, options.dry_run, JobStep::Records(chunk))
                    .await?;
                progress.absorb(counts, started);
            }
            send(tx, progress).await?;
        }
        if options.dry_run {
            return Ok(());
        }

        // 3. The layout-1 listings (UNLINK: O(1) on the main thread).
        let mut walk = LegacyWalk::new(LegacyKeys::Listings);
        while let Some(found) = self.walk_step(&mut walk, namespace, options, lease).await? {
            for chunk in found.chunks(JOBS_PER_CALL) {
                let started = Instant::now();
                let counts = self
                    .step(namespace, lease, false, JobStep::Drop(chunk))
                    .await?;
                progress.absorb(counts, started);
            }
        }

        // 4. The layout, last.
        let started = Instant::now();
        let counts = self.step(namespace, lease, false, JobStep::Finish).await?;
        progress.absorb(counts, started);
        progress.to_jobs_layout = JOBS_LAYOUT;
        send(tx, progress).await?;
        Ok(())
    }

    /// Moves every layout-1 ready set into layout-2 ready lists, in claim order.
    async fn move_ready_sets(
        &self,
        namespace: &str,
        options: Options,
        tx: &ProgressTx,
        progress: &mut Progress,
        lease: &mut Lease<'_>,
    ) -> Result<(), MigrateError> {
        let mut walk = LegacyWalk::new(LegacyKeys::ReadySets);
        while let Some(sets) = self.walk_step(&mut walk, namespace, options, lease).await? {
            for set in &sets {
                loop {
                    lease.keep().await?;
                    let started = Instant::now();
                    let mut counts = self
                        .step(namespace, lease, false, JobStep::Ready { set })
                        .await?;
                    // The record pass reports these records again, once.
                    counts.problems.clear();
                    let remaining = counts.remaining;
                    progress.absorb(counts, started);
                    send(tx, progress).await?;
                    if remaining == 0 {
                        break;
                    }
                }
            }
        }
        Ok(())
    }

    /// The next SCAN step of a walk, with the lock renewed first if it is due.
    async fn walk_step(
        &self,
        walk: &mut LegacyWalk,
        namespace: &str,
        options: Options,
        lease: &mut Lease<'_>,
    ) -> Result<Option<Vec<Vec<u8>>>, MigrateError> {
        lease.keep().await?;
        Ok(walk.next(self.store(), namespace, options.batch).await?)
    }

    async fn step(
        &self,
        namespace: &str,
        lease: &Lease<'_>,
        dry_run: bool,
        step: JobStep<'_>,
    ) -> Result<JobStepCounts, MigrateError> {
        self.store()
            .migrate_jobs(namespace, &lease.token, dry_run, step)
            .await?
            .ok_or_else(|| MigrateError::LockLost(namespace.to_owned()))
    }
}

impl Progress {
    fn absorb(&mut self, counts: JobStepCounts, started: Instant) {
        self.jobs_converted += counts.converted;
        self.scanned += counts.converted;
        self.problems.extend(
            counts
                .problems
                .into_iter()
                .map(|(id, reason)| (id, format!("job record: {reason}"))),
        );
        self.timed(started);
    }
}
