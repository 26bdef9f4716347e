//! `lua/retry_job.lua`: make a dead job pending again, attempts reset.

use super::{
    cancel_job::{state_guarded, Guarded},
    job_head,
    prelude::*,
};

script!(RetryJob<'_>: "retry_job", Job, Arity::Exactly(2), Arity::Exactly(9));

pub(crate) struct RetryJob<'a> {
    pub(crate) id: &'a str,
}

impl Operation for RetryJob<'_> {
    /// `register`: graph work was queued (a flow's node re-armed, issue 34).
    type Output = Guarded;

    fn encode(&self, keys: &NamespaceKeys, call: &mut Call) {
        job_head(keys, call);
        call.arg("id", self.id);
    }

    fn decode(&self, mut reply: Reply) -> Result<Self::Output, StoreError> {
        state_guarded(&mut reply, true)
    }
}

#[cfg(test)]
pub(super) fn sample() -> RetryJob<'static> {
    RetryJob { id: "j" }
}
