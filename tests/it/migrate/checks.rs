//! What an upgraded or repaired namespace must look like, and the refusal a namespace
//! that needs Migrate gets.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use deadpool_redis::redis::{self, aio::MultiplexedConnection, Value};
use tonic::{Code, Status};

use crate::common::*;

/// The value of one key, for comparing snapshots.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Val {
    Hash(BTreeMap<Vec<u8>, Vec<u8>>),
    Zset(Vec<(Vec<u8>, String)>),
    Set(BTreeSet<Vec<u8>>),
    Str(Vec<u8>),
    Other(String),
}

pub(super) type Contents = BTreeMap<Vec<u8>, Val>;

/// Every key matching `pattern`, with its type and contents (pipelined).
pub(super) async fn contents(conn: &mut MultiplexedConnection, pattern: &str) -> Contents {
    let mut keys: Vec<Vec<u8>> = Vec::new();
    let mut cursor: u64 = 0;
    loop {
        let (next, found): (u64, Vec<Vec<u8>>) = query(
            conn,
            cmd("SCAN")
                .arg(cursor)
                .arg("MATCH")
                .arg(pattern)
                .arg("COUNT")
                .arg(1000),
        )
        .await;
        keys.extend(found);
        if next == 0 {
            break;
        }
        cursor = next;
    }
    keys.sort();
    keys.dedup();
    // The audit log and worker sessions record calls, not data (`is_call_record`).
    keys.retain(|key| !is_call_record(&String::from_utf8_lossy(key)));
    let mut out = Contents::new();
    for chunk in keys.chunks(1000) {
        let mut typed = pipe();
        for k in chunk {
            typed.cmd("TYPE").arg(k);
        }
        let types: Vec<String> = typed.query_async(conn).await.expect("TYPE pipeline");
        let mut contents = pipe();
        for (k, t) in chunk.iter().zip(&types) {
            match t.as_str() {
                "hash" => contents.cmd("HGETALL").arg(k),
                "zset" => contents
                    .cmd("ZRANGE")
                    .arg(k)
                    .arg(0)
                    .arg(-1)
                    .arg("WITHSCORES"),
                "set" => contents.cmd("SMEMBERS").arg(k),
                "string" => contents.cmd("GET").arg(k),
                _ => contents.cmd("TYPE").arg(k),
            };
        }
        let values: Vec<Value> = contents.query_async(conn).await.expect("content pipeline");
        for ((k, t), v) in chunk.iter().zip(&types).zip(values) {
            let val = match t.as_str() {
                "hash" => Val::Hash(redis::from_redis_value(v).expect("hash")),
                "zset" => {
                    let pairs: Vec<(Vec<u8>, String)> = redis::from_redis_value(v).expect("zset");
                    Val::Zset(pairs)
                }
                "set" => Val::Set(redis::from_redis_value(v).expect("set")),
                "string" => Val::Str(redis::from_redis_value(v).expect("string")),
                other => Val::Other(other.to_owned()),
            };
            out.insert(k.clone(), val);
        }
    }
    out
}

/// A snapshot without the `updated_ms` field of hashes.
pub(super) fn without_updated(mut s: Contents) -> Contents {
    for v in s.values_mut() {
        if let Val::Hash(h) = v {
            h.remove(b"updated_ms".as_slice());
        }
    }
    s
}

pub(super) fn ns_pattern(ns: &str) -> String {
    format!("dueq:{{{ns}}}:*")
}

pub(super) async fn meta(conn: &mut MultiplexedConnection, ns: &str) -> HashMap<String, String> {
    query(conn, cmd("HGETALL").arg(format!("dueq:{{{ns}}}:meta"))).await
}

pub(super) fn assert_needs_migrate(status: &Status, ns: &str) {
    assert_refused_at(status, ns, 1);
}

/// FAILED_PRECONDITION naming the namespace, the schema found, this dueq's, and the
/// command that upgrades.
pub(super) fn assert_refused_at(status: &Status, ns: &str, found: u32) {
    assert_eq!(status.code(), Code::FailedPrecondition, "{status:?}");
    let m = status.message();
    for needle in [
        format!("\"{ns}\""),
        format!("schema {found}"),
        "schema 3".to_owned(),
        "dueq.v1.QueueService/Migrate".to_owned(),
    ] {
        assert!(m.contains(&needle), "message lacks {needle:?}: {m}");
    }
}

/// Every schedule call on `ns` (schedule `id` exists) is refused for schema `found`.
pub(super) async fn assert_schedule_calls_refused(c: &mut Client, ns: &str, id: &str, found: u32) {
    let claim = try_claim(c, ns, 0).await.map(|_| ());
    let upsert = try_upsert(c, ns, every("new", 60)).await.map(|_| ());
    let list = c
        .list_schedules(proto::ListSchedulesRequest {
            namespace: ns.to_owned(),
            ..Default::default()
        })
        .await
        .map(|_| ());
    let mut refusals = vec![("Claim", claim), ("Upsert", upsert), ("List", list)];
    refusals.extend(calls_by_id(c, ns, id).await);
    for (call, result) in refusals {
        let err = result.expect_err(&format!("{call} refused"));
        assert_refused_at(&err, ns, found);
    }
}

/// Every schedule hash of the namespace agrees with the due index: active with a next
/// run <=> indexed at exactly that next run. Returns the number of active schedules.
pub(super) async fn assert_index_consistent(conn: &mut MultiplexedConnection, ns: &str) -> usize {
    let ids = listed_schedule_ids(conn, ns).await;
    let due: Vec<(String, i64)> = query(
        conn,
        cmd("ZRANGE")
            .arg(format!("dueq:{{{ns}}}:due"))
            .arg(0)
            .arg(-1)
            .arg("WITHSCORES"),
    )
    .await;
    let due: HashMap<String, i64> = due.into_iter().collect();
    let mut expected = HashMap::new();
    let rows = schedule_layout(conn, ns, RecordOp::Read, &ids).await;
    for (id, fields) in ids.iter().zip(rows) {
        if fields.get("status").map(String::as_str) == Some("active") {
            let next: i64 = fields["next_ms"].parse().expect("active has a next run");
            expected.insert(id.clone(), next);
        }
    }
    let missing: Vec<_> = expected
        .keys()
        .filter(|id| !due.contains_key(*id))
        .take(10)
        .collect();
    assert!(
        missing.is_empty(),
        "active schedules missing from the due index: {missing:?}"
    );
    let extra: Vec<_> = due
        .keys()
        .filter(|id| !expected.contains_key(*id))
        .take(10)
        .collect();
    assert!(
        extra.is_empty(),
        "due entries no active schedule backs: {extra:?}"
    );
    for (id, next) in &expected {
        assert_eq!(due[id], *next, "score of {id}");
    }
    expected.len()
}

/// The fields of every schedule record of a namespace, in either layout (so an upgrade
/// that packs a hash compares equal when it kept every field).
pub(super) async fn records(
    conn: &mut MultiplexedConnection,
    ns: &str,
) -> BTreeMap<String, BTreeMap<String, String>> {
    let prefix = format!("dueq:{{{ns}}}:s:");
    let keys = contents(conn, &format!("{prefix}*")).await;
    let ids: Vec<String> = keys
        .keys()
        .map(|k| String::from_utf8_lossy(&k[prefix.len()..]).into_owned())
        .collect();
    let rows = schedule_layout(conn, ns, RecordOp::Read, &ids).await;
    ids.into_iter()
        .zip(rows)
        .map(|(id, fields)| (id, fields.into_iter().collect()))
        .collect()
}

/// The namespace is fully upgraded: schema 3, every record listed and indexed.
pub(super) async fn assert_upgraded(
    conn: &mut MultiplexedConnection,
    a: &mut Admin,
    ns: &str,
    n: usize,
) {
    assert_eq!(key_type(conn, &format!("dueq:{{{ns}}}:ids")).await, "none");
    assert_eq!(listed_schedule_ids(conn, ns).await.len(), n);
    let m = meta(conn, ns).await;
    assert_eq!(m.get("schema").map(String::as_str), Some("3"));
    assert_eq!(m.get("indexed"), Some(&n.to_string()));
    assert_eq!(assert_index_consistent(conn, ns).await, n);
    let st = status(a, ns).await;
    assert!(
        !st.needs_migrate && !st.index_damaged && !st.migration_running,
        "{st:?}"
    );
}
