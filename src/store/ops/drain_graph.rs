//! `lua/drain_graph.lua`: the next steps of a namespace's queued graph work (issue 34).

use super::{job_head, prelude::*};

script!(DrainGraph: "drain_graph", Job, Arity::Exactly(2), Arity::Exactly(8));

pub(crate) struct DrainGraph;

/// What one drain call did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Drained {
    /// Work is still queued.
    pub(crate) more: bool,
    /// Put the namespace in the prune due-set (a flow finished).
    pub(crate) register: bool,
    /// A node became pending: waiting claims may take it.
    pub(crate) woke: bool,
}

impl Operation for DrainGraph {
    type Output = Drained;

    fn encode(&self, keys: &NamespaceKeys, call: &mut Call) {
        job_head(keys, call);
    }

    fn decode(&self, mut reply: Reply) -> Result<Self::Output, StoreError> {
        let drained = Drained {
            more: reply.flag()?,
            register: reply.flag()?,
            woke: reply.flag()?,
        };
        reply.finish()?;
        Ok(drained)
    }
}

#[cfg(test)]
pub(super) fn sample() -> DrainGraph {
    DrainGraph
}
