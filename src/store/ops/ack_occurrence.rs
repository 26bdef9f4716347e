//! `lua/ack_occurrence.lua`: confirm a leased schedule occurrence was handled.

use super::prelude::*;
use crate::domain::{LeaseCheck, LeaseLoss};

script!("ack_occurrence", Core, Arity::Exactly(1), Arity::Exactly(4));

/// How long an acked occurrence record is kept, so a repeated ack says "acked".
const ACKED_OCCURRENCE_TTL_MS: i64 = 86_400_000;

pub(crate) struct AckOccurrence<'a> {
    pub(crate) occurrence_id: &'a str,
    pub(crate) token: &'a str,
}

impl Operation for AckOccurrence<'_> {
    type Output = LeaseCheck<()>;

    fn script(&self) -> &'static ScriptDef {
        &SCRIPT
    }

    fn encode(&self, keys: &NamespaceKeys, call: &mut Call) {
        call.key(keys.occurrence_leases())
            .arg(keys.occurrence_prefix())
            .arg(self.occurrence_id)
            .arg(self.token)
            .arg(ACKED_OCCURRENCE_TTL_MS);
    }

    fn decode(&self, mut reply: Reply) -> Result<Self::Output, StoreError> {
        let check = match reply.text()?.as_str() {
            "ok" => LeaseCheck::Done(()),
            "missing" => LeaseCheck::Missing,
            "expired" => LeaseCheck::Lost(LeaseLoss::Expired),
            "stale" => LeaseCheck::Lost(reply.word(|state| match state {
                "acked" => Some(LeaseLoss::Acked),
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
