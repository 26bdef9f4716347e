//! `lua/set_follow.lua`: record the precomputed cron slot after a schedule's next run
//! (compare-and-set on revision and next run).

use super::{delete_schedule::single_flag, prelude::*, schedule_head, upsert_schedule::follow_arg};
use crate::domain::Follow;

script!(SetFollow<'_>: "set_follow", Schedule, Arity::Exactly(4), Arity::Exactly(5));

pub(crate) struct SetFollow<'a> {
    pub(crate) id: &'a str,
    pub(crate) revision: u64,
    pub(crate) next_ms: i64,
    pub(crate) follow: Follow,
}

impl Operation for SetFollow<'_> {
    /// Whether it was written (false: the schedule moved meanwhile).
    type Output = bool;

    fn encode(&self, keys: &NamespaceKeys, call: &mut Call) {
        schedule_head(keys, call);
        call.key(keys.schedule(self.id))
            .arg("rev", self.revision)
            .arg("next_ms", self.next_ms);
        follow_arg(call, "follow", self.follow);
    }

    fn decode(&self, reply: Reply) -> Result<Self::Output, StoreError> {
        single_flag(reply)
    }
}

#[cfg(test)]
pub(super) fn sample() -> SetFollow<'static> {
    SetFollow {
        id: "s",
        revision: 1,
        next_ms: 60_000,
        follow: Follow::End,
    }
}
