//! Direct Redis seeding in dueq's layout: schedule records copied from one the API
//! created, with the next run rewritten, plus the `:ids` and `:due` zsets and the
//! `:meta` hash (or the pre-index layout, hashes in a SET, for Migrate).

use deadpool_redis::redis::{self, aio::MultiplexedConnection};
use dueq::{
    probe::{self, Keys, SeedLayout, SCHEDULE_SCHEMA},
    proto,
};

use crate::{
    env::{Client, Env, PREFIX},
    Result,
};

/// The keys of namespace `ns` under the bench's prefix (the layout is the library's:
/// `dueq::probe::Keys`).
pub(crate) fn keys(ns: &str) -> Keys {
    Keys::new(PREFIX, ns)
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
// Copies a record the API wrote, to seed many like it straight into Redis.
#[allow(clippy::disallowed_methods)]
pub(crate) async fn template(env: &Env) -> Result<Template> {
    let mut client = env.client().await?;
    let ns = "benchtemplate";
    ensure_namespace(&mut client, ns).await?;
    let mut conn = env.conn().await?;
    let record: Option<Vec<u8>> = redis::cmd("GET")
        .arg(keys(ns).schedule("anchor"))
        .query_async(&mut conn)
        .await?;
    let meta: Vec<(String, Vec<u8>)> = redis::cmd("HGETALL")
        .arg(keys(ns).meta())
        .query_async(&mut conn)
        .await?;
    let record = record.ok_or("the template schedule's record is missing")?;
    Ok(Template { record, meta })
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Layout {
    /// This dueq's schema: packed records, `:ids` and `:due` zsets, `:meta` with
    /// schema and indexed.
    Current,
    /// Schema 1: `:ids` a SET, no `:due`, no `:meta`.
    PreIndex,
}

/// Writes `n` schedules `s{i}` into `ns`, all due at `next_ms`, in pipelines (the
/// records through `dueq::probe`, so each is byte for byte what the API writes).
// Seeds schedules straight into Redis (keys and records from dueq::probe).
#[allow(clippy::disallowed_methods)]
pub(crate) async fn schedules(
    conn: &mut MultiplexedConnection,
    tpl: &Template,
    ns: &str,
    n: u64,
    next_ms: i64,
    layout: Layout,
) -> Result<()> {
    let keys = keys(ns);
    let seed_layout = match layout {
        Layout::Current => SeedLayout::Current,
        Layout::PreIndex => SeedLayout::PreIndex,
    };
    let mut start = 0;
    while start < n {
        let end = (start + 1000).min(n);
        let ids: Vec<String> = (start..end).map(|i| format!("s{i}")).collect();
        probe::copy_schedules(conn, &keys, &tpl.record, &ids, next_ms, seed_layout).await?;
        let mut pipe = redis::pipe();
        for id in &ids {
            match layout {
                Layout::Current => pipe.cmd("ZADD").arg(keys.due()).arg(next_ms).arg(id),
                Layout::PreIndex => pipe.cmd("SADD").arg(keys.legacy_listing()).arg(id),
            }
            .ignore();
        }
        pipe.query_async::<()>(conn).await?;
        start = end;
    }
    if layout == Layout::Current {
        let mut hset = redis::cmd("HSET");
        hset.arg(keys.meta());
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
    probe::set_next_run(conn, &keys(ns), id, due_ms).await?;
    Ok(())
}
