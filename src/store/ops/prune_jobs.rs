//! `lua/prune_jobs.lua`: delete finished jobs past retention, a bounded batch a call.

use super::{job_head, prelude::*};

script!(PruneJobs: "prune_jobs", Job, Arity::Exactly(2), Arity::Exactly(11));

pub(crate) struct PruneJobs {
    pub(crate) max_age_ms: i64,
    pub(crate) keep: u64,
    pub(crate) batch: u32,
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct Pruned {
    pub(crate) deleted: u64,
    /// Another call would delete more now.
    pub(crate) more: bool,
    /// When the oldest kept job passes the retention age (none kept: `None`).
    pub(crate) next_ms: Option<i64>,
}

impl Operation for PruneJobs {
    type Output = Pruned;

    fn encode(&self, keys: &NamespaceKeys, call: &mut Call) {
        job_head(keys, call);
        call.arg("max_age_ms", self.max_age_ms)
            .arg("keep", self.keep)
            .arg("batch", self.batch);
    }

    fn decode(&self, mut reply: Reply) -> Result<Self::Output, StoreError> {
        let (deleted, more) = (reply.count()?, reply.flag()?);
        reply.count()?; // finished jobs kept: the next visit time says what matters
        let pruned = Pruned {
            deleted,
            more,
            next_ms: reply.opt_int()?,
        };
        reply.finish()?;
        Ok(pruned)
    }
}

#[cfg(test)]
pub(super) fn sample() -> PruneJobs {
    PruneJobs {
        max_age_ms: 1000,
        keep: 10,
        batch: 5,
    }
}
