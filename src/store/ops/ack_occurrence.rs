//! `lua/ack_occurrence.lua`: confirm a leased schedule occurrence was handled.

use super::prelude::*;
use crate::domain::{LeaseCheck, LeaseLoss};

script!(AckOccurrence<'_>: "ack_occurrence", Schedule, Arity::Exactly(3), Arity::Exactly(6));

/// How long an acked occurrence record is kept, so a repeated ack says "acked".
pub(crate) const ACKED_OCCURRENCE_TTL_MS: i64 = 86_400_000;

pub(crate) struct AckOccurrence<'a> {
    pub(crate) occurrence_id: &'a str,
    pub(crate) token: &'a str,
}

impl Operation for AckOccurrence<'_> {
    /// Done(true) when the ack released a buffered slot of its schedule (BUFFER_ONE).
    type Output = LeaseCheck<bool>;

    fn encode(&self, keys: &NamespaceKeys, call: &mut Call) {
        call.key(keys.occurrence_leases())
            .key(keys.meta())
            .key(keys.due())
            .arg("occurrence_prefix", keys.occurrence_prefix())
            .arg("occurrence_id", self.occurrence_id)
            .arg("token", self.token)
            .arg("acked_ttl_ms", ACKED_OCCURRENCE_TTL_MS)
            .arg("schedule_prefix", keys.schedule_prefix())
            .arg("runs_prefix", keys.runs_prefix());
    }

    fn decode(&self, mut reply: Reply) -> Result<Self::Output, StoreError> {
        let check = match reply.text()?.as_str() {
            "ok" => LeaseCheck::Done(reply.flag()?),
            "missing" => LeaseCheck::Missing,
            "expired" => LeaseCheck::Lost(LeaseLoss::Expired),
            "stale" => LeaseCheck::Lost(reply.word(|state| match state {
                "acked" => Some(LeaseLoss::Acked),
                "expired" => Some(LeaseLoss::Expired),
                "leased" => Some(LeaseLoss::Rehanded),
                _ => None,
            })?),
            other => {
                return Err(StoreError::corrupt(
                    "ack_occurrence reply",
                    format!("unexpected {other:?}"),
                ))
            }
        };
        reply.finish()?;
        Ok(check)
    }
}

#[cfg(test)]
pub(super) fn sample() -> AckOccurrence<'static> {
    AckOccurrence {
        occurrence_id: "o",
        token: "t",
    }
}
