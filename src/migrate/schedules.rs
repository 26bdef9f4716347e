//! Migrate's schedule passes: every record (its index and listing entries from its
//! own fields, packed if still a hash), then every index entry (dropped or re-scored
//! unless an active record backs it), then the version.

use std::collections::HashMap;

use tokio::time::Instant;

use super::{
    lock::Lease,
    progress::{send, Phase},
    Migrator, Run,
};
use crate::{
    domain::{jitter_offset_ms, occurrence_id, ScheduleRecord, ScheduleStatus},
    error::Error,
    store::ops::{
        migrate_apply::{Action, ApplyCounts, Decision, MigrateApply, APPLY_STEP},
        migrate_finish::MigrateFinish,
        migrate_index::MigrateIndex,
        migrate_scan::{Cursor, MigrateScan, ScanSource, Scanned, ScannedRecord, Walk, SCAN_STEP},
    },
};

impl Migrator {
    /// About `batch` records from `cursor` on, in script calls of at most
    /// [`SCAN_STEP`] records; returns them and where the walk stands.
    pub(super) async fn scan(
        &self,
        namespace: &str,
        source: ScanSource<'_>,
        cursor: Cursor,
        batch: u32,
    ) -> Result<(Vec<ScannedRecord>, Cursor), Error> {
        let mut records = Vec::new();
        let mut cursor = cursor;
        loop {
            let left = (batch as usize).saturating_sub(records.len());
            let step = u32::try_from(left).unwrap_or(SCAN_STEP).clamp(1, SCAN_STEP);
            let scan = MigrateScan {
                source,
                cursor: &cursor,
                batch: step,
            };
            let found = self.store.run(namespace, &scan).await?;
            cursor = found.cursor;
            records.extend(found.records);
            if cursor.is_done() || records.len() >= batch as usize {
                return Ok((records, cursor));
            }
        }
    }

    pub(super) async fn record_pass(&self, run: &mut Run<'_, '_>, walk: Walk) -> Result<(), Error> {
        run.progress.phase = Phase::Records;
        let mut cursor = Cursor::start();
        loop {
            run.lease.keep().await?;
            let started = Instant::now();
            let (records, next) = self
                .scan(
                    run.namespace,
                    ScanSource::Namespace(walk),
                    cursor,
                    run.options.batch,
                )
                .await?;
            let now_ms = self.clock.now_ms();
            let mut decisions = Vec::with_capacity(records.len());
            for record in &records {
                run.progress.scanned += 1;
                run.progress.scanned_listed += 1;
                match decide(record, now_ms) {
                    Ok(Some(decision)) => decisions.push(decision),
                    Ok(None) => {}
                    Err(reason) => run.progress.problems.push((record.id.clone(), reason)),
                }
            }
            if run.options.dry_run {
                run.progress
                    .add(dry_counts(run.namespace, &records, &decisions));
            } else {
                run.progress
                    .add(self.apply(run.namespace, run.lease, &decisions).await?);
            }
            run.progress.timed(started);
            send(run.tx, run.progress).await?;
            if next.is_done() {
                return Ok(());
            }
            cursor = next;
        }
    }

    /// Writes decisions in script calls of at most [`APPLY_STEP`].
    async fn apply(
        &self,
        namespace: &str,
        lease: &Lease<'_>,
        decisions: &[Decision],
    ) -> Result<ApplyCounts, Error> {
        let mut total = ApplyCounts::default();
        for chunk in decisions.chunks(APPLY_STEP) {
            let apply = MigrateApply {
                token: &lease.token,
                decisions: chunk,
            };
            total += self
                .store
                .run(namespace, &apply)
                .await?
                .ok_or_else(|| lease.lost())?;
        }
        Ok(total)
    }

    pub(super) async fn index_pass(&self, run: &mut Run<'_, '_>) -> Result<(), Error> {
        run.progress.phase = Phase::Index;
        let mut cursor = Cursor::start();
        loop {
            run.lease.keep().await?;
            let started = Instant::now();
            let walk = MigrateIndex {
                token: &run.lease.token,
                cursor: &cursor,
                batch: run.options.batch.min(SCAN_STEP),
                dry_run: run.options.dry_run,
            };
            let batch = self
                .store
                .run(run.namespace, &walk)
                .await?
                .ok_or_else(|| run.lease.lost())?;
            run.progress.removed += batch.removed;
            run.progress.repaired += batch.repaired;
            run.progress.timed(started);
            send(run.tx, run.progress).await?;
            if batch.cursor.is_done() {
                return Ok(());
            }
            cursor = batch.cursor;
        }
    }

    /// Records the schema version and releases the lock.
    pub(super) async fn finish(
        &self,
        namespace: &str,
        lease: &Lease<'_>,
        listed: Option<u64>,
    ) -> Result<(), Error> {
        let finish = MigrateFinish {
            token: &lease.token,
            listed,
        };
        self.store
            .run(namespace, &finish)
            .await?
            .ok_or_else(|| lease.lost())?;
        // Target schedules the passes indexed wait in the target index: the
        // dispatcher's visit finds them (or nothing, and drops the namespace).
        self.store.dispatch_soon(namespace, 0).await?;
        Ok(())
    }
}

/// What a scanned record's index entry should be: `Ok(None)` for a record that is
/// simply gone, `Err` for one that cannot be used (reported, left untouched).
fn decide(scanned: &ScannedRecord, now_ms: i64) -> Result<Option<Decision>, String> {
    let (record, version) = match &scanned.found {
        Scanned::Missing => return Ok(None),
        Scanned::Record {
            record, version, ..
        } => (record, version),
        Scanned::Unusable(reason) => return Err(reason.clone()),
        Scanned::Foreign(_) => return Err("not a dueq schedule record".to_owned()),
    };
    if record.def.id != scanned.id {
        return Err(format!(
            "field id is {:?}, but the record is listed as {:?}",
            record.def.id, scanned.id
        ));
    }
    let timing = record.def.timing().map_err(|e| e.to_string())?;
    let action = match record.status {
        ScheduleStatus::Paused | ScheduleStatus::Completed => Action::Unindex,
        ScheduleStatus::Active if record.exhausted() => Action::Complete,
        ScheduleStatus::Active => match record.next_run_ms {
            Some(next) if record.def.end_ms.is_none_or(|end| next <= end) => Action::Index(next),
            Some(_) => Action::Complete,
            None => match timing.first_at_or_after(now_ms) {
                Some(next) => Action::Schedule(next),
                None => Action::Complete,
            },
        },
    };
    Ok(Some(Decision {
        id: scanned.id.clone(),
        version: version.clone(),
        action,
    }))
}

/// The due-index score migrate_apply gives an indexed record whose next run is
/// `next` (`lua/lib/schedule.lua` sched_due_at): the slot plus its jitter, or an
/// earlier waiting trigger, backfilled or buffered slot. (A buffered slot waits in the
/// index only once no occurrence is outstanding, which the record read here does not
/// say; the dry run counts it as waiting.)
fn due_score(namespace: &str, record: &ScheduleRecord, next: i64) -> i64 {
    let jitter = record.def.jitter_ms;
    let jittered = if jitter > 0 {
        let id = occurrence_id(namespace, &record.def.id, next, record.revision);
        next + jitter_offset_ms(&id, jitter)
    } else {
        next
    };
    [record.trigger_ms, record.backfill_ms, record.buffered_ms]
        .into_iter()
        .flatten()
        .fold(jittered, i64::min)
}

/// The counts migrate_apply would report for these decisions.
fn dry_counts(namespace: &str, records: &[ScannedRecord], decisions: &[Decision]) -> ApplyCounts {
    let scanned: HashMap<&str, &ScannedRecord> =
        records.iter().map(|r| (r.id.as_str(), r)).collect();
    let mut counts = ApplyCounts::default();
    for d in decisions {
        let record = scanned.get(d.id.as_str());
        let score = record.and_then(|r| r.score);
        let scheduled = record.and_then(|r| match &r.found {
            Scanned::Record { record, .. } => Some(record),
            _ => None,
        });
        let legacy = record.is_some_and(|r| {
            matches!(
                r.found,
                Scanned::Record {
                    legacy_hash: true,
                    ..
                }
            )
        });
        counts.converted += u64::from(legacy);
        match (d.action, score) {
            (Action::Index(_), None) => counts.indexed += 1,
            (Action::Index(ms), Some(s))
                if scheduled.map_or(ms, |r| due_score(namespace, r, ms)) != s =>
            {
                counts.repaired += 1
            }
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
