//! `lua/migrate_scan.lua`: one batch of schedule records for Migrate, from a
//! namespace's listing or from an import source.

use std::collections::HashMap;

use super::prelude::*;
use crate::{domain::ScheduleRecord, store::keys::BoringnodeKeys};

script!(MigrateScan<'_>: "migrate_scan", Schedule, Arity::AtLeast(1), Arity::Exactly(5));

/// Most records one call reads. Copying a record out of a script costs ~20 µs;
/// measured on a busy 2-core box migrating 1M schedules (`dueq-bench --only
/// migrate`): at 200, 37 of 17k scripts crossed 10 ms; at 100, 2-7 of 30k; at 50,
/// none of 60k (longest 8.4 ms), for 13.1k -> 10.8k schedules/s. The index walk
/// reads a record per entry, so it takes the same step.
pub(crate) const SCAN_STEP: u32 = 50;

/// How a namespace lists its schedules, which decides how Migrate walks it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Walk {
    /// The SET of schema 1.
    Set,
    /// The sorted set of schema 2.
    SortedSet,
    /// Schema 3's leaves.
    Tree,
}

/// Where a scan reads.
#[derive(Clone, Copy)]
pub(crate) enum ScanSource<'a> {
    Namespace(Walk),
    Import(&'a BoringnodeKeys),
}

/// Where a walk stands; opaque to callers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Cursor(String);

impl Cursor {
    pub(crate) fn start() -> Self {
        Cursor("0".to_owned())
    }

    /// True once the walk has come round: there is nothing after it.
    pub(crate) fn is_done(&self) -> bool {
        self.0 == "0"
    }

    pub(crate) fn from_reply(reply: &mut Reply) -> Result<Self, StoreError> {
        reply.text().map(Cursor)
    }

    pub(crate) fn as_str(&self) -> &str {
        &self.0
    }
}

pub(crate) struct MigrateScan<'a> {
    pub(crate) source: ScanSource<'a>,
    pub(crate) cursor: &'a Cursor,
    pub(crate) batch: u32,
}

/// What a record key held, as Migrate needs to judge it.
#[derive(Debug, Clone)]
pub(crate) enum Scanned {
    /// Listed, but no key holds it.
    Missing,
    /// A schedule record this dueq reads: packed, or a hash of schema 1 or 2.
    Record {
        record: Box<ScheduleRecord>,
        /// What migrate_apply re-checks before writing.
        version: RecordVersion,
        /// Still a hash: applying a decision rewrites it packed.
        legacy_hash: bool,
    },
    /// An import source's hash, its fields as they are.
    Foreign(HashMap<String, Vec<u8>>),
    /// Not a record that can be used: why.
    Unusable(String),
}

/// A record's state as scanned ("rev|status|next_ms|runs", lua/lib/schedule.lua
/// migrate_state); opaque outside the store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RecordVersion(pub(super) String);

impl RecordVersion {
    pub(crate) fn as_str(&self) -> &str {
        &self.0
    }
}

#[derive(Debug, Clone)]
pub(crate) struct ScannedRecord {
    pub(crate) id: String,
    /// Its due-index score, if it has one.
    pub(crate) score: Option<i64>,
    pub(crate) found: Scanned,
}

pub(crate) struct ScanBatch {
    pub(crate) cursor: Cursor,
    pub(crate) records: Vec<ScannedRecord>,
}

impl Operation for MigrateScan<'_> {
    type Output = ScanBatch;

    fn encode(&self, keys: &NamespaceKeys, call: &mut Call) {
        let walk = match &self.source {
            ScanSource::Namespace(walk) => {
                let listing = match walk {
                    Walk::Tree => keys.listing_top(),
                    Walk::Set | Walk::SortedSet => keys.ids(),
                };
                call.key(listing)
                    .key(keys.due())
                    .arg("record_prefix", keys.schedule_prefix())
                    .arg("leaf_prefix", keys.listing_leaf_prefix());
                *walk
            }
            ScanSource::Import(source) => {
                call.key(&source.index)
                    .arg("record_prefix", &source.record_prefix)
                    .arg("leaf_prefix", "");
                Walk::Set
            }
        };
        let walk = match walk {
            Walk::Set => "set",
            Walk::SortedSet => "zset",
            Walk::Tree => "tree",
        };
        call.arg("walk", walk)
            .arg("cursor", self.cursor.as_str())
            .arg("batch", self.batch);
    }

    fn decode(&self, mut reply: Reply) -> Result<Self::Output, StoreError> {
        let cursor = Cursor::from_reply(&mut reply)?;
        let count = reply.count()?;
        let mut records = Vec::new();
        for _ in 0..count {
            records.push(self.record(&mut reply)?);
        }
        reply.finish()?;
        Ok(ScanBatch { cursor, records })
    }
}

impl MigrateScan<'_> {
    /// `id, key type, score, state, field count, fields...`
    fn record(&self, reply: &mut Reply) -> Result<ScannedRecord, StoreError> {
        // Ids are UTF-8 by construction; a foreign byte string is kept lossy so it can
        // at least be reported.
        let id = String::from_utf8_lossy(&reply.bytes()?).into_owned();
        let key_type = reply.text()?;
        let score = reply.opt_int()?;
        let state = reply.text()?;
        let fields = reply.counted_fields()?.named(format!("schedule {id:?}"));
        let found = match (&self.source, key_type.as_str()) {
            (_, "none") => Scanned::Missing,
            (ScanSource::Import(_), "hash") => Scanned::Foreign(fields.into_map()),
            (ScanSource::Import(_), other) => {
                Scanned::Unusable(format!("wrong type: {other}, expected a hash"))
            }
            (ScanSource::Namespace(_), "hash" | "string") if state.is_empty() => {
                Scanned::Unusable("not a dueq schedule record: it does not unpack".into())
            }
            (ScanSource::Namespace(_), kind @ ("hash" | "string")) => {
                match records::schedule(&fields) {
                    Ok(record) => Scanned::Record {
                        record: Box::new(record),
                        version: RecordVersion(state),
                        legacy_hash: kind == "hash",
                    },
                    Err(error) => Scanned::Unusable(error.to_string()),
                }
            }
            (ScanSource::Namespace(_), other) => {
                Scanned::Unusable(format!("wrong type: {other}, expected a schedule record"))
            }
        };
        Ok(ScannedRecord { id, score, found })
    }
}

#[cfg(test)]
pub(super) fn sample() -> MigrateScan<'static> {
    use std::sync::LazyLock;
    static START: LazyLock<Cursor> = LazyLock::new(Cursor::start);
    MigrateScan {
        source: ScanSource::Namespace(Walk::Tree),
        cursor: &START,
        batch: 50,
    }
}
