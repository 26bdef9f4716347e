//! `lua/list_due_schedules.lua`: one page of a namespace's schedules by next run,
//! optionally only the overdue ones.

use super::{prelude::*, schedule_head};
use crate::domain::{limits::PageShape, ScheduleRecord};

script!(ListDueSchedules<'_>: "list_due_schedules", Schedule, Arity::Exactly(5), Arity::Exactly(9));

pub(crate) struct ListDueSchedules<'a> {
    /// The next run (epoch ms) and id of the previous page's last entry.
    pub(crate) after: Option<(i64, &'a str)>,
    /// Only schedules whose next run is at least this many ms before Redis TIME.
    pub(crate) overdue_by_ms: Option<i64>,
    pub(crate) page: PageShape,
}

/// One page of schedules by next run.
#[derive(Debug)]
pub(crate) struct ListedDue {
    pub(crate) schedules: Vec<ScheduleRecord>,
    /// Where to continue, if more may follow.
    pub(crate) next_after: Option<DueAfter>,
}

/// The last entry of a page of the due index: its next run and its id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DueAfter {
    pub(crate) next_run_ms: i64,
    pub(crate) id: String,
}

impl Operation for ListDueSchedules<'_> {
    type Output = ListedDue;

    fn encode(&self, keys: &NamespaceKeys, call: &mut Call) {
        schedule_head(keys, call);
        call.key(keys.due())
            .key(keys.target_due());
        match self.after {
            Some((ms, id)) => call.arg("after_ms", ms).arg("after_id", id),
            None => call.arg("after_ms", "").arg("after_id", ""),
        };
        call.opt("overdue_by_ms", self.overdue_by_ms)
            .arg("page_size", self.page.size)
            // Stale entries are rare (claims repair them): a page examines at most
            // twice its size.
            .arg("budget", (self.page.size * 2).min(2000))
            .arg("full", if self.page.full { "1" } else { "" })
            .arg("max_bytes", self.page.max_bytes);
    }

    fn decode(&self, mut reply: Reply) -> Result<Self::Output, StoreError> {
        let score = reply.opt_int()?;
        let id = reply.text()?;
        let count = reply.count()?;
        let mut schedules = Vec::new();
        for _ in 0..count {
            schedules.push(records::schedule(&reply.counted_fields()?)?);
        }
        reply.finish()?;
        Ok(ListedDue {
            schedules,
            next_after: score.map(|next_run_ms| DueAfter { next_run_ms, id }),
        })
    }
}

#[cfg(test)]
pub(super) fn sample() -> ListDueSchedules<'static> {
    ListDueSchedules {
        after: Some((1, "a")),
        overdue_by_ms: Some(0),
        page: PageShape {
            size: 10,
            full: false,
            max_bytes: 1 << 20,
        },
    }
}
