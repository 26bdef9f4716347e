//! `lua/retry_dead_jobs.lua`: make a batch of a queue's dead jobs pending again.

use super::{job_head, prelude::*};

script!(RetryDeadJobs<'_>: "retry_dead_jobs", Job, Arity::Exactly(2), Arity::Exactly(11));

/// Most jobs one call may retry (the script's run time is bounded by it).
pub(crate) const MAX_BATCH: u32 = 500;

pub(crate) struct RetryDeadJobs<'a> {
    pub(crate) queue: &'a str,
    /// Capped at [`MAX_BATCH`].
    pub(crate) limit: u32,
    /// Only the dead jobs of this error group (issue 33; "" = every dead job).
    pub(crate) fingerprint: &'a str,
}

/// What one retry call revived.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RetriedBatch {
    pub(crate) retried: u32,
    /// Dead jobs remain.
    pub(crate) more: bool,
    /// Graph work was queued (a flow's node re-armed, issue 34): put the namespace in
    /// the prune due-set.
    pub(crate) register: bool,
}

impl Operation for RetryDeadJobs<'_> {
    type Output = RetriedBatch;

    fn encode(&self, keys: &NamespaceKeys, call: &mut Call) {
        job_head(keys, call);
        call.arg("queue", self.queue)
            .arg("limit", self.limit.clamp(1, MAX_BATCH))
            .arg("fingerprint", self.fingerprint);
    }

    fn decode(&self, mut reply: Reply) -> Result<Self::Output, StoreError> {
        let retried = u32::try_from(reply.count()?).unwrap_or(u32::MAX);
        let more = reply.flag()?;
        let register = reply.flag()?;
        reply.finish()?;
        Ok(RetriedBatch {
            retried,
            more,
            register,
        })
    }
}

#[cfg(test)]
pub(super) fn sample() -> RetryDeadJobs<'static> {
    RetryDeadJobs {
        queue: "q",
        limit: 10,
        fingerprint: "",
    }
}
