//! The one library surface for tools that run beside the service (the `dueq-bench`
//! binary): the exact script calls the service makes, so a benchmark can measure what
//! Redis alone costs for them, and the names of the scripts, so SLOWLOG entries can be
//! attributed. Nothing here is a stable API; it exists so that no tool builds a key or
//! an argument list of its own.

use deadpool_redis::redis::{self, Cmd, Script};

use crate::store::{keys::NamespaceKeys, scripts};

/// The schedule store schema this build writes (meta field `schema`).
pub const SCHEDULE_SCHEMA: u32 = crate::store::keys::SCHEMA_VERSION;

fn evalsha(script: &Script, keys: &[Vec<u8>], args: &[Vec<u8>]) -> Cmd {
    let mut cmd = redis::cmd("EVALSHA");
    cmd.arg(script.get_hash()).arg(keys.len());
    for key in keys {
        cmd.arg(key.as_slice());
    }
    for arg in args {
        cmd.arg(arg.as_slice());
    }
    cmd
}

/// The `enqueue_jobs` call of an Enqueue(Batch) of `jobs` plain jobs (fresh ids, a
/// 7-byte payload, default retry policy) into `queue` of `namespace`.
pub fn enqueue_jobs(prefix: &str, namespace: &str, queue: &str, jobs: usize) -> Cmd {
    let keys = NamespaceKeys::new(prefix, namespace);
    let mut args: Vec<Vec<u8>> = keys.job_prefixes().args().map(<[u8]>::to_vec).collect();
    args.push(SCHEDULE_SCHEMA.to_string().into_bytes());
    args.push(jobs.to_string().into_bytes());
    for _ in 0..jobs {
        let id = uuid::Uuid::new_v4().to_string();
        for v in [
            id.as_str(),
            queue,
            "bench",
            "{\"n\":1}",
            "{}",
            "0",
            "",
            "",
            "3",
            "exp",
            "1000",
            "300000",
            "0",
            "30000",
            "",
            "",
            "",
        ] {
            args.push(v.as_bytes().to_vec());
        }
    }
    evalsha(&scripts::ENQUEUE_JOBS, &[keys.meta().into_bytes()], &args)
}

/// The `claim_due` call of a ClaimDueSchedule without a lease (first round, no hint).
pub fn claim_due(prefix: &str, namespace: &str) -> Cmd {
    let keys = NamespaceKeys::new(prefix, namespace);
    let script_keys = [
        keys.due(),
        keys.occurrence_leases(),
        keys.ids(),
        keys.meta(),
    ]
    .map(String::into_bytes);
    let mut args = vec![keys.schedule_prefix().into_bytes(), b"32".to_vec()];
    args.extend(std::iter::repeat_n(Vec::new(), 8));
    args.push(namespace.as_bytes().to_vec());
    args.push(keys.occurrence_prefix().into_bytes());
    evalsha(&scripts::CLAIM_DUE, &script_keys, &args)
}

/// Loads every script (`SCRIPT LOAD`), so that the first EVALSHA of each is a hit.
pub async fn load_scripts(
    conn: &mut (impl redis::aio::ConnectionLike + Send),
) -> redis::RedisResult<()> {
    for (_, script) in scripts::named() {
        script.prepare_invoke().load_async(conn).await?;
    }
    Ok(())
}

/// The name of the script with this SHA1 (an EVALSHA's first argument), if it is one
/// of dueq's: `claim_due`, `migrate_apply`, ...
pub fn script_name(sha1: &str) -> Option<&'static str> {
    scripts::named()
        .iter()
        .find(|(_, script)| script.get_hash() == sha1)
        .map(|(name, _)| *name)
}
