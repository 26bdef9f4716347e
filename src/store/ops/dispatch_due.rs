//! `lua/dispatch_due.lua`: enqueue the due slots of a namespace's target schedules as
//! jobs (issue 30).

use super::{claim_due::ClaimHint, job_prefixes, prelude::*, schedule_head, upsert_schedule::follow_arg};
use crate::domain::{OccurrenceKind, ScheduleRecord};

script!(DispatchDue<'_>: "dispatch_due", Dispatch, Arity::Exactly(5),
    Arity::Groups { fixed: 15, group: 8 });

/// Slots one call enqueues at most, and index entries it examines at most.
pub(crate) const DISPATCH_SLOTS: u32 = 100;
const DISPATCH_CANDIDATES: u32 = 200;

pub(crate) struct DispatchDue<'a> {
    /// The namespace, for the occurrence ids the script computes.
    pub(crate) namespace: &'a str,
    /// Plans computed for the schedules a previous call answered as "compute".
    pub(crate) hints: &'a [ClaimHint],
}

/// One slot the call took.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DispatchedSlot {
    pub(crate) schedule_id: String,
    /// The job's id: the slot's occurrence id.
    pub(crate) job_id: String,
    pub(crate) due_ms: i64,
    /// False: the job existed already (a slot taken again), nothing was written.
    pub(crate) created: bool,
    pub(crate) kind: OccurrenceKind,
    pub(crate) run: u64,
    /// Slots skipped before it (catch-up and window together).
    pub(crate) skipped: u64,
    /// The queue of its job.
    pub(crate) queue: String,
}

/// What one dispatch call did.
#[derive(Debug)]
pub(crate) struct Dispatched {
    pub(crate) now_ms: i64,
    /// The earliest entry left in the target index.
    pub(crate) earliest_ms: Option<i64>,
    /// Slots skipped under the overlap policy (metric).
    pub(crate) overlap_skips: u64,
    pub(crate) slots: Vec<DispatchedSlot>,
    /// Schedules whose plan the caller must compute (a cron's next slot, a catch-up
    /// plan), as `ClaimDue`'s "compute".
    pub(crate) compute: Vec<ScheduleRecord>,
}

impl Operation for DispatchDue<'_> {
    type Output = Dispatched;

    fn encode(&self, keys: &NamespaceKeys, call: &mut Call) {
        schedule_head(keys, call);
        call.key(keys.target_due()).key(keys.due());
        job_prefixes(keys, call);
        call.arg("namespace", self.namespace)
            .arg("max_slots", DISPATCH_SLOTS)
            .arg("candidates", DISPATCH_CANDIDATES)
            .arg("backfill_prefix", keys.backfill_prefix())
            .arg("runs_prefix", keys.runs_prefix());
        for h in self.hints {
            call.arg("hint_id", &h.id)
                .arg("hint_rev", h.revision)
                .arg("hint_expected_next_ms", h.expected_next_ms)
                .opt("hint_next_ms", h.next.next_ms);
            follow_arg(call, "hint_follow", h.next.follow);
            call.arg("hint_skipped", h.skipped)
                .opt("hint_hand_out", h.hand_out)
                .arg("hint_skipped_window", h.skipped_window);
        }
    }

    fn decode(&self, mut reply: Reply) -> Result<Self::Output, StoreError> {
        let now_ms = reply.int()?;
        let earliest_ms = reply.opt_int()?;
        let overlap_skips = reply.count()?;
        let slots = reply.count()?;
        let computes = reply.count()?;
        let mut out = Dispatched {
            now_ms,
            earliest_ms,
            overlap_skips,
            slots: Vec::new(),
            compute: Vec::new(),
        };
        for _ in 0..slots {
            out.slots.push(DispatchedSlot {
                schedule_id: reply.text()?,
                job_id: reply.text()?,
                due_ms: reply.int()?,
                created: reply.word(|w| match w {
                    "created" => Some(true),
                    "duplicate" => Some(false),
                    _ => None,
                })?,
                kind: reply.word(OccurrenceKind::parse)?,
                run: reply.count()?,
                skipped: reply.count()?,
                queue: reply.text()?,
            });
        }
        for _ in 0..computes {
            out.compute.push(records::schedule(&reply.counted_fields()?)?);
        }
        reply.finish()?;
        Ok(out)
    }
}

#[cfg(test)]
pub(super) fn sample() -> DispatchDue<'static> {
    use crate::domain::{Follow, NextRun};
    use std::sync::LazyLock;
    static HINTS: LazyLock<Vec<ClaimHint>> = LazyLock::new(|| {
        vec![ClaimHint {
            id: "s".into(),
            revision: 1,
            expected_next_ms: 60_000,
            next: NextRun {
                next_ms: Some(120_000),
                follow: Follow::Unknown,
            },
            hand_out: Some(60_000),
            skipped: 0,
            skipped_window: 0,
        }]
    });
    DispatchDue {
        namespace: "ns",
        hints: &HINTS,
    }
}
