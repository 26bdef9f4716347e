//! `lua/migrate_index.lua`: walk one batch of the due index and drop (or re-score)
//! what no record backs.

use super::{migrate_scan::Cursor, prelude::*, schedule_head, under_lock};

script!(MigrateIndex<'_>: "migrate_index", Schedule, Arity::Exactly(5), Arity::Exactly(6));

pub(crate) struct MigrateIndex<'a> {
    pub(crate) token: &'a str,
    pub(crate) cursor: &'a Cursor,
    /// ZSCAN COUNT. Each entry costs a record read inside the script, so callers keep
    /// it at the record scan's step (a 500-entry walk measured 16 ms).
    pub(crate) batch: u32,
    pub(crate) dry_run: bool,
}

#[derive(Debug, Clone)]
pub(crate) struct IndexBatch {
    pub(crate) cursor: Cursor,
    pub(crate) removed: u64,
    pub(crate) repaired: u64,
}

impl Operation for MigrateIndex<'_> {
    /// `None` when the lock was lost (nothing written).
    type Output = Option<IndexBatch>;

    fn encode(&self, keys: &NamespaceKeys, call: &mut Call) {
        schedule_head(keys, call);
        call.key(keys.due())
            .key(keys.migrate_lock())
            .arg("token", self.token)
            .arg("cursor", self.cursor.as_str())
            .arg("batch", self.batch)
            .flag("dry_run", self.dry_run);
    }

    fn decode(&self, mut reply: Reply) -> Result<Self::Output, StoreError> {
        let batch = if under_lock(&mut reply)? {
            let cursor = Cursor::from_reply(&mut reply)?;
            reply.count()?; // entries scanned
            Some(IndexBatch {
                cursor,
                removed: reply.count()?,
                repaired: reply.count()?,
            })
        } else {
            None
        };
        reply.finish()?;
        Ok(batch)
    }
}

#[cfg(test)]
pub(super) fn sample() -> MigrateIndex<'static> {
    use std::sync::LazyLock;
    static START: LazyLock<Cursor> = LazyLock::new(Cursor::start);
    MigrateIndex {
        token: "t",
        cursor: &START,
        batch: 50,
        dry_run: false,
    }
}
