//! `lua/list_schedules.lua`: one page of a namespace's schedules in id order.

use super::{prelude::*, schedule_head};
use crate::domain::{limits::PageShape, ScheduleRecord, ScheduleStatus};

script!(ListSchedules<'_>: "list_schedules", Schedule, Arity::Exactly(3), Arity::Exactly(8));

pub(crate) struct ListSchedules<'a> {
    /// Exclusive lower bound ("" = from the first).
    pub(crate) after: &'a str,
    pub(crate) page: PageShape,
    pub(crate) status: Option<ScheduleStatus>,
}

impl ListSchedules<'_> {
    /// Ids one call examines at most: a filtered page may have to skip many.
    fn budget(&self) -> usize {
        if self.status.is_some() {
            (self.page.size * 10).min(5000)
        } else {
            self.page.size
        }
    }
}

/// One page of a namespace's schedules in id order.
#[derive(Debug)]
pub(crate) struct ListedSchedules {
    pub(crate) schedules: Vec<ScheduleRecord>,
    /// The id to continue after, if more may follow.
    pub(crate) next_after: Option<String>,
}

impl Operation for ListSchedules<'_> {
    type Output = ListedSchedules;

    fn encode(&self, keys: &NamespaceKeys, call: &mut Call) {
        schedule_head(keys, call);
        call.arg("after", self.after)
            .arg("page_size", self.page.size)
            .arg("status", self.status.map(ScheduleStatus::as_str).unwrap_or(""))
            .arg("budget", self.budget())
            .arg("full", if self.page.full { "1" } else { "" })
            .arg("max_bytes", self.page.max_bytes);
    }

    fn decode(&self, mut reply: Reply) -> Result<Self::Output, StoreError> {
        let next_after = Some(reply.text()?).filter(|t| !t.is_empty());
        let count = reply.count()?;
        let mut schedules = Vec::new();
        for _ in 0..count {
            schedules.push(records::schedule(&reply.counted_fields()?)?);
        }
        reply.finish()?;
        Ok(ListedSchedules {
            schedules,
            next_after,
        })
    }
}

#[cfg(test)]
pub(super) fn sample() -> ListSchedules<'static> {
    ListSchedules {
        after: "",
        page: PageShape {
            size: 10,
            full: false,
            max_bytes: 1 << 20,
        },
        status: Some(ScheduleStatus::Active),
    }
}
