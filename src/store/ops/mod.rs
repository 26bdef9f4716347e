//! One operation per Lua script, each in a file named after its script (see
//! `super::script` for the contract every one of them keeps). The list of scripts
//! (`SCRIPTS`) is derived from it.

use super::{
    keys::NamespaceKeys,
    script::{Call, ScriptDef},
};

/// Declares the operation modules, each in one of two lists, and derives the script
/// list from them. An operation is in exactly one list (its module is declared by
/// it), so a new script cannot be left out of the choice.
macro_rules! operations {
    (
        waited: $($waited:ident),* $(,)?;
        unwaited: $($unwaited:ident),* $(,)?;
    ) => {
        $(pub(crate) mod $waited;)*
        $(pub(crate) mod $unwaited;)*

        /// Every script, one per operation.
        pub(crate) static SCRIPTS: &[&ScriptDef] =
            &[$(&$waited::SCRIPT,)* $(&$unwaited::SCRIPT),*];

        /// The scripts after which `--redis-wait-replicas` waits for replicas.
        pub(crate) static WAITED: &[&ScriptDef] = &[$(&$waited::SCRIPT),*];

        /// A sample call of every operation, for the test that checks each against its
        /// script's header.
        #[cfg(test)]
        pub(crate) fn samples() -> Vec<tests::Sample> {
            vec![$(tests::Sample::of(&$waited::sample()),)* $(tests::Sample::of(&$unwaited::sample())),*]
        }
    };
}

/// Whether `--redis-wait-replicas` waits for replicas after `script`.
pub(crate) fn waited(script: &ScriptDef) -> bool {
    WAITED.iter().any(|waited| std::ptr::eq(*waited, script))
}

operations!(
    // Scripts that hand out or accept work (enqueues, claims, acks, fails, leases,
    // queue control, schedule writes): `--redis-wait-replicas` waits after each.
    waited:
    ack_job,
    ack_jobs,
    abort_flow,
    ack_occurrence,
    backfill_schedule,
    cancel_jobs,
    cancel_flow,
    cancel_job,
    claim_due,
    claim_jobs,
    delete_job,
    delete_jobs,
    delete_schedule,
    dispatch_due,
    distrust_jobs,
    drain_graph,
    enqueue_flow,
    enqueue_jobs,
    extend_lease,
    fail_job,
    import_schedules,
    pause_queue,
    pause_schedule,
    purge_jobs,
    release_job,
    release_claim,
    release_jobs,
    release_occurrence,
    resume_schedule,
    retry_dead_jobs,
    retry_flow,
    retry_job,
    retry_jobs,
    set_follow,
    set_key_limit,
    set_queue_policy,
    set_schedule_next_run,
    throttle_key,
    trigger_schedule,
    upsert_schedule,
    ;
    // Reads (listings, stats, gauges, peeks), Migrate's steps, the pruner, and the
    // audit log's and worker sessions' writes (issue 33), which move no work.
    unwaited:
    append_audit,
    get_flow,
    get_job,
    get_queue_policy,
    get_schedule,
    list_dead_groups,
    list_audit,
    list_due_schedules,
    list_flow_keys,
    list_jobs,
    list_schedules,
    list_workers,
    migrate_apply,
    migrate_counts,
    migrate_dead_groups,
    migrate_finish,
    migrate_flow,
    migrate_graph,
    migrate_index,
    migrate_jobs,
    migrate_lock,
    migrate_scan,
    namespace_status,
    peek_due,
    peek_jobs,
    prune_jobs,
    publish_workers,
    queue_stats,
    schedule_gauges,
    watch_job,
    ;
);

/// What the bulk scripts share (RetryJobs, CancelJobs, DeleteJobs).
pub(crate) mod bulk;

/// What every operation module uses.
mod prelude {
    pub(super) use crate::store::{
        keys::NamespaceKeys,
        records,
        reply::Reply,
        script::{script, Arity, Call, Operation},
        StoreError,
    };
}

/// KEYS[1..=3] and ARGV[1..=2] of every schedule script: meta, the listing of schemas
/// 1 and 2 (for the guard), the listing's top; the record prefix, the leaf prefix.
fn schedule_head(keys: &NamespaceKeys, call: &mut Call) {
    call.key(keys.meta())
        .key(keys.ids())
        .key(keys.listing_top())
        .arg("schedule_prefix", keys.schedule_prefix())
        .arg("leaf_prefix", keys.listing_leaf_prefix());
}

/// The eight key prefixes every job script takes first (lua/lib/job.lua `job_keys`).
fn job_prefixes(keys: &NamespaceKeys, call: &mut Call) {
    for prefix in keys.job_prefixes().0 {
        call.arg("job_prefixes", prefix);
    }
}

/// KEYS (finished jobs, meta) and ARGV[1..=8] of a job script that guards one job.
fn job_head(keys: &NamespaceKeys, call: &mut Call) {
    call.key(keys.jobs_done()).key(keys.meta());
    job_prefixes(keys, call);
}

/// The lock-checked Migrate scripts answer `"ok", ...` or `"lost"`: `None` when the
/// lock was lost and nothing was written.
fn under_lock(reply: &mut super::reply::Reply) -> Result<bool, super::StoreError> {
    reply.word(|tag| match tag {
        "ok" => Some(true),
        "lost" => Some(false),
        _ => None,
    })
}

#[cfg(test)]
pub(crate) mod tests;
