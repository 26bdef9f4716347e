//! `lua/cancel_flow.lua` and `lua/retry_flow.lua`: cancel a flow's unfinished nodes, or
//! re-arm its failed ones (issue 34). Both start a sweep that drain_graph.lua finishes.

use super::{drain_graph::Drained, job_head, prelude::*};

script!(CancelFlow<'_>: "cancel_flow", Job, Arity::Exactly(2), Arity::Exactly(9));

pub(crate) struct CancelFlow<'a> {
    pub(crate) flow_id: &'a str,
}

impl Operation for CancelFlow<'_> {
    /// None: no such flow (or one still being stored).
    type Output = Option<Drained>;

    fn encode(&self, keys: &NamespaceKeys, call: &mut Call) {
        job_head(keys, call);
        call.arg("flow_id", self.flow_id);
    }

    fn decode(&self, mut reply: Reply) -> Result<Self::Output, StoreError> {
        sweep_reply(&mut reply, false)
    }
}

/// `"missing"`, or `"ok", more, register[, woke]`.
pub(super) fn sweep_reply(reply: &mut Reply, woke: bool) -> Result<Option<Drained>, StoreError> {
    let out = match reply.text()?.as_str() {
        "missing" => None,
        "ok" => Some(Drained {
            more: reply.flag()?,
            register: reply.flag()?,
            woke: woke && reply.flag()?,
        }),
        other => {
            return Err(StoreError::corrupt(
                "flow sweep reply",
                format!("unexpected {other:?}"),
            ))
        }
    };
    if !reply.is_done() {
        return Err(StoreError::corrupt("flow sweep reply", "unexpected items left"));
    }
    Ok(out)
}

#[cfg(test)]
pub(super) fn sample() -> CancelFlow<'static> {
    CancelFlow { flow_id: "f" }
}
