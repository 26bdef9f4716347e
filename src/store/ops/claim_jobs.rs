//! `lua/claim_jobs.lua`: lease up to `max_jobs` claimable jobs from a set of queues.

use super::{
    ack_jobs::{decode_acks, Acked},
    job_head,
    prelude::*,
};
use crate::domain::JobRecord;

script!("claim_jobs", Job, Arity::Exactly(2), Arity::AtLeast(15));

/// Most expired leases re-handed and delayed jobs promoted per queue per call, and
/// most stale ready entries dropped.
const CLAIM_BUDGET: u32 = 64;

pub(crate) struct ClaimJobs<'a> {
    /// Sorted, without duplicates.
    pub(crate) queues: &'a [String],
    pub(crate) worker: &'a str,
    /// Overrides each job's own lease.
    pub(crate) lease_ms: Option<i64>,
    pub(crate) max_jobs: u32,
    /// Random; the i-th claimed job's token is `<base>.<i>`.
    pub(crate) token_base: &'a str,
    /// Most reply bytes the claimed jobs may take (the first job is always claimed).
    pub(crate) max_bytes: usize,
    /// (job id, lease token) of jobs to complete first, as AckJob would (issue 15).
    pub(crate) acks: &'a [(&'a str, &'a str)],
}

/// What one claim call returned.
#[derive(Debug)]
pub(crate) struct ClaimedBatch {
    /// Earliest future delayed run or lease deadline in the claimed queues.
    pub(crate) next_ms: Option<i64>,
    /// Claimable jobs may be left in these queues.
    pub(crate) more: bool,
    /// A job went dead: the namespace must be put in the prune due-set.
    pub(crate) register: bool,
    pub(crate) jobs: Vec<JobRecord>,
    /// Leases that expired and were taken back in this call, per queue (in the
    /// order of `ClaimJobs::queues`).
    pub(crate) expired: Vec<u64>,
    /// One outcome per carried ack, in order.
    pub(crate) acked: Vec<Acked>,
}

impl Operation for ClaimJobs<'_> {
    type Output = ClaimedBatch;

    fn script(&self) -> &'static ScriptDef {
        &SCRIPT
    }

    fn encode(&self, keys: &NamespaceKeys, call: &mut Call) {
        job_head(keys, call);
        call.arg(self.token_base)
            .opt(self.lease_ms)
            .arg(self.max_jobs)
            .arg(self.worker)
            .arg(CLAIM_BUDGET)
            .arg(self.max_bytes)
            .arg(self.acks.len());
        for (id, token) in self.acks {
            call.arg(*id).arg(*token);
        }
        for queue in self.queues {
            call.arg(queue);
        }
    }

    fn decode(&self, mut reply: Reply) -> Result<Self::Output, StoreError> {
        reply.int()?; // Redis now
        let next_ms = reply.opt_int()?;
        let more = reply.flag()?;
        let register = reply.flag()?;
        let count = reply.count()?;
        let mut jobs = Vec::new();
        for _ in 0..count {
            jobs.push(records::job(&reply.counted_fields()?)?);
        }
        let expired = self
            .queues
            .iter()
            .map(|_| reply.count())
            .collect::<Result<_, _>>()?;
        let acked = decode_acks(&mut reply, self.acks.len())?;
        reply.finish()?;
        Ok(ClaimedBatch {
            next_ms,
            more,
            register,
            jobs,
            expired,
            acked,
        })
    }
}

#[cfg(test)]
pub(crate) fn sample() -> ClaimJobs<'static> {
    use std::sync::LazyLock;
    static QUEUES: LazyLock<Vec<String>> = LazyLock::new(|| vec!["a".into(), "b".into()]);
    ClaimJobs {
        queues: &QUEUES,
        worker: "w",
        lease_ms: None,
        max_jobs: 1,
        token_base: "t",
        max_bytes: 1 << 20,
        acks: &[("j", "t")],
    }
}
