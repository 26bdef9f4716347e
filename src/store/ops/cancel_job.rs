//! `lua/cancel_job.lua`: cancel a pending or delayed job.

use super::{job_head, prelude::*};
use crate::domain::{JobState, StateCheck};

script!("cancel_job", Job, Arity::Exactly(2), Arity::Exactly(9));

pub(crate) struct CancelJob<'a> {
    pub(crate) id: &'a str,
}

impl Operation for CancelJob<'_> {
    type Output = StateCheck;

    fn script(&self) -> &'static ScriptDef {
        &SCRIPT
    }

    fn encode(&self, keys: &NamespaceKeys, call: &mut Call) {
        job_head(keys, call);
        call.arg(self.id);
    }

    fn decode(&self, mut reply: Reply) -> Result<Self::Output, StoreError> {
        state_guarded(&mut reply, self.id)
    }
}

/// The reply of a state-guarded job script: `"ok", fields...`, `"missing"` or
/// `"state", state`.
pub(crate) fn state_guarded(reply: &mut Reply, id: &str) -> Result<StateCheck, StoreError> {
    let check = match reply.text()?.as_str() {
        "ok" => {
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
    Ok(check)
}

#[cfg(test)]
pub(super) fn sample() -> CancelJob<'static> {
    CancelJob { id: "j" }
}
