//! `lua/pause_queue.lua`: pause or resume a queue.

use super::{job_head, prelude::*};

script!(PauseQueue<'_>: "pause_queue", Job, Arity::Exactly(2), Arity::Exactly(10));

pub(crate) struct PauseQueue<'a> {
    pub(crate) queue: &'a str,
    /// True pauses, false resumes.
    pub(crate) paused: bool,
}

impl Operation for PauseQueue<'_> {
    /// Whether the flag changed.
    type Output = bool;

    fn encode(&self, keys: &NamespaceKeys, call: &mut Call) {
        job_head(keys, call);
        call.arg("queue", self.queue).flag("paused", self.paused);
    }

    fn decode(&self, mut reply: Reply) -> Result<Self::Output, StoreError> {
        reply.flag()
    }
}

#[cfg(test)]
pub(super) fn sample() -> PauseQueue<'static> {
    PauseQueue {
        queue: "q",
        paused: true,
    }
}
