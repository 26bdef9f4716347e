//! Store operations behind Migrate and the namespace status: each one script, each
//! bounded by a batch size. The decisions (what a record's index entry should be) are
//! made in `crate::migrate`; this module only reads and writes.

use std::collections::HashMap;

use deadpool_redis::redis::{self, Value};

use super::{
    reply::{array, bytes, fields, int, text},
    scripts, Store, StoreError,
};

/// The type of a namespace's `:ids` listing key, which tells the layout apart.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Listing {
    /// No listing: an empty (or never used) namespace.
    None,
    /// A SET: the pre-index layout.
    Legacy,
    /// A ZSET: schema 2.
    Current,
    /// Schema 3's listing: sorted-set leaves under a sorted set of boundaries.
    Tree,
    /// Anything else: not dueq's.
    Foreign(String),
}

/// O(1) facts about one namespace.
#[derive(Debug, Clone)]
pub struct NamespaceState {
    /// The meta hash's `schema` field, if any.
    pub schema: Option<String>,
    pub listing: Listing,
    /// The meta `indexed` count, if recorded.
    pub expected_index: Option<u64>,
    pub index_size: u64,
    /// Remaining ttl of a Migrate lock, if one is held.
    pub lock_ttl_ms: Option<i64>,
    /// Entries in the listing (SCARD or ZCARD).
    pub listed: u64,
    /// The meta hash's `jobs` field (the job layout), if any.
    pub jobs_layout: Option<String>,
    /// Meta holds `job_seq`, which only job layout 1 kept.
    pub legacy_jobs: bool,
}

impl NamespaceState {
    /// The schema version: recorded in meta, 1 for the pre-index layout (which has
    /// no meta), 0 for a namespace with no data or with its meta gone.
    pub fn schema_version(&self) -> u32 {
        match (&self.schema, &self.listing) {
            (Some(v), _) => v.parse().unwrap_or(0),
            (None, Listing::Legacy) => 1,
            _ => 0,
        }
    }

    /// Whether the schedule scripts refuse this namespace until Migrate runs (the
    /// same judgement as lua/lib/guard.lua).
    pub fn needs_migrate(&self) -> bool {
        match (&self.schema, &self.listing) {
            (_, Listing::Legacy) | (_, Listing::Foreign(_)) => true,
            (None, Listing::Current) | (None, Listing::Tree) => true,
            // Schema 2 without a listing holds no schedule record to convert: the
            // guard records it as current in passing.
            (Some(v), Listing::None) if v == "2" => false,
            (Some(_), _) => self.schema_version() != super::keys::SCHEMA_VERSION,
            (None, Listing::None) => false,
        }
    }

    /// The job layout version: recorded in meta, 1 when layout 1's counter is there
    /// instead, 0 for a namespace that never held jobs.
    pub fn jobs_layout_version(&self) -> u32 {
        match (&self.jobs_layout, self.legacy_jobs) {
            (Some(v), _) => v.parse().unwrap_or(0),
            (None, true) => 1,
            (None, false) => 0,
        }
    }

    /// Whether the job scripts refuse this namespace until Migrate runs (the same
    /// judgement as `jobs_guard` in lua/lib/job.lua).
    pub fn jobs_need_migrate(&self) -> bool {
        match &self.jobs_layout {
            Some(v) => v.parse::<u32>().ok() != Some(super::keys::JOBS_LAYOUT),
            None => self.legacy_jobs,
        }
    }

    /// Entries the due index lacks, by the O(1) count the scripts keep. Meaningful
    /// only for a current namespace that no Migrate is rebuilding.
    pub fn missing_entries(&self) -> u64 {
        if self.needs_migrate() || self.lock_ttl_ms.is_some() {
            return 0;
        }
        self.expected_index
            .unwrap_or(0)
            .saturating_sub(self.index_size)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LockReply {
    Ok,
    Held { ttl_ms: i64 },
    Lost,
}

#[derive(Debug, Clone, Copy)]
pub enum LockOp {
    Acquire,
    Renew,
    Release,
}

/// How Migrate walks a listing: the SET of schema 1 (and of an import source), the
/// ZSET of schema 2, or schema 3's leaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Walk {
    Set,
    Zset,
    Tree,
}

/// One record read by a scan batch.
#[derive(Debug, Clone)]
pub struct ScannedRecord {
    pub id: String,
    /// Redis type of the record key: "string" for a packed record (schema 3),
    /// "hash" for an older one or an import source's, "none" when missing.
    pub key_type: String,
    /// Its due-index score, if it has one.
    pub score: Option<i64>,
    /// What migrate_apply re-checks before writing ("rev|status|next_ms|runs" as
    /// the scripts read it; empty for an import source or an unreadable record).
    pub state: String,
    pub fields: HashMap<String, Vec<u8>>,
}

#[derive(Debug, Clone)]
pub struct ScanBatch {
    /// "0" when the walk is complete.
    pub cursor: String,
    pub records: Vec<ScannedRecord>,
}

/// What a record's index entries should be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Active with this next run.
    Index(i64),
    /// Active, but its next run had to be computed: write it, then index it.
    Schedule(i64),
    /// Active with no slot left: mark completed.
    Complete,
    /// Paused or completed: listed, not indexed.
    Unindex,
}

#[derive(Debug, Clone)]
pub struct Decision {
    pub id: String,
    /// The record's state as scanned (`ScannedRecord::state`).
    pub revision: String,
    pub action: Action,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ApplyCounts {
    pub indexed: u64,
    pub repaired: u64,
    pub removed: u64,
    pub skipped: u64,
    /// Records rewritten from a hash (schema 1 and 2) into the packed record.
    pub converted: u64,
}

/// A schedule converted from an import source, in dueq's record fields.
#[derive(Debug, Clone, Default)]
pub struct ImportRecord {
    pub id: String,
    pub kind: &'static str,
    pub cron: String,
    pub every_ms: String,
    pub tz: String,
    pub start_ms: String,
    pub end_ms: String,
    pub limit: String,
    pub job_name: String,
    pub payload: Vec<u8>,
    pub headers: String,
    pub status: &'static str,
    pub runs: String,
    pub last_ms: String,
    pub next_ms: String,
    pub created_ms: String,
}

impl ImportRecord {
    fn args(&self) -> [Vec<u8>; 16] {
        let b = |s: &str| s.as_bytes().to_vec();
        [
            b(&self.id),
            b(self.kind),
            b(&self.cron),
            b(&self.every_ms),
            b(&self.tz),
            b(&self.start_ms),
            b(&self.end_ms),
            b(&self.limit),
            b(&self.job_name),
            self.payload.clone(),
            b(&self.headers),
            b(self.status),
            b(&self.runs),
            b(&self.last_ms),
            b(&self.next_ms),
            b(&self.created_ms),
        ]
    }
}

#[derive(Debug, Clone, Copy, Default)]
pub struct ImportCounts {
    pub imported: u64,
    pub already_present: u64,
    pub indexed: u64,
}

#[derive(Debug, Clone)]
pub struct IndexBatch {
    pub cursor: String,
    pub scanned: u64,
    pub removed: u64,
    pub repaired: u64,
}

/// Most records one migrate_scan call reads (see `Store::scan_records`). Measured
/// on a busy 2-core box migrating 1M schedules (`dueq bench --only migrate`): at
/// 200, 37 of 17k scripts crossed 10 ms; at 100, 2-7 of 30k; at 50, none of 60k
/// (longest 8.4 ms), for 13.1k -> 10.8k schedules/s.
const SCAN_STEP: usize = 50;

/// Most decisions one migrate_apply call writes. Writing costs more per record than
/// reading (pack, SET, list, index), so an apply call takes fewer: at 50 the longest
/// apply script of a 1M-schedule upgrade printed 5.66 ms alone and 9.46 ms in the
/// full bench run, too close to the 10 ms bound.
const APPLY_STEP: usize = 32;

fn count(v: Option<&Value>) -> u64 {
    v.and_then(int)
        .and_then(|n| u64::try_from(n).ok())
        .unwrap_or(0)
}

fn lost_or_ok(items: &[Value], what: &str) -> Result<bool, StoreError> {
    match items.first().and_then(text).as_deref() {
        Some("ok") => Ok(true),
        Some("lost") => Ok(false),
        other => Err(StoreError::corrupt(
            what,
            format!("unexpected tag {other:?}"),
        )),
    }
}

impl Store {
    /// Runs a script that first checks Migrate's lock: its reply is `"ok", ...` or
    /// `"lost"`. `None`: the lock was lost and the script wrote nothing.
    pub(super) async fn eval_under_lock(
        &self,
        script: &redis::Script,
        keys: &[&[u8]],
        args: &[&[u8]],
        what: &str,
    ) -> Result<Option<Vec<Value>>, StoreError> {
        let items = array(self.eval(script, keys, args).await?, what)?;
        Ok(lost_or_ok(&items, what)?.then_some(items))
    }

    pub async fn namespace_status(&self, namespace: &str) -> Result<NamespaceState, StoreError> {
        let keys = self.keys(namespace);
        let (meta, ids, due, lock) = (keys.meta(), keys.ids(), keys.due(), keys.migrate_lock());
        let items = array(
            self.eval(
                &scripts::NAMESPACE_STATUS,
                &[
                    meta.as_bytes(),
                    ids.as_bytes(),
                    due.as_bytes(),
                    lock.as_bytes(),
                ],
                &[],
            )
            .await?,
            "namespace status reply",
        )?;
        let schema = items.first().and_then(text).filter(|s| !s.is_empty());
        let listing = match items.get(1).and_then(text).as_deref() {
            Some("none") | None => Listing::None,
            Some("set") => Listing::Legacy,
            Some("zset") => Listing::Current,
            Some("tree") => Listing::Tree,
            Some(other) => Listing::Foreign(other.to_owned()),
        };
        let expected_index = items
            .get(2)
            .and_then(int)
            .and_then(|n| u64::try_from(n).ok());
        let lock_ttl_ms = items.get(4).and_then(int).filter(|ttl| *ttl != -2);
        Ok(NamespaceState {
            schema,
            listing,
            expected_index,
            index_size: count(items.get(3)),
            lock_ttl_ms,
            listed: count(items.get(5)),
            jobs_layout: items.get(6).and_then(text).filter(|s| !s.is_empty()),
            legacy_jobs: items.get(7).and_then(int) == Some(1),
        })
    }

    pub async fn migrate_lock(
        &self,
        namespace: &str,
        op: LockOp,
        token: &str,
        ttl_ms: u64,
    ) -> Result<LockReply, StoreError> {
        let lock = self.keys(namespace).migrate_lock();
        let op = match op {
            LockOp::Acquire => "acquire",
            LockOp::Renew => "renew",
            LockOp::Release => "release",
        };
        let ttl = ttl_ms.to_string();
        let items = array(
            self.eval(
                &scripts::MIGRATE_LOCK,
                &[lock.as_bytes()],
                &[op.as_bytes(), token.as_bytes(), ttl.as_bytes()],
            )
            .await?,
            "migrate lock reply",
        )?;
        match items.first().and_then(text).as_deref() {
            Some("ok") => Ok(LockReply::Ok),
            Some("lost") => Ok(LockReply::Lost),
            Some("held") => Ok(LockReply::Held {
                ttl_ms: items.get(1).and_then(int).unwrap_or(0),
            }),
            other => Err(StoreError::corrupt(
                "migrate lock reply",
                format!("unexpected tag {other:?}"),
            )),
        }
    }

    /// One batch of records from the namespace's listing.
    pub async fn migrate_scan(
        &self,
        namespace: &str,
        walk: Walk,
        cursor: &str,
        batch: u32,
    ) -> Result<ScanBatch, StoreError> {
        let keys = self.keys(namespace);
        let (ids, due, prefix) = (keys.ids(), keys.due(), keys.schedule_prefix());
        self.scan_records(&ids, Some(&due), walk, &prefix, cursor, batch)
            .await
    }

    /// One batch of records of an import source: a SET of ids at `index`, one hash
    /// per id at `record_prefix` + id.
    pub async fn import_scan(
        &self,
        index: &str,
        record_prefix: &str,
        cursor: &str,
        batch: u32,
    ) -> Result<ScanBatch, StoreError> {
        self.scan_records(index, None, Walk::Set, record_prefix, cursor, batch)
            .await
    }

    /// Reads about `batch` records in script calls of at most `SCAN_STEP` records
    /// each: copying a record's hash out of a script costs ~20 µs, so a 500-record
    /// call would hold Redis for 10+ ms (tests/migrate.rs checks the slowlog).
    async fn scan_records(
        &self,
        listing: &str,
        due: Option<&str>,
        walk: Walk,
        record_prefix: &str,
        cursor: &str,
        batch: u32,
    ) -> Result<ScanBatch, StoreError> {
        let mut out = ScanBatch {
            cursor: cursor.to_owned(),
            records: Vec::new(),
        };
        loop {
            let step = (batch as usize)
                .saturating_sub(out.records.len())
                .clamp(1, SCAN_STEP);
            let next = self
                .scan_step(listing, due, walk, record_prefix, &out.cursor, step)
                .await?;
            out.cursor = next.cursor;
            out.records.extend(next.records);
            if out.cursor == "0" || out.records.len() >= batch as usize {
                return Ok(out);
            }
        }
    }

    async fn scan_step(
        &self,
        listing: &str,
        due: Option<&str>,
        walk: Walk,
        record_prefix: &str,
        cursor: &str,
        batch: usize,
    ) -> Result<ScanBatch, StoreError> {
        let kind = match walk {
            Walk::Set => "set",
            Walk::Zset => "zset",
            Walk::Tree => "tree",
        };
        let batch = batch.to_string();
        let mut keys: Vec<&[u8]> = vec![listing.as_bytes()];
        keys.extend(due.map(str::as_bytes));
        let items = array(
            self.eval(
                &scripts::MIGRATE_SCAN,
                &keys,
                &[
                    kind.as_bytes(),
                    cursor.as_bytes(),
                    batch.as_bytes(),
                    record_prefix.as_bytes(),
                ],
            )
            .await?,
            "migrate scan reply",
        )?;
        let bad = || StoreError::corrupt("migrate scan reply", "unexpected shape");
        let cursor = items.first().and_then(text).ok_or_else(bad)?;
        let mut records = Vec::new();
        let mut rest = items.get(2..).unwrap_or_default();
        while let [id, key_type, score, state, len, tail @ ..] = rest {
            let len = usize::try_from(int(len).ok_or_else(bad)?).map_err(|_| bad())?;
            if tail.len() < len {
                return Err(bad());
            }
            records.push(ScannedRecord {
                // Ids are UTF-8 by construction; a foreign byte string is kept lossy so
                // it can at least be reported.
                id: bytes(id)
                    .map(|b| String::from_utf8_lossy(&b).into_owned())
                    .ok_or_else(bad)?,
                key_type: text(key_type).ok_or_else(bad)?,
                score: int(score),
                state: text(state).ok_or_else(bad)?,
                fields: fields(&tail[..len]),
            });
            rest = &tail[len..];
        }
        Ok(ScanBatch { cursor, records })
    }

    /// Writes converted schedules that the namespace does not hold yet.
    /// `None`: the lock was lost, nothing written.
    pub async fn import_schedules(
        &self,
        namespace: &str,
        token: &str,
        records: &[ImportRecord],
    ) -> Result<Option<ImportCounts>, StoreError> {
        let keys = self.keys(namespace);
        let (due, ids, meta, lock) = (keys.due(), keys.ids(), keys.meta(), keys.migrate_lock());
        let schema = super::keys::SCHEMA_VERSION.to_string();
        let mut args: Vec<Vec<u8>> = vec![
            token.as_bytes().to_vec(),
            keys.schedule_prefix().into_bytes(),
            schema.into_bytes(),
        ];
        for r in records {
            args.extend(r.args());
        }
        let Some(items) = self
            .eval_under_lock(
                &scripts::IMPORT_SCHEDULES,
                &[
                    due.as_bytes(),
                    ids.as_bytes(),
                    meta.as_bytes(),
                    lock.as_bytes(),
                ],
                &args.iter().map(Vec::as_slice).collect::<Vec<_>>(),
                "import reply",
            )
            .await?
        else {
            return Ok(None);
        };
        Ok(Some(ImportCounts {
            imported: count(items.get(1)),
            already_present: count(items.get(2)),
            indexed: count(items.get(3)),
        }))
    }

    /// Deletes imported source records: each hash and its index entry.
    pub async fn delete_source(
        &self,
        index: &str,
        record_prefix: &str,
        ids: &[String],
    ) -> Result<(), StoreError> {
        if ids.is_empty() {
            return Ok(());
        }
        let mut pipe = redis::pipe();
        for id in ids {
            pipe.cmd("DEL")
                .arg(format!("{record_prefix}{id}"))
                .ignore()
                .cmd("SREM")
                .arg(index)
                .arg(id)
                .ignore();
        }
        self.query_pipe(&pipe).await
    }

    /// Applies one batch of decisions, in script calls of at most `APPLY_STEP`
    /// decisions each. `None`: the lock was lost, nothing more written.
    pub async fn migrate_apply(
        &self,
        namespace: &str,
        token: &str,
        decisions: &[Decision],
    ) -> Result<Option<ApplyCounts>, StoreError> {
        let mut total = ApplyCounts::default();
        for chunk in decisions.chunks(APPLY_STEP) {
            let Some(c) = self.apply_step(namespace, token, chunk).await? else {
                return Ok(None);
            };
            total.indexed += c.indexed;
            total.repaired += c.repaired;
            total.removed += c.removed;
            total.skipped += c.skipped;
            total.converted += c.converted;
        }
        Ok(Some(total))
    }

    async fn apply_step(
        &self,
        namespace: &str,
        token: &str,
        decisions: &[Decision],
    ) -> Result<Option<ApplyCounts>, StoreError> {
        let keys = self.keys(namespace);
        let (listing, meta) = (keys.ids(), keys.meta());
        let (due, lock, prefix) = (keys.due(), keys.migrate_lock(), keys.schedule_prefix());
        let mut args: Vec<Vec<u8>> = vec![token.as_bytes().to_vec(), prefix.into_bytes()];
        for d in decisions {
            let (action, ms) = match d.action {
                Action::Index(ms) => ("index", ms.to_string()),
                Action::Schedule(ms) => ("schedule", ms.to_string()),
                Action::Complete => ("complete", String::new()),
                Action::Unindex => ("unindex", String::new()),
            };
            args.extend([
                d.id.as_bytes().to_vec(),
                d.revision.as_bytes().to_vec(),
                action.as_bytes().to_vec(),
                ms.into_bytes(),
            ]);
        }
        let Some(items) = self
            .eval_under_lock(
                &scripts::MIGRATE_APPLY,
                &[
                    due.as_bytes(),
                    listing.as_bytes(),
                    lock.as_bytes(),
                    meta.as_bytes(),
                ],
                &args.iter().map(Vec::as_slice).collect::<Vec<_>>(),
                "migrate apply reply",
            )
            .await?
        else {
            return Ok(None);
        };
        Ok(Some(ApplyCounts {
            indexed: count(items.get(1)),
            repaired: count(items.get(2)),
            removed: count(items.get(3)),
            skipped: count(items.get(4)),
            converted: count(items.get(5)),
        }))
    }

    /// One batch of the due-index walk. `None`: the lock was lost.
    pub async fn migrate_index(
        &self,
        namespace: &str,
        token: &str,
        cursor: &str,
        batch: u32,
        dry_run: bool,
    ) -> Result<Option<IndexBatch>, StoreError> {
        let keys = self.keys(namespace);
        let (due, lock, prefix) = (keys.due(), keys.migrate_lock(), keys.schedule_prefix());
        let (ids, meta) = (keys.ids(), keys.meta());
        // Each entry costs a record read inside the script: the same bound as the record
        // reads keeps one call well under 10 ms (a 500-entry walk measured 16 ms).
        let batch = batch.min(SCAN_STEP as u32).to_string();
        let dry = if dry_run { "1" } else { "0" };
        let Some(items) = self
            .eval_under_lock(
                &scripts::MIGRATE_INDEX,
                &[
                    due.as_bytes(),
                    lock.as_bytes(),
                    ids.as_bytes(),
                    meta.as_bytes(),
                ],
                &[
                    token.as_bytes(),
                    cursor.as_bytes(),
                    batch.as_bytes(),
                    prefix.as_bytes(),
                    dry.as_bytes(),
                ],
                "migrate index reply",
            )
            .await?
        else {
            return Ok(None);
        };
        Ok(Some(IndexBatch {
            cursor: items
                .get(1)
                .and_then(text)
                .ok_or_else(|| StoreError::corrupt("migrate index reply", "no cursor"))?,
            scanned: count(items.get(2)),
            removed: count(items.get(3)),
            repaired: count(items.get(4)),
        }))
    }

    /// Records the schema version, drops the listing of schemas 1 and 2 and releases
    /// the lock. Returns the index size, or `None` when the lock was lost (nothing
    /// written).
    pub async fn migrate_finish(
        &self,
        namespace: &str,
        token: &str,
    ) -> Result<Option<u64>, StoreError> {
        let keys = self.keys(namespace);
        let (meta, ids, due, lock) = (keys.meta(), keys.ids(), keys.due(), keys.migrate_lock());
        let schema = super::keys::SCHEMA_VERSION.to_string();
        let Some(items) = self
            .eval_under_lock(
                &scripts::MIGRATE_FINISH,
                &[
                    meta.as_bytes(),
                    ids.as_bytes(),
                    due.as_bytes(),
                    lock.as_bytes(),
                ],
                &[token.as_bytes(), schema.as_bytes()],
                "migrate finish reply",
            )
            .await?
        else {
            return Ok(None);
        };
        Ok(Some(count(items.get(1))))
    }

    /// One SCAN step for namespace keys ending in `:<suffix>` (`ids`, `meta`).
    pub async fn scan_namespaces(
        &self,
        suffix: &str,
        cursor: u64,
        batch: u32,
    ) -> Result<(u64, Vec<String>), StoreError> {
        // The prefix holds no glob characters (validated at startup).
        let pattern = format!("{}:{{*}}:{suffix}", self.prefix);
        let (next, found): (u64, Vec<String>) =
            self.scan_keys(cursor, &pattern, batch, None).await?;
        let head = format!("{}:{{", self.prefix);
        let namespaces = found
            .iter()
            .filter_map(|key| {
                key.strip_prefix(&head)?
                    .strip_suffix(&format!("}}:{suffix}"))
            })
            .map(str::to_owned)
            .collect();
        Ok((next, namespaces))
    }
}
