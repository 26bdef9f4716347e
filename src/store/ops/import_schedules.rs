//! `lua/import_schedules.lua`: write one batch of schedules converted from another
//! queue's layout, each whole, none twice.

use super::{prelude::*, schedule_head, under_lock};
use super::upsert_schedule::timing_args;
use crate::domain::{ScheduleRecord, SCHEDULE_SCHEMA};

script!(ImportSchedules<'_>: 
    "import_schedules",
    Schedule,
    Arity::Exactly(5),
    Arity::Groups {
        fixed: 4,
        group: 16
    }
);

pub(crate) struct ImportSchedules<'a> {
    pub(crate) token: &'a str,
    /// Converted schedules (an imported record carries no follow slot).
    pub(crate) records: &'a [ScheduleRecord],
}

#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct ImportCounts {
    pub(crate) imported: u64,
    pub(crate) already_present: u64,
    pub(crate) indexed: u64,
}

impl Operation for ImportSchedules<'_> {
    /// `None` when the lock was lost (nothing written).
    type Output = Option<ImportCounts>;

    fn encode(&self, keys: &NamespaceKeys, call: &mut Call) {
        schedule_head(keys, call);
        call.key(keys.due())
            .key(keys.migrate_lock())
            .arg("token", self.token)
            .arg("schema", SCHEDULE_SCHEMA);
        for record in self.records {
            encode_record(call, record);
        }
    }

    fn decode(&self, mut reply: Reply) -> Result<Self::Output, StoreError> {
        let counts = if under_lock(&mut reply)? {
            Some(ImportCounts {
                imported: reply.count()?,
                already_present: reply.count()?,
                indexed: reply.count()?,
            })
        } else {
            None
        };
        reply.finish()?;
        Ok(counts)
    }
}

/// id, kind, cron, every_ms, tz, start_ms, end_ms, limit, job_name, payload, headers,
/// status, runs, last_ms, next_ms, created_ms (an imported record carries no follow
/// slot: its first claim computes one).
fn encode_record(call: &mut Call, r: &ScheduleRecord) {
    call.arg("id", &r.def.id);
    timing_args(call, &r.def.timing);
    call.arg("tz", &r.def.timezone)
        .opt("start_ms", r.def.start_ms)
        .opt("end_ms", r.def.end_ms)
        .arg("limit", r.def.run_limit)
        .arg("job_name", &r.def.job_name)
        .arg("payload", r.def.payload.as_slice())
        .arg("headers", records::headers_json(&r.def.headers))
        .arg("status", r.status.as_str())
        .arg("runs", r.run_count)
        .opt("last_ms", r.last_run_ms)
        .opt("next_ms", r.next_run_ms)
        .arg("created_ms", r.create_ms);
}

#[cfg(test)]
pub(super) fn sample() -> ImportSchedules<'static> {
    use crate::domain::{Follow, ScheduleDef, ScheduleStatus, TimingDef};
    use std::sync::LazyLock;
    static RECORDS: LazyLock<Vec<ScheduleRecord>> = LazyLock::new(|| {
        vec![ScheduleRecord {
            def: ScheduleDef {
                id: "s".into(),
                timing: TimingDef::EveryMs(60_000),
                timezone: "UTC".into(),
                start_ms: None,
                end_ms: None,
                run_limit: 0,
                job_name: "j".into(),
                payload: Vec::new(),
                headers: Default::default(),
                paused: false,
                catchup: Default::default(),
                offset_ms: None,
                overlap: Default::default(),
                max_attempts: 0,
                jitter_ms: 0,
                target: None,
            },
            status: ScheduleStatus::Active,
            run_count: 0,
            last_run_ms: None,
            next_run_ms: Some(60_000),
            create_ms: 1,
            update_ms: 1,
            revision: 1,
            follow: Follow::Unknown,
            skipped: Default::default(),
            pause_note: String::new(),
            buffered_ms: None,
            trigger_ms: None,
            backfill_ms: None,
            recent_runs: Vec::new(),
        }]
    });
    ImportSchedules {
        token: "t",
        records: &RECORDS,
    }
}
