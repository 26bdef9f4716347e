//! Direct Redis seeding in dueq's layout: schedule hashes copied from one the API
//! created (HGETALL), with the id and next run rewritten, plus the `:ids` and `:due`
//! zsets and the `:meta` hash (or the pre-index layout, for Migrate).

use deadpool_redis::redis::{self, aio::MultiplexedConnection};

use super::{
    env::{Client, Env, PREFIX},
    Result,
};
use crate::proto;

pub fn base(ns: &str) -> String {
    format!("{PREFIX}:{{{ns}}}:")
}

pub fn every_1h(id: &str) -> proto::Schedule {
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
pub async fn ensure_namespace(client: &mut Client, ns: &str) -> Result<()> {
    client
        .upsert_schedule(proto::UpsertScheduleRequest {
            namespace: ns.into(),
            schedule: Some(every_1h("anchor")),
        })
        .await?;
    Ok(())
}

/// A schedule hash as the API stores it, and the namespace meta next to it.
pub struct Template {
    pub fields: Vec<(String, Vec<u8>)>,
    pub meta: Vec<(String, Vec<u8>)>,
}

/// Creates one schedule through gRPC in a scratch namespace and copies its hash.
pub async fn template(env: &Env) -> Result<Template> {
    let mut client = env.client().await?;
    let ns = "benchtemplate";
    ensure_namespace(&mut client, ns).await?;
    let mut conn = env.conn().await?;
    let fields: Vec<(String, Vec<u8>)> = redis::cmd("HGETALL")
        .arg(format!("{}s:anchor", base(ns)))
        .query_async(&mut conn)
        .await?;
    let meta: Vec<(String, Vec<u8>)> = redis::cmd("HGETALL")
        .arg(format!("{}meta", base(ns)))
        .query_async(&mut conn)
        .await?;
    if fields.is_empty() {
        return Err("the template schedule's hash is empty".into());
    }
    Ok(Template { fields, meta })
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// Schema 2: `:ids` and `:due` zsets, `:meta` with schema and indexed.
    Current,
    /// Schema 1: `:ids` a SET, no `:due`, no `:meta`.
    PreIndex,
}

/// Writes `n` schedules `s{i}` into `ns`, all due at `next_ms`, in pipelines.
pub async fn schedules(
    conn: &mut MultiplexedConnection,
    tpl: &Template,
    ns: &str,
    n: u64,
    next_ms: i64,
    layout: Layout,
) -> Result<()> {
    let b = base(ns);
    let next = next_ms.to_string();
    let mut pipe = redis::pipe();
    let mut queued = 0;
    for i in 0..n {
        let id = format!("s{i}");
        let mut hset = redis::cmd("HSET");
        hset.arg(format!("{b}s:{id}"));
        for (k, v) in &tpl.fields {
            hset.arg(k);
            match k.as_str() {
                "id" => hset.arg(&id),
                "next_ms" => hset.arg(&next),
                "follow_ms" => hset.arg(""),
                _ => hset.arg(v.as_slice()),
            };
        }
        pipe.add_command(hset).ignore();
        match layout {
            Layout::Current => {
                pipe.cmd("ZADD")
                    .arg(format!("{b}ids"))
                    .arg(0)
                    .arg(&id)
                    .ignore();
                pipe.cmd("ZADD")
                    .arg(format!("{b}due"))
                    .arg(next_ms)
                    .arg(&id)
                    .ignore();
            }
            Layout::PreIndex => {
                pipe.cmd("SADD").arg(format!("{b}ids")).arg(&id).ignore();
            }
        }
        queued += 1;
        if queued == 1000 {
            pipe.query_async::<()>(conn).await?;
            pipe = redis::pipe();
            queued = 0;
        }
    }
    if queued > 0 {
        pipe.query_async::<()>(conn).await?;
    }
    if layout == Layout::Current {
        let mut hset = redis::cmd("HSET");
        hset.arg(format!("{b}meta"));
        for (k, v) in &tpl.meta {
            if k != "indexed" {
                hset.arg(k).arg(v.as_slice());
            }
        }
        hset.arg("schema").arg(2).arg("indexed").arg(n);
        hset.query_async::<()>(conn).await?;
    }
    Ok(())
}

/// Makes schedule `id` of `ns` due at `due_ms` (hash and index), as a clock jump would.
pub async fn force_due(
    conn: &mut MultiplexedConnection,
    ns: &str,
    id: &str,
    due_ms: i64,
) -> Result<()> {
    let b = base(ns);
    redis::pipe()
        .cmd("HSET")
        .arg(format!("{b}s:{id}"))
        .arg("next_ms")
        .arg(due_ms)
        .arg("follow_ms")
        .arg("")
        .ignore()
        .cmd("ZADD")
        .arg(format!("{b}due"))
        .arg(due_ms)
        .arg(id)
        .ignore()
        .query_async::<()>(conn)
        .await?;
    Ok(())
}
