//! `lua/set_schedule_next_run.lua`: set or postpone a schedule's next run without
//! touching its timing (compare-and-set on the revision its follow slot was computed
//! from; `expected_revision` checked in the same script).

use super::{prelude::*, schedule_head, upsert_schedule::follow_arg};
use crate::domain::{Follow, ScheduleRecord};

script!(SetScheduleNextRun<'_>: "set_schedule_next_run", Schedule, Arity::Exactly(5), Arity::Exactly(8));

pub(crate) struct SetScheduleNextRun<'a> {
    pub(crate) id: &'a str,
    /// The revision `follow` was computed from.
    pub(crate) revision: u64,
    /// The caller's guard (0: not checked).
    pub(crate) expected_revision: u64,
    pub(crate) next_ms: i64,
    /// The timing's first slot after `next_ms`.
    pub(crate) follow: Follow,
    /// How far before now `next_ms` may lie when the schedule has no catch-up window.
    pub(crate) max_past_ms: i64,
}

/// Why a next run was refused as a time (nothing written).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EarliestBy {
    /// The schedule's catch-up window before now.
    Window,
    /// The server's bound for schedules without a window.
    MaxPast,
    /// Just after the schedule's last run.
    LastRun,
    /// The schedule's start_time.
    StartTime,
}

/// Why a schedule is completed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CompletedBy {
    RunLimit,
    EndTime,
}

/// What the script did.
#[derive(Debug)]
pub(crate) enum NextRunSet {
    Missing,
    /// The revision changed since it was read: read again and retry.
    Moved,
    /// `expected_revision` is not the current revision (this one).
    Revision(u64),
    Paused,
    Completed(CompletedBy),
    /// Active, but its last slot waits behind an outstanding occurrence.
    NoNextRun,
    /// `next_ms` is before this time.
    TooEarly { earliest_ms: i64, by: EarliestBy },
    /// `next_ms` is after the schedule's end_time (this).
    AfterEnd(i64),
    Done(Box<ScheduleRecord>),
}

impl Operation for SetScheduleNextRun<'_> {
    type Output = NextRunSet;

    fn encode(&self, keys: &NamespaceKeys, call: &mut Call) {
        schedule_head(keys, call);
        call.key(keys.due())
            .key(keys.schedule(self.id))
            .arg("id", self.id)
            .arg("rev", self.revision)
            .arg("expected_rev", self.expected_revision)
            .arg("next_ms", self.next_ms);
        follow_arg(call, "follow", self.follow);
        call.arg("max_past_ms", self.max_past_ms);
    }

    fn decode(&self, mut reply: Reply) -> Result<Self::Output, StoreError> {
        if reply.is_done() {
            return Ok(NextRunSet::Missing);
        }
        let out = match reply.text()?.as_str() {
            "ok" => {
                let fields = reply.rest_fields()?.named(format!("schedule {:?}", self.id));
                return Ok(NextRunSet::Done(Box::new(records::schedule(&fields)?)));
            }
            "revision" => NextRunSet::Revision(reply.count()?),
            "moved" => NextRunSet::Moved,
            "paused" => NextRunSet::Paused,
            "completed" => NextRunSet::Completed(reply.word(|why| match why {
                "run_limit" => Some(CompletedBy::RunLimit),
                "end_time" => Some(CompletedBy::EndTime),
                _ => None,
            })?),
            "no_next" => NextRunSet::NoNextRun,
            "too_early" => NextRunSet::TooEarly {
                earliest_ms: reply.int()?,
                by: reply.word(|by| match by {
                    "window" => Some(EarliestBy::Window),
                    "max_past" => Some(EarliestBy::MaxPast),
                    "last_run" => Some(EarliestBy::LastRun),
                    "start_time" => Some(EarliestBy::StartTime),
                    _ => None,
                })?,
            },
            "after_end" => NextRunSet::AfterEnd(reply.int()?),
            other => {
                return Err(StoreError::corrupt(
                    "set_schedule_next_run reply",
                    format!("unexpected {other:?}"),
                ))
            }
        };
        reply.finish()?;
        Ok(out)
    }
}

#[cfg(test)]
pub(super) fn sample() -> SetScheduleNextRun<'static> {
    SetScheduleNextRun {
        id: "s",
        revision: 1,
        expected_revision: 0,
        next_ms: 60_000,
        follow: Follow::At(120_000),
        max_past_ms: 86_400_000,
    }
}
