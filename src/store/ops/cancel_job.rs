//! `lua/cancel_job.lua`: cancel a pending or delayed job.

use super::{job_head, prelude::*};
use crate::domain::{JobState, StateCheck};

script!("cancel_job", Job, Arity::Exactly(2), Arity::Exactly(9));

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

    fn script(&self) -> &'static ScriptDef {
        &SCRIPT
    }

    fn encode(&self, keys: &NamespaceKeys, call: &mut Call) {
        job_head(keys, call);
        call.arg(self.id);
    }

    fn decode(&self, mut reply: Reply) -> Result<Self::Output, StoreError> {
        state_guarded(&mut reply, self.id, true)
    }
}

/// The reply of a state-guarded job script: `"ok", fields...` (`"ok", register,
/// fields...` when `registers`), `"missing"` or `"state", state`.
pub(crate) fn state_guarded(
    reply: &mut Reply,
    id: &str,
    registers: bool,
) -> Result<Guarded, StoreError> {
    let mut register = false;
    let check = match reply.text()?.as_str() {
        "ok" => {
            if registers {
                register = reply.flag()?;
            }
            let fields = reply.rest_fields()?.named(format!("job {id:?}"));
            StateCheck::Done(Box::new(records::job(&fields)?))
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
