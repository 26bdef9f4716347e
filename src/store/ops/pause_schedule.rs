//! `lua/pause_schedule.lua`: stop a schedule from firing until it is resumed.

use super::{get_schedule::optional_record, prelude::*, schedule_head};
use crate::domain::ScheduleRecord;

script!(PauseSchedule<'_>: "pause_schedule", Schedule, Arity::Exactly(5), Arity::Exactly(4));

pub(crate) struct PauseSchedule<'a> {
    pub(crate) id: &'a str,
    /// Shown by GetSchedule and ListSchedules until resumed ("" none).
    pub(crate) note: &'a str,
}

impl Operation for PauseSchedule<'_> {
    /// The paused schedule, or `None` when there is no such schedule.
    type Output = Option<ScheduleRecord>;

    fn encode(&self, keys: &NamespaceKeys, call: &mut Call) {
        schedule_head(keys, call);
        call.key(keys.due())
            .key(keys.schedule(self.id))
            .arg("id", self.id)
            .arg("note", self.note);
    }

    fn decode(&self, mut reply: Reply) -> Result<Self::Output, StoreError> {
        optional_record(&mut reply, self.id)
    }
}

#[cfg(test)]
pub(super) fn sample() -> PauseSchedule<'static> {
    PauseSchedule { id: "s", note: "" }
}
