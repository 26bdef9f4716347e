//! `lua/migrate_lock.lua`: the lease that keeps two Migrates off one namespace.

use super::prelude::*;

script!(MigrateLock<'_>: "migrate_lock", Core, Arity::Exactly(1), Arity::Exactly(3));

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LockOp {
    Acquire,
    Renew,
    Release,
}

pub(crate) struct MigrateLock<'a> {
    pub(crate) op: LockOp,
    pub(crate) token: &'a str,
    pub(crate) ttl_ms: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum LockReply {
    Ok,
    /// Another Migrate holds it for this much longer (acquire).
    Held {
        ttl_ms: i64,
    },
    /// It is no longer ours (renew, release).
    Lost,
}

impl Operation for MigrateLock<'_> {
    type Output = LockReply;

    fn encode(&self, keys: &NamespaceKeys, call: &mut Call) {
        let op = match self.op {
            LockOp::Acquire => "acquire",
            LockOp::Renew => "renew",
            LockOp::Release => "release",
        };
        call.key(keys.migrate_lock())
            .arg("op", op)
            .arg("token", self.token)
            .arg("ttl_ms", self.ttl_ms);
    }

    fn decode(&self, mut reply: Reply) -> Result<Self::Output, StoreError> {
        let answer = match reply.text()?.as_str() {
            "ok" => LockReply::Ok,
            "lost" => LockReply::Lost,
            "held" => LockReply::Held {
                ttl_ms: reply.int()?,
            },
            other => {
                return Err(StoreError::corrupt(
                    "migrate_lock reply",
                    format!("unexpected {other:?}"),
                ))
            }
        };
        reply.finish()?;
        Ok(answer)
    }
}

#[cfg(test)]
pub(super) fn sample() -> MigrateLock<'static> {
    MigrateLock {
        op: LockOp::Acquire,
        token: "t",
        ttl_ms: 1000,
    }
}
