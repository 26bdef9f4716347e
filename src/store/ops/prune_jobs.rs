//! `lua/prune_jobs.lua`: delete finished jobs past retention, a bounded batch a call.

use super::{job_head, prelude::*};

script!("prune_jobs", Job, Arity::Exactly(2), Arity::Exactly(11));

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
    /// Finished jobs still kept (retention work the namespace will have later).
    pub(crate) kept: u64,
}

impl Operation for PruneJobs {
    type Output = Pruned;

    fn script(&self) -> &'static ScriptDef {
        &SCRIPT
    }

    fn encode(&self, keys: &NamespaceKeys, call: &mut Call) {
        job_head(keys, call);
        call.arg(self.max_age_ms).arg(self.keep).arg(self.batch);
    }

    fn decode(&self, mut reply: Reply) -> Result<Self::Output, StoreError> {
        let pruned = Pruned {
            deleted: reply.count()?,
            more: reply.flag()?,
            kept: reply.count()?,
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
