//! `lua/distrust_jobs.lua`: refuse a namespace whose job sequence went backwards
//! until Migrate rebuilds its job metadata (issue 29; `crate::monitor`).

use super::{delete_schedule::single_flag, prelude::*};

script!(DistrustJobs: "distrust_jobs", Job, Arity::Exactly(1), Arity::Exactly(1));

pub(crate) struct DistrustJobs {
    /// The job sequence the monitor saw before.
    pub(crate) seen: u64,
}

impl Operation for DistrustJobs {
    /// Whether the namespace is now refused (false: its sequence is back at or past
    /// `seen`, nothing written).
    type Output = bool;

    fn encode(&self, keys: &NamespaceKeys, call: &mut Call) {
        call.key(keys.meta()).arg("seen", self.seen);
    }

    fn decode(&self, reply: Reply) -> Result<Self::Output, StoreError> {
        single_flag(reply)
    }
}

#[cfg(test)]
pub(super) fn sample() -> DistrustJobs {
    DistrustJobs { seen: 10 }
}
