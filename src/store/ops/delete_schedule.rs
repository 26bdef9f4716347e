//! `lua/delete_schedule.lua`: remove a schedule with its index and listing entries.

use super::{prelude::*, schedule_head};

script!(DeleteSchedule<'_>: "delete_schedule", Schedule, Arity::Exactly(7), Arity::Exactly(3));

pub(crate) struct DeleteSchedule<'a> {
    pub(crate) id: &'a str,
}

impl Operation for DeleteSchedule<'_> {
    /// Whether the schedule existed.
    type Output = bool;

    fn encode(&self, keys: &NamespaceKeys, call: &mut Call) {
        schedule_head(keys, call);
        call.key(keys.due())
            .key(keys.schedule(self.id))
            .key(keys.backfill(self.id))
            .key(keys.runs(self.id))
            .arg("id", self.id);
    }

    fn decode(&self, reply: Reply) -> Result<Self::Output, StoreError> {
        single_flag(reply)
    }
}

/// A script that answers a bare 0 or 1.
pub(crate) fn single_flag(mut reply: Reply) -> Result<bool, StoreError> {
    let flag = reply.flag()?;
    reply.finish()?;
    Ok(flag)
}

#[cfg(test)]
pub(super) fn sample() -> DeleteSchedule<'static> {
    DeleteSchedule { id: "s" }
}
