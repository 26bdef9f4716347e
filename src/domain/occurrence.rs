//! Occurrences: one claimed firing of a schedule, and its lease when claimed
//! at-least-once.

use super::ScheduleRecord;

/// One claimed firing of a schedule.
#[derive(Debug, Clone)]
pub(crate) struct Occurrence {
    pub(crate) occurrence_id: String,
    pub(crate) schedule: ScheduleRecord,
    pub(crate) due_ms: i64,
    pub(crate) claim_ms: i64,
    pub(crate) skipped: u64,
    /// Set when the occurrence was claimed with a lease (at-least-once).
    pub(crate) lease: Option<OccurrenceLease>,
    /// A slot of the timing, or a TriggerSchedule occurrence.
    pub(crate) kind: OccurrenceKind,
}

impl Occurrence {
    /// A scheduled slot of a schedule with jitter: when it was handed out at the
    /// earliest (due time plus its offset). None without jitter.
    pub(crate) fn jittered_ms(&self) -> Option<i64> {
        let jitter = self.schedule.def.jitter_ms;
        (jitter > 0 && self.kind == OccurrenceKind::Scheduled)
            .then(|| self.due_ms + super::jitter_offset_ms(&self.occurrence_id, jitter))
    }
}

/// Where an occurrence came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OccurrenceKind {
    /// A slot of the schedule's timing.
    Scheduled,
    /// TriggerSchedule.
    Triggered,
    /// BackfillSchedule: a slot of the timing, with the slot's own id.
    Backfill,
}

impl OccurrenceKind {
    /// The word the claim script answers with.
    pub(crate) fn parse(word: &str) -> Option<Self> {
        match word {
            "scheduled" => Some(OccurrenceKind::Scheduled),
            "triggered" => Some(OccurrenceKind::Triggered),
            "backfill" => Some(OccurrenceKind::Backfill),
            _ => None,
        }
    }
}

/// The lease of a leased occurrence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct OccurrenceLease {
    pub(crate) token: String,
    pub(crate) deadline_ms: i64,
    /// 1-based hand-out count.
    pub(crate) attempt: u32,
}

/// The occurrence id: the scripts compute it (`lua/lib/rules.lua`); this is the
/// reference they are pinned to (`store::pins`). A UUIDv5 of (namespace, schedule id, nominal due time, revision).
/// Deterministic, so a worker can use it as an idempotency key; the revision makes a
/// slot of a changed timing a different occurrence. `lua/lib/rules.lua` computes the
/// same id for the occurrence record; a library test pins the two together. Migrate's
/// dry run uses it to derive a jittered schedule's due-index score.
pub(crate) fn occurrence_id(
    namespace: &str,
    schedule_id: &str,
    due_ms: i64,
    revision: u64,
) -> String {
    // Length-prefix the free-text parts so no two tuples produce the same name.
    let name = format!(
        "{}:{namespace}|{}:{schedule_id}|{due_ms}|{revision}",
        namespace.len(),
        schedule_id.len()
    );
    uuid::Uuid::new_v5(&OCCURRENCE_NAMESPACE, name.as_bytes()).to_string()
}

/// Fixed UUID namespace for occurrence ids (never change: ids must stay stable).
const OCCURRENCE_NAMESPACE: uuid::Uuid =
    uuid::Uuid::from_u128(0x6475_6571_0000_4000_8000_0000_0000_0001);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn occurrence_ids_are_deterministic_and_distinct() {
        let a = occurrence_id("ns", "s1", 1000, 1);
        assert_eq!(a, occurrence_id("ns", "s1", 1000, 1));
        assert_ne!(a, occurrence_id("ns", "s1", 1000, 2));
        assert_ne!(a, occurrence_id("ns", "s1", 1001, 1));
        assert_ne!(a, occurrence_id("ns", "s2", 1000, 1));
        // Separator characters inside ids cannot forge another tuple.
        assert_ne!(
            occurrence_id("a", "b|1:c", 1, 1),
            occurrence_id("a|1:b", "c", 1, 1)
        );
    }
}
