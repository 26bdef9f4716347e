//! `lua/set_queue_policy.lua`: replace a queue's flow policy (issue 32).

use super::{job_head, prelude::*};
use crate::domain::{Fairness, QueuePolicy};

script!(SetQueuePolicy<'_>: "set_queue_policy", Job, Arity::Exactly(2),
    Arity::Groups { fixed: 10, group: 2 });

pub(crate) struct SetQueuePolicy<'a> {
    pub(crate) queue: &'a str,
    /// Validated; empty: no policy.
    pub(crate) policy: &'a QueuePolicy,
}

impl Operation for SetQueuePolicy<'_> {
    type Output = ();

    fn encode(&self, keys: &NamespaceKeys, call: &mut Call) {
        job_head(keys, call);
        call.arg("queue", self.queue)
            .arg("policy", self.policy.record_text());
        // Weights only count for a weighted policy (the service refuses others).
        if self.policy.fairness == Fairness::Weighted {
            for (key, weight) in &self.policy.weights {
                call.arg("key", key).arg("weight", *weight);
            }
        }
    }

    fn decode(&self, mut reply: Reply) -> Result<Self::Output, StoreError> {
        reply.int()?;
        reply.finish()
    }
}

#[cfg(test)]
pub(super) fn sample() -> SetQueuePolicy<'static> {
    static POLICY: std::sync::LazyLock<QueuePolicy> = std::sync::LazyLock::new(|| QueuePolicy {
        max_running: 3,
        fairness: Fairness::Weighted,
        weights: [("a".to_owned(), 2)].into_iter().collect(),
        default_weight: 1,
        ..QueuePolicy::default()
    });
    SetQueuePolicy {
        queue: "q",
        policy: &POLICY,
    }
}
