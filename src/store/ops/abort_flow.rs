//! `lua/abort_flow.lua`: give up a flow's store that will not be committed (issue 34).

use super::{job_head, prelude::*};

script!(AbortFlow<'_>: "abort_flow", Job, Arity::Exactly(2), Arity::Exactly(11));

/// Most nodes one call deletes.
pub(crate) const ABORT_BATCH: u32 = 64;

pub(crate) struct AbortFlow<'a> {
    pub(crate) flow_id: &'a str,
    pub(crate) token: &'a str,
}

impl Operation for AbortFlow<'_> {
    /// Nodes are left to delete.
    type Output = bool;

    fn encode(&self, keys: &NamespaceKeys, call: &mut Call) {
        job_head(keys, call);
        call.arg("flow_id", self.flow_id)
            .arg("token", self.token)
            .arg("limit", ABORT_BATCH);
    }

    fn decode(&self, mut reply: Reply) -> Result<Self::Output, StoreError> {
        let more = reply.flag()?;
        reply.finish()?;
        Ok(more)
    }
}

#[cfg(test)]
pub(super) fn sample() -> AbortFlow<'static> {
    AbortFlow {
        flow_id: "f",
        token: "t",
    }
}
