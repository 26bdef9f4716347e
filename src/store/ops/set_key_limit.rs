//! `lua/set_key_limit.lua`: one key's own limits (issue 32).

use super::{job_head, prelude::*};
use crate::domain::KeyLimit;

script!(SetKeyLimit<'_>: "set_key_limit", Job, Arity::Exactly(2), Arity::Exactly(11));

pub(crate) struct SetKeyLimit<'a> {
    pub(crate) queue: &'a str,
    pub(crate) key: &'a str,
    /// Validated; neither part set: remove the key's own limits.
    pub(crate) limit: KeyLimit,
}

/// What SetKeyLimit did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct KeyLimitSet {
    /// The stored limits changed.
    pub(crate) changed: bool,
    /// Lanes parked on the key came back: wake waiting claims.
    pub(crate) woke: bool,
}

impl Operation for SetKeyLimit<'_> {
    type Output = KeyLimitSet;

    fn encode(&self, keys: &NamespaceKeys, call: &mut Call) {
        job_head(keys, call);
        let text = if self.limit == KeyLimit::default() {
            String::new()
        } else {
            self.limit.record_text()
        };
        call.arg("queue", self.queue)
            .arg("key", self.key)
            .arg("limit", text);
    }

    fn decode(&self, mut reply: Reply) -> Result<Self::Output, StoreError> {
        let changed = reply.flag()?;
        let woke = reply.flag()?;
        reply.finish()?;
        Ok(KeyLimitSet { changed, woke })
    }
}

#[cfg(test)]
pub(super) fn sample() -> SetKeyLimit<'static> {
    SetKeyLimit {
        queue: "q",
        key: "k",
        limit: KeyLimit {
            max_running: Some(2),
            rate: None,
        },
    }
}
