//! `lua/peek_jobs.lua`: what the job wake-up timer needs, in one call.

use super::{job_head, prelude::*};

script!(PeekJobs<'_>: "peek_jobs", Job, Arity::Exactly(2), Arity::AtLeast(8));

pub(crate) struct PeekJobs<'a> {
    pub(crate) queues: &'a [String],
}

#[derive(Debug)]
pub(crate) struct JobPeek {
    pub(crate) now_ms: i64,
    pub(crate) earliest_ms: Option<i64>,
    /// About how many jobs are claimable now, per queue asked about (same order).
    pub(crate) claimable: Vec<u64>,
}

impl Operation for PeekJobs<'_> {
    type Output = JobPeek;

    fn encode(&self, keys: &NamespaceKeys, call: &mut Call) {
        job_head(keys, call);
        for queue in self.queues {
            call.arg("queues", queue);
        }
    }

    fn decode(&self, mut reply: Reply) -> Result<Self::Output, StoreError> {
        let now_ms = reply.int()?;
        let earliest_ms = reply.opt_int()?;
        let mut claimable = Vec::with_capacity(self.queues.len());
        for _ in self.queues {
            claimable.push(reply.count()?);
        }
        reply.finish()?;
        Ok(JobPeek {
            now_ms,
            earliest_ms,
            claimable,
        })
    }
}

#[cfg(test)]
pub(super) fn sample() -> PeekJobs<'static> {
    use std::sync::LazyLock;
    static QUEUES: LazyLock<Vec<String>> = LazyLock::new(|| vec!["q".into()]);
    PeekJobs { queues: &QUEUES }
}
