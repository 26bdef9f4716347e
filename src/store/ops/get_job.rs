//! `lua/get_job.lua`: one job's record.

use super::{job_prefixes, prelude::*};
use crate::{domain::JobRecord, store::packed_job::read_job};

script!(GetJob<'_>: "get_job", Job, Arity::Exactly(2), Arity::Exactly(9));

pub(crate) struct GetJob<'a> {
    pub(crate) id: &'a str,
}

impl Operation for GetJob<'_> {
    type Output = Option<JobRecord>;

    fn encode(&self, keys: &NamespaceKeys, call: &mut Call) {
        call.key(keys.meta()).key(keys.job(self.id));
        job_prefixes(keys, call);
        call.arg("id", self.id);
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
pub(super) fn sample() -> GetJob<'static> {
    GetJob { id: "j" }
}
