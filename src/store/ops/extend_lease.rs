//! `lua/extend_lease.lua`: push a claimed job's lease deadline to now + lease and/or
//! store the worker's progress report, if the caller still holds the lease.

use super::{ack_job::lease_guarded, job_head, prelude::*};
use crate::domain::{Extended, LeaseCheck, ProgressReport};

script!(ExtendLease<'_>: "extend_lease", Job, Arity::Exactly(2), Arity::Exactly(17));

pub(crate) struct ExtendLease<'a> {
    pub(crate) id: &'a str,
    pub(crate) token: &'a str,
    /// None: the deadline stays where it is (only progress is reported).
    pub(crate) lease_ms: Option<i64>,
    pub(crate) progress: Option<&'a ProgressReport>,
}

impl Operation for ExtendLease<'_> {
    type Output = LeaseCheck<Extended>;

    fn encode(&self, keys: &NamespaceKeys, call: &mut Call) {
        job_head(keys, call);
        call.arg("id", self.id)
            .arg("token", self.token)
            .opt("lease_ms", self.lease_ms);
        let report = self.progress;
        call.arg("progress", if report.is_some() { "1" } else { "" });
        let fraction = report.and_then(|p| p.fraction);
        call.arg("fraction", fraction.map(|f| f.to_string()).unwrap_or_default());
        let message = report.and_then(|p| p.message.as_deref());
        call.arg("message_set", if message.is_some() { "1" } else { "" })
            .arg("message", message.unwrap_or_default());
        let checkpoint = report.and_then(|p| p.checkpoint.as_deref());
        call.arg("checkpoint_set", if checkpoint.is_some() { "1" } else { "" })
            .arg("checkpoint", checkpoint.unwrap_or_default());
    }

    fn decode(&self, mut reply: Reply) -> Result<Self::Output, StoreError> {
        lease_guarded(&mut reply, |reply| {
            Ok(Extended {
                until_ms: reply.int()?,
                cancel_requested: reply.flag()?,
            })
        })
    }
}

#[cfg(test)]
pub(super) fn sample() -> ExtendLease<'static> {
    ExtendLease {
        id: "j",
        token: "t",
        lease_ms: Some(1000),
        progress: None,
    }
}
