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

use super::{send, MigrateError, Migrator, Options, Phase, Progress, ProgressTx};
use crate::{
    domain::{ScheduleDef, TimingDef},
    schedules::timing_of,
    store::migrate::{ImportRecord, ScannedRecord},
};

pub async fn import(
    migrator: &Migrator,
    namespace: &str,
    source_prefix: &str,
    delete_source: bool,
    options: Options,
    tx: &ProgressTx,
) -> Result<Progress, MigrateError> {
    let store = migrator.store();
    let index = format!("{source_prefix}schedules::index");
    let record_prefix = format!("{source_prefix}schedules::");
    let total = store.set_size(&index).await?;
    let state = store.namespace_status(namespace).await?;
    if total == 0 {
        return Err(MigrateError::Foreign {
            namespace: namespace.to_owned(),
            detail: format!("the source {index:?} holds no schedules (check source_prefix)"),
        });
    }
    let mut lease = migrator.lease(namespace, options.dry_run).await?;
    let mut progress = Progress::new(namespace, options.dry_run);
    progress.estimated_total = total;
    progress.from_schema = state.schema_version();
    progress.phase = Phase::Import;
    let result: Result<(), MigrateError> = async {
        send(tx, &progress).await?;
        let mut cursor = "0".to_owned();
        loop {
            lease.keep().await?;
            let started = tokio::time::Instant::now();
            let batch = store
                .import_scan(&index, &record_prefix, &cursor, options.batch)
                .await?;
            let mut records = Vec::with_capacity(batch.records.len());
            for scanned in &batch.records {
                progress.scanned += 1;
                match convert(scanned) {
                    Ok(Some(record)) => records.push(record),
                    Ok(None) => {}
                    Err(reason) => progress.problems.push((scanned.id.clone(), reason)),
                }
            }
            if options.dry_run {
                progress.imported += records.len() as u64;
            } else if !records.is_empty() {
                let counts = store
                    .import_schedules(namespace, &lease.token, &records)
                    .await?
                    .ok_or_else(|| MigrateError::LockLost(namespace.to_owned()))?;
                progress.imported += counts.imported;
                progress.already_present += counts.already_present;
                progress.indexed += counts.indexed;
                if delete_source {
                    let ids: Vec<String> = records.into_iter().map(|r| r.id).collect();
                    store.delete_source(&index, &record_prefix, &ids).await?;
                }
            }
            progress.timed(started);
            send(tx, &progress).await?;
            cursor = batch.cursor;
            if cursor == "0" {
                return Ok(());
            }
        }
    }
    .await;
    lease.release().await;
    result?;
    progress.phase = Phase::Done;
    progress.to_schema = if options.dry_run {
        progress.from_schema
    } else {
        crate::store::keys::SCHEMA_VERSION
    };
    tracing::info!(
        %namespace,
        source = %index,
        imported = progress.imported,
        already_present = progress.already_present,
        problems = progress.problems.len(),
        "import finished"
    );
    Ok(progress)
}

/// A source record in dueq's fields; `Ok(None)` for an id whose hash is gone.
fn convert(scanned: &ScannedRecord) -> Result<Option<ImportRecord>, String> {
    match scanned.key_type.as_str() {
        "hash" => {}
        "none" => return Ok(None),
        other => return Err(format!("wrong type: {other}, expected a hash")),
    }
    let f = Fields(&scanned.fields);
    let id = f.text("id")?.unwrap_or_else(|| scanned.id.clone());
    if id != scanned.id {
        return Err(format!(
            "field id is {id:?}, but the index lists {:?}",
            scanned.id
        ));
    }
    crate::api::validate::id("id", &id).map_err(|e| e.to_string())?;
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
    let runs = f.number("run_count")?.unwrap_or(0).max(0);
    let def = ScheduleDef {
        id: id.clone(),
        timing,
        timezone: f.text("timezone")?.unwrap_or_else(|| "UTC".to_owned()),
        start_ms: f.number("from_date")?,
        end_ms: f.number("to_date")?,
        run_limit,
        job_name: f.text("name")?.unwrap_or_default(),
        payload: scanned.fields.get("payload").cloned().unwrap_or_default(),
        headers: Default::default(),
        paused: false,
    };
    // The same validation as UpsertSchedule: a cron dueq cannot parse is reported.
    let parsed = timing_of(&def).map_err(|e| e.to_string())?;
    let paused = match f.text("status")?.as_deref() {
        Some("active") | None => false,
        Some("paused") => true,
        Some(other) => return Err(format!("unknown status {other:?}")),
    };
    let exhausted = run_limit > 0 && u64::try_from(runs).unwrap_or(0) >= run_limit;
    // The source marks a finished schedule with an empty next_run_at; a missing one
    // (never computed) is computed here, from the source's own start.
    let next = match scanned.fields.get("next_run_at") {
        Some(v) if v.is_empty() => None,
        Some(_) => f.number("next_run_at")?,
        None => parsed.first_at_or_after(def.start_ms.unwrap_or(0)),
    };
    let next = next.filter(|n| def.end_ms.is_none_or(|end| *n <= end));
    let (status, next_ms) = match (paused, exhausted, next) {
        (true, false, _) => ("paused", None),
        (false, false, Some(n)) => ("active", Some(n)),
        _ => ("completed", None),
    };
    let (kind, cron, every_ms) = match &def.timing {
        TimingDef::Cron(c) => ("cron", c.clone(), String::new()),
        TimingDef::EveryMs(ms) => ("every", String::new(), ms.to_string()),
    };
    let opt = |v: Option<i64>| v.map(|v| v.to_string()).unwrap_or_default();
    Ok(Some(ImportRecord {
        kind,
        cron,
        every_ms,
        tz: parsed.timezone_name().to_owned(),
        start_ms: opt(def.start_ms),
        end_ms: opt(def.end_ms),
        limit: run_limit.to_string(),
        job_name: def.job_name.clone(),
        payload: def.payload.clone(),
        headers: "{}".to_owned(),
        status,
        runs: runs.to_string(),
        last_ms: opt(f.number("last_run_at")?),
        next_ms: opt(next_ms),
        created_ms: f.number("created_at")?.unwrap_or(0).to_string(),
        id,
    }))
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
