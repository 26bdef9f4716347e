//! `lua/migrate_counts.lua`: Migrate's recount of one queue's pending and dead jobs,
//! for a namespace whose jobs predate the queue counts.

use super::{job_head, prelude::*, under_lock};

script!(MigrateCounts<'_>: "migrate_counts", Job, Arity::Exactly(3), Arity::Exactly(11));

pub(crate) struct MigrateCounts<'a> {
    pub(crate) token: &'a str,
    /// The queue to count; `None` records that every queue is counted.
    pub(crate) queue: Option<&'a str>,
    pub(crate) batch: u32,
}

/// What one call did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CountStep {
    /// The queue (or the namespace) is counted.
    pub(crate) done: bool,
    pub(crate) visited: u64,
}

impl Operation for MigrateCounts<'_> {
    /// `None` when the lock was lost (nothing written).
    type Output = Option<CountStep>;

    fn encode(&self, keys: &NamespaceKeys, call: &mut Call) {
        job_head(keys, call);
        call.key(keys.migrate_lock())
            .arg("token", self.token)
            .arg("queue", self.queue.unwrap_or(""))
            .arg("batch", self.batch.max(1));
    }

    fn decode(&self, mut reply: Reply) -> Result<Self::Output, StoreError> {
        let step = if under_lock(&mut reply)? {
            Some(CountStep {
                done: reply.flag()?,
                visited: reply.count()?,
            })
        } else {
            None
        };
        reply.finish()?;
        Ok(step)
    }
}

#[cfg(test)]
pub(super) fn sample() -> MigrateCounts<'static> {
    MigrateCounts {
        token: "t",
        queue: Some("q"),
        batch: 100,
    }
}
