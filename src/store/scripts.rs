//! The Lua scripts, embedded at build time. Each file in `lua/` documents its KEYS,
//! ARGV, reply and the invariant it keeps. `redis::Script` runs them with EVALSHA and
//! reloads a script transparently when Redis answers NOSCRIPT (after a restart or a
//! `SCRIPT FLUSH`).

use std::sync::LazyLock;

use deadpool_redis::redis::Script;

macro_rules! script {
    ($name:ident, $file:literal) => {
        pub static $name: LazyLock<Script> =
            LazyLock::new(|| Script::new(include_str!(concat!("../../lua/", $file))));
    };
}

script!(UPSERT_SCHEDULE, "upsert_schedule.lua");
script!(CLAIM_DUE, "claim_due.lua");
script!(SET_FOLLOW, "set_follow.lua");
script!(PAUSE_SCHEDULE, "pause_schedule.lua");
script!(RESUME_SCHEDULE, "resume_schedule.lua");
script!(DELETE_SCHEDULE, "delete_schedule.lua");
script!(LIST_SCHEDULES, "list_schedules.lua");
script!(PEEK_DUE, "peek_due.lua");
script!(ENQUEUE_JOBS, "enqueue_jobs.lua");
script!(CLAIM_JOBS, "claim_jobs.lua");
script!(ACK_JOB, "ack_job.lua");
script!(FAIL_JOB, "fail_job.lua");
script!(EXTEND_LEASE, "extend_lease.lua");
script!(CANCEL_JOB, "cancel_job.lua");
script!(RETRY_JOB, "retry_job.lua");
script!(LIST_JOBS, "list_jobs.lua");
script!(PRUNE_JOBS, "prune_jobs.lua");
script!(PEEK_JOBS, "peek_jobs.lua");
script!(ACK_OCCURRENCE, "ack_occurrence.lua");

/// Every script, for loading at startup.
pub fn all() -> [&'static Script; 19] {
    [
        &UPSERT_SCHEDULE,
        &CLAIM_DUE,
        &SET_FOLLOW,
        &PAUSE_SCHEDULE,
        &RESUME_SCHEDULE,
        &DELETE_SCHEDULE,
        &LIST_SCHEDULES,
        &PEEK_DUE,
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
        &ACK_OCCURRENCE,
    ]
}
