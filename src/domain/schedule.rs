//! Schedules: what a caller defines, what is stored, and the next-run arithmetic the
//! store is handed (the slot after the next one, for cron).

use std::collections::BTreeMap;

use crate::timing::{CatchUp, CatchUpRule, Timing, TimingError, TimingSpec};

/// Lifecycle state of a schedule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ScheduleStatus {
    Active,
    Paused,
    Completed,
}

impl ScheduleStatus {
    /// The name the store and its scripts use.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            ScheduleStatus::Active => "active",
            ScheduleStatus::Paused => "paused",
            ScheduleStatus::Completed => "completed",
        }
    }

    pub(crate) fn parse(text: &str) -> Option<Self> {
        match text {
            "active" => Some(ScheduleStatus::Active),
            "paused" => Some(ScheduleStatus::Paused),
            "completed" => Some(ScheduleStatus::Completed),
            _ => None,
        }
    }
}

/// When a schedule fires: a cron expression or a fixed interval.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum TimingDef {
    Cron(String),
    EveryMs(i64),
}

/// A schedule's definition: what a caller writes with UpsertSchedule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ScheduleDef {
    pub(crate) id: String,
    pub(crate) timing: TimingDef,
    /// Canonical IANA zone name ("UTC" by default).
    pub(crate) timezone: String,
    pub(crate) start_ms: Option<i64>,
    pub(crate) end_ms: Option<i64>,
    /// 0 = unlimited.
    pub(crate) run_limit: u64,
    pub(crate) job_name: String,
    pub(crate) payload: Vec<u8>,
    pub(crate) headers: BTreeMap<String, String>,
    /// Only read on create.
    pub(crate) paused: bool,
    /// The catch-up policy and window (not timing: no revision bump).
    pub(crate) catchup: CatchUpRule,
    /// `every` only: slots are (start or the epoch) + offset + k*every. Timing.
    pub(crate) offset_ms: Option<i64>,
    /// What a slot does while an earlier leased occurrence is outstanding (not timing).
    pub(crate) overlap: Overlap,
    /// Hand-outs of a leased occurrence at most (0: unlimited); after the last one's
    /// lease expires the occurrence is finished (not timing).
    pub(crate) max_attempts: u32,
    /// A slot is handed out up to this much later than its nominal time (0: none;
    /// not timing): see `jitter_offset_ms`.
    pub(crate) jitter_ms: i64,
    /// Where each due slot goes: `None`, workers claim the occurrences; a target, the
    /// service enqueues each slot as a job (issue 30; not timing).
    pub(crate) target: Option<EnqueueTarget>,
}

/// A schedule target that makes each due slot a job of a queue of the schedule's
/// namespace, with every Enqueue default filled in (what the jobs get).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct EnqueueTarget {
    pub(crate) queue: String,
    pub(crate) priority: i32,
    pub(crate) max_attempts: u32,
    pub(crate) backoff: crate::domain::Backoff,
    /// Headers over the schedule's own (these win on a shared key).
    pub(crate) headers: BTreeMap<String, String>,
    pub(crate) lease_ms: i64,
}

// The backoff's jitter is validated into 0..=1 (never NaN), so equality is total.
impl Eq for EnqueueTarget {}

/// How much later than its nominal time a slot with this occurrence id is handed out
/// under `jitter_ms`: 48 bits of the id (hex digits 1-8 and 10-13) modulo the jitter.
/// `lua/lib/schedule.lua` sched_jitter computes the same from the same id.
pub(crate) fn jitter_offset_ms(occurrence_id: &str, jitter_ms: i64) -> i64 {
    if jitter_ms <= 0 {
        return 0;
    }
    let digits: String = occurrence_id
        .get(0..8)
        .into_iter()
        .chain(occurrence_id.get(9..13))
        .collect();
    i64::from_str_radix(&digits, 16).map_or(0, |bits| bits % jitter_ms)
}

/// The overlap policy: what a slot that comes due while an earlier leased occurrence
/// of the schedule is still leased and unacked does.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) enum Overlap {
    /// Handed out as usual.
    #[default]
    AllowAll,
    /// Skipped and counted.
    Skip,
    /// The first such slot waits until the outstanding occurrence ends; further ones
    /// are skipped.
    BufferOne,
}

impl Overlap {
    /// The word the store keeps it as.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Overlap::AllowAll => "allow_all",
            Overlap::Skip => "skip",
            Overlap::BufferOne => "buffer_one",
        }
    }

    pub(crate) fn parse(word: &str) -> Option<Self> {
        match word {
            "allow_all" => Some(Overlap::AllowAll),
            "skip" => Some(Overlap::Skip),
            "buffer_one" => Some(Overlap::BufferOne),
            _ => None,
        }
    }
}

impl ScheduleDef {
    /// Parses the definition's timing (validated on write; stored ones are re-checked,
    /// since a record may have been imported or edited by hand).
    pub(crate) fn timing(&self) -> Result<Timing, TimingError> {
        let (cron, every_ms) = match &self.timing {
            TimingDef::Cron(expr) => (Some(expr.as_str()), None),
            TimingDef::EveryMs(ms) => (None, Some(*ms)),
        };
        Timing::parse(&TimingSpec {
            cron,
            every_ms,
            timezone: &self.timezone,
            start_ms: self.start_ms,
            end_ms: self.end_ms,
            offset_ms: self.offset_ms,
        })
    }
}

/// A stored schedule: its definition plus runtime state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ScheduleRecord {
    pub(crate) def: ScheduleDef,
    pub(crate) status: ScheduleStatus,
    pub(crate) run_count: u64,
    pub(crate) last_run_ms: Option<i64>,
    pub(crate) next_run_ms: Option<i64>,
    pub(crate) create_ms: i64,
    pub(crate) update_ms: i64,
    pub(crate) revision: u64,
    /// The precomputed cron slot after `next_run_ms`.
    pub(crate) follow: Follow,
    /// Slots skipped so far, per reason.
    pub(crate) skipped: SkipCounts,
    /// PauseSchedule's note, until resumed ("" none).
    pub(crate) pause_note: String,
    /// BUFFER_ONE: the slot held back until the outstanding occurrence ends.
    pub(crate) buffered_ms: Option<i64>,
    /// A TriggerSchedule occurrence waiting for a claim: its due time.
    pub(crate) trigger_ms: Option<i64>,
    /// BackfillSchedule: the earliest backfilled slot waiting for a claim.
    pub(crate) backfill_ms: Option<i64>,
    /// The last runs, newest first (GetSchedule only; empty elsewhere).
    pub(crate) recent_runs: Vec<RecentRun>,
}

/// What became of a recent run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RunOutcome {
    /// Handed out with a lease that has not ended yet.
    Leased,
    Acked,
    /// Its lease expired for the last time (max_attempts).
    LeaseExpired,
    /// Handed out without a lease (at-most-once).
    NotLeased,
    /// Skipped under the overlap policy.
    SkippedOverlap,
    /// Enqueued as a job by the schedule's target (issue 30).
    Enqueued,
}

/// One of a schedule's recent runs (`lua/lib/schedule.lua` runs_push).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RecentRun {
    pub(crate) occurrence_id: String,
    pub(crate) due_ms: i64,
    /// None for a skipped slot.
    pub(crate) claim_ms: Option<i64>,
    pub(crate) attempt: u32,
    pub(crate) outcome: RunOutcome,
    pub(crate) kind: super::OccurrenceKind,
    pub(crate) worker: String,
}

impl RecentRun {
    /// "occurrence id|due|claim|attempt|outcome|kind|worker" (the worker may hold `|`).
    pub(crate) fn parse(text: &str) -> Option<Self> {
        let mut parts = text.splitn(7, '|');
        let occurrence_id = parts.next()?.to_owned();
        let due_ms = parts.next()?.parse().ok()?;
        let claim = parts.next()?;
        let claim_ms = if claim.is_empty() {
            None
        } else {
            Some(claim.parse().ok()?)
        };
        let attempt = parts.next()?.parse().ok()?;
        let outcome = match parts.next()? {
            "leased" => RunOutcome::Leased,
            "acked" => RunOutcome::Acked,
            "enqueued" => RunOutcome::Enqueued,
            "lease_expired" => RunOutcome::LeaseExpired,
            "not_leased" => RunOutcome::NotLeased,
            "skipped_overlap" => RunOutcome::SkippedOverlap,
            _ => return None,
        };
        let kind = super::OccurrenceKind::parse(parts.next()?)?;
        let worker = parts.next()?.to_owned();
        Some(RecentRun {
            occurrence_id,
            due_ms,
            claim_ms,
            attempt,
            outcome,
            kind,
            worker,
        })
    }
}

/// Slots a schedule skipped, per reason (the metric reasons `catchup`, `window`,
/// `overlap`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct SkipCounts {
    pub(crate) catchup: u64,
    pub(crate) window: u64,
    pub(crate) overlap: u64,
}

/// The words the store keeps a catch-up policy as.
pub(crate) fn catchup_word(policy: CatchUp) -> &'static str {
    match policy {
        CatchUp::One => "one",
        CatchUp::Skip => "skip",
        CatchUp::All { .. } => "all",
    }
}

/// A stored catch-up policy: its word and limit.
pub(crate) fn catchup_parse(word: &str, limit: u32) -> Option<CatchUp> {
    match word {
        "one" => Some(CatchUp::One),
        "skip" => Some(CatchUp::Skip),
        "all" => Some(CatchUp::All { limit }),
        _ => None,
    }
}

impl ScheduleRecord {
    /// True when the run limit is used up.
    pub(crate) fn exhausted(&self) -> bool {
        self.def.run_limit > 0 && self.run_count >= self.def.run_limit
    }
}

/// The slot after `next`: known, known to be none, or not computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Follow {
    At(i64),
    End,
    Unknown,
}

impl Follow {
    pub(crate) fn from_next(next: Option<i64>) -> Self {
        next.map_or(Follow::End, Follow::At)
    }
}

/// A next run computed by the caller for a write, with its follow-up slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct NextRun {
    pub(crate) next_ms: Option<i64>,
    pub(crate) follow: Follow,
}

impl NextRun {
    /// The first slot at or after `from_ms`, with the slot after it for cron timings
    /// (so the claim of that slot needs no second round trip).
    pub(crate) fn from(timing: &Timing, from_ms: i64) -> Self {
        let next_ms = timing.first_at_or_after(from_ms);
        let follow = match (timing.is_cron(), next_ms) {
            (true, Some(next)) => Follow::from_next(timing.next_after(next)),
            _ => Follow::Unknown,
        };
        NextRun { next_ms, follow }
    }
}

#[cfg(test)]
mod tests {
    use super::jitter_offset_ms;

    #[test]
    fn the_jitter_offset_is_48_bits_of_the_id_modulo_the_jitter() {
        let id = "12345678-9abc-5def-8000-000000000001";
        assert_eq!(jitter_offset_ms(id, 1_000), 0x1234_5678_9abc % 1_000);
        assert_eq!(jitter_offset_ms(id, 0), 0, "no jitter");
        assert_eq!(jitter_offset_ms("short", 1_000), 0, "not an id: no offset");
    }
}
