//! `lua/watch_job.lua`: one job's record for WatchJob, marking the watchers'
//! interest in it so that its writes are announced (issue 30).

use super::{job_prefixes, prelude::*};
use crate::{domain::JobRecord, store::packed_job::read_job};

script!(WatchJob<'_>: "watch_job", Job, Arity::Exactly(2), Arity::Exactly(10));

pub(crate) struct WatchJob<'a> {
    pub(crate) id: &'a str,
    /// How long from now the record's writes are announced, ms.
    pub(crate) watch_ms: i64,
}

impl Operation for WatchJob<'_> {
    type Output = Option<JobRecord>;

    fn encode(&self, keys: &NamespaceKeys, call: &mut Call) {
        call.key(keys.meta()).key(keys.job(self.id));
        job_prefixes(keys, call);
        call.arg("id", self.id).arg("watch_ms", self.watch_ms);
    }

    fn decode(&self, mut reply: Reply) -> Result<Self::Output, StoreError> {
        if reply.is_done() {
            return Ok(None);
        }
        let job = read_job(&mut reply)?;
        reply.finish()?;
        Ok(Some(job))
    }
}

#[cfg(test)]
pub(super) fn sample() -> WatchJob<'static> {
    WatchJob {
        id: "j",
        watch_ms: 60_000,
    }
}
