//! `lua/peek_due.lua`: what the schedule wake-up timer needs, in one call.

use super::prelude::*;

script!(PeekDue: "peek_due", Core, Arity::Exactly(2), Arity::Exactly(0));

pub(crate) struct PeekDue;

/// Redis now, how much is due (schedules and expired occurrence leases), and the
/// earliest score of either.
#[derive(Debug, Clone, Copy)]
pub(crate) struct DuePeek {
    pub(crate) now_ms: i64,
    pub(crate) due: u64,
    pub(crate) earliest_ms: Option<i64>,
}

impl Operation for PeekDue {
    type Output = DuePeek;

    fn encode(&self, keys: &NamespaceKeys, call: &mut Call) {
        call.key(keys.due()).key(keys.occurrence_leases());
    }

    fn decode(&self, mut reply: Reply) -> Result<Self::Output, StoreError> {
        let peek = DuePeek {
            now_ms: reply.int()?,
            due: reply.count()?,
            earliest_ms: reply.opt_int()?,
        };
        reply.finish()?;
        Ok(peek)
    }
}

#[cfg(test)]
pub(super) fn sample() -> PeekDue {
    PeekDue
}
