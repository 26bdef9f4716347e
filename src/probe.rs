//! The one library surface for tools that run beside the service (the `dueq-bench`
//! binary): the exact script calls the service makes, built by the same operations
//! the service runs, so a benchmark can measure what Redis alone costs for them; the
//! names of the scripts, so SLOWLOG entries can be attributed; the key layout and the
//! record code, so a benchmark can seed a million schedules straight into Redis and
//! measure what each key costs. Nothing here is a stable API; it exists so that no
//! tool builds a key, an argument list or a record of its own.

use std::sync::LazyLock;

use deadpool_redis::redis::{self, Cmd, Script};

use crate::{
    domain::{Backoff, JobSpec, RunAt},
    store::{
        keys::NamespaceKeys,
        ops::{claim_due::ClaimDue, enqueue_jobs::EnqueueJobs},
        Operation, Prelude, Store,
    },
};

/// The schedule store schema this build writes (meta field `schema`).
pub const SCHEDULE_SCHEMA: u32 = crate::domain::SCHEDULE_SCHEMA;

fn command<O: Operation>(prefix: &str, namespace: &str, op: &O) -> Cmd {
    Store::command_for(prefix, namespace, op)
}

/// The `enqueue_jobs` call of an Enqueue(Batch) of `jobs` plain jobs (fresh ids, a
/// 7-byte payload, default retry policy) into `queue` of `namespace`.
pub fn enqueue_jobs(prefix: &str, namespace: &str, queue: &str, jobs: usize) -> Cmd {
    let specs: Vec<JobSpec> = (0..jobs)
        .map(|_| JobSpec {
            id: uuid::Uuid::new_v4().to_string(),
            queue: queue.to_owned(),
            name: "bench".to_owned(),
            payload: b"{\"n\":1}".to_vec(),
            headers: Default::default(),
            priority: 0,
            run_at: RunAt::Now,
            max_attempts: 3,
            backoff: Backoff::default(),
            lease_ms: 30_000,
            dedup: None,
            retention: Default::default(),
            flow: Default::default(),
        })
        .collect();
    command(
        prefix,
        namespace,
        &EnqueueJobs {
            namespace,
            jobs: &specs,
            max_jobs: 0,
        },
    )
}

/// The `claim_due` call of a ClaimDueSchedule without a lease (first round, no hint).
pub fn claim_due(prefix: &str, namespace: &str) -> Cmd {
    let claim = ClaimDue {
        namespace,
        hint: None,
        lease: None,
        worker: "",
    };
    command(prefix, namespace, &claim)
}

/// Loads every function library (src/store/library.rs), so that the first FCALL of
/// each function finds it.
pub async fn load_scripts(
    conn: &mut (impl redis::aio::ConnectionLike + Send),
) -> redis::RedisResult<()> {
    crate::store::library::load_all(conn).await
}

/// The name of the script an FCALL's function name (or an EVALSHA's SHA1) runs, if
/// it is one of dueq's: `claim_due`, `migrate_apply`, ...
pub fn script_name(function_or_sha1: &str) -> Option<&'static str> {
    crate::store::library::script_of(function_or_sha1).map(|def| def.name)
}

/// Waiting timers the long-polls' safety net re-reads per `--recheck-interval`.
pub const RECHECK_BATCH: usize = crate::longpoll::RECHECK_BATCH;
/// Idle namespaces one monitor look checks (`--check-interval`).
pub const MONITOR_IDLE_BATCH: usize = crate::monitor::IDLE_BATCH;

/// The keys of one namespace (`src/store/keys.rs`), for tools that seed or inspect
/// the store directly.
pub struct Keys(NamespaceKeys);

impl Keys {
    pub fn new(prefix: &str, namespace: &str) -> Self {
        Keys(NamespaceKeys::new(prefix, namespace))
    }

    pub fn meta(&self) -> String {
        self.0.meta()
    }

    pub fn due(&self) -> String {
        self.0.due()
    }

    /// A queue's state hash (its `paused` flag among others).
    pub fn queue_state(&self, queue: &str) -> String {
        self.0.queue_state(queue)
    }

    /// The listing of the pre-index layout (a SET of ids).
    pub fn legacy_listing(&self) -> String {
        self.0.ids()
    }

    pub fn listing_top(&self) -> String {
        self.0.listing_top()
    }

    /// The listing leaf whose lowest id is `boundary`.
    pub fn listing_leaf(&self, boundary: &[u8]) -> Vec<u8> {
        [self.0.listing_leaf_prefix().as_bytes(), boundary].concat()
    }

    pub fn schedule(&self, id: &str) -> Vec<u8> {
        self.0.schedule(id)
    }

    /// The SCAN pattern of every schedule record.
    pub fn schedules_pattern(&self) -> String {
        format!("{}*", self.0.schedule_prefix())
    }

    pub fn job(&self, id: &str) -> Vec<u8> {
        self.0.job(id)
    }

    pub fn ready_list(&self, queue: &str, priority: i32) -> String {
        self.0.ready_list(queue, priority)
    }

    pub fn listing_bucket(&self, queue: &str, n: u64) -> String {
        self.0.listing_bucket(queue, n)
    }
}

/// A script over the schedule record code the service runs (lua/lib/*), so a seeded
/// record is byte for byte what the API writes.
// The bench's seeding scripts, over the service's own record code: tools beside
// the service, not transitions, so not in lua/.
#[allow(clippy::disallowed_methods)]
fn schedule_script(body: &str) -> Script {
    Script::new(&format!("{}{body}", Prelude::Schedule.parts().concat()))
}

/// KEYS: meta, listing top. ARGV: template record, record prefix, leaf prefix, next
/// run ms, "packed" | "hash", then the ids.
static WRITE_COPIES: LazyLock<Script> = LazyLock::new(|| {
    schedule_script(
        r#"
local r = sched_unpacked('template', ARGV[1])
if is_error(r) then return r end
r.next_ms, r.follow_ms = tonumber(ARGV[4]), ''
local L = listing_of(KEYS[2], ARGV[3], KEYS[1])
for i = 6, #ARGV do
  local key = ARGV[2] .. ARGV[i]
  if ARGV[5] == 'packed' then
    sched_save(key, r)
    listing_add(L, ARGV[i])
  else
    redis.call('HSET', key, unpack(sched_fields(ARGV[i], r)))
  end
end
return #ARGV - 5
"#,
    )
});

/// KEYS: the record, the due index. ARGV: id, next run ms.
static SET_NEXT: LazyLock<Script> = LazyLock::new(|| {
    schedule_script(
        r#"
local r = sched_load(KEYS[1])
if r == nil or is_error(r) then return redis.error_reply('no record at ' .. KEYS[1]) end
r.next_ms, r.follow_ms = tonumber(ARGV[2]), ''
sched_save(KEYS[1], r)
if r.target ~= '' then
  sched_index_put(KEYS[2], ARGV[1], r) -- a target schedule's own index
else
  redis.call('ZADD', KEYS[2], ARGV[2], ARGV[1])
end
return 1
"#,
    )
});

/// How seeded schedules are stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SeedLayout {
    /// This build's: packed records, listed like the service lists them (the caller
    /// indexes them and records meta).
    Current,
    /// The pre-index layout (schema 1): one hash per schedule (the caller adds the
    /// ids to the legacy listing).
    PreIndex,
}

/// Writes a copy of `template` (a packed record read from the store) per id, with
/// next run `next_ms`; returns how many.
pub async fn copy_schedules(
    conn: &mut (impl redis::aio::ConnectionLike + Send),
    keys: &Keys,
    template: &[u8],
    ids: &[String],
    next_ms: i64,
    layout: SeedLayout,
) -> redis::RedisResult<i64> {
    let mut copies = WRITE_COPIES.prepare_invoke();
    copies
        .key(keys.meta())
        .key(keys.listing_top())
        .arg(template)
        .arg(keys.0.schedule_prefix())
        .arg(keys.0.listing_leaf_prefix())
        .arg(next_ms)
        .arg(match layout {
            SeedLayout::Current => "packed",
            SeedLayout::PreIndex => "hash",
        });
    for id in ids {
        copies.arg(id);
    }
    copies.invoke_async(conn).await
}

/// Makes schedule `id` due at `next_ms` (record and index), as a clock jump would;
/// its follow slot is cleared, so a cron claim computes in Rust.
pub async fn set_next_run(
    conn: &mut (impl redis::aio::ConnectionLike + Send),
    keys: &Keys,
    id: &str,
    next_ms: i64,
) -> redis::RedisResult<()> {
    SET_NEXT
        .key(keys.schedule(id))
        .key(keys.due())
        .arg(id)
        .arg(next_ms)
        .invoke_async::<i64>(conn)
        .await
        .map(drop)
}

/// What [`schedule_records`] does to each record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordOp {
    /// Rewrite a packed record (schema 3) as the hash of schemas 1 and 2.
    ToHash,
    /// Rewrite such a hash as a packed record and list it, as Migrate does.
    ToPacked,
    /// Read it, in either layout.
    Read,
}

/// KEYS: meta, listing top, then one record key per id. ARGV: op, leaf prefix, then
/// the ids.
static RECORD_TOOL: LazyLock<Script> = LazyLock::new(|| {
    schedule_script(
        r#"
local L = listing_of(KEYS[2], ARGV[2], KEYS[1])
local out = {}
for i = 3, #KEYS do
  local key, id = KEYS[i], ARGV[i]
  local r = sched_read(key)
  if is_error(r) then return r end
  if r == nil then
    out[i - 2] = {}
  else
    if ARGV[1] == 'hash' then
      redis.call('DEL', key)
      redis.call('HSET', key, unpack(sched_fields(id, r)))
    elseif ARGV[1] == 'pack' then
      sched_save(key, r)
      listing_add(L, id)
    end
    out[i - 2] = sched_fields(id, r)
  end
end
return out
"#,
    )
});

/// Runs `op` on the schedule records of `ids` (one script call per 500), through the
/// service's own record code, for tests that need a namespace in an older layout;
/// returns each record's fields as text after the op (none for a missing record).
pub async fn schedule_records(
    conn: &mut (impl redis::aio::ConnectionLike + Send),
    keys: &Keys,
    op: RecordOp,
    ids: &[String],
) -> redis::RedisResult<Vec<Vec<(String, String)>>> {
    let op = match op {
        RecordOp::ToHash => "hash",
        RecordOp::ToPacked => "pack",
        RecordOp::Read => "read",
    };
    let mut out = Vec::with_capacity(ids.len());
    for chunk in ids.chunks(500) {
        let mut call = RECORD_TOOL.prepare_invoke();
        call.key(keys.meta())
            .key(keys.listing_top())
            .arg(op)
            .arg(keys.0.listing_leaf_prefix());
        for id in chunk {
            call.key(keys.schedule(id)).arg(id);
        }
        let rows: Vec<Vec<String>> = call.invoke_async(conn).await?;
        out.extend(rows.into_iter().map(|flat| {
            flat.chunks_exact(2)
                .map(|pair| (pair[0].clone(), pair[1].clone()))
                .collect()
        }));
    }
    Ok(out)
}
