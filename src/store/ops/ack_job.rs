//! `lua/ack_job.lua`: complete a claimed job, if the caller still holds its lease.

use super::{job_head, prelude::*};
use crate::domain::{JobState, LeaseCheck, LeaseLoss};

script!(AckJob<'_>: "ack_job", Job, Arity::Exactly(2), Arity::Exactly(11));

pub(crate) struct AckJob<'a> {
    pub(crate) id: &'a str,
    pub(crate) token: &'a str,
    /// What the job returned (empty: nothing), kept with the completed job.
    pub(crate) result: &'a [u8],
}

/// A job AckJob completed.
#[derive(Debug)]
pub(crate) struct AckedJob {
    /// The namespace must be put in the prune due-set.
    pub(crate) register: bool,
    /// The job's queue.
    pub(crate) queue: String,
    /// The flow slot it freed may let a waiting claim run (lib/flow.lua
    /// `flow.finish`): wake waiters.
    pub(crate) woke: bool,
}

impl Operation for AckJob<'_> {
    type Output = LeaseCheck<AckedJob>;

    fn encode(&self, keys: &NamespaceKeys, call: &mut Call) {
        job_head(keys, call);
        call.arg("id", self.id)
            .arg("token", self.token)
            .arg("result", self.result);
    }

    fn decode(&self, mut reply: Reply) -> Result<Self::Output, StoreError> {
        lease_guarded(&mut reply, |reply| {
            reply.int()?; // Redis now
            Ok(AckedJob {
                register: reply.flag()?,
                queue: reply.text()?,
                woke: reply.flag()?,
            })
        })
    }
}

/// The reply of a lease-guarded job script: `"ok", ...` (read by `done`),
/// `"missing"`, `"stale", state` or `"expired"` (lib/job.lua lease_check).
pub(crate) fn lease_guarded<T>(
    reply: &mut Reply,
    done: impl FnOnce(&mut Reply) -> Result<T, StoreError>,
) -> Result<LeaseCheck<T>, StoreError> {
    #[derive(Clone, Copy)]
    enum Tag {
        Ok,
        Missing,
        Stale,
        Expired,
    }
    let tag = reply.word(|tag| match tag {
        "ok" => Some(Tag::Ok),
        "missing" => Some(Tag::Missing),
        "stale" => Some(Tag::Stale),
        "expired" => Some(Tag::Expired),
        _ => None,
    })?;
    let check = match tag {
        Tag::Ok => LeaseCheck::Done(done(reply)?),
        Tag::Missing => LeaseCheck::Missing,
        Tag::Stale => LeaseCheck::Lost(LeaseLoss::JobMoved(reply.word(JobState::parse)?)),
        Tag::Expired => LeaseCheck::Lost(LeaseLoss::Expired),
    };
    if !reply.is_done() {
        return Err(StoreError::corrupt(
            "job reply",
            format!("{} unexpected items left", reply.remaining()),
        ));
    }
    Ok(check)
}

#[cfg(test)]
pub(super) fn sample() -> AckJob<'static> {
    AckJob {
        id: "j",
        token: "t",
        result: b"",
    }
}
