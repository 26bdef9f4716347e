//! `lua/throttle_key.lua`: stop a key's jobs for a while, or lift that (issue 32).

use super::{job_head, prelude::*};

script!(ThrottleKey<'_>: "throttle_key", Job, Arity::Exactly(2), Arity::Exactly(11));

pub(crate) struct ThrottleKey<'a> {
    pub(crate) queue: &'a str,
    pub(crate) key: &'a str,
    /// How long from now (at most `MAX_THROTTLE_MS`); 0 lifts the throttle.
    pub(crate) for_ms: i64,
}

/// What ThrottleKey did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Throttled {
    /// When the throttle ends (epoch ms, Redis clock); `None` when it was lifted.
    pub(crate) until_ms: Option<i64>,
    /// Lanes the key's last throttle held came back: wake waiting claims.
    pub(crate) woke: bool,
}

impl Operation for ThrottleKey<'_> {
    type Output = Throttled;

    fn encode(&self, keys: &NamespaceKeys, call: &mut Call) {
        job_head(keys, call);
        call.arg("queue", self.queue)
            .arg("key", self.key)
            .arg("for_ms", self.for_ms);
    }

    fn decode(&self, mut reply: Reply) -> Result<Self::Output, StoreError> {
        reply.int()?; // Redis now
        let until_ms = reply.opt_int()?;
        let woke = reply.flag()?;
        reply.finish()?;
        Ok(Throttled { until_ms, woke })
    }
}

#[cfg(test)]
pub(super) fn sample() -> ThrottleKey<'static> {
    ThrottleKey {
        queue: "q",
        key: "k",
        for_ms: 1000,
    }
}
