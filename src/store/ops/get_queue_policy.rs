//! `lua/get_queue_policy.lua`: a queue's flow policy (issue 32).

use super::{job_head, prelude::*};
use crate::domain::QueuePolicy;

script!(GetQueuePolicy<'_>: "get_queue_policy", Job, Arity::Exactly(2), Arity::Exactly(9));

pub(crate) struct GetQueuePolicy<'a> {
    pub(crate) queue: &'a str,
}

/// A queue's policy as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StoredPolicy {
    /// `None` when the queue has none.
    pub(crate) policy: Option<QueuePolicy>,
    /// Keys with limits of their own (SetKeyLimit).
    pub(crate) key_limits: u64,
}

impl Operation for GetQueuePolicy<'_> {
    type Output = StoredPolicy;

    fn encode(&self, keys: &NamespaceKeys, call: &mut Call) {
        job_head(keys, call);
        call.arg("queue", self.queue);
    }

    fn decode(&self, mut reply: Reply) -> Result<Self::Output, StoreError> {
        let key_limits = reply.count()?;
        let policy = read_policy(&mut reply)?;
        reply.finish()?;
        Ok(StoredPolicy { policy, key_limits })
    }
}

/// A policy as the scripts reply with it (get_queue_policy, queue_stats): the
/// `flow` text ("" none), the number of weight items, then key, weight pairs.
pub(crate) fn read_policy(reply: &mut Reply) -> Result<Option<QueuePolicy>, StoreError> {
    let text = reply.text()?;
    let items = reply.count()?;
    if items % 2 != 0 {
        return Err(StoreError::corrupt(
            "policy reply",
            format!("{items} weight items (pairs expected)"),
        ));
    }
    let mut weights = std::collections::BTreeMap::new();
    for _ in 0..items / 2 {
        let key = reply.text()?;
        let weight = reply.count()?;
        weights.insert(key, u32::try_from(weight).unwrap_or(u32::MAX));
    }
    if text.is_empty() {
        return Ok(None);
    }
    let mut policy = QueuePolicy::parse(&text);
    policy.weights = weights;
    Ok(Some(policy))
}

#[cfg(test)]
pub(super) fn sample() -> GetQueuePolicy<'static> {
    GetQueuePolicy { queue: "q" }
}
