//! `lua/migrate_dead_groups.lua`: Migrate's indexing of the dead jobs stored before
//! the error groups (issue 33), one bounded step per call; a dry run only counts.

use super::{job_head, prelude::*, under_lock};

script!(MigrateDeadGroups<'_>: "migrate_dead_groups", Job, Arity::Exactly(3), Arity::Exactly(14));

/// Where a walk over the queues' dead sets continues.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct DeadCursor {
    /// The queue ("" = from the first queue).
    pub(crate) queue: String,
    /// The dead ms as Redis printed it ("" = from the queue's first dead job).
    pub(crate) score: String,
    /// Jobs of that score already visited.
    pub(crate) skip: u64,
}

pub(crate) struct MigrateDeadGroups<'a> {
    pub(crate) token: &'a str,
    pub(crate) dry_run: bool,
    pub(crate) cursor: &'a DeadCursor,
    pub(crate) batch: u32,
}

/// What one call found (and, unless a dry run, indexed).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct DeadGroupsReply {
    /// `None` once every queue was visited.
    pub(crate) next: Option<DeadCursor>,
    pub(crate) visited: u64,
    /// Dead jobs in no group: indexed (a dry run only counts them).
    pub(crate) indexed: u64,
}

impl Operation for MigrateDeadGroups<'_> {
    /// `None` when the lock was lost (nothing written).
    type Output = Option<DeadGroupsReply>;

    fn encode(&self, keys: &NamespaceKeys, call: &mut Call) {
        job_head(keys, call);
        call.key(keys.migrate_lock())
            .arg("token", self.token)
            .arg("dry_run", if self.dry_run { "1" } else { "0" })
            .arg("queue", self.cursor.queue.as_str())
            .arg("score", self.cursor.score.as_str())
            .arg("skip", self.cursor.skip)
            .arg("batch", self.batch.max(1));
    }

    fn decode(&self, mut reply: Reply) -> Result<Self::Output, StoreError> {
        if !under_lock(&mut reply)? {
            reply.finish()?;
            return Ok(None);
        }
        let done = reply.flag()?;
        let cursor = DeadCursor {
            queue: reply.text()?,
            score: reply.text()?,
            skip: reply.count()?,
        };
        let out = DeadGroupsReply {
            next: (!done).then_some(cursor),
            visited: reply.count()?,
            indexed: reply.count()?,
        };
        reply.finish()?;
        Ok(Some(out))
    }
}

#[cfg(test)]
pub(super) fn sample() -> MigrateDeadGroups<'static> {
    static CURSOR: DeadCursor = DeadCursor {
        queue: String::new(),
        score: String::new(),
        skip: 0,
    };
    MigrateDeadGroups {
        token: "t",
        dry_run: true,
        cursor: &CURSOR,
        batch: 10,
    }
}
