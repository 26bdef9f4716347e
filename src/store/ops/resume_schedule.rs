//! `lua/resume_schedule.lua`: make a paused schedule active again (compare-and-set on
//! the revision its next run was computed from).

use super::{prelude::*, schedule_head, upsert_schedule::follow_arg};
use crate::domain::{NextRun, ScheduleRecord};

script!(ResumeSchedule<'_>: "resume_schedule", Schedule, Arity::Exactly(5), Arity::Exactly(6));

pub(crate) struct ResumeSchedule<'a> {
    pub(crate) id: &'a str,
    /// The revision `next` was computed from.
    pub(crate) revision: u64,
    pub(crate) next: NextRun,
}

pub(crate) enum Resumed {
    Missing,
    /// The revision changed since it was read: read again and retry.
    Moved,
    Done(Box<ScheduleRecord>),
}

impl Operation for ResumeSchedule<'_> {
    type Output = Resumed;

    fn encode(&self, keys: &NamespaceKeys, call: &mut Call) {
        schedule_head(keys, call);
        call.key(keys.due())
            .key(keys.schedule(self.id))
            .arg("id", self.id)
            .arg("rev", self.revision)
            .opt("next_ms", self.next.next_ms);
        follow_arg(call, "follow", self.next.follow);
    }

    fn decode(&self, mut reply: Reply) -> Result<Self::Output, StoreError> {
        if reply.is_done() {
            return Ok(Resumed::Missing);
        }
        let resumed = reply.word(|tag| match tag {
            "ok" => Some(true),
            "moved" => Some(false),
            _ => None,
        })?;
        if !resumed {
            reply.finish()?;
            return Ok(Resumed::Moved);
        }
        let fields = reply.rest_fields()?.named(format!("schedule {:?}", self.id));
        Ok(Resumed::Done(Box::new(records::schedule(&fields)?)))
    }
}

#[cfg(test)]
pub(super) fn sample() -> ResumeSchedule<'static> {
    ResumeSchedule {
        id: "s",
        revision: 1,
        next: NextRun {
            next_ms: None,
            follow: crate::domain::Follow::Unknown,
        },
    }
}
