//! `lua/list_jobs.lua`: one page of a queue's jobs in enqueue order.

use super::{job_prefixes, prelude::*};
use crate::domain::{limits::PageShape, JobRecord, JobState};

script!("list_jobs", Job, Arity::Exactly(1), Arity::Exactly(15));

pub(crate) struct ListJobs<'a> {
    pub(crate) queue: &'a str,
    /// Exclusive lower bound job number (`None` = from the start).
    pub(crate) after: Option<i64>,
    pub(crate) page: PageShape,
    pub(crate) state: Option<JobState>,
}

impl ListJobs<'_> {
    /// Jobs one call examines at most: a filtered page may have to skip many.
    fn budget(&self) -> usize {
        if self.state.is_some() {
            (self.page.size * 10).min(5000)
        } else {
            self.page.size
        }
    }
}

impl Operation for ListJobs<'_> {
    /// The page, and the job number to continue after (if more may follow).
    type Output = (Vec<JobRecord>, Option<i64>);

    fn script(&self) -> &'static ScriptDef {
        &SCRIPT
    }

    fn encode(&self, keys: &NamespaceKeys, call: &mut Call) {
        call.key(keys.meta());
        job_prefixes(keys, call);
        call.arg(self.queue)
            .opt(self.after)
            .arg(self.page.size)
            .arg(self.state.map(JobState::as_str).unwrap_or(""))
            .arg(self.budget())
            .arg(if self.page.full { "1" } else { "" })
            .arg(self.page.max_bytes);
    }

    fn decode(&self, mut reply: Reply) -> Result<Self::Output, StoreError> {
        let next = reply.opt_int()?;
        let count = reply.count()?;
        let mut page = Vec::new();
        for _ in 0..count {
            page.push(records::job(&reply.counted_fields()?)?);
        }
        reply.finish()?;
        Ok((page, next))
    }
}

#[cfg(test)]
pub(super) fn sample() -> ListJobs<'static> {
    ListJobs {
        queue: "q",
        after: Some(3),
        page: PageShape {
            size: 10,
            full: false,
            max_bytes: 1 << 20,
        },
        state: None,
    }
}
