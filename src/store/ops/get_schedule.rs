//! `lua/get_schedule.lua`: read one schedule.

use super::{prelude::*, schedule_head};
use crate::domain::{RecentRun, ScheduleRecord};

script!(GetSchedule<'_>: "get_schedule", Schedule, Arity::Exactly(5), Arity::Exactly(3));

pub(crate) struct GetSchedule<'a> {
    pub(crate) id: &'a str,
}

impl Operation for GetSchedule<'_> {
    type Output = Option<ScheduleRecord>;

    fn encode(&self, keys: &NamespaceKeys, call: &mut Call) {
        schedule_head(keys, call);
        call.key(keys.schedule(self.id))
            .key(keys.runs(self.id))
            .arg("id", self.id);
    }

    /// The schedule with its recent runs.
    fn decode(&self, mut reply: Reply) -> Result<Self::Output, StoreError> {
        if reply.is_done() {
            return Ok(None);
        }
        let n = reply.count()?;
        let mut runs = Vec::new();
        for _ in 0..n {
            let text = reply.text()?;
            runs.push(
                RecentRun::parse(&text)
                    .ok_or_else(|| StoreError::corrupt("recent run", format!("{text:?}")))?,
            );
        }
        let fields = reply.rest_fields()?.named(format!("schedule {:?}", self.id));
        let mut record = records::schedule(&fields)?;
        record.recent_runs = runs;
        Ok(Some(record))
    }
}

/// A reply that is either empty (no such schedule) or the schedule's fields.
pub(crate) fn optional_record(
    reply: &mut Reply,
    id: &str,
) -> Result<Option<ScheduleRecord>, StoreError> {
    if reply.is_done() {
        return Ok(None);
    }
    let fields = reply.rest_fields()?.named(format!("schedule {id:?}"));
    records::schedule(&fields).map(Some)
}

#[cfg(test)]
pub(super) fn sample() -> GetSchedule<'static> {
    GetSchedule { id: "s" }
}
