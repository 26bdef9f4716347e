//! `lua/upsert_schedule.lua`: create a schedule or replace its definition.

use super::{prelude::*, schedule_head};
use crate::domain::{
    catchup_word, Follow, NextRun, ScheduleDef, ScheduleRecord, TimingDef, SCHEDULE_SCHEMA,
};
use crate::timing::CatchUp;

script!("upsert_schedule", Schedule, Arity::Exactly(5), Arity::Exactly(25));

/// `next` is used when the timing changed or the schedule is new.
pub(crate) struct UpsertSchedule<'a> {
    pub(crate) def: &'a ScheduleDef,
    pub(crate) next: NextRun,
    /// `--max-schedules-per-namespace` (0: no limit), checked on create.
    pub(crate) max_schedules: u64,
}

/// Follow as the scripts read it: ms, "end", or "" (unknown).
pub(crate) fn follow_arg(call: &mut Call, follow: Follow) {
    match follow {
        Follow::At(ms) => call.arg(ms),
        Follow::End => call.arg("end"),
        Follow::Unknown => call.arg(""),
    };
}

/// What an upsert stored.
#[derive(Debug)]
pub(crate) struct Upserted {
    /// The schedule is new.
    pub(crate) created: bool,
    /// The schedule as stored.
    pub(crate) record: ScheduleRecord,
}

impl Operation for UpsertSchedule<'_> {
    type Output = Upserted;

    fn script(&self) -> &'static ScriptDef {
        &SCRIPT
    }

    fn encode(&self, keys: &NamespaceKeys, call: &mut Call) {
        let def = self.def;
        schedule_head(keys, call);
        call.key(keys.due()).key(keys.schedule(&def.id)).arg(&def.id);
        match &def.timing {
            TimingDef::Cron(expr) => call.arg("cron").arg(expr).arg(""),
            TimingDef::EveryMs(ms) => call.arg("every").arg("").arg(*ms),
        };
        call.arg(&def.timezone)
            .opt(def.start_ms)
            .opt(def.end_ms)
            .arg(def.run_limit)
            .arg(&def.job_name)
            .arg(def.payload.as_slice())
            .arg(records::headers_json(&def.headers))
            .flag(def.paused)
            .opt(self.next.next_ms);
        follow_arg(call, self.next.follow);
        call.arg(SCHEDULE_SCHEMA).arg(self.max_schedules);
        let limit = match def.catchup.policy {
            CatchUp::All { limit } => limit,
            CatchUp::One | CatchUp::Skip => 0,
        };
        call.arg(catchup_word(def.catchup.policy))
            .arg(limit)
            .opt(def.catchup.window_ms)
            .opt(def.offset_ms)
            .arg(def.overlap.as_str())
            .arg(def.max_attempts)
            .arg(def.jitter_ms);
    }

    fn decode(&self, mut reply: Reply) -> Result<Self::Output, StoreError> {
        let created = reply.flag()?;
        let fields = reply.rest_fields()?.named(format!("schedule {:?}", self.def.id));
        Ok(Upserted {
            created,
            record: records::schedule(&fields)?,
        })
    }
}

#[cfg(test)]
pub(super) fn sample() -> UpsertSchedule<'static> {
    use std::sync::LazyLock;
    static DEF: LazyLock<ScheduleDef> = LazyLock::new(|| ScheduleDef {
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
    });
    UpsertSchedule {
        def: &DEF,
        next: NextRun {
            next_ms: Some(60_000),
            follow: Follow::Unknown,
        },
        max_schedules: 0,
    }
}
