//! `lua/cancel_job.lua`: cancel a pending or delayed job.

use super::{job_head, prelude::*};
use crate::{
    domain::{JobState, StateCheck},
    store::packed_job::read_job,
};

script!(CancelJob<'_>: "cancel_job", Job, Arity::Exactly(2), Arity::Exactly(9));

pub(crate) struct CancelJob<'a> {
    pub(crate) id: &'a str,
}

/// What a state-guarded job script (cancel, retry) did.
#[derive(Debug)]
pub(crate) struct Guarded {
    pub(crate) check: StateCheck,
    /// The namespace must be put in the prune due-set (the job finished).
    pub(crate) register: bool,
}

impl Operation for CancelJob<'_> {
    type Output = Guarded;

    fn encode(&self, keys: &NamespaceKeys, call: &mut Call) {
        job_head(keys, call);
        call.arg("id", self.id);
    }

    fn decode(&self, mut reply: Reply) -> Result<Self::Output, StoreError> {
        state_guarded(&mut reply, true)
    }
}

/// The reply of a state-guarded job script: `"ok", job` (`"ok", register, job` when
/// `registers`; the job as lib/job.lua `push_job` sends it), `"missing"` or
/// `"state", state`.
pub(crate) fn state_guarded(reply: &mut Reply, registers: bool) -> Result<Guarded, StoreError> {
    let mut register = false;
    let check = match reply.text()?.as_str() {
        "ok" => {
            if registers {
                register = reply.flag()?;
            }
            StateCheck::Done(Box::new(read_job(reply)?))
        }
        "missing" => StateCheck::Missing,
        "state" => StateCheck::WrongState(reply.word(JobState::parse)?),
        other => {
            return Err(StoreError::corrupt(
                "job reply",
                format!("unexpected {other:?}"),
            ))
        }
    };
    if !reply.is_done() {
        return Err(StoreError::corrupt("job reply", "unexpected items left"));
    }
    Ok(Guarded { check, register })
}

#[cfg(test)]
pub(super) fn sample() -> CancelJob<'static> {
    CancelJob { id: "j" }
}
