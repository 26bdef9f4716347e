//! `lua/retry_job.lua`: make a dead job pending again, attempts reset.

use super::{cancel_job::state_guarded, job_head, prelude::*};
use crate::domain::StateCheck;

script!(RetryJob<'_>: "retry_job", Job, Arity::Exactly(2), Arity::Exactly(9));

pub(crate) struct RetryJob<'a> {
    pub(crate) id: &'a str,
}

impl Operation for RetryJob<'_> {
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
pub(super) fn sample() -> RetryJob<'static> {
    RetryJob { id: "j" }
}
