//! `lua/import_schedules.lua`: write one batch of schedules converted from another
//! queue's layout, each whole, none twice.

use super::{prelude::*, schedule_head, under_lock};
use crate::domain::{ScheduleRecord, TimingDef, SCHEDULE_SCHEMA};

script!(
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

    fn script(&self) -> &'static ScriptDef {
        &SCRIPT
    }

    fn encode(&self, keys: &NamespaceKeys, call: &mut Call) {
        schedule_head(keys, call);
        call.key(keys.due())
            .key(keys.migrate_lock())
            .arg(self.token)
            .arg(SCHEDULE_SCHEMA);
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
    call.arg(&r.def.id);
    match &r.def.timing {
        TimingDef::Cron(expr) => call.arg("cron").arg(expr).arg(""),
        TimingDef::EveryMs(ms) => call.arg("every").arg("").arg(*ms),
    };
    call.arg(&r.def.timezone)
        .opt(r.def.start_ms)
        .opt(r.def.end_ms)
        .arg(r.def.run_limit)
        .arg(&r.def.job_name)
        .arg(r.def.payload.as_slice())
        .arg(records::headers_json(&r.def.headers))
        .arg(r.status.as_str())
        .arg(r.run_count)
        .opt(r.last_run_ms)
        .opt(r.next_run_ms)
        .arg(r.create_ms);
}

#[cfg(test)]
pub(super) fn sample() -> ImportSchedules<'static> {
    ImportSchedules {
        token: "t",
        records: &[],
    }
}
