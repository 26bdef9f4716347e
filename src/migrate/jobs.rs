//! Migrate's job phase: converts a namespace's jobs from job layout 1 (a hash per
//! job, sorted-set ready and listing indexes) to layout 2 (`lua/lib/job.lua`).
//!
//! Job calls are refused (FAILED_PRECONDITION) until the last step records layout 2,
//! so no job is read half-converted; every step is idempotent, so a Migrate killed
//! part-way is completed by the next one. Order is kept: ready jobs are moved in
//! claim order (priority, then enqueue sequence) before the remaining records, and
//! layout 1's namespace-wide sequence numbers become the listing's job numbers.

use tokio::time::Instant;

use super::{
    lock::Lease,
    progress::{send, Phase, Progress},
    Migrator, Options, Run,
};
use crate::{
    domain::JOB_LAYOUT,
    error::Error,
    store::{
        keys::LegacyJobKeys,
        ops::migrate_jobs::{JobStep, JobStepCounts, MigrateJobs, JOBS_PER_CALL},
        LegacyJobWalk,
    },
};

/// What a walk over the job records does to each chunk of ids.
#[derive(Clone, Copy)]
enum RecordPass {
    Convert,
    Recount,
    Listed,
}

impl RecordPass {
    fn step(self, ids: &[String]) -> JobStep<'_> {
        match self {
            Self::Convert => JobStep::Records(ids),
            Self::Recount => JobStep::Recount(ids),
            Self::Listed => JobStep::Listed(ids),
        }
    }
}

impl Migrator {
    pub(super) async fn convert_jobs(&self, run: &mut Run<'_, '_>) -> Result<(), Error> {
        run.progress.phase = Phase::Jobs;
        send(run.tx, run.progress).await?;
        // 1. Ready sets, in claim order. A dry run skips this pass: the record pass
        // below counts every job it would convert.
        if !run.options.dry_run {
            self.move_ready_sets(run).await?;
        }
        // 2. Every job record still in layout 1 (not ready, or ready without an entry).
        self.convert_records(run).await?;
        if run.options.dry_run {
            return Ok(());
        }
        // 3. The layout-1 listings (UNLINK: O(1) on the main thread).
        let mut walk = LegacyJobWalk::new(LegacyJobKeys::Listings);
        while let Some(found) = self
            .walk_step(&mut walk, run.namespace, run.options, run.lease)
            .await?
        {
            for chunk in found.chunks(JOBS_PER_CALL) {
                let started = Instant::now();
                let counts = self
                    .step(run.namespace, run.lease, false, JobStep::Drop(chunk))
                    .await?;
                run.progress.absorb(counts, started);
            }
        }
        // 4. The layout, last.
        self.record_layout(run).await
    }

    /// Rebuilds a lost meta's job fields from the job records: each queue's job
    /// counter and the namespace's sequence rise to the highest found, so every
    /// stored job keeps its number (and its listing entry) and new jobs take numbers
    /// after them; then the layout is recorded, last, which lets job calls in again.
    pub(super) async fn recount_jobs(&self, run: &mut Run<'_, '_>) -> Result<(), Error> {
        run.progress.phase = Phase::Jobs;
        send(run.tx, run.progress).await?;
        let walk = LegacyJobWalk::new(LegacyJobKeys::JobRecords);
        self.step_over_jobs(run, walk, RecordPass::Recount).await?;
        if run.options.dry_run {
            return Ok(());
        }
        self.record_layout(run).await
    }

    /// A dry run of a current namespace walks its job records too (`SCAN`, 50 a
    /// script) and reports each one the listing does not name under its number:
    /// counted in its queue but never listed nor claimed (issue 29: two `dueq dev`
    /// runs on one AOF left such jobs, and a dry run reported nothing). Read-only, so
    /// exact whatever runs meanwhile: a job's record and listing entry are written
    /// and removed together.
    pub(super) async fn check_listed(&self, run: &mut Run<'_, '_>) -> Result<(), Error> {
        let walk = LegacyJobWalk::new(LegacyJobKeys::JobRecords);
        self.step_over_jobs(run, walk, RecordPass::Listed).await
    }

    /// Records the job layout (the last step of a conversion or a recount) and says so.
    async fn record_layout(&self, run: &mut Run<'_, '_>) -> Result<(), Error> {
        let started = Instant::now();
        let counts = self
            .step(run.namespace, run.lease, false, JobStep::Finish)
            .await?;
        run.progress.absorb(counts, started);
        run.progress.to_jobs_layout = JOB_LAYOUT;
        send(run.tx, run.progress).await
    }

    /// Runs `pass` over every job the walk finds, a bounded chunk of ids per call.
    async fn step_over_jobs(
        &self,
        run: &mut Run<'_, '_>,
        mut walk: LegacyJobWalk,
        pass: RecordPass,
    ) -> Result<(), Error> {
        while let Some(found) = self
            .walk_step(&mut walk, run.namespace, run.options, run.lease)
            .await?
        {
            let ids = LegacyJobWalk::job_ids(&self.store, run.namespace, &found);
            for chunk in ids.chunks(JOBS_PER_CALL) {
                run.lease.keep().await?;
                let started = Instant::now();
                let counts = self
                    .step(
                        run.namespace,
                        run.lease,
                        run.options.dry_run,
                        pass.step(chunk),
                    )
                    .await?;
                run.progress.absorb(counts, started);
            }
            send(run.tx, run.progress).await?;
        }
        Ok(())
    }

    /// Records the current job layout again, in meta and in the jobs marker.
    pub(super) async fn mark_jobs(&self, namespace: &str, lease: &Lease<'_>) -> Result<(), Error> {
        self.step(namespace, lease, false, JobStep::Finish).await?;
        Ok(())
    }

    async fn convert_records(&self, run: &mut Run<'_, '_>) -> Result<(), Error> {
        let walk = LegacyJobWalk::new(LegacyJobKeys::JobHashes);
        self.step_over_jobs(run, walk, RecordPass::Convert).await
    }

    /// Moves every layout-1 ready set into layout-2 ready lists, in claim order.
    async fn move_ready_sets(&self, run: &mut Run<'_, '_>) -> Result<(), Error> {
        let mut walk = LegacyJobWalk::new(LegacyJobKeys::ReadySets);
        while let Some(sets) = self
            .walk_step(&mut walk, run.namespace, run.options, run.lease)
            .await?
        {
            for set in &sets {
                loop {
                    run.lease.keep().await?;
                    let started = Instant::now();
                    let mut counts = self
                        .step(run.namespace, run.lease, false, JobStep::Ready { set })
                        .await?;
                    // The record pass reports these records again, once.
                    counts.problems.clear();
                    let remaining = counts.remaining;
                    run.progress.absorb(counts, started);
                    send(run.tx, run.progress).await?;
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
        walk: &mut LegacyJobWalk,
        namespace: &str,
        options: Options,
        lease: &mut Lease<'_>,
    ) -> Result<Option<Vec<Vec<u8>>>, Error> {
        lease.keep().await?;
        Ok(walk.next(&self.store, namespace, options.batch).await?)
    }

    async fn step(
        &self,
        namespace: &str,
        lease: &Lease<'_>,
        dry_run: bool,
        step: JobStep<'_>,
    ) -> Result<JobStepCounts, Error> {
        let op = MigrateJobs {
            token: &lease.token,
            dry_run,
            step,
        };
        self.store
            .run(namespace, &op)
            .await?
            .ok_or_else(|| lease.lost())
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
