//! `lua/migrate_finish.lua`: record that a namespace is fully migrated, drop the
//! listing of schemas 1 and 2, and release the lock.

use super::{prelude::*, under_lock};
use crate::domain::SCHEDULE_SCHEMA;

script!(MigrateFinish<'_>: "migrate_finish", Core, Arity::Exactly(5), Arity::Exactly(3));

pub(crate) struct MigrateFinish<'a> {
    pub(crate) token: &'a str,
    /// The listing's size to record, when meta lost it; `None` keeps the count.
    pub(crate) listed: Option<u64>,
}

impl Operation for MigrateFinish<'_> {
    /// The due index's size, or `None` when the lock was lost (nothing written).
    type Output = Option<u64>;

    fn encode(&self, keys: &NamespaceKeys, call: &mut Call) {
        call.key(keys.meta())
            .key(keys.ids())
            .key(keys.due())
            .key(keys.migrate_lock())
            .key(keys.target_due())
            .arg("token", self.token)
            .arg("schema", SCHEDULE_SCHEMA)
            .opt(
                "listed",
                self.listed.map(|n| i64::try_from(n).unwrap_or(i64::MAX)),
            );
    }

    fn decode(&self, mut reply: Reply) -> Result<Self::Output, StoreError> {
        let size = if under_lock(&mut reply)? {
            Some(reply.count()?)
        } else {
            None
        };
        reply.finish()?;
        Ok(size)
    }
}

#[cfg(test)]
pub(super) fn sample() -> MigrateFinish<'static> {
    MigrateFinish {
        token: "t",
        listed: None,
    }
}
