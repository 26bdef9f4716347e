//! `lua/purge_jobs.lua`: delete a batch of a queue's jobs in one state.

use super::{job_head, prelude::*};

script!(PurgeJobs<'_>: "purge_jobs", Job, Arity::Exactly(2), Arity::Exactly(12));

/// Most jobs one call may delete (the script's run time is bounded by it).
pub(crate) const MAX_BATCH: u32 = 500;

/// The states a purge may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PurgeState {
    Pending,
    Delayed,
    Dead,
}

impl PurgeState {
    fn as_str(self) -> &'static str {
        match self {
            PurgeState::Pending => "pending",
            PurgeState::Delayed => "delayed",
            PurgeState::Dead => "dead",
        }
    }
}

pub(crate) struct PurgeJobs<'a> {
    pub(crate) queue: &'a str,
    pub(crate) state: PurgeState,
    /// Capped at [`MAX_BATCH`].
    pub(crate) limit: u32,
    /// With [`PurgeState::Dead`], only the dead jobs of this error group (issue 33;
    /// "" = every dead job).
    pub(crate) fingerprint: &'a str,
}

/// What one purge call deleted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PurgedBatch {
    pub(crate) purged: u32,
    /// Jobs in that state may remain.
    pub(crate) more: bool,
    /// A flow finished (its pending nodes were cancelled): the namespace must be put
    /// in the prune due-set.
    pub(crate) register: bool,
}

impl Operation for PurgeJobs<'_> {
    type Output = PurgedBatch;

    fn encode(&self, keys: &NamespaceKeys, call: &mut Call) {
        job_head(keys, call);
        call.arg("queue", self.queue)
            .arg("state", self.state.as_str())
            .arg("limit", self.limit.clamp(1, MAX_BATCH))
            .arg("fingerprint", self.fingerprint);
    }

    fn decode(&self, mut reply: Reply) -> Result<Self::Output, StoreError> {
        let purged = u32::try_from(reply.count()?).unwrap_or(u32::MAX);
        let more = reply.flag()?;
        let register = reply.flag()?;
        reply.finish()?;
        Ok(PurgedBatch {
            purged,
            more,
            register,
        })
    }
}

#[cfg(test)]
pub(super) fn sample() -> PurgeJobs<'static> {
    PurgeJobs {
        queue: "q",
        state: PurgeState::Dead,
        limit: 10,
        fingerprint: "",
    }
}
