//! `lua/upsert_schedule.lua`: create a schedule or replace its definition.

use super::{prelude::*, schedule_head};
use crate::domain::{
    catchup_word, Follow, NextRun, ScheduleDef, ScheduleRecord, TimingDef, SCHEDULE_SCHEMA,
};
use crate::timing::CatchUp;

script!(UpsertSchedule<'_>: "upsert_schedule", Schedule, Arity::Exactly(5), Arity::Exactly(26));

/// `next` is used when the timing changed or the schedule is new.
pub(crate) struct UpsertSchedule<'a> {
    pub(crate) def: &'a ScheduleDef,
    pub(crate) next: NextRun,
    /// `--max-schedules-per-namespace` (0: no limit), checked on create.
    pub(crate) max_schedules: u64,
}

/// Follow as the scripts read it: ms, "end", or "" (unknown); ARGV `name`.
pub(crate) fn follow_arg(call: &mut Call, name: &'static str, follow: Follow) {
    match follow {
        Follow::At(ms) => call.arg(name, ms),
        Follow::End => call.arg(name, "end"),
        Follow::Unknown => call.arg(name, ""),
    };
}

/// A timing as the scripts read it: kind, cron expression, every ms (the one the kind
/// does not use "").
pub(crate) fn timing_args(call: &mut Call, timing: &TimingDef) {
    match timing {
        TimingDef::Cron(expr) => call.arg("kind", "cron").arg("cron", expr).arg("every_ms", ""),
        TimingDef::EveryMs(ms) => call.arg("kind", "every").arg("cron", "").arg("every_ms", *ms),
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

    fn encode(&self, keys: &NamespaceKeys, call: &mut Call) {
        let def = self.def;
        schedule_head(keys, call);
        call.key(keys.due())
            .key(keys.schedule(&def.id))
            .arg("id", &def.id);
        timing_args(call, &def.timing);
        call.arg("tz", &def.timezone)
            .opt("start_ms", def.start_ms)
            .opt("end_ms", def.end_ms)
            .arg("limit", def.run_limit)
            .arg("job_name", &def.job_name)
            .arg("payload", def.payload.as_slice())
            .arg("headers", records::headers_json(&def.headers))
            .flag("paused", def.paused)
            .opt("next_ms", self.next.next_ms);
        follow_arg(call, "follow", self.next.follow);
        call.arg("schema", SCHEDULE_SCHEMA)
            .arg("max_schedules", self.max_schedules);
        let limit = match def.catchup.policy {
            CatchUp::All { limit } => limit,
            CatchUp::One | CatchUp::Skip => 0,
        };
        call.arg("catchup", catchup_word(def.catchup.policy))
            .arg("catchup_limit", limit)
            .opt("window_ms", def.catchup.window_ms)
            .opt("offset_ms", def.offset_ms)
            .arg("overlap", def.overlap.as_str())
            .arg("max_attempts", def.max_attempts)
            .arg("jitter_ms", def.jitter_ms)
            .arg(
                "target",
                def.target
                    .as_ref()
                    .map(records::target_json)
                    .unwrap_or_default(),
            );
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
        target: None,
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
