//! Namespaces in older layouts, written straight into Redis: rebuilt from what this
//! dueq wrote, or built in bulk from a template record.

use deadpool_redis::redis::aio::MultiplexedConnection;

use crate::common::*;

/// Turns a namespace written by this dueq into the pre-index layout (schema 1): the
/// same schedules as hashes, `:ids` a SET, no `:due`, no `:meta`.
pub(super) async fn to_legacy(conn: &mut MultiplexedConnection, ns: &str) {
    to_schema_2(conn, ns).await;
    let ids_key = format!("dueq:{{{ns}}}:ids");
    let ids: Vec<String> = query(conn, cmd("ZRANGE").arg(&ids_key).arg(0).arg(-1)).await;
    assert!(!ids.is_empty());
    let _: () = query(
        conn,
        cmd("DEL")
            .arg(&ids_key)
            .arg(format!("dueq:{{{ns}}}:due"))
            .arg(format!("dueq:{{{ns}}}:meta")),
    )
    .await;
    let _: () = query(conn, cmd("SADD").arg(&ids_key).arg(&ids)).await;
    assert_eq!(key_type(conn, &ids_key).await, "set");
}

/// The record of a schedule created through the API, as the fields of a schema-2 hash.
pub(super) async fn template(
    c: &mut Client,
    conn: &mut MultiplexedConnection,
) -> Vec<(String, Vec<u8>)> {
    upsert(c, "tmpl", every("template", 3600)).await;
    let read = schedule_layout(conn, "tmpl", RecordOp::Read, &["template".to_owned()]).await;
    let fields: Vec<(String, Vec<u8>)> = read[0]
        .iter()
        .map(|(f, v)| (f.clone(), v.clone().into_bytes()))
        .collect();
    assert!(fields.iter().any(|(f, _)| f == "next_ms"));
    fields
}

/// The layouts `build` writes.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Built {
    /// Schema 1: hashes, `:ids` a SET, no index, no meta.
    PreIndex,
    /// This dueq's: packed records, zsets, meta.
    Current,
}

/// Writes `n` schedules straight into Redis, from the template with the id varied.
/// Every `paused_every`-th one (if any) is written paused.
pub(super) async fn build(
    conn: &mut MultiplexedConnection,
    tmpl: &[(String, Vec<u8>)],
    ns: &str,
    n: usize,
    layout: Built,
    paused_every: Option<usize>,
) -> usize {
    let current = layout != Built::PreIndex;
    let next_ms: i64 = tmpl
        .iter()
        .find(|(f, _)| f == "next_ms")
        .map(|(_, v)| String::from_utf8_lossy(v).parse().expect("next_ms"))
        .expect("next_ms");
    let ids_key = format!("dueq:{{{ns}}}:ids");
    let due_key = format!("dueq:{{{ns}}}:due");
    let mut active = 0;
    for start in (0..n).step_by(1000) {
        let mut pipe = pipe();
        for i in start..(start + 1000).min(n) {
            let id = format!("s{i:05}");
            let paused = paused_every.is_some_and(|p| i % p == 0);
            let next = next_ms + (i as i64) * 1000;
            let h = pipe.cmd("HSET").arg(format!("dueq:{{{ns}}}:s:{id}"));
            for (f, v) in tmpl {
                let v: Vec<u8> = match f.as_str() {
                    "id" => id.clone().into_bytes(),
                    "next_ms" if paused => Vec::new(),
                    "next_ms" => next.to_string().into_bytes(),
                    "status" if paused => b"paused".to_vec(),
                    "follow_ms" => Vec::new(),
                    _ => v.clone(),
                };
                h.arg(f).arg(v);
            }
            h.ignore();
            if current {
                if !paused {
                    pipe.cmd("ZADD").arg(&due_key).arg(next).arg(&id).ignore();
                }
            } else {
                pipe.cmd("SADD").arg(&ids_key).arg(&id).ignore();
            }
            if !paused {
                active += 1;
            }
        }
        let _: () = pipe.query_async(conn).await.expect("build pipeline");
    }
    if layout == Built::Current {
        let ids: Vec<String> = (0..n).map(|i| format!("s{i:05}")).collect();
        schedule_layout(conn, ns, RecordOp::ToPacked, &ids).await;
    }
    if current {
        let _: () = query(
            conn,
            cmd("HSET")
                .arg(format!("dueq:{{{ns}}}:meta"))
                .arg("schema")
                .arg("3")
                .arg("indexed")
                .arg(active),
        )
        .await;
    }
    active
}
