//! `lua/retry_flow.lua`: re-arm a flow's dead, cancelled and skipped nodes (issue 34).

use super::{cancel_flow::sweep_reply, drain_graph::Drained, job_head, prelude::*};

script!(RetryFlow<'_>: "retry_flow", Job, Arity::Exactly(2), Arity::Exactly(9));

pub(crate) struct RetryFlow<'a> {
    pub(crate) flow_id: &'a str,
}

impl Operation for RetryFlow<'_> {
    /// None: no such flow (or one still being stored).
    type Output = Option<Drained>;

    fn encode(&self, keys: &NamespaceKeys, call: &mut Call) {
        job_head(keys, call);
        call.arg("flow_id", self.flow_id);
    }

    fn decode(&self, mut reply: Reply) -> Result<Self::Output, StoreError> {
        sweep_reply(&mut reply, true)
    }
}

#[cfg(test)]
pub(super) fn sample() -> RetryFlow<'static> {
    RetryFlow { flow_id: "f" }
}
