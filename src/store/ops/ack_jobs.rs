//! `lua/ack_jobs.lua`: complete many claimed jobs, each if its lease still holds.

use super::{job_head, prelude::*};
use crate::domain::{JobState, LeaseCheck, LeaseLoss};

script!(AckJobs<'_>: "ack_jobs", Job, Arity::Exactly(2), Arity::AtLeast(9));

/// One ack's outcome: the job's queue when it was completed.
pub(crate) type Acked = Result<LeaseCheck<String>, StoreError>;

/// The results some acks of a batch carry (issue 30): (the ack's index in the batch,
/// the result), only for acks with a non-empty result, so an ack without one costs
/// the script nothing more.
pub(crate) type AckResults<'a> = &'a [(usize, &'a [u8])];

pub(crate) struct AckJobs<'a> {
    /// (job id, lease token) of each job to complete.
    pub(crate) leases: &'a [(&'a str, &'a str)],
    pub(crate) results: AckResults<'a>,
}

/// Pushes `results` as the scripts read them: the ack's index, the result.
pub(crate) fn push_results(call: &mut Call, results: AckResults<'_>) {
    for (index, result) in results {
        call.arg("results", *index).arg("results", *result);
    }
}

/// What an ack batch did.
#[derive(Debug)]
pub(crate) struct AckedBatch {
    /// A job entered the finished set such that the namespace must be put in the
    /// prune due-set.
    pub(crate) register: bool,
    /// A flow slot freed may let a waiting claim run (lib/flow.lua `flow.finish`):
    /// wake waiters.
    pub(crate) woke: bool,
    /// One outcome per lease, in order.
    pub(crate) acked: Vec<Acked>,
}

impl Operation for AckJobs<'_> {
    type Output = AckedBatch;

    fn encode(&self, keys: &NamespaceKeys, call: &mut Call) {
        job_head(keys, call);
        call.arg("result_count", self.results.len());
        for (id, token) in self.leases {
            call.arg("leases", *id).arg("leases", *token);
        }
        push_results(call, self.results);
    }

    fn decode(&self, mut reply: Reply) -> Result<Self::Output, StoreError> {
        reply.int()?; // Redis now
        let register = reply.flag()?;
        let woke = reply.flag()?;
        let acked = decode_acks(&mut reply, self.leases.len())?;
        reply.finish()?;
        Ok(AckedBatch {
            register,
            woke,
            acked,
        })
    }
}

/// `n` ack outcomes, two items each (lib/job.lua complete_job): `"ok", queue`,
/// `"missing", ""`, `"stale", state`, `"expired", ""` or `"corrupt", error`.
pub(crate) fn decode_acks(reply: &mut Reply, n: usize) -> Result<Vec<Acked>, StoreError> {
    #[derive(Clone, Copy)]
    enum Tag {
        Ok,
        Missing,
        Stale,
        Expired,
        Corrupt,
    }
    let mut acked = Vec::with_capacity(n);
    for _ in 0..n {
        let tag = reply.word(|tag| match tag {
            "ok" => Some(Tag::Ok),
            "missing" => Some(Tag::Missing),
            "stale" => Some(Tag::Stale),
            "expired" => Some(Tag::Expired),
            "corrupt" => Some(Tag::Corrupt),
            _ => None,
        })?;
        acked.push(match tag {
            Tag::Ok => Ok(LeaseCheck::Done(reply.text()?)),
            Tag::Missing => {
                reply.text()?;
                Ok(LeaseCheck::Missing)
            }
            Tag::Stale => Ok(LeaseCheck::Lost(LeaseLoss::JobMoved(
                reply.word(JobState::parse)?,
            ))),
            Tag::Expired => {
                reply.text()?;
                Ok(LeaseCheck::Lost(LeaseLoss::Expired))
            }
            Tag::Corrupt => Err(StoreError::corrupt("job record", reply.text()?)),
        });
    }
    Ok(acked)
}

#[cfg(test)]
pub(super) fn sample() -> AckJobs<'static> {
    AckJobs {
        leases: &[("j", "t"), ("k", "u")],
        results: &[(1, b"r")],
    }
}
