//! `lua/trigger_schedule.lua`: an occurrence of a schedule now, outside its timing.

use super::{prelude::*, schedule_head};

script!(TriggerSchedule<'_>: "trigger_schedule", Schedule, Arity::Exactly(5), Arity::Exactly(6));

pub(crate) struct TriggerSchedule<'a> {
    pub(crate) namespace: &'a str,
    pub(crate) id: &'a str,
    /// Trigger even while an occurrence is outstanding under SKIP or BUFFER_ONE.
    pub(crate) ignore_overlap: bool,
}

/// What the trigger found.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Triggered {
    /// Waiting for the next claim, with this occurrence id and due time.
    Done {
        occurrence_id: String,
        due_ms: i64,
        /// A target schedule's: the dispatcher enqueues it.
        target: bool,
    },
    Missing,
    Paused,
    Completed,
    /// A triggered occurrence already waits for a claim (its id).
    Pending(String),
    /// The overlap policy refuses it: this occurrence is outstanding.
    Overlap(String),
}

impl Operation for TriggerSchedule<'_> {
    type Output = Triggered;

    fn encode(&self, keys: &NamespaceKeys, call: &mut Call) {
        schedule_head(keys, call);
        call.key(keys.due())
            .key(keys.schedule(self.id))
            .arg("id", self.id)
            .flag("ignore_overlap", self.ignore_overlap)
            .arg("namespace", self.namespace)
            .arg("occurrence_prefix", keys.occurrence_prefix());
    }

    fn decode(&self, mut reply: Reply) -> Result<Self::Output, StoreError> {
        let out = match reply.text()?.as_str() {
            "ok" => Triggered::Done {
                occurrence_id: reply.text()?,
                due_ms: reply.int()?,
                target: reply.flag()?,
            },
            "missing" => Triggered::Missing,
            "paused" => Triggered::Paused,
            "completed" => Triggered::Completed,
            "pending" => Triggered::Pending(reply.text()?),
            "overlap" => Triggered::Overlap(reply.text()?),
            other => {
                return Err(StoreError::corrupt(
                    "trigger_schedule reply",
                    format!("unexpected {other:?}"),
                ))
            }
        };
        reply.finish()?;
        Ok(out)
    }
}

#[cfg(test)]
pub(super) fn sample() -> TriggerSchedule<'static> {
    TriggerSchedule {
        namespace: "ns",
        id: "s",
        ignore_overlap: false,
    }
}
