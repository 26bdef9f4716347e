//! The Lua scripts, embedded at build time. Each file in `lua/` documents its KEYS,
//! ARGV, reply and the invariant it keeps. `redis::Script` runs them with EVALSHA and
//! reloads a script transparently when Redis answers NOSCRIPT (after a restart or a
//! `SCRIPT FLUSH`).

use std::sync::LazyLock;

use deadpool_redis::redis::Script;

/// The schedule scripts' prelude: the helpers that guard the schema and count the
/// index, then the packed schedule record.
const SCHEDULE: &str = concat!(
    include_str!("../../lua/lib/guard.lua"),
    include_str!("../../lua/lib/schedule.lua")
);
/// The job layout: guard, packed record, ready lists and listing buckets.
const JOB: &str = include_str!("../../lua/lib/job.lua");

/// `script!(NAME, "file.lua")`, or `script!(NAME, "file.lua", PRELUDE)` with a
/// library (SCHEDULE, JOB) prepended.
macro_rules! script {
    ($name:ident, $file:literal) => {
        pub static $name: LazyLock<Script> =
            LazyLock::new(|| Script::new(include_str!(concat!("../../lua/", $file))));
    };
    ($name:ident, $file:literal, $prelude:ident) => {
        pub static $name: LazyLock<Script> = LazyLock::new(|| {
            Script::new(&format!(
                "{}{}",
                $prelude,
                include_str!(concat!("../../lua/", $file))
            ))
        });
    };
}

script!(UPSERT_SCHEDULE, "upsert_schedule.lua", SCHEDULE);
script!(CLAIM_DUE, "claim_due.lua", SCHEDULE);
script!(SET_FOLLOW, "set_follow.lua", SCHEDULE);
script!(GET_SCHEDULE, "get_schedule.lua", SCHEDULE);
script!(PAUSE_SCHEDULE, "pause_schedule.lua", SCHEDULE);
script!(RESUME_SCHEDULE, "resume_schedule.lua", SCHEDULE);
script!(DELETE_SCHEDULE, "delete_schedule.lua", SCHEDULE);
script!(LIST_SCHEDULES, "list_schedules.lua", SCHEDULE);
script!(PEEK_DUE, "peek_due.lua");
script!(MIGRATE_LOCK, "migrate_lock.lua");
script!(MIGRATE_SCAN, "migrate_scan.lua", SCHEDULE);
script!(MIGRATE_APPLY, "migrate_apply.lua", SCHEDULE);
script!(MIGRATE_INDEX, "migrate_index.lua", SCHEDULE);
script!(MIGRATE_FINISH, "migrate_finish.lua");
script!(NAMESPACE_STATUS, "namespace_status.lua");
script!(IMPORT_SCHEDULES, "import_schedules.lua", SCHEDULE);
script!(ENQUEUE_JOBS, "enqueue_jobs.lua", JOB);
script!(CLAIM_JOBS, "claim_jobs.lua", JOB);
script!(ACK_JOB, "ack_job.lua", JOB);
script!(FAIL_JOB, "fail_job.lua", JOB);
script!(EXTEND_LEASE, "extend_lease.lua", JOB);
script!(CANCEL_JOB, "cancel_job.lua", JOB);
script!(RETRY_JOB, "retry_job.lua", JOB);
script!(LIST_JOBS, "list_jobs.lua", JOB);
script!(PRUNE_JOBS, "prune_jobs.lua", JOB);
script!(PEEK_JOBS, "peek_jobs.lua", JOB);
script!(GET_JOB, "get_job.lua", JOB);
script!(MIGRATE_JOBS, "migrate_jobs.lua", JOB);
script!(ACK_OCCURRENCE, "ack_occurrence.lua");

/// Every script with its name (its file's stem), for tools that attribute SLOWLOG
/// entries.
pub fn named() -> [(&'static str, &'static Script); 29] {
    [
        ("upsert_schedule", &UPSERT_SCHEDULE),
        ("claim_due", &CLAIM_DUE),
        ("set_follow", &SET_FOLLOW),
        ("get_schedule", &GET_SCHEDULE),
        ("pause_schedule", &PAUSE_SCHEDULE),
        ("resume_schedule", &RESUME_SCHEDULE),
        ("delete_schedule", &DELETE_SCHEDULE),
        ("list_schedules", &LIST_SCHEDULES),
        ("peek_due", &PEEK_DUE),
        ("migrate_lock", &MIGRATE_LOCK),
        ("migrate_scan", &MIGRATE_SCAN),
        ("migrate_apply", &MIGRATE_APPLY),
        ("migrate_index", &MIGRATE_INDEX),
        ("migrate_finish", &MIGRATE_FINISH),
        ("namespace_status", &NAMESPACE_STATUS),
        ("import_schedules", &IMPORT_SCHEDULES),
        ("enqueue_jobs", &ENQUEUE_JOBS),
        ("claim_jobs", &CLAIM_JOBS),
        ("ack_job", &ACK_JOB),
        ("fail_job", &FAIL_JOB),
        ("extend_lease", &EXTEND_LEASE),
        ("cancel_job", &CANCEL_JOB),
        ("retry_job", &RETRY_JOB),
        ("list_jobs", &LIST_JOBS),
        ("prune_jobs", &PRUNE_JOBS),
        ("peek_jobs", &PEEK_JOBS),
        ("get_job", &GET_JOB),
        ("migrate_jobs", &MIGRATE_JOBS),
        ("ack_occurrence", &ACK_OCCURRENCE),
    ]
}

/// Every script, for loading at startup.
pub fn all() -> [&'static Script; 29] {
    [
        &UPSERT_SCHEDULE,
        &CLAIM_DUE,
        &SET_FOLLOW,
        &GET_SCHEDULE,
        &PAUSE_SCHEDULE,
        &RESUME_SCHEDULE,
        &DELETE_SCHEDULE,
        &LIST_SCHEDULES,
        &PEEK_DUE,
        &MIGRATE_LOCK,
        &MIGRATE_SCAN,
        &MIGRATE_APPLY,
        &MIGRATE_INDEX,
        &MIGRATE_FINISH,
        &NAMESPACE_STATUS,
        &IMPORT_SCHEDULES,
        &ENQUEUE_JOBS,
        &CLAIM_JOBS,
        &ACK_JOB,
        &FAIL_JOB,
        &EXTEND_LEASE,
        &CANCEL_JOB,
        &RETRY_JOB,
        &LIST_JOBS,
        &PRUNE_JOBS,
        &PEEK_JOBS,
        &GET_JOB,
        &MIGRATE_JOBS,
        &ACK_OCCURRENCE,
    ]
}

#[cfg(test)]
mod tests {
    use super::{JOB, SCHEDULE};
    use crate::store::keys::{JOBS_LAYOUT, SCHEMA_VERSION};

    #[test]
    fn the_lua_guard_knows_the_current_schema() {
        assert!(SCHEDULE.contains(&format!("local DUEQ_SCHEMA = '{SCHEMA_VERSION}'")));
    }

    #[test]
    fn the_lua_job_library_knows_the_current_layout() {
        assert!(JOB.contains(&format!("local JOBS_LAYOUT = '{JOBS_LAYOUT}'")));
    }
}
