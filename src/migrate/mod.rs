//! Migrate: the one O(N) operation, in bounded batches.
//!
//! One walk over a namespace's listing serves every case: for a namespace in the
//! pre-index layout (schema 1) or with hash records (schema 2) it packs each record,
//! lists it in schema 3's listing and builds the due index, then drops the old
//! listing and records the new schema version; for a current namespace it verifies
//! the derived index and listing against the records and repairs them (`schedules`).
//! Jobs in layout 1 are converted in the same run (`jobs`); another queue's schedules
//! are imported by `boringnode`. Each batch is one script; a Redis lease lock
//! (`lock`) keeps concurrent Migrates apart; the version is written last, so a
//! Migrate that dies half-way leaves a namespace that is still refused (never
//! half-served) and that the next Migrate completes. Every record is judged by the
//! same timing code the service uses; a record that cannot be used is reported and
//! left exactly as it was.

mod boringnode;
mod counts;
mod dead_groups;
mod flow;
mod graph;
mod jobs;
mod lock;
mod progress;
mod schedules;

use std::{sync::Arc, time::Duration};

use tokio::sync::mpsc;

pub(crate) use progress::{Phase, Progress};

use crate::{
    clock::Clock,
    domain::{Listing, NamespaceHealth, JOB_LAYOUT, SCHEDULE_SCHEMA},
    error::{Error, ForeignData, Missing},
    store::{
        ops::{migrate_scan::Walk, namespace_status::NamespaceStatus},
        NamespaceWalk, Store,
    },
};
use lock::Lease;
use progress::ProgressTx;

/// The reason given for a scanned key that is not a namespace's metadata.
const SKIPPED_KEY: &str =
    "not a namespace's metadata key (a job id or queue name ending in \"}:meta\"?): skipped";
/// The start of the reason given when one namespace of `all_namespaces` fails.
const NAMESPACE_FAILED: &str = "namespace not migrated";

/// Default and largest records per batch.
pub(crate) const DEFAULT_BATCH: u32 = 500;
pub(crate) const MAX_BATCH: u32 = 5000;

#[derive(Debug, Clone, Copy)]
pub(crate) struct Options {
    pub(crate) dry_run: bool,
    pub(crate) batch: u32,
}

/// What to migrate.
#[derive(Debug, Clone)]
pub(crate) enum Plan {
    Namespaces(Vec<String>),
    /// Every namespace under the key prefix.
    All,
    /// Another queue's schedules into one namespace.
    Import {
        namespace: String,
        source_prefix: String,
        delete_source: bool,
    },
}

pub(crate) struct Migrator {
    store: Arc<Store>,
    clock: Arc<Clock>,
    lock_ttl: Duration,
}

impl Migrator {
    pub(crate) fn new(store: Arc<Store>, clock: Arc<Clock>, lock_ttl: Duration) -> Self {
        Self {
            store,
            clock,
            lock_ttl,
        }
    }

    /// The O(1) facts about a namespace's store.
    pub(crate) async fn status(&self, namespace: &str) -> Result<NamespaceHealth, Error> {
        Ok(self.store.run(namespace, &NamespaceStatus).await?)
    }

    /// Runs the plan, sending progress and each namespace's final summary, or the
    /// error that stopped it, into `tx`. Stops when the client goes away.
    pub(crate) async fn execute(
        self: Arc<Self>,
        plan: Plan,
        options: Options,
        tx: mpsc::Sender<Result<Progress, Error>>,
    ) {
        let (progress_tx, mut progress_rx) = mpsc::channel::<Progress>(16);
        // Progress of the running step is forwarded as it comes; the step's result
        // goes after it, in order, because the forwarder is drained first.
        let forward_tx = tx.clone();
        let forwarder = tokio::spawn(async move {
            while let Some(progress) = progress_rx.recv().await {
                if forward_tx.send(Ok(progress)).await.is_err() {
                    return;
                }
            }
        });
        let result = self.run_plan(&plan, options, &progress_tx).await;
        drop(progress_tx);
        let _ = forwarder.await;
        match result {
            Ok(summaries) => {
                for summary in summaries {
                    if tx.send(Ok(summary)).await.is_err() {
                        return;
                    }
                }
            }
            Err(Error::Cancelled) => {}
            Err(error) => {
                tracing::warn!(%error, "migrate stopped");
                let _ = tx.send(Err(error)).await;
            }
        }
    }

    async fn run_plan(
        &self,
        plan: &Plan,
        options: Options,
        tx: &ProgressTx,
    ) -> Result<Vec<Progress>, Error> {
        let namespaces = match plan {
            Plan::Namespaces(list) => list.clone(),
            Plan::All => return self.run_all(options, tx).await,
            Plan::Import { namespace, .. } => vec![namespace.clone()],
        };
        let mut done = Vec::new();
        for namespace in namespaces {
            let summary = match plan {
                Plan::Import {
                    source_prefix,
                    delete_source,
                    ..
                } => {
                    let source = boringnode::Source::new(source_prefix, *delete_source);
                    self.import(&namespace, &source, options, tx).await?
                }
                _ => self.run(&namespace, options, tx).await?,
            };
            done.push(summary);
        }
        Ok(done)
    }

    /// Every namespace under the prefix. Keys the scan matched that are not a
    /// namespace's metadata are reported (a summary with an empty namespace) and
    /// skipped; a namespace that fails is reported in its own summary and the others
    /// still run, so one bad namespace cannot keep the rest unrepaired.
    async fn run_all(&self, options: Options, tx: &ProgressTx) -> Result<Vec<Progress>, Error> {
        let scan = NamespaceWalk::new()
            .collect(&self.store, options.batch)
            .await?;
        let mut done = Vec::new();
        if !scan.skipped.is_empty() {
            tracing::warn!(
                skipped = scan.skipped.len(),
                first = %scan.skipped[0],
                "migrate: keys matching the namespace pattern that are no namespace's metadata were skipped"
            );
            let mut note = Progress::new("", options.dry_run);
            note.phase = Phase::Done;
            note.problems = scan
                .skipped
                .into_iter()
                .map(|key| (key, SKIPPED_KEY.to_owned()))
                .collect();
            done.push(note);
        }
        for namespace in scan.namespaces {
            match self.run(&namespace, options, tx).await {
                Ok(summary) => done.push(summary),
                Err(Error::Cancelled) => return Err(Error::Cancelled),
                Err(error) => {
                    tracing::warn!(%namespace, %error, "migrate: namespace failed; continuing with the others");
                    let mut failed = Progress::new(&namespace, options.dry_run);
                    failed.phase = Phase::Done;
                    failed
                        .problems
                        .push((String::new(), format!("{NAMESPACE_FAILED}: {error}")));
                    done.push(failed);
                }
            }
        }
        Ok(done)
    }

    /// Migrates (or verifies and repairs) one namespace, streaming progress.
    async fn run(
        &self,
        namespace: &str,
        options: Options,
        tx: &ProgressTx,
    ) -> Result<Progress, Error> {
        let state = self.status(namespace).await?;
        let walk = walk_of(namespace, &state)?;
        let mut lease =
            Lease::acquire(&self.store, namespace, self.lock_ttl, options.dry_run).await?;
        let result = self
            .run_locked(namespace, options, tx, &state, walk, &mut lease)
            .await;
        match result {
            // migrate_finish released the lock with the version bump.
            Ok(progress) if !options.dry_run => Ok(progress),
            other => {
                lease.release().await;
                other
            }
        }
    }

    async fn run_locked(
        &self,
        namespace: &str,
        options: Options,
        tx: &ProgressTx,
        state: &NamespaceHealth,
        walk: Walk,
        lease: &mut Lease<'_>,
    ) -> Result<Progress, Error> {
        let mut progress = Progress::new(namespace, options.dry_run);
        progress.from_schema = state.schema_version();
        progress.estimated_total = state.listed;
        progress::send(tx, &progress).await?;
        // 1. Every record: its index entries from its own fields.
        let mut run = Run {
            namespace,
            options,
            tx,
            progress: &mut progress,
            lease,
        };
        self.record_pass(&mut run, walk).await?;
        // 2. Every index entry: drop the ones no active record backs.
        self.index_pass(&mut run).await?;
        // 3. Jobs in an older layout, converted before the version is written (the
        // schedule finish below releases the lock).
        run.progress.from_jobs_layout = state.jobs_layout_version();
        run.progress.to_jobs_layout = run.progress.from_jobs_layout;
        if state.jobs_meta_lost() {
            self.recount_jobs(&mut run).await?;
        } else if state.jobs_need_migrate() {
            self.convert_jobs(&mut run).await?;
        } else if state.jobs_layout.is_some() && !state.jobs_marker && !options.dry_run {
            // Jobs stored before the marker existed: write it (the finish step
            // records the layout the namespace is already in).
            self.mark_jobs(namespace, run.lease).await?;
        }
        if options.dry_run && state.jobs_layout_version() == JOB_LAYOUT && !state.jobs_meta_lost() {
            self.check_listed(&mut run).await?;
        }
        // 3b. Queue counts for jobs stored before them (issue 14), once the jobs are
        // in the current layout; and the namespace registry.
        if !options.dry_run {
            self.store.register_namespace(namespace).await?;
            if state.jobs_layout.is_some() || state.jobs_need_migrate() || state.jobs_meta_lost() {
                self.count_queues(&mut run).await?;
            }
        }
        // 3c. Flow control's indexes (issue 32), checked against the jobs and
        // repaired; a dry run counts them (only once the jobs are in the current
        // layout, which a dry run does not convert).
        let jobs_stored =
            state.jobs_layout.is_some() || state.jobs_need_migrate() || state.jobs_meta_lost();
        let jobs_current = !state.jobs_need_migrate() && !state.jobs_meta_lost();
        if jobs_stored && (jobs_current || !options.dry_run) {
            self.repair_flow(&mut run).await?;
            // 3d. Job dependencies (issue 34): no node left waiting whose
            // dependencies have finished.
            self.check_graph(&mut run).await?;
            // 3e. Dead jobs grouped by error (issue 33): dead jobs stored before the
            // groups join theirs.
            self.index_dead_groups(&mut run).await?;
        }
        // 4. The version, last.
        run.progress.to_schema = if options.dry_run {
            run.progress.from_schema
        } else {
            // A lost meta's listing count is rebuilt from the listing just walked.
            let listed = state
                .schedules_meta_lost()
                .then_some(run.progress.scanned_listed);
            self.finish(namespace, run.lease, listed).await?;
            SCHEDULE_SCHEMA
        };
        progress.phase = Phase::Done;
        tracing::info!(
            %namespace,
            dry_run = options.dry_run,
            scanned = progress.scanned,
            indexed = progress.indexed,
            repaired = progress.repaired,
            removed = progress.removed,
            problems = progress.problems.len(),
            longest_batch_ms = progress.longest_batch.as_millis() as u64,
            "migrate finished"
        );
        Ok(progress)
    }
}

/// One namespace's migration while it runs: the namespace, how (options), where its
/// progress goes, the progress so far and the migrate lock it holds. Every pass
/// takes it whole.
pub(super) struct Run<'a, 'l> {
    pub(super) namespace: &'a str,
    pub(super) options: Options,
    pub(super) tx: &'a ProgressTx,
    pub(super) progress: &'a mut Progress,
    pub(super) lease: &'a mut Lease<'l>,
}

/// How to walk a namespace's schedules, or why it cannot be migrated.
fn walk_of(namespace: &str, state: &NamespaceHealth) -> Result<Walk, Error> {
    // Converting "back" would rewrite records this dueq cannot read.
    let jobs = state.jobs_layout_version();
    if jobs > JOB_LAYOUT {
        return Err(Error::Newer {
            namespace: namespace.to_owned(),
            layout: "job layout",
            found: jobs.to_string(),
            current: JOB_LAYOUT,
        });
    }
    if let Some(found) = &state.schema {
        if found.parse::<u32>().is_ok_and(|v| v > SCHEDULE_SCHEMA) {
            return Err(Error::Newer {
                namespace: namespace.to_owned(),
                layout: "store schema",
                found: found.clone(),
                current: SCHEDULE_SCHEMA,
            });
        }
    }
    match &state.listing {
        // Schemas 1 and 2 are upgraded by the same walk that repairs schema 3: every
        // record is listed in schema 3's listing and packed as it is visited.
        Listing::Set => Ok(Walk::Set),
        Listing::SortedSet => Ok(Walk::SortedSet),
        Listing::Tree => Ok(Walk::Tree),
        Listing::None
            if state.schema.is_some()
                || state.index_size > 0
                || state.jobs_layout_version() > 0
                || state.jobs_held =>
        {
            Ok(Walk::Tree)
        }
        Listing::None => Err(Error::NotFound(Missing::Namespace(namespace.to_owned()))),
        Listing::Foreign(kind) => Err(Error::Foreign {
            namespace: namespace.to_owned(),
            problem: ForeignData::Listing(kind.clone()),
        }),
    }
}
