//! Schedule and occurrence types shared by the store and the API. No tonic, no redis.

use std::collections::BTreeMap;

/// Lifecycle state of a schedule, as stored in its hash.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScheduleStatus {
    Active,
    Paused,
    Completed,
}

impl ScheduleStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            ScheduleStatus::Active => "active",
            ScheduleStatus::Paused => "paused",
            ScheduleStatus::Completed => "completed",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
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
pub enum TimingDef {
    Cron(String),
    EveryMs(i64),
}

/// A schedule's definition: what a caller writes with UpsertSchedule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScheduleDef {
    pub id: String,
    pub timing: TimingDef,
    /// Canonical IANA zone name ("UTC" by default).
    pub timezone: String,
    pub start_ms: Option<i64>,
    pub end_ms: Option<i64>,
    /// 0 = unlimited.
    pub run_limit: u64,
    pub job_name: String,
    pub payload: Vec<u8>,
    pub headers: BTreeMap<String, String>,
    /// Only read on create.
    pub paused: bool,
}

/// A stored schedule: its definition plus runtime state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScheduleRecord {
    pub def: ScheduleDef,
    pub status: ScheduleStatus,
    pub run_count: u64,
    pub last_run_ms: Option<i64>,
    pub next_run_ms: Option<i64>,
    pub create_ms: i64,
    pub update_ms: i64,
    pub revision: u64,
}

/// One claimed firing of a schedule.
#[derive(Debug, Clone)]
pub struct Occurrence {
    pub occurrence_id: String,
    pub schedule: ScheduleRecord,
    pub due_ms: i64,
    pub claim_ms: i64,
    pub skipped: u64,
    /// Set when the occurrence was claimed with a lease (at-least-once).
    pub lease: Option<OccurrenceLease>,
}

/// The lease of a leased occurrence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OccurrenceLease {
    pub token: String,
    pub deadline_ms: i64,
    /// 1-based hand-out count.
    pub attempt: u32,
}

/// The occurrence id: a UUIDv5 of (namespace, schedule id, nominal due time, revision).
/// Deterministic, so a worker can use it as an idempotency key; the revision makes a
/// slot of a changed timing a different occurrence.
pub fn occurrence_id(namespace: &str, schedule_id: &str, due_ms: i64, revision: u64) -> String {
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
