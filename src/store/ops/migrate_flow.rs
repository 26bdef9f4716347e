//! `lua/migrate_flow.lua`: Migrate's check and repair of one queue's flow-control
//! indexes (issue 32), one bounded step per call; a dry run only counts.

use super::{job_head, prelude::*, under_lock};

script!(MigrateFlow<'_>: "migrate_flow", Job, Arity::Exactly(3), Arity::AtLeast(14));

/// One step of the flow repair.
#[derive(Debug, Clone, Copy)]
pub(crate) enum FlowStep<'a> {
    /// Which of these queues have flow state to check.
    Survey(&'a [String]),
    /// Recount the queue's running slots from its lease set, refused above `max`
    /// leases.
    Slots { queue: &'a str, max: u32 },
    /// Job numbers from `cursor` of the queue, at most `batch`.
    Jobs {
        queue: &'a str,
        cursor: u64,
        batch: u32,
    },
    /// Lanes (`'l'`) and concurrency parks (`'w'`) of the queue found by SCAN.
    Places {
        queue: &'a str,
        items: &'a [(char, String)],
    },
}

pub(crate) struct MigrateFlow<'a> {
    pub(crate) token: &'a str,
    pub(crate) dry_run: bool,
    pub(crate) step: FlowStep<'a>,
}

/// What one call did (or, in a dry run, would do).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct FlowReply {
    /// `Jobs`: the next cursor, `None` once the queue is walked.
    pub(crate) next: Option<u64>,
    pub(crate) visited: u64,
    /// Index entries repaired: lane entries, slot counts, lanes unparked.
    pub(crate) repaired: u64,
    /// Why the step was refused (nothing written).
    pub(crate) problem: Option<String>,
    /// `Survey`: per queue, whether it has flow state.
    pub(crate) flags: Vec<bool>,
    /// `Jobs` and `Places`: lanes found in no place (entered into the rotation);
    /// `Slots`: the concurrency keys whose count was wrong.
    pub(crate) names: Vec<String>,
}

impl Operation for MigrateFlow<'_> {
    /// `None` when the lock was lost (nothing written).
    type Output = Option<FlowReply>;

    fn encode(&self, keys: &NamespaceKeys, call: &mut Call) {
        job_head(keys, call);
        let (mode, queue, cursor, batch) = match self.step {
            FlowStep::Survey(_) => ("survey", "", 0, 0),
            FlowStep::Slots { queue, max } => ("slots", queue, 0, max),
            FlowStep::Jobs {
                queue,
                cursor,
                batch,
            } => ("jobs", queue, cursor, batch.max(1)),
            FlowStep::Places { queue, .. } => ("places", queue, 0, 0),
        };
        call.key(keys.migrate_lock())
            .arg("token", self.token)
            .arg("dry_run", if self.dry_run { "1" } else { "0" })
            .arg("mode", mode)
            .arg("queue", queue)
            .arg("cursor", cursor)
            .arg("batch", batch);
        match self.step {
            FlowStep::Survey(queues) => {
                for queue in queues {
                    call.arg("items", queue);
                }
            }
            FlowStep::Places { items, .. } => {
                for (kind, name) in items {
                    call.arg("items", kind.to_string()).arg("items", name);
                }
            }
            FlowStep::Slots { .. } | FlowStep::Jobs { .. } => {}
        }
    }

    fn decode(&self, mut reply: Reply) -> Result<Self::Output, StoreError> {
        if !under_lock(&mut reply)? {
            reply.finish()?;
            return Ok(None);
        }
        let next = reply.int()?;
        let mut out = FlowReply {
            next: u64::try_from(next).ok().filter(|_| next > 0),
            visited: reply.count()?,
            repaired: reply.count()?,
            ..FlowReply::default()
        };
        let problem = reply.text()?;
        out.problem = (!problem.is_empty()).then_some(problem);
        while !reply.is_done() {
            match self.step {
                FlowStep::Survey(_) => out.flags.push(reply.flag()?),
                _ => out.names.push(reply.text()?),
            }
        }
        Ok(Some(out))
    }
}

#[cfg(test)]
pub(super) fn sample() -> MigrateFlow<'static> {
    MigrateFlow {
        token: "t",
        dry_run: false,
        step: FlowStep::Jobs {
            queue: "q",
            cursor: 1,
            batch: 100,
        },
    }
}
