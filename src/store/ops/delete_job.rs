//! `lua/delete_job.lua`: remove one job that no worker holds (issue 36).

use super::{cancel_job::state_guarded, job_head, prelude::*};
use crate::domain::StateCheck;

script!(DeleteJob<'_>: "delete_job", Job, Arity::Exactly(2), Arity::Exactly(9));

pub(crate) struct DeleteJob<'a> {
    pub(crate) id: &'a str,
}

impl Operation for DeleteJob<'_> {
    /// The job as it was just before it was deleted; `WrongState` when it is active.
    type Output = StateCheck;

    fn encode(&self, keys: &NamespaceKeys, call: &mut Call) {
        job_head(keys, call);
        call.arg("id", self.id);
    }

    fn decode(&self, mut reply: Reply) -> Result<Self::Output, StoreError> {
        Ok(state_guarded(&mut reply, false)?.check)
    }
}

#[cfg(test)]
pub(super) fn sample() -> DeleteJob<'static> {
    DeleteJob { id: "j" }
}
