//! `lua/extend_lease.lua`: push a claimed job's lease deadline to now + lease, if the
//! caller still holds the lease.

use super::{ack_job::lease_guarded, job_head, prelude::*};
use crate::domain::LeaseCheck;

script!(ExtendLease<'_>: "extend_lease", Job, Arity::Exactly(2), Arity::Exactly(11));

pub(crate) struct ExtendLease<'a> {
    pub(crate) id: &'a str,
    pub(crate) token: &'a str,
    pub(crate) lease_ms: i64,
}

impl Operation for ExtendLease<'_> {
    /// The new lease deadline.
    type Output = LeaseCheck<i64>;

    fn encode(&self, keys: &NamespaceKeys, call: &mut Call) {
        job_head(keys, call);
        call.arg("id", self.id)
            .arg("token", self.token)
            .arg("lease_ms", self.lease_ms);
    }

    fn decode(&self, mut reply: Reply) -> Result<Self::Output, StoreError> {
        lease_guarded(&mut reply, |reply| reply.int())
    }
}

#[cfg(test)]
pub(super) fn sample() -> ExtendLease<'static> {
    ExtendLease {
        id: "j",
        token: "t",
        lease_ms: 1000,
    }
}
