//! `lua/list_jobs.lua`: one page of a queue's jobs in enqueue order.

use super::{job_prefixes, prelude::*};
use crate::{
    domain::{limits::PageShape, JobRecord, JobState},
    store::packed_job::read_job,
};

script!(ListJobs<'_>: "list_jobs", Job, Arity::Exactly(1), Arity::Exactly(15));

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

/// One page of a queue's jobs.
#[derive(Debug)]
pub(crate) struct ListedJobs {
    pub(crate) jobs: Vec<JobRecord>,
    /// The job number to continue after, if more may follow.
    pub(crate) next_after: Option<i64>,
}

impl Operation for ListJobs<'_> {
    type Output = ListedJobs;

    fn encode(&self, keys: &NamespaceKeys, call: &mut Call) {
        call.key(keys.meta());
        job_prefixes(keys, call);
        call.arg("queue", self.queue)
            .opt("after", self.after)
            .arg("page_size", self.page.size)
            .arg("state", self.state.map(JobState::as_str).unwrap_or(""))
            .arg("budget", self.budget())
            .arg("full", if self.page.full { "1" } else { "" })
            .arg("max_bytes", self.page.max_bytes);
    }

    fn decode(&self, mut reply: Reply) -> Result<Self::Output, StoreError> {
        let next_after = reply.opt_int()?;
        let count = reply.count()?;
        let mut jobs = Vec::new();
        for _ in 0..count {
            jobs.push(read_job(&mut reply)?);
        }
        reply.finish()?;
        Ok(ListedJobs { jobs, next_after })
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
