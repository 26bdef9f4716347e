//! Migrate: the one O(N) operation, in bounded batches.
//!
//! One walk over a namespace's listing serves every case: for a namespace in the
//! pre-index layout (schema 1) or with hash records (schema 2) it packs each record,
//! lists it in schema 3's listing and builds the due index, then drops the old
//! listing and records the new schema version; for a current namespace it verifies
//! the derived index and listing against the records and repairs them.
//! Each batch is one script; a Redis lease lock keeps concurrent Migrates apart; the
//! version is written last, so a Migrate that dies half-way leaves a namespace that is
//! still refused (never half-served) and that the next Migrate completes. Every
//! record is judged by the same timing code the service uses; a record that cannot be
//! used is reported and left exactly as it was.

pub mod boringnode;
mod jobs;

use std::{sync::Arc, time::Duration};

use tokio::{sync::mpsc, time::Instant};

use crate::{
    clock::Clock,
    domain::ScheduleStatus,
    schedules::timing_of,
    store::{
        keys::SCHEMA_VERSION,
        migrate::{
            Action, ApplyCounts, Decision, Listing, LockOp, LockReply, NamespaceState,
            ScannedRecord, Walk,
        },
        Store, StoreError,
    },
};

/// Default and largest records per batch.
pub const DEFAULT_BATCH: u32 = 500;
pub const MAX_BATCH: u32 = 5000;

#[derive(Debug, thiserror::Error)]
pub enum MigrateError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("namespace {0:?} holds no dueq data")]
    NotFound(String),
    #[error(
        "another Migrate of namespace {namespace:?} is running (its lock expires in {ttl_ms} ms \
         unless renewed); wait for it to finish, then run Migrate again"
    )]
    Busy { namespace: String, ttl_ms: i64 },
    #[error(
        "Migrate of namespace {0:?} lost its lock (it stalled longer than the lock ttl); \
         nothing more was written, run Migrate again"
    )]
    LockLost(String),
    #[error(
        "namespace {namespace:?} has store schema {found}, newer than this dueq's {SCHEMA_VERSION}; \
         upgrade dueq instead"
    )]
    Newer { namespace: String, found: String },
    #[error(
        "namespace {namespace:?} has job layout {found}, newer than this dueq's {}; \
         upgrade dueq instead",
        crate::store::keys::JOBS_LAYOUT
    )]
    NewerJobs { namespace: String, found: u32 },
    #[error("namespace {namespace:?}: {detail}")]
    Foreign { namespace: String, detail: String },
    #[error("the client went away; the namespace is left consistent, run Migrate again to finish")]
    Cancelled,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
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
pub struct Progress {
    pub namespace: String,
    pub phase: Phase,
    pub scanned: u64,
    pub indexed: u64,
    pub repaired: u64,
    pub removed: u64,
    pub estimated_total: u64,
    pub imported: u64,
    pub already_present: u64,
    /// (id, reason) of records that could not be used.
    pub problems: Vec<(String, String)>,
    pub from_schema: u32,
    pub to_schema: u32,
    pub dry_run: bool,
    pub batches: u64,
    pub longest_batch: Duration,
    pub jobs_converted: u64,
    /// Schedule records rewritten into the packed record (schema 3).
    pub schedules_converted: u64,
    pub from_jobs_layout: u32,
    pub to_jobs_layout: u32,
}

impl Progress {
    fn new(namespace: &str, dry_run: bool) -> Self {
        Progress {
            namespace: namespace.to_owned(),
            phase: Phase::Started,
            scanned: 0,
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

    fn add(&mut self, counts: ApplyCounts) {
        self.indexed += counts.indexed;
        self.repaired += counts.repaired;
        self.removed += counts.removed;
        self.schedules_converted += counts.converted;
    }

    fn timed(&mut self, started: Instant) {
        self.batches += 1;
        self.longest_batch = self.longest_batch.max(started.elapsed());
    }
}

#[derive(Debug, Clone, Copy)]
pub struct Options {
    pub dry_run: bool,
    pub batch: u32,
}

/// Where progress goes. A send error means the client is gone: stop.
pub type ProgressTx = mpsc::Sender<Progress>;

pub struct Migrator {
    store: Arc<Store>,
    clock: Arc<Clock>,
    lock_ttl: Duration,
}

/// The Migrate lock while it is held; renewed as batches go by.
pub(crate) struct Lease<'a> {
    store: &'a Store,
    namespace: String,
    pub(crate) token: String,
    ttl: Duration,
    renewed: Instant,
    dry_run: bool,
}

impl Lease<'_> {
    /// Renews the lock when a third of its ttl has gone by (one extra call then).
    pub(crate) async fn keep(&mut self) -> Result<(), MigrateError> {
        if self.dry_run || self.renewed.elapsed() < self.ttl / 3 {
            return Ok(());
        }
        match self
            .store
            .migrate_lock(
                &self.namespace,
                LockOp::Renew,
                &self.token,
                ttl_ms(self.ttl),
            )
            .await?
        {
            LockReply::Ok => {
                self.renewed = Instant::now();
                Ok(())
            }
            _ => Err(MigrateError::LockLost(self.namespace.clone())),
        }
    }

    pub(crate) async fn release(self) {
        if self.dry_run {
            return;
        }
        if let Err(error) = self
            .store
            .migrate_lock(&self.namespace, LockOp::Release, &self.token, 0)
            .await
        {
            // The ttl frees it anyway.
            tracing::warn!(namespace = %self.namespace, %error, "could not release the Migrate lock");
        }
    }
}

fn ttl_ms(ttl: Duration) -> u64 {
    u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX).max(1)
}

pub(crate) async fn send(tx: &ProgressTx, progress: &Progress) -> Result<(), MigrateError> {
    tx.send(progress.clone())
        .await
        .map_err(|_| MigrateError::Cancelled)
}

impl Migrator {
    pub fn new(store: Arc<Store>, clock: Arc<Clock>, lock_ttl: Duration) -> Self {
        Self {
            store,
            clock,
            lock_ttl,
        }
    }

    pub fn store(&self) -> &Arc<Store> {
        &self.store
    }

    /// Takes the namespace's lock (a dry run writes nothing, so takes none).
    pub(crate) async fn lease(
        &self,
        namespace: &str,
        dry_run: bool,
    ) -> Result<Lease<'_>, MigrateError> {
        let token = uuid::Uuid::new_v4().to_string();
        if !dry_run {
            match self
                .store
                .migrate_lock(namespace, LockOp::Acquire, &token, ttl_ms(self.lock_ttl))
                .await?
            {
                LockReply::Ok => {}
                LockReply::Held { ttl_ms } => {
                    return Err(MigrateError::Busy {
                        namespace: namespace.to_owned(),
                        ttl_ms,
                    })
                }
                LockReply::Lost => return Err(MigrateError::LockLost(namespace.to_owned())),
            }
        }
        Ok(Lease {
            store: &self.store,
            namespace: namespace.to_owned(),
            token,
            ttl: self.lock_ttl,
            renewed: Instant::now(),
            dry_run,
        })
    }

    /// Migrates (or verifies and repairs) one namespace, streaming progress.
    pub async fn run(
        &self,
        namespace: &str,
        options: Options,
        tx: &ProgressTx,
    ) -> Result<Progress, MigrateError> {
        let state = self.store.namespace_status(namespace).await?;
        let walk = walk_of(namespace, &state)?;
        let mut lease = self.lease(namespace, options.dry_run).await?;
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
        state: &NamespaceState,
        walk: Walk,
        lease: &mut Lease<'_>,
    ) -> Result<Progress, MigrateError> {
        let mut progress = Progress::new(namespace, options.dry_run);
        progress.from_schema = state.schema_version();
        progress.estimated_total = state.listed;
        send(tx, &progress).await?;

        // 1. Every record: its index entries from its own fields.
        progress.phase = Phase::Records;
        let mut cursor = "0".to_owned();
        loop {
            lease.keep().await?;
            let started = Instant::now();
            let batch = self
                .store
                .migrate_scan(namespace, walk, &cursor, options.batch)
                .await?;
            let now_ms = self.clock.now_ms();
            let mut decisions = Vec::with_capacity(batch.records.len());
            for record in &batch.records {
                progress.scanned += 1;
                match decide(record, now_ms) {
                    Ok(Some(decision)) => decisions.push(decision),
                    Ok(None) => {}
                    Err(reason) => progress.problems.push((record.id.clone(), reason)),
                }
            }
            if options.dry_run {
                progress.add(dry_counts(&batch.records, &decisions));
            } else if !decisions.is_empty() {
                let counts = self
                    .store
                    .migrate_apply(namespace, &lease.token, &decisions)
                    .await?
                    .ok_or_else(|| MigrateError::LockLost(namespace.to_owned()))?;
                progress.add(counts);
            }
            progress.timed(started);
            send(tx, &progress).await?;
            cursor = batch.cursor;
            if cursor == "0" {
                break;
            }
        }

        // 2. Every index entry: drop the ones no active record backs.
        progress.phase = Phase::Index;
        let mut cursor = "0".to_owned();
        loop {
            lease.keep().await?;
            let started = Instant::now();
            let batch = self
                .store
                .migrate_index(
                    namespace,
                    &lease.token,
                    &cursor,
                    options.batch,
                    options.dry_run,
                )
                .await?
                .ok_or_else(|| MigrateError::LockLost(namespace.to_owned()))?;
            progress.removed += batch.removed;
            progress.repaired += batch.repaired;
            progress.timed(started);
            send(tx, &progress).await?;
            cursor = batch.cursor;
            if cursor == "0" {
                break;
            }
        }

        // 3. Jobs in an older layout, converted before the version is written (the
        // schedule finish below releases the lock).
        progress.from_jobs_layout = state.jobs_layout_version();
        progress.to_jobs_layout = progress.from_jobs_layout;
        if state.jobs_need_migrate() {
            self.convert_jobs(namespace, options, tx, &mut progress, lease)
                .await?;
        }

        // 4. The version, last.
        progress.to_schema = if options.dry_run {
            progress.from_schema
        } else {
            self.store
                .migrate_finish(namespace, &lease.token)
                .await?
                .ok_or_else(|| MigrateError::LockLost(namespace.to_owned()))?;
            SCHEMA_VERSION
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

    /// Namespaces under the key prefix that hold a schedule listing or metadata (a
    /// namespace with jobs only has no listing), found by SCAN in batches.
    pub async fn namespaces(&self, batch: u32) -> Result<Vec<String>, MigrateError> {
        let mut found = std::collections::BTreeSet::new();
        for suffix in ["ids", "meta"] {
            let mut cursor = 0;
            loop {
                let (next, names) = self.store.scan_namespaces(suffix, cursor, batch).await?;
                found.extend(names);
                if next == 0 {
                    break;
                }
                cursor = next;
            }
        }
        Ok(found.into_iter().collect())
    }
}

fn walk_of(namespace: &str, state: &NamespaceState) -> Result<Walk, MigrateError> {
    // Converting "back" would rewrite jobs this dueq cannot read.
    let jobs = state.jobs_layout_version();
    if jobs > crate::store::keys::JOBS_LAYOUT {
        return Err(MigrateError::NewerJobs {
            namespace: namespace.to_owned(),
            found: jobs,
        });
    }
    if let Some(found) = &state.schema {
        if found.parse::<u32>().is_ok_and(|v| v > SCHEMA_VERSION) {
            return Err(MigrateError::Newer {
                namespace: namespace.to_owned(),
                found: found.clone(),
            });
        }
    }
    match &state.listing {
        // Schemas 1 and 2 are upgraded by the same walk that repairs schema 3: every
        // record is listed in schema 3's listing and packed as it is visited.
        Listing::Legacy => Ok(Walk::Set),
        Listing::Current => Ok(Walk::Zset),
        Listing::Tree => Ok(Walk::Tree),
        Listing::None if state.schema.is_some() || state.index_size > 0 => Ok(Walk::Tree),
        Listing::None => Err(MigrateError::NotFound(namespace.to_owned())),
        Listing::Foreign(kind) => Err(MigrateError::Foreign {
            namespace: namespace.to_owned(),
            detail: format!("its listing key is a {kind}, not a dueq listing; move it away first"),
        }),
    }
}

/// What a scanned record's index entry should be: `Ok(None)` for a record that is
/// simply gone, `Err` for one that cannot be used (reported, left untouched).
fn decide(record: &ScannedRecord, now_ms: i64) -> Result<Option<Decision>, String> {
    match record.key_type.as_str() {
        "hash" | "string" => {}
        "none" => return Ok(None),
        other => return Err(format!("wrong type: {other}, expected a schedule record")),
    }
    if record.state.is_empty() {
        return Err("not a dueq schedule record: it does not unpack".to_owned());
    }
    let decoded =
        crate::store::decode_schedule(&record.fields, &record.id).map_err(|e| e.to_string())?;
    if decoded.def.id != record.id {
        return Err(format!(
            "field id is {:?}, but the record is listed as {:?}",
            decoded.def.id, record.id
        ));
    }
    let timing = timing_of(&decoded.def).map_err(|e| e.to_string())?;
    let exhausted = decoded.def.run_limit > 0 && decoded.run_count >= decoded.def.run_limit;
    let action = match decoded.status {
        ScheduleStatus::Paused | ScheduleStatus::Completed => Action::Unindex,
        ScheduleStatus::Active if exhausted => Action::Complete,
        ScheduleStatus::Active => match decoded.next_run_ms {
            Some(next) if decoded.def.end_ms.is_none_or(|end| next <= end) => Action::Index(next),
            Some(_) => Action::Complete,
            None => match timing.first_at_or_after(now_ms) {
                Some(next) => Action::Schedule(next),
                None => Action::Complete,
            },
        },
    };
    Ok(Some(Decision {
        id: record.id.clone(),
        revision: record.state.clone(),
        action,
    }))
}

/// The counts migrate_apply would report for these decisions.
fn dry_counts(records: &[ScannedRecord], decisions: &[Decision]) -> ApplyCounts {
    let scanned: std::collections::HashMap<&str, &ScannedRecord> =
        records.iter().map(|r| (r.id.as_str(), r)).collect();
    let mut counts = ApplyCounts::default();
    for d in decisions {
        let record = scanned.get(d.id.as_str());
        let score = record.and_then(|r| r.score);
        counts.converted += u64::from(record.is_some_and(|r| r.key_type == "hash"));
        match (d.action, score) {
            (Action::Index(_), None) => counts.indexed += 1,
            (Action::Index(ms), Some(s)) if ms != s => counts.repaired += 1,
            (Action::Index(_), Some(_)) => {}
            (Action::Schedule(_), score) => {
                counts.repaired += 1;
                counts.indexed += u64::from(score.is_none());
            }
            (Action::Complete, score) => {
                counts.repaired += 1;
                counts.removed += u64::from(score.is_some());
            }
            (Action::Unindex, score) => counts.removed += u64::from(score.is_some()),
        }
    }
    counts
}
