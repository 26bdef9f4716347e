//! Import from the Redis layout of the npm package `@boringnode/queue` (up to 0.7):
//! a SET `<prefix>schedules::index` of ids and a HASH `<prefix>schedules::<id>` per
//! schedule, with fields `id, name, payload` (JSON text), `cron_expression` or
//! `every_ms`, `timezone, from_date, to_date, run_limit, status` (active | paused),
//! `next_run_at` ("" once finished), `last_run_at, run_count, created_at` (epoch ms;
//! absent fields mean "none").
//!
//! Run counts, status and next run are kept; a finished source schedule (empty
//! `next_run_at`) arrives completed. The source is read, never written, unless
//! `delete_source` asks for each imported record to be deleted after it was written.

use std::collections::HashMap;

use tokio::time::Instant;

use super::{
    lock::Lease,
    progress::{send, Phase, Progress, ProgressTx},
    Migrator, Options, Run,
};
use crate::{
    domain::{
        limits::check_id, Follow, ScheduleDef, ScheduleRecord, ScheduleStatus, TimingDef,
        SCHEDULE_SCHEMA,
    },
    error::{Error, ForeignData},
    store::{
        keys::BoringnodeKeys,
        ops::{
            import_schedules::ImportSchedules,
            migrate_scan::{Cursor, ScanSource, Scanned, ScannedRecord},
        },
    },
};

/// Where an import reads, and whether it deletes what it imported.
pub(super) struct Source {
    keys: BoringnodeKeys,
    delete_source: bool,
}

impl Source {
    pub(super) fn new(prefix: &str, delete_source: bool) -> Self {
        Source {
            keys: BoringnodeKeys::new(prefix),
            delete_source,
        }
    }
}

impl Migrator {
    pub(super) async fn import(
        &self,
        namespace: &str,
        source: &Source,
        options: Options,
        tx: &ProgressTx,
    ) -> Result<Progress, Error> {
        let total = self.store.source_size(&source.keys).await?;
        let state = self.status(namespace).await?;
        if total == 0 {
            return Err(Error::Foreign {
                namespace: namespace.to_owned(),
                problem: ForeignData::EmptySource(source.keys.index.clone()),
            });
        }
        let mut lease =
            Lease::acquire(&self.store, namespace, self.lock_ttl, options.dry_run).await?;
        let mut progress = Progress::new(namespace, options.dry_run);
        progress.estimated_total = total;
        progress.from_schema = state.schema_version();
        progress.phase = Phase::Import;
        let mut run = Run {
            namespace,
            options,
            tx,
            progress: &mut progress,
            lease: &mut lease,
        };
        let result = self.import_batches(&mut run, source).await;
        lease.release().await;
        result?;
        if !options.dry_run {
            self.store.register_namespace(namespace).await?;
        }
        progress.phase = Phase::Done;
        progress.to_schema = if options.dry_run {
            progress.from_schema
        } else {
            SCHEDULE_SCHEMA
        };
        tracing::info!(
            %namespace,
            source = %source.keys.index,
            imported = progress.imported,
            already_present = progress.already_present,
            problems = progress.problems.len(),
            "import finished"
        );
        Ok(progress)
    }

    async fn import_batches(&self, run: &mut Run<'_, '_>, source: &Source) -> Result<(), Error> {
        send(run.tx, run.progress).await?;
        let mut cursor = Cursor::start();
        loop {
            run.lease.keep().await?;
            let started = Instant::now();
            let (scanned, next) = self
                .scan(
                    run.namespace,
                    ScanSource::Import(&source.keys),
                    cursor,
                    run.options.batch,
                )
                .await?;
            let mut records = Vec::with_capacity(scanned.len());
            for found in &scanned {
                run.progress.scanned += 1;
                match convert(found) {
                    Ok(Some(record)) => records.push(record),
                    Ok(None) => {}
                    Err(reason) => run.progress.problems.push((found.id.clone(), reason)),
                }
            }
            if run.options.dry_run {
                run.progress.imported += records.len() as u64;
            } else if !records.is_empty() {
                self.write_imported(run.namespace, source, &records, run.progress, run.lease)
                    .await?;
            }
            run.progress.timed(started);
            send(run.tx, run.progress).await?;
            if next.is_done() {
                return Ok(());
            }
            cursor = next;
        }
    }

    async fn write_imported(
        &self,
        namespace: &str,
        source: &Source,
        records: &[ScheduleRecord],
        progress: &mut Progress,
        lease: &Lease<'_>,
    ) -> Result<(), Error> {
        let import = ImportSchedules {
            token: &lease.token,
            records,
        };
        let counts = self
            .store
            .run(namespace, &import)
            .await?
            .ok_or_else(|| lease.lost())?;
        progress.imported += counts.imported;
        progress.already_present += counts.already_present;
        progress.indexed += counts.indexed;
        if source.delete_source {
            let ids: Vec<String> = records.iter().map(|r| r.def.id.clone()).collect();
            self.store.delete_source(&source.keys, &ids).await?;
        }
        Ok(())
    }
}

/// A source record as a dueq schedule; `Ok(None)` for an id whose hash is gone.
fn convert(scanned: &ScannedRecord) -> Result<Option<ScheduleRecord>, String> {
    let fields = match &scanned.found {
        Scanned::Foreign(fields) => Fields(fields),
        Scanned::Missing => return Ok(None),
        Scanned::Unusable(reason) => return Err(reason.clone()),
        Scanned::Record { .. } => return Err("not an import source record".to_owned()),
    };
    let def = definition(&fields, &scanned.id)?;
    // The same validation as UpsertSchedule: a cron dueq cannot parse is reported.
    let timing = def.timing().map_err(|e| e.to_string())?;
    let paused = match fields.text("status")?.as_deref() {
        Some("active") | None => false,
        Some("paused") => true,
        Some(other) => return Err(format!("unknown status {other:?}")),
    };
    let runs = u64::try_from(fields.number("run_count")?.unwrap_or(0).max(0)).unwrap_or(0);
    let exhausted = def.run_limit > 0 && runs >= def.run_limit;
    // The source marks a finished schedule with an empty next_run_at; a missing one
    // (never computed) is computed here, from the source's own start.
    let next = match fields.0.get("next_run_at") {
        Some(v) if v.is_empty() => None,
        Some(_) => fields.number("next_run_at")?,
        None => timing.first_at_or_after(def.start_ms.unwrap_or(0)),
    };
    let next = next.filter(|n| def.end_ms.is_none_or(|end| *n <= end));
    let (status, next_run_ms) = match (paused, exhausted, next) {
        (true, false, _) => (ScheduleStatus::Paused, None),
        (false, false, Some(n)) => (ScheduleStatus::Active, Some(n)),
        _ => (ScheduleStatus::Completed, None),
    };
    Ok(Some(ScheduleRecord {
        def: ScheduleDef {
            timezone: timing.timezone_name().to_owned(),
            paused: status == ScheduleStatus::Paused,
            ..def
        },
        status,
        run_count: runs,
        last_run_ms: fields.number("last_run_at")?,
        next_run_ms,
        create_ms: fields.number("created_at")?.unwrap_or(0),
        update_ms: 0,
        revision: 1,
        buffered_ms: None,
        trigger_ms: None,
        backfill_ms: None,
        recent_runs: Vec::new(),
        follow: Follow::Unknown,
        skipped: Default::default(),
        pause_note: String::new(),
    }))
}

/// The definition a source hash describes.
fn definition(f: &Fields<'_>, listed_id: &str) -> Result<ScheduleDef, String> {
    let id = f.text("id")?.unwrap_or_else(|| listed_id.to_owned());
    if id != listed_id {
        return Err(format!(
            "field id is {id:?}, but the index lists {listed_id:?}"
        ));
    }
    check_id(&id).map_err(|problem| format!("id: {problem}"))?;
    let timing = match (f.text("cron_expression")?, f.number("every_ms")?) {
        (Some(cron), None) => TimingDef::Cron(cron),
        (None, Some(every)) => TimingDef::EveryMs(every),
        (Some(_), Some(_)) => return Err("both cron_expression and every_ms are set".into()),
        (None, None) => return Err("neither cron_expression nor every_ms is set".into()),
    };
    let run_limit = match f.number("run_limit")? {
        None => 0,
        Some(n) => u64::try_from(n).map_err(|_| format!("run_limit {n} is negative"))?,
    };
    Ok(ScheduleDef {
        id,
        timing,
        timezone: f.text("timezone")?.unwrap_or_else(|| "UTC".to_owned()),
        start_ms: f.number("from_date")?,
        end_ms: f.number("to_date")?,
        run_limit,
        job_name: f.text("name")?.unwrap_or_default(),
        payload: f.0.get("payload").cloned().unwrap_or_default(),
        headers: Default::default(),
        paused: false,
        catchup: Default::default(),
        offset_ms: None,
        overlap: Default::default(),
        max_attempts: 0,
        jitter_ms: 0,
        target: None,
    })
}

/// Typed reads of a source hash; absent and empty both mean "none".
struct Fields<'a>(&'a HashMap<String, Vec<u8>>);

impl Fields<'_> {
    fn text(&self, name: &str) -> Result<Option<String>, String> {
        match self.0.get(name) {
            None => Ok(None),
            Some(v) if v.is_empty() => Ok(None),
            Some(v) => String::from_utf8(v.clone())
                .map(Some)
                .map_err(|_| format!("field {name} is not UTF-8")),
        }
    }

    fn number(&self, name: &str) -> Result<Option<i64>, String> {
        match self.text(name)? {
            None => Ok(None),
            Some(t) => t
                .trim()
                .parse::<i64>()
                .map(Some)
                .map_err(|_| format!("field {name} is not a number: {t:?}")),
        }
    }
}
