//! `lua/backfill_schedule.lua`: queue slots of a schedule's timing in a past range.

use super::{prelude::*, schedule_head};

script!(BackfillSchedule<'_>: "backfill_schedule", Schedule, Arity::Exactly(6), Arity::AtLeast(5));

/// Most slots that may wait in one schedule's backfill set (several calls add up).
pub(crate) const MAX_BACKFILL_WAITING: u64 = 10_000;

pub(crate) struct BackfillSchedule<'a> {
    pub(crate) id: &'a str,
    /// The revision the slots were computed from (the script refuses if it moved).
    pub(crate) revision: u64,
    /// The slots, oldest first (at most 1,000: the API checks).
    pub(crate) slots: &'a [i64],
}

#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Backfilled {
    /// Slots added (not already waiting) and slots now waiting.
    Done { added: u64, waiting: u64 },
    Missing,
    Paused,
    Completed,
    /// The timing changed since the slots were computed.
    Moved,
    /// The set would hold more than MAX_BACKFILL_WAITING; how many wait now.
    Full(u64),
}

impl Operation for BackfillSchedule<'_> {
    type Output = Backfilled;

    fn encode(&self, keys: &NamespaceKeys, call: &mut Call) {
        schedule_head(keys, call);
        call.key(keys.due())
            .key(keys.schedule(self.id))
            .key(keys.backfill(self.id))
            .arg("id", self.id)
            .arg("rev", self.revision)
            .arg("max_waiting", MAX_BACKFILL_WAITING);
        for slot in self.slots {
            call.arg("slots", *slot);
        }
    }

    fn decode(&self, mut reply: Reply) -> Result<Self::Output, StoreError> {
        let out = match reply.text()?.as_str() {
            "ok" => Backfilled::Done {
                added: reply.count()?,
                waiting: reply.count()?,
            },
            "missing" => Backfilled::Missing,
            "paused" => Backfilled::Paused,
            "completed" => Backfilled::Completed,
            "moved" => Backfilled::Moved,
            "full" => Backfilled::Full(reply.count()?),
            other => {
                return Err(StoreError::corrupt(
                    "backfill_schedule reply",
                    format!("unexpected {other:?}"),
                ))
            }
        };
        reply.finish()?;
        Ok(out)
    }
}

#[cfg(test)]
pub(super) fn sample() -> BackfillSchedule<'static> {
    BackfillSchedule {
        id: "s",
        revision: 1,
        slots: &[1_000, 2_000],
    }
}
