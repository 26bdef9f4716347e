//! `lua/release_job.lua`: end an active job's lease now, without its token (issue
//! 36); the transition is `release_jobs`' (lib/job.lua `lease_end`).

use super::{
    cancel_job::{state_guarded, Guarded},
    job_head,
    prelude::*,
};

script!(ReleaseJob<'_>: "release_job", Job, Arity::Exactly(2), Arity::Exactly(11));

pub(crate) struct ReleaseJob<'a> {
    pub(crate) id: &'a str,
    /// Count the released attempt (dead at max_attempts); else it is given back.
    pub(crate) count_attempt: bool,
    /// Recorded in the job's error history.
    pub(crate) reason: &'a str,
}

impl Operation for ReleaseJob<'_> {
    type Output = Guarded;

    fn encode(&self, keys: &NamespaceKeys, call: &mut Call) {
        job_head(keys, call);
        call.arg("id", self.id)
            .arg("count", if self.count_attempt { "1" } else { "" })
            .arg("reason", self.reason);
    }

    fn decode(&self, mut reply: Reply) -> Result<Self::Output, StoreError> {
        state_guarded(&mut reply, true)
    }
}

#[cfg(test)]
pub(super) fn sample() -> ReleaseJob<'static> {
    ReleaseJob {
        id: "j",
        count_attempt: false,
        reason: "r",
    }
}
