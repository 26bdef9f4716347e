//! Direct Redis seeding in dueq's layout: schedule records copied from one the API
//! created, with the next run rewritten, plus the `:ids` and `:due` zsets and the
//! `:meta` hash (or the pre-index layout, hashes in a SET, for Migrate).

use std::sync::LazyLock;

use deadpool_redis::redis::{self, aio::MultiplexedConnection, Script};
use dueq::{probe::SCHEDULE_SCHEMA, proto};

use crate::{
    env::{Client, Env, PREFIX},
    Result,
};

/// The Redis key `suffix` of namespace `ns` (`s:<id>`, `due`, `meta`, ...): the one
/// place the bench spells dueq's key layout, for the seeding and inspecting it does
/// straight on Redis. Everything else goes through the service or `dueq::probe`.
pub(crate) fn key(ns: &str, suffix: &str) -> String {
    format!("{PREFIX}:{{{ns}}}:{suffix}")
}

/// The bench's schedule: every hour, the same small payload everywhere.
pub(crate) fn every_1h(id: &str) -> proto::Schedule {
    proto::Schedule {
        id: id.into(),
        timing: Some(proto::schedule::Timing::Every(prost_types::Duration {
            seconds: 3600,
            nanos: 0,
        })),
        job_name: "bench".into(),
        payload: b"{\"n\":1}".to_vec(),
        ..Default::default()
    }
}

/// Makes `ns` exist (schema recorded) with one schedule that is not due for an hour.
pub(crate) async fn ensure_namespace(client: &mut Client, ns: &str) -> Result<()> {
    client
        .upsert_schedule(proto::UpsertScheduleRequest {
            namespace: ns.into(),
            schedule: Some(every_1h("anchor")),
        })
        .await?;
    Ok(())
}

/// A schedule record as the API stores it, and the namespace meta next to it.
pub(crate) struct Template {
    /// The packed record (lib/schedule.lua).
    pub(crate) record: Vec<u8>,
    pub(crate) meta: Vec<(String, Vec<u8>)>,
}

/// Creates one schedule through gRPC in a scratch namespace and copies its record.
pub(crate) async fn template(env: &Env) -> Result<Template> {
    let mut client = env.client().await?;
    let ns = "benchtemplate";
    ensure_namespace(&mut client, ns).await?;
    let mut conn = env.conn().await?;
    let record: Option<Vec<u8>> = redis::cmd("GET")
        .arg(key(ns, "s:anchor"))
        .query_async(&mut conn)
        .await?;
    let meta: Vec<(String, Vec<u8>)> = redis::cmd("HGETALL")
        .arg(key(ns, "meta"))
        .query_async(&mut conn)
        .await?;
    let record = record.ok_or("the template schedule's record is missing")?;
    Ok(Template { record, meta })
}

// Both scripts run the service's own record code (lua/lib/schedule.lua), so a seeded
// record is byte for byte what the API writes; the price is that they name its
// functions (sched_unpacked, sched_load, sched_save, sched_fields, listing_add,
// s_is_error), which the smoke run exercises.

/// Writes copies of a packed record with a new next run, as records (schema 3, listed
/// as the service lists them) or as the hashes of the pre-index layout. KEYS: the
/// `:ids` key, meta. ARGV: template, schedule key prefix, next run ms,
/// "packed" | "hash", then the ids.
static WRITE_COPIES: LazyLock<Script> = LazyLock::new(|| {
    Script::new(concat!(
        include_str!("../../../lua/lib/schedule.lua"),
        r#"
local r = sched_unpacked('template', ARGV[1])
if s_is_error(r) then return r end
r.next_ms, r.follow_ms = tonumber(ARGV[3]), ''
for i = 5, #ARGV do
  local key = ARGV[2] .. ARGV[i]
  if ARGV[4] == 'packed' then
    sched_save(key, r)
    listing_add(KEYS[1], KEYS[2], ARGV[i])
  else
    redis.call('HSET', key, unpack(sched_fields(ARGV[i], r)))
  end
end
return #ARGV - 4
"#
    ))
});

/// Rewrites a record's next run and clears its follow slot (so a cron claim
/// computes in Rust). ARGV: next run ms.
static SET_NEXT: LazyLock<Script> = LazyLock::new(|| {
    Script::new(concat!(
        include_str!("../../../lua/lib/schedule.lua"),
        r#"
local r = sched_load(KEYS[1])
if r == nil or s_is_error(r) then return redis.error_reply('no record at ' .. KEYS[1]) end
r.next_ms, r.follow_ms = tonumber(ARGV[1]), ''
sched_save(KEYS[1], r)
return 1
"#
    ))
});

#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Layout {
    /// This dueq's schema: packed records, `:ids` and `:due` zsets, `:meta` with
    /// schema and indexed.
    Current,
    /// Schema 1: `:ids` a SET, no `:due`, no `:meta`.
    PreIndex,
}

/// Writes `n` schedules `s{i}` into `ns`, all due at `next_ms`, in pipelines.
pub(crate) async fn schedules(
    conn: &mut MultiplexedConnection,
    tpl: &Template,
    ns: &str,
    n: u64,
    next_ms: i64,
    layout: Layout,
) -> Result<()> {
    let (prefix, next) = (key(ns, "s:"), next_ms.to_string());
    let form = match layout {
        Layout::Current => "packed",
        Layout::PreIndex => "hash",
    };
    let mut start = 0;
    while start < n {
        let end = (start + 1000).min(n);
        let ids: Vec<String> = (start..end).map(|i| format!("s{i}")).collect();
        let mut copies = WRITE_COPIES.prepare_invoke();
        copies
            .key(key(ns, "ids"))
            .key(key(ns, "meta"))
            .arg(&tpl.record)
            .arg(&prefix)
            .arg(&next)
            .arg(form);
        let mut pipe = redis::pipe();
        for id in &ids {
            copies.arg(id);
            match layout {
                Layout::Current => {
                    pipe.cmd("ZADD")
                        .arg(key(ns, "due"))
                        .arg(next_ms)
                        .arg(id)
                        .ignore();
                }
                Layout::PreIndex => {
                    pipe.cmd("SADD").arg(key(ns, "ids")).arg(id).ignore();
                }
            }
        }
        copies.invoke_async::<i64>(conn).await?;
        pipe.query_async::<()>(conn).await?;
        start = end;
    }
    if layout == Layout::Current {
        let mut hset = redis::cmd("HSET");
        hset.arg(key(ns, "meta"));
        for (k, v) in &tpl.meta {
            if k != "indexed" && k != "listed" {
                hset.arg(k).arg(v.as_slice());
            }
        }
        hset.arg("schema")
            .arg(SCHEDULE_SCHEMA)
            .arg("indexed")
            .arg(n);
        hset.query_async::<()>(conn).await?;
    }
    Ok(())
}

/// Makes schedule `id` of `ns` due at `due_ms` (record and index), as a clock jump
/// would.
pub(crate) async fn force_due(
    conn: &mut MultiplexedConnection,
    ns: &str,
    id: &str,
    due_ms: i64,
) -> Result<()> {
    SET_NEXT
        .key(key(ns, &format!("s:{id}")))
        .arg(due_ms)
        .invoke_async::<i64>(conn)
        .await?;
    redis::cmd("ZADD")
        .arg(key(ns, "due"))
        .arg(due_ms)
        .arg(id)
        .query_async::<()>(conn)
        .await?;
    Ok(())
}
