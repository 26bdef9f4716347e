//! AdminService: Migrate (upgrade of the pre-index layout, repair of a current one,
//! import from @boringnode/queue) and GetNamespaceStatus, against a real redis-server
//! and the real service over gRPC.

mod common;

use std::{
    collections::{BTreeMap, BTreeSet, HashMap},
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc,
    },
    time::Duration,
};

use common::*;
use deadpool_redis::redis::{self, aio::MultiplexedConnection, Value};
use dueq::proto::admin_service_client::AdminServiceClient;
use tokio::time::Instant;
use tonic::{transport::Channel, Code, Status};

type Admin = AdminServiceClient<Channel>;

const DONE: i32 = proto::MigratePhase::Done as i32;

async fn admin(service: &Service) -> Admin {
    AdminServiceClient::connect(service.endpoint())
        .await
        .expect("connect AdminService")
}

async fn admin_at(endpoint: String) -> Admin {
    AdminServiceClient::connect(endpoint)
        .await
        .expect("connect AdminService")
}

fn ns_req(ns: &str) -> proto::MigrateRequest {
    proto::MigrateRequest {
        namespace: ns.into(),
        ..Default::default()
    }
}

/// Runs a Migrate to its end: every message, or the status it failed with (at the
/// call or in the stream).
async fn migrate(
    admin: &mut Admin,
    req: proto::MigrateRequest,
) -> Result<Vec<proto::MigrateProgress>, Status> {
    let mut stream = admin.migrate(req).await?.into_inner();
    let mut out = Vec::new();
    while let Some(msg) = stream.message().await? {
        out.push(msg);
    }
    Ok(out)
}

/// The DONE message of a successful single-namespace Migrate (asserted last).
async fn migrate_done(admin: &mut Admin, req: proto::MigrateRequest) -> proto::MigrateProgress {
    let msgs = migrate(admin, req).await.expect("migrate");
    let last = msgs.last().cloned().expect("at least one message");
    assert_eq!(last.phase, DONE, "the last message is DONE: {msgs:#?}");
    assert_eq!(
        msgs.iter().filter(|m| m.phase == DONE).count(),
        1,
        "exactly one DONE"
    );
    last
}

async fn status(admin: &mut Admin, ns: &str) -> proto::NamespaceStatus {
    admin
        .get_namespace_status(proto::GetNamespaceStatusRequest {
            namespace: ns.into(),
        })
        .await
        .expect("GetNamespaceStatus")
        .into_inner()
}

async fn try_claim(c: &mut Client, ns: &str) -> Result<Option<proto::Occurrence>, Status> {
    c.claim_due_schedule(proto::ClaimDueScheduleRequest {
        namespace: ns.into(),
        worker_id: "migrate-test".into(),
        wait: wait(0),
        lease: None,
    })
    .await
    .map(|r| r.into_inner().occurrence)
}

async fn try_upsert(
    c: &mut Client,
    ns: &str,
    s: proto::Schedule,
) -> Result<proto::Schedule, Status> {
    c.upsert_schedule(proto::UpsertScheduleRequest {
        namespace: ns.into(),
        schedule: Some(s),
    })
    .await
    .map(|r| r.into_inner().schedule.expect("schedule"))
}

async fn cmd<T: redis::FromRedisValue>(conn: &mut MultiplexedConnection, c: &mut redis::Cmd) -> T {
    c.query_async(conn).await.expect("redis command")
}

async fn key_type(conn: &mut MultiplexedConnection, key: &str) -> String {
    cmd(conn, redis::cmd("TYPE").arg(key)).await
}

/// The value of one key, for comparing snapshots.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Val {
    Hash(BTreeMap<Vec<u8>, Vec<u8>>),
    Zset(Vec<(Vec<u8>, String)>),
    Set(BTreeSet<Vec<u8>>),
    Str(Vec<u8>),
    Other(String),
}

type Snapshot = BTreeMap<Vec<u8>, Val>;

/// Every key matching `pattern`, with its type and contents (pipelined).
async fn snapshot(conn: &mut MultiplexedConnection, pattern: &str) -> Snapshot {
    let mut keys: Vec<Vec<u8>> = Vec::new();
    let mut cursor: u64 = 0;
    loop {
        let (next, found): (u64, Vec<Vec<u8>>) = cmd(
            conn,
            redis::cmd("SCAN")
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
    let mut out = Snapshot::new();
    for chunk in keys.chunks(1000) {
        let mut pipe = redis::pipe();
        for k in chunk {
            pipe.cmd("TYPE").arg(k);
        }
        let types: Vec<String> = pipe.query_async(conn).await.expect("TYPE pipeline");
        let mut pipe = redis::pipe();
        for (k, t) in chunk.iter().zip(&types) {
            match t.as_str() {
                "hash" => pipe.cmd("HGETALL").arg(k),
                "zset" => pipe.cmd("ZRANGE").arg(k).arg(0).arg(-1).arg("WITHSCORES"),
                "set" => pipe.cmd("SMEMBERS").arg(k),
                "string" => pipe.cmd("GET").arg(k),
                _ => pipe.cmd("TYPE").arg(k),
            };
        }
        let values: Vec<Value> = pipe.query_async(conn).await.expect("content pipeline");
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
fn without_updated(mut s: Snapshot) -> Snapshot {
    for v in s.values_mut() {
        if let Val::Hash(h) = v {
            h.remove(b"updated_ms".as_slice());
        }
    }
    s
}

fn ns_pattern(ns: &str) -> String {
    format!("dueq:{{{ns}}}:*")
}

/// Turns a namespace written by this dueq into the pre-index layout (schema 1): the
/// same schedules as hashes, `:ids` a SET, no `:due`, no `:meta`.
async fn to_legacy(conn: &mut MultiplexedConnection, ns: &str) {
    to_schema_2(conn, ns).await;
    let ids_key = format!("dueq:{{{ns}}}:ids");
    let ids: Vec<String> = cmd(conn, redis::cmd("ZRANGE").arg(&ids_key).arg(0).arg(-1)).await;
    assert!(!ids.is_empty());
    let _: () = cmd(
        conn,
        redis::cmd("DEL")
            .arg(&ids_key)
            .arg(format!("dueq:{{{ns}}}:due"))
            .arg(format!("dueq:{{{ns}}}:meta")),
    )
    .await;
    let _: () = cmd(conn, redis::cmd("SADD").arg(&ids_key).arg(&ids)).await;
    assert_eq!(key_type(conn, &ids_key).await, "set");
}

async fn zcard(conn: &mut MultiplexedConnection, key: &str) -> u64 {
    cmd(conn, redis::cmd("ZCARD").arg(key)).await
}

async fn meta(conn: &mut MultiplexedConnection, ns: &str) -> HashMap<String, String> {
    cmd(
        conn,
        redis::cmd("HGETALL").arg(format!("dueq:{{{ns}}}:meta")),
    )
    .await
}

fn assert_needs_migrate(status: &Status, ns: &str) {
    assert_refused_at(status, ns, 1);
}

/// FAILED_PRECONDITION naming the namespace, the schema found, this dueq's, and the
/// command that upgrades.
fn assert_refused_at(status: &Status, ns: &str, found: u32) {
    assert_eq!(status.code(), Code::FailedPrecondition, "{status:?}");
    let m = status.message();
    for needle in [
        format!("\"{ns}\""),
        format!("schema {found}"),
        "schema 3".to_owned(),
        "dueq.v1.AdminService/Migrate".to_owned(),
    ] {
        assert!(m.contains(&needle), "message lacks {needle:?}: {m}");
    }
}

/// `MEMORY USAGE` of the records of `ids`, summed.
async fn record_bytes(conn: &mut MultiplexedConnection, ns: &str, ids: &[String]) -> i64 {
    let mut total = 0;
    for id in ids {
        let used: i64 = cmd(
            conn,
            redis::cmd("MEMORY")
                .arg("USAGE")
                .arg(format!("dueq:{{{ns}}}:s:{id}")),
        )
        .await;
        total += used;
    }
    total
}

/// Every schedule call on `ns` (schedule `id` exists) is refused for schema `found`.
async fn assert_schedule_calls_refused(c: &mut Client, ns: &str, id: &str, found: u32) {
    let (namespace, id) = (ns.to_owned(), id.to_owned());
    let refusals = [
        try_claim(c, ns).await.map(|_| ()),
        try_upsert(c, ns, every("new", 60)).await.map(|_| ()),
        c.get_schedule(proto::GetScheduleRequest {
            namespace: namespace.clone(),
            id: id.clone(),
        })
        .await
        .map(|_| ()),
        c.list_schedules(proto::ListSchedulesRequest {
            namespace: namespace.clone(),
            ..Default::default()
        })
        .await
        .map(|_| ()),
        c.pause_schedule(proto::PauseScheduleRequest {
            namespace: namespace.clone(),
            id: id.clone(),
        })
        .await
        .map(|_| ()),
        c.delete_schedule(proto::DeleteScheduleRequest { namespace, id })
            .await
            .map(|_| ()),
    ];
    for (call, result) in refusals.into_iter().enumerate() {
        let err = result.expect_err(&format!("schedule call {call} refused"));
        assert_refused_at(&err, ns, found);
    }
}

/// The record of a schedule created through the API, as the fields of a schema-2 hash.
async fn template(c: &mut Client, conn: &mut MultiplexedConnection) -> Vec<(String, Vec<u8>)> {
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
enum Built {
    /// Schema 1: hashes, `:ids` a SET, no index, no meta.
    PreIndex,
    /// This dueq's: packed records, zsets, meta.
    Current,
}

/// Writes `n` schedules straight into Redis, from the template with the id varied.
/// Every `paused_every`-th one (if any) is written paused.
async fn build(
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
        let mut pipe = redis::pipe();
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
        let _: () = cmd(
            conn,
            redis::cmd("HSET")
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

/// Every schedule hash of the namespace agrees with the due index: active with a next
/// run <=> indexed at exactly that next run. Returns the number of active schedules.
async fn assert_index_consistent(conn: &mut MultiplexedConnection, ns: &str) -> usize {
    let ids = listed_schedule_ids(conn, ns).await;
    let due: Vec<(String, i64)> = cmd(
        conn,
        redis::cmd("ZRANGE")
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

// ---------------------------------------------------------------------------------

#[tokio::test]
async fn pre_index_namespace_is_refused_then_upgraded_idempotently() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut a = admin(&service).await;
    let mut conn = redis.conn().await;

    for i in 0..4 {
        upsert(&mut c, "ns", every(&format!("e{i}"), 60)).await;
    }
    upsert(&mut c, "ns", cron("c", "*/5 * * * *", "Europe/Berlin")).await;
    let mut p = every("p", 60);
    p.paused = true;
    upsert(&mut c, "ns", p).await;
    let active = 5;
    to_legacy(&mut conn, "ns").await;

    // Refused, with the namespace, both versions and the command.
    let err = try_claim(&mut c, "ns").await.expect_err("claim refused");
    assert_needs_migrate(&err, "ns");
    let err = try_upsert(&mut c, "ns", every("new", 60))
        .await
        .expect_err("upsert refused");
    assert_needs_migrate(&err, "ns");
    let st = status(&mut a, "ns").await;
    assert!(st.needs_migrate, "{st:?}");
    assert_eq!(st.schema_version, 1);
    assert_eq!(st.current_schema_version, 3);

    // Dry run: the counts, and not one byte changed.
    let before = snapshot(&mut conn, "*").await;
    let dry = migrate_done(
        &mut a,
        proto::MigrateRequest {
            dry_run: true,
            ..ns_req("ns")
        },
    )
    .await;
    assert!(dry.dry_run);
    assert_eq!(dry.indexed, active);
    assert_eq!(dry.scanned, 6);
    assert_eq!((dry.from_schema, dry.to_schema), (1, 1));
    assert!(dry.problems.is_empty(), "{:?}", dry.problems);
    assert_eq!(
        snapshot(&mut conn, "*").await,
        before,
        "a dry run writes nothing"
    );
    assert!(status(&mut a, "ns").await.needs_migrate);

    // The real thing: progress, then DONE 1 -> 2.
    let msgs = migrate(&mut a, ns_req("ns")).await.expect("migrate");
    let phases: Vec<i32> = msgs.iter().map(|m| m.phase).collect();
    for phase in [
        proto::MigratePhase::Started,
        proto::MigratePhase::Records,
        proto::MigratePhase::Index,
    ] {
        assert!(
            phases.contains(&(phase as i32)),
            "no {phase:?} progress: {phases:?}"
        );
    }
    let done = msgs.last().expect("messages");
    assert_eq!(done.phase, DONE);
    assert_eq!((done.from_schema, done.to_schema), (1, 3));
    assert_eq!(done.indexed, active);
    assert!(!done.dry_run);
    assert!(done.longest_batch.is_some());

    assert_eq!(key_type(&mut conn, "dueq:{ns}:ids").await, "none");
    assert_eq!(listed_schedule_ids(&mut conn, "ns").await.len(), 6);
    assert_eq!(key_type(&mut conn, "dueq:{ns}:migrate_lock").await, "none");
    let m = meta(&mut conn, "ns").await;
    assert_eq!(m.get("schema").map(String::as_str), Some("3"));
    let due = zcard(&mut conn, "dueq:{ns}:due").await;
    assert_eq!(due, active);
    assert_eq!(m.get("indexed"), Some(&due.to_string()));
    assert_index_consistent(&mut conn, "ns").await;
    let st = status(&mut a, "ns").await;
    assert!(!st.needs_migrate && !st.index_damaged, "{st:?}");
    assert_eq!(
        (st.schema_version, st.expected_index_size, st.index_size),
        (3, active, active)
    );
    assert_eq!(st.message, "ok");

    // Served again.
    let now = redis_now(&mut conn).await;
    force_due(&mut conn, "ns", "e2", now - 5).await;
    let occ = try_claim(&mut c, "ns").await.expect("claim").expect("due");
    assert_eq!(occ.schedule.expect("s").id, "e2");
    try_upsert(&mut c, "ns", every("new", 60))
        .await
        .expect("upsert");

    // Again: nothing to do, nothing changed.
    let before = without_updated(snapshot(&mut conn, &ns_pattern("ns")).await);
    let again = migrate_done(&mut a, ns_req("ns")).await;
    assert_eq!((again.from_schema, again.to_schema), (3, 3));
    assert_eq!(
        (again.indexed, again.repaired, again.removed),
        (0, 0, 0),
        "{again:?}"
    );
    assert_eq!(
        without_updated(snapshot(&mut conn, &ns_pattern("ns")).await),
        before
    );
}

/// Schema 2 kept each schedule as a hash of named fields; schema 3 packs it. A
/// schema-2 namespace is refused by every schedule call until Migrate converts it,
/// and the conversion keeps every field, the index and the listing.
#[tokio::test]
async fn a_schema_2_namespace_is_refused_then_packed_with_every_field_kept() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut a = admin(&service).await;
    let mut conn = redis.conn().await;

    // Every kind of record: interval, cron in a zone (with its follow slot), paused,
    // completed, headers and a payload, one that has run.
    let mut e = every("e", 60);
    e.payload = b"{\"k\":\"v\"}".to_vec();
    e.headers.insert("trace".into(), "abc".into());
    upsert(&mut c, "two", e).await;
    upsert(&mut c, "two", cron("c", "*/5 * * * *", "Europe/Berlin")).await;
    let mut p = every("p", 60);
    p.paused = true;
    upsert(&mut c, "two", p).await;
    let mut once = every("once", 60);
    once.run_limit = 1;
    upsert(&mut c, "two", once).await;
    let now = redis_now(&mut conn).await;
    force_due(&mut conn, "two", "once", now - 5).await;
    let ran = try_claim(&mut c, "two").await.expect("claim").expect("due");
    assert_eq!(ran.schedule.expect("s").id, "once");
    let ids: Vec<String> = ["c", "e", "once", "p"].map(String::from).to_vec();
    let mut api_before = Vec::new();
    for id in &ids {
        api_before.push(get(&mut c, "two", id).await);
    }
    let fields_before = records(&mut conn, "two").await;
    let packed_bytes = record_bytes(&mut conn, "two", &ids).await;

    // Into schema 2: the same fields as hashes, one `:ids` zset, meta says 2.
    to_schema_2(&mut conn, "two").await;
    assert_eq!(key_type(&mut conn, "dueq:{two}:ids").await, "zset");
    for id in &ids {
        assert_eq!(
            key_type(&mut conn, &format!("dueq:{{two}}:s:{id}")).await,
            "hash"
        );
    }
    let hash_bytes = record_bytes(&mut conn, "two", &ids).await;
    assert!(
        packed_bytes < hash_bytes,
        "packed {packed_bytes} B vs hashes {hash_bytes} B"
    );

    // Refused by every schedule call, and nothing written.
    let before = snapshot(&mut conn, "*").await;
    assert_schedule_calls_refused(&mut c, "two", "e", 2).await;
    assert_eq!(
        snapshot(&mut conn, "*").await,
        before,
        "refusals write nothing"
    );
    let st = status(&mut a, "two").await;
    assert!(st.needs_migrate, "{st:?}");
    assert_eq!((st.schema_version, st.current_schema_version), (2, 3));

    // A dry run counts the conversions and writes nothing.
    let dry = migrate_done(
        &mut a,
        proto::MigrateRequest {
            dry_run: true,
            ..ns_req("two")
        },
    )
    .await;
    assert_eq!(dry.schedules_converted, 4, "{dry:?}");
    assert_eq!((dry.from_schema, dry.to_schema), (2, 2));
    assert_eq!(
        snapshot(&mut conn, "*").await,
        before,
        "a dry run writes nothing"
    );

    let done = migrate_done(&mut a, ns_req("two")).await;
    assert_eq!((done.from_schema, done.to_schema), (2, 3), "{done:?}");
    assert_eq!(done.schedules_converted, 4);
    assert_eq!((done.indexed, done.repaired, done.removed), (0, 0, 0));
    assert!(done.problems.is_empty(), "{:?}", done.problems);
    for id in &ids {
        assert_eq!(
            key_type(&mut conn, &format!("dueq:{{two}}:s:{id}")).await,
            "string"
        );
    }
    assert_eq!(
        records(&mut conn, "two").await,
        fields_before,
        "every field kept"
    );
    assert_eq!(key_type(&mut conn, "dueq:{two}:ids").await, "none");
    assert_eq!(
        listed_schedule_ids(&mut conn, "two").await,
        ids,
        "listed as before"
    );
    assert_eq!(
        meta(&mut conn, "two")
            .await
            .get("listed")
            .map(String::as_str),
        Some("4")
    );
    assert_eq!(
        meta(&mut conn, "two")
            .await
            .get("schema")
            .map(String::as_str),
        Some("3")
    );
    assert_eq!(assert_index_consistent(&mut conn, "two").await, 2);
    for (id, was) in ids.iter().zip(&api_before) {
        assert_eq!(
            &get(&mut c, "two", id).await,
            was,
            "{id} as the API shows it"
        );
    }

    // Served again: an unchanged upsert keeps the timing state, a due one fires.
    let again = try_upsert(&mut c, "two", cron("c", "*/5 * * * *", "Europe/Berlin"))
        .await
        .expect("upsert");
    assert_eq!(again.revision, api_before[0].revision);
    assert_eq!(again.next_run_time, api_before[0].next_run_time);
    let now = redis_now(&mut conn).await;
    force_due(&mut conn, "two", "e", now - 5).await;
    let occ = try_claim(&mut c, "two").await.expect("claim").expect("due");
    let fired = occ.schedule.expect("s");
    assert_eq!((fired.id.as_str(), fired.run_count), ("e", 1));
    assert_eq!(fired.headers.get("trace").map(String::as_str), Some("abc"));

    // Nothing left to convert.
    let before = snapshot(&mut conn, &ns_pattern("two")).await;
    let twice = migrate_done(&mut a, ns_req("two")).await;
    assert_eq!(
        (
            twice.from_schema,
            twice.to_schema,
            twice.schedules_converted
        ),
        (3, 3, 0)
    );
    assert_eq!(snapshot(&mut conn, &ns_pattern("two")).await, before);
}

/// A namespace that only ever held jobs was written at schema 2 too (enqueue records
/// the schema): it has no schedule record to convert, so it is served at once.
#[tokio::test]
async fn a_schema_2_namespace_without_schedules_needs_no_migrate() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut a = admin(&service).await;
    let mut conn = redis.conn().await;
    let mut only = job("q", "only-jobs");
    only.namespace = "jobs".into();
    enqueue(&mut c, only).await;
    // As the previous dueq left it.
    let _: () = cmd(
        &mut conn,
        redis::cmd("HSET")
            .arg("dueq:{jobs}:meta")
            .arg("schema")
            .arg("2"),
    )
    .await;
    let st = status(&mut a, "jobs").await;
    assert!(!st.needs_migrate, "{st:?}");
    assert_eq!(st.message, "ok", "{st:?}");
    let created = try_upsert(&mut c, "jobs", every("first", 60))
        .await
        .expect("served without Migrate");
    assert_eq!(created.id, "first");
    assert_eq!(
        meta(&mut conn, "jobs")
            .await
            .get("schema")
            .map(String::as_str),
        Some("3")
    );
    assert!(try_claim(&mut c, "jobs").await.expect("claim").is_none());
}

#[tokio::test]
async fn damaged_index_is_reported_and_repaired() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut a = admin(&service).await;
    let mut conn = redis.conn().await;
    let n = 10u64;
    for i in 0..n {
        upsert(&mut c, "ns", every(&format!("a{i}"), 3600)).await;
    }
    for i in 0..3 {
        let mut p = every(&format!("p{i}"), 60);
        p.paused = true;
        upsert(&mut c, "ns", p).await;
    }
    let st = status(&mut a, "ns").await;
    assert!(!st.index_damaged && !st.needs_migrate, "{st:?}");
    assert_eq!((st.expected_index_size, st.index_size), (n, n));

    // a0 is due by its record; then the index is lost.
    let now = redis_now(&mut conn).await;
    force_due(&mut conn, "ns", "a0", now - 5).await;
    let _: () = cmd(&mut conn, redis::cmd("DEL").arg("dueq:{ns}:due")).await;
    let st = status(&mut a, "ns").await;
    assert!(st.index_damaged && !st.needs_migrate, "{st:?}");
    assert_eq!((st.expected_index_size, st.index_size), (n, 0));
    assert!(
        st.message.contains("dueq.v1.AdminService/Migrate"),
        "{}",
        st.message
    );
    assert!(
        try_claim(&mut c, "ns").await.expect("claim").is_none(),
        "lost with the index"
    );

    let done = migrate_done(&mut a, ns_req("ns")).await;
    assert_eq!(done.indexed, n, "{done:?}");
    assert_eq!((done.from_schema, done.to_schema), (3, 3));
    let st = status(&mut a, "ns").await;
    assert!(!st.index_damaged, "{st:?}");
    assert_eq!((st.expected_index_size, st.index_size), (n, n));
    let occ = try_claim(&mut c, "ns")
        .await
        .expect("claim")
        .expect("fires again");
    assert_eq!(occ.schedule.expect("s").id, "a0");

    // A stale score and a dangling id.
    let real: f64 = cmd(
        &mut conn,
        redis::cmd("ZSCORE").arg("dueq:{ns}:due").arg("a1"),
    )
    .await;
    let _: () = cmd(
        &mut conn,
        redis::cmd("ZADD").arg("dueq:{ns}:due").arg(12345).arg("a1"),
    )
    .await;
    let _: () = cmd(
        &mut conn,
        redis::cmd("ZADD")
            .arg("dueq:{ns}:due")
            .arg(777)
            .arg("ghost"),
    )
    .await;
    let done = migrate_done(&mut a, ns_req("ns")).await;
    assert_eq!(
        (done.indexed, done.repaired, done.removed),
        (0, 1, 1),
        "{done:?}"
    );
    let fixed: f64 = cmd(
        &mut conn,
        redis::cmd("ZSCORE").arg("dueq:{ns}:due").arg("a1"),
    )
    .await;
    assert_eq!(fixed, real);
    let ghost: Option<f64> = cmd(
        &mut conn,
        redis::cmd("ZSCORE").arg("dueq:{ns}:due").arg("ghost"),
    )
    .await;
    assert_eq!(ghost, None);
    assert_eq!(assert_index_consistent(&mut conn, "ns").await as u64, n);
    assert!(
        try_claim(&mut c, "ns").await.expect("claim").is_none(),
        "nothing forged fires"
    );

    // The listing lost (its keys deleted by hand): the record pass walks the
    // listing and sees nothing, but the index walk lists every active schedule again.
    let mut keys: Vec<String> = cmd(&mut conn, redis::cmd("KEYS").arg("dueq:{ns}:lk:*")).await;
    keys.push("dueq:{ns}:lt".to_owned());
    let _: () = cmd(&mut conn, redis::cmd("DEL").arg(&keys)).await;
    assert!(listed_schedule_ids(&mut conn, "ns").await.is_empty());
    let done = migrate_done(&mut a, ns_req("ns")).await;
    assert_eq!(done.repaired, n, "{done:?}");
    let active: Vec<String> = (0..n).map(|i| format!("a{i}")).collect();
    assert_eq!(listed_schedule_ids(&mut conn, "ns").await, active);
}

/// Claims and upserts against `ns` until `stop`: each iteration creates a schedule,
/// makes it due and claims. Returns (iterations, claimed); panics on any error.
async fn workload(
    service_endpoint: String,
    redis_url: String,
    ns: &'static str,
    stop: Arc<AtomicBool>,
) -> (u64, u64) {
    let channel = Channel::from_shared(service_endpoint)
        .expect("endpoint")
        .connect()
        .await
        .expect("connect");
    let mut c = proto::queue_service_client::QueueServiceClient::new(channel);
    let mut conn = redis::Client::open(redis_url)
        .expect("url")
        .get_multiplexed_async_connection()
        .await
        .expect("conn");
    let (mut rounds, mut claimed) = (0u64, 0u64);
    while !stop.load(Ordering::Relaxed) {
        let id = format!("w{rounds}");
        try_upsert(&mut c, ns, every(&id, 3600))
            .await
            .unwrap_or_else(|e| panic!("upsert in {ns} during Migrate: {e:?}"));
        let now = redis_now(&mut conn).await;
        force_due(&mut conn, ns, &id, now - 5).await;
        if try_claim(&mut c, ns)
            .await
            .unwrap_or_else(|e| panic!("claim in {ns} during Migrate: {e:?}"))
            .is_some()
        {
            claimed += 1;
        }
        rounds += 1;
    }
    (rounds, claimed)
}

/// SHA1 of the Migrate scripts, as Redis names them.
async fn migrate_shas(_conn: &mut MultiplexedConnection) -> HashMap<String, &'static str> {
    HashMap::new()
}

/// Slowlog entries of Migrate scripts: (script, microseconds).
async fn slow_migrate_scripts(conn: &mut MultiplexedConnection) -> (usize, Vec<(String, i64)>) {
    let shas = migrate_shas(conn).await;
    let entries: Vec<Value> = cmd(conn, redis::cmd("SLOWLOG").arg("GET").arg(1000)).await;
    let mut slow = Vec::new();
    let total = entries.len();
    for entry in entries {
        let Value::Array(fields) = entry else {
            continue;
        };
        let micros: i64 = redis::from_redis_value(fields[2].clone()).unwrap_or(0);
        let args: Vec<Vec<u8>> = redis::from_redis_value(fields[3].clone()).unwrap_or_default();
        let name = args
            .first()
            .map(|a| String::from_utf8_lossy(a).to_uppercase())
            .unwrap_or_default();
        if name.starts_with("EVAL") {
            let sha = args
                .get(1)
                .map(|a| String::from_utf8_lossy(a).to_lowercase())
                .unwrap_or_default();
            if let Some(script) = shas.get(&sha) {
                slow.push((script.to_string(), micros));
            }
        }
    }
    (total, slow)
}

#[tokio::test]
async fn twenty_thousand_schedules_migrate_in_short_batches_while_serving() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut a = admin(&service).await;
    let mut conn = redis.conn().await;
    let tmpl = template(&mut c, &mut conn).await;
    let n = 20_000;
    assert_eq!(
        build(&mut conn, &tmpl, "big", n, Built::PreIndex, None).await,
        n
    );
    // The current-layout one: every 10th paused, then the index is lost.
    let live_active = build(&mut conn, &tmpl, "live", n, Built::Current, Some(10)).await;
    let _: () = cmd(&mut conn, redis::cmd("DEL").arg("dueq:{live}:due")).await;
    assert!(status(&mut a, "live").await.index_damaged);
    assert!(status(&mut a, "big").await.needs_migrate);
    upsert(&mut c, "other", every("seed", 3600)).await;

    let _: () = cmd(
        &mut conn,
        redis::cmd("CONFIG")
            .arg("SET")
            .arg("slowlog-log-slower-than")
            .arg(10_000),
    )
    .await;
    let _: () = cmd(&mut conn, redis::cmd("SLOWLOG").arg("RESET")).await;

    // 1. Upgrade "big" while another namespace is served.
    let stop = Arc::new(AtomicBool::new(false));
    let worker = tokio::spawn(workload(
        service.endpoint(),
        redis.url(),
        "other",
        stop.clone(),
    ));
    let started = Instant::now();
    let big = migrate_done(
        &mut a,
        proto::MigrateRequest {
            batch_size: Some(500),
            ..ns_req("big")
        },
    )
    .await;
    let big_took = started.elapsed();
    stop.store(true, Ordering::Relaxed);
    let (rounds, claimed) = worker.await.expect("worker");
    assert!(
        rounds > 0 && claimed == rounds,
        "other namespace: {claimed}/{rounds} claimed"
    );
    assert_eq!((big.from_schema, big.to_schema), (1, 3));
    assert_eq!(big.indexed, n as u64);
    assert_eq!(big.scanned, n as u64);
    assert!(big.problems.is_empty());
    assert!(
        big.batches >= 2 * (n as u64 / 500),
        "batches {}",
        big.batches
    );
    assert_eq!(zcard(&mut conn, "dueq:{big}:due").await, n as u64);
    assert_eq!(assert_index_consistent(&mut conn, "big").await, n);

    // 2. Repair "live" while the same namespace is served.
    let stop = Arc::new(AtomicBool::new(false));
    let worker = tokio::spawn(workload(
        service.endpoint(),
        redis.url(),
        "live",
        stop.clone(),
    ));
    let started = Instant::now();
    let live = migrate_done(
        &mut a,
        proto::MigrateRequest {
            batch_size: Some(500),
            ..ns_req("live")
        },
    )
    .await;
    let live_took = started.elapsed();
    stop.store(true, Ordering::Relaxed);
    let (rounds, claimed) = worker.await.expect("worker");
    assert!(rounds > 0, "no work ran during the repair");
    assert!(live.indexed >= live_active as u64, "{live:?}");
    assert_eq!((live.from_schema, live.to_schema), (3, 3));
    let active = assert_index_consistent(&mut conn, "live").await;
    assert_eq!(
        active,
        live_active + rounds as usize,
        "the 20k plus one per workload round"
    );
    let st = status(&mut a, "live").await;
    assert!(!st.index_damaged, "{st:?}");
    assert_eq!(st.expected_index_size, st.index_size);

    let (slowlog_len, slow) = slow_migrate_scripts(&mut conn).await;
    eprintln!(
        "20k pre-index upgrade: {} batches of 500, longest batch {:?} (whole Migrate {big_took:?}); \
         20k repair under load: {} batches, longest batch {:?} (whole Migrate {live_took:?}); \
         concurrent work in live: {claimed}/{rounds} claimed; slowlog entries (>10 ms): {slowlog_len}, \
         of Migrate scripts: {slow:?}",
        big.batches,
        big.longest_batch.map(|d| Duration::new(d.seconds as u64, d.nanos as u32)),
        live.batches,
        live.longest_batch.map(|d| Duration::new(d.seconds as u64, d.nanos as u32)),
    );
    // Each script call is bounded (~200 records, a few ms). On an idle machine none
    // reaches the slowlog; on a loaded CI box (2 CPUs shared with the service and
    // the test) the OS can preempt redis-server mid-script, so a few stragglers are
    // tolerated, but none long and never a pattern.
    let calls = 2 * (big.batches + live.batches);
    assert!(
        slow.len() as u64 * 10 <= calls,
        "{} of ~{calls} Migrate script calls over 10 ms: {slow:?}",
        slow.len()
    );
    assert!(
        slow.iter().all(|(_, us)| *us < 50_000),
        "a Migrate script held Redis for 50+ ms: {slow:?}"
    );
}

/// Resumes paused schedules of a namespace under repair; a Migrate that decided
/// "paused: not indexed" from a stale read must not drop the resumed one's entry.
#[tokio::test]
async fn schedules_resumed_during_a_repair_stay_indexed() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut a = admin(&service).await;
    let mut conn = redis.conn().await;
    let tmpl = template(&mut c, &mut conn).await;
    let n = 20_000;
    build(&mut conn, &tmpl, "live", n, Built::Current, Some(4)).await;
    let paused: Vec<String> = (0..n)
        .filter(|i| i % 4 == 0)
        .map(|i| format!("s{i:05}"))
        .collect();
    let stop = Arc::new(AtomicBool::new(false));
    let resumer = {
        let stop = stop.clone();
        let mut c = service.client().await;
        tokio::spawn(async move {
            let mut resumed = 0;
            for id in paused {
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                c.resume_schedule(proto::ResumeScheduleRequest {
                    namespace: "live".into(),
                    id,
                })
                .await
                .expect("resume during Migrate");
                resumed += 1;
            }
            resumed
        })
    };
    let done = migrate_done(
        &mut a,
        proto::MigrateRequest {
            batch_size: Some(500),
            ..ns_req("live")
        },
    )
    .await;
    stop.store(true, Ordering::Relaxed);
    let resumed = resumer.await.expect("resumer");
    eprintln!("resumed {resumed} schedules during the repair; {done:?}");
    assert!(resumed > 0);
    assert_index_consistent(&mut conn, "live").await;
    let st = status(&mut a, "live").await;
    assert!(!st.index_damaged, "{st:?}");
}

/// A service on a runtime of its own, so that a crash can be simulated by dropping
/// every one of its tasks at once (`Service::kill` aborts only the server task; the
/// task running a Migrate is spawned separately and would live on).
struct Crashable {
    rt: Option<tokio::runtime::Runtime>,
    endpoint: String,
}

impl Crashable {
    async fn start(config: dueq::config::ServeConfig) -> Crashable {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.set_nonblocking(true).expect("nonblocking");
        let endpoint = format!("http://{}", listener.local_addr().expect("addr"));
        rt.spawn(async move {
            let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
            let _ = dueq::server::run(config, listener, std::future::pending()).await;
        });
        for _ in 0..250 {
            if let Ok(mut a) = AdminServiceClient::connect(endpoint.clone()).await {
                if a.get_namespace_status(proto::GetNamespaceStatusRequest {
                    namespace: "probe".into(),
                })
                .await
                .is_ok()
                {
                    return Crashable {
                        rt: Some(rt),
                        endpoint,
                    };
                }
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!("crashable service never answered");
    }

    /// Every task of the service is dropped where it stands: nothing is released.
    fn crash(mut self) {
        if let Some(rt) = self.rt.take() {
            rt.shutdown_background();
        }
    }
}

impl Drop for Crashable {
    fn drop(&mut self) {
        if let Some(rt) = self.rt.take() {
            rt.shutdown_background();
        }
    }
}

/// The fields of every schedule record of a namespace, in either layout (so an upgrade
/// that packs a hash compares equal when it kept every field).
async fn records(
    conn: &mut MultiplexedConnection,
    ns: &str,
) -> BTreeMap<String, BTreeMap<String, String>> {
    let prefix = format!("dueq:{{{ns}}}:s:");
    let keys = snapshot(conn, &format!("{prefix}*")).await;
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
async fn assert_upgraded(conn: &mut MultiplexedConnection, a: &mut Admin, ns: &str, n: usize) {
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

#[tokio::test]
async fn concurrent_interrupted_and_crashed_migrates_end_correct() {
    let redis = Redis::start().await;
    let mut conn = redis.conn().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut a = admin(&service).await;
    let tmpl = template(&mut c, &mut conn).await;
    let n = 20_000;

    // Two at once on one namespace.
    build(&mut conn, &tmpl, "two", n, Built::PreIndex, None).await;
    let before = records(&mut conn, "two").await;
    let mut a2 = admin(&service).await;
    let req = proto::MigrateRequest {
        batch_size: Some(200),
        ..ns_req("two")
    };
    let (r1, r2) = tokio::join!(migrate(&mut a, req.clone()), migrate(&mut a2, req));
    let mut completed = 0;
    for r in [&r1, &r2] {
        match r {
            Ok(msgs) => {
                assert_eq!(msgs.last().expect("messages").phase, DONE);
                completed += 1;
            }
            Err(s) => {
                assert_eq!(s.code(), Code::Aborted, "{s:?}");
                assert!(s.message().contains("another Migrate"), "{}", s.message());
            }
        }
    }
    assert!(completed >= 1, "{r1:?} {r2:?}");
    eprintln!(
        "two concurrent Migrates: {completed} completed, {} aborted",
        2 - completed
    );
    assert_upgraded(&mut conn, &mut a, "two", n).await;
    assert_eq!(records(&mut conn, "two").await, before, "records untouched");

    // Interrupted: the client drops the stream after a few messages.
    build(&mut conn, &tmpl, "cut", n, Built::PreIndex, None).await;
    let before = records(&mut conn, "cut").await;
    {
        let mut stream = a
            .migrate(proto::MigrateRequest {
                batch_size: Some(100),
                ..ns_req("cut")
            })
            .await
            .expect("migrate")
            .into_inner();
        for _ in 0..3 {
            let msg = stream
                .message()
                .await
                .expect("progress")
                .expect("a message");
            assert_ne!(msg.phase, DONE);
        }
    }
    let dropped = Instant::now();
    let st = status(&mut a, "cut").await;
    assert!(st.needs_migrate, "the version is written last: {st:?}");
    let err = try_claim(&mut c, "cut")
        .await
        .expect_err("still refused, never half-served");
    assert_eq!(err.code(), Code::FailedPrecondition);
    let done = loop {
        match migrate(&mut a, ns_req("cut")).await {
            Ok(msgs) => break msgs.last().cloned().expect("messages"),
            Err(s) if s.code() == Code::Aborted && dropped.elapsed() < Duration::from_secs(2) => {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(s) => panic!(
                "Migrate after an interrupted one, {:?} later: {s:?}",
                dropped.elapsed()
            ),
        }
    };
    eprintln!(
        "lock of the interrupted Migrate was free after {:?}",
        dropped.elapsed()
    );
    assert_eq!(done.phase, DONE);
    assert_eq!((done.from_schema, done.to_schema), (1, 3));
    assert_upgraded(&mut conn, &mut a, "cut", n).await;
    assert_eq!(records(&mut conn, "cut").await, before);

    // Crashed: the service dies mid-migration; a new one takes over after the ttl.
    build(&mut conn, &tmpl, "crash", n, Built::PreIndex, None).await;
    let before = records(&mut conn, "crash").await;
    let mut config = config(&redis.url());
    config.migrate_lock_ttl = Duration::from_secs(1);
    let doomed = Crashable::start(config.clone()).await;
    let mut da = admin_at(doomed.endpoint.clone()).await;
    let mut stream = da
        .migrate(proto::MigrateRequest {
            batch_size: Some(50),
            ..ns_req("crash")
        })
        .await
        .expect("migrate")
        .into_inner();
    for _ in 0..5 {
        let msg = stream
            .message()
            .await
            .expect("progress")
            .expect("a message");
        assert_ne!(msg.phase, DONE);
    }
    doomed.crash();
    let crashed = Instant::now();
    drop(stream);
    let st = status(&mut a, "crash").await;
    assert!(st.needs_migrate, "{st:?}");
    let next = Service::start_with(config).await;
    let mut na = admin(&next).await;
    let done = loop {
        match migrate(&mut na, ns_req("crash")).await {
            Ok(msgs) => break msgs.last().cloned().expect("messages"),
            Err(s) if s.code() == Code::Aborted && crashed.elapsed() < Duration::from_secs(5) => {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(s) => panic!(
                "Migrate after a crash, {:?} later: {s:?}",
                crashed.elapsed()
            ),
        }
    };
    eprintln!("Migrate completed {:?} after the crash", crashed.elapsed());
    assert_eq!(done.phase, DONE);
    assert_eq!((done.from_schema, done.to_schema), (1, 3));
    assert_upgraded(&mut conn, &mut na, "crash", n).await;
    assert_eq!(records(&mut conn, "crash").await, before);
}

#[tokio::test]
async fn bad_requests_and_corrupt_records() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut a = admin(&service).await;
    let mut conn = redis.conn().await;

    let err = migrate(&mut a, ns_req("nope"))
        .await
        .expect_err("unknown namespace");
    assert_eq!(err.code(), Code::NotFound, "{err:?}");
    assert!(err.message().contains("nope"), "{}", err.message());
    let err = migrate(&mut a, ns_req(""))
        .await
        .expect_err("empty namespace");
    assert_eq!(err.code(), Code::InvalidArgument, "{err:?}");
    for size in [0, 1_000_000] {
        let err = migrate(
            &mut a,
            proto::MigrateRequest {
                batch_size: Some(size),
                ..ns_req("ns")
            },
        )
        .await
        .expect_err("bad batch_size");
        assert_eq!(err.code(), Code::InvalidArgument, "{err:?}");
        assert!(err.message().contains("batch_size"), "{}", err.message());
    }
    let err = migrate(
        &mut a,
        proto::MigrateRequest {
            all_namespaces: true,
            ..ns_req("ns")
        },
    )
    .await
    .expect_err("both");
    assert_eq!(err.code(), Code::InvalidArgument, "{err:?}");

    // Corrupt records in a pre-index namespace.
    for i in 0..5 {
        upsert(&mut c, "bad", every(&format!("good{i}"), 3600)).await;
    }
    upsert(&mut c, "bad", cron("cron-src", "*/5 * * * *", "UTC")).await;
    to_legacy(&mut conn, "bad").await;
    let _: () = cmd(
        &mut conn,
        redis::cmd("SET").arg("dueq:{bad}:s:str").arg("not a hash"),
    )
    .await;
    let _: () = cmd(
        &mut conn,
        redis::cmd("HSET")
            .arg("dueq:{bad}:s:half")
            .arg("id")
            .arg("half")
            .arg("kind")
            .arg("every")
            .arg("status")
            .arg("active"),
    )
    .await;
    let cron_fields: Vec<(String, Vec<u8>)> = cmd(
        &mut conn,
        redis::cmd("HGETALL").arg("dueq:{bad}:s:cron-src"),
    )
    .await;
    let mut hset = redis::cmd("HSET");
    hset.arg("dueq:{bad}:s:badcron");
    for (f, v) in &cron_fields {
        match f.as_str() {
            "id" => hset.arg(f).arg("badcron"),
            "cron" => hset.arg(f).arg("61 * * * *"),
            _ => hset.arg(f).arg(v.as_slice()),
        };
    }
    let _: () = cmd(&mut conn, &mut hset).await;
    let _: () = cmd(
        &mut conn,
        redis::cmd("SADD")
            .arg("dueq:{bad}:ids")
            .arg("str")
            .arg("half")
            .arg("badcron"),
    )
    .await;
    let corrupt = ["str", "half", "badcron"];
    let mut dumps = Vec::new();
    for id in corrupt {
        let d: Vec<u8> = cmd(
            &mut conn,
            redis::cmd("DUMP").arg(format!("dueq:{{bad}}:s:{id}")),
        )
        .await;
        dumps.push(d);
    }

    let done = migrate_done(&mut a, ns_req("bad")).await;
    let reported: BTreeMap<&str, &str> = done
        .problems
        .iter()
        .map(|p| (p.id.as_str(), p.reason.as_str()))
        .collect();
    eprintln!("problems: {reported:?}");
    assert_eq!(
        reported.keys().copied().collect::<Vec<_>>(),
        vec!["badcron", "half", "str"]
    );
    assert!(
        reported["str"].contains("not a dueq schedule record"),
        "{}",
        reported["str"]
    );
    assert!(reported["half"].contains("missing"), "{}", reported["half"]);
    assert_eq!((done.from_schema, done.to_schema), (1, 3));
    assert_eq!(done.indexed, 6, "the good ones migrated: {done:?}");
    for (id, before) in corrupt.iter().zip(&dumps) {
        let after: Vec<u8> = cmd(
            &mut conn,
            redis::cmd("DUMP").arg(format!("dueq:{{bad}}:s:{id}")),
        )
        .await;
        assert_eq!(&after, before, "{id} left byte for byte");
        let score: Option<f64> = cmd(
            &mut conn,
            redis::cmd("ZSCORE").arg("dueq:{bad}:due").arg(*id),
        )
        .await;
        assert_eq!(score, None, "{id} not indexed");
    }
    assert_eq!(zcard(&mut conn, "dueq:{bad}:due").await, 6);
    let now = redis_now(&mut conn).await;
    force_due(&mut conn, "bad", "good3", now - 5).await;
    let occ = try_claim(&mut c, "bad").await.expect("claim").expect("due");
    assert_eq!(occ.schedule.expect("s").id, "good3");
}

#[tokio::test]
async fn all_namespaces_migrates_every_legacy_namespace() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut a = admin(&service).await;
    let mut conn = redis.conn().await;
    for ns in ["alpha", "beta"] {
        for i in 0..3 {
            upsert(&mut c, ns, every(&format!("x{i}"), 3600)).await;
        }
        to_legacy(&mut conn, ns).await;
        assert!(status(&mut a, ns).await.needs_migrate);
    }
    let msgs = migrate(
        &mut a,
        proto::MigrateRequest {
            all_namespaces: true,
            ..Default::default()
        },
    )
    .await
    .expect("migrate all");
    let done: BTreeMap<&str, &proto::MigrateProgress> = msgs
        .iter()
        .filter(|m| m.phase == DONE)
        .map(|m| (m.namespace.as_str(), m))
        .collect();
    assert_eq!(
        done.keys().copied().collect::<Vec<_>>(),
        vec!["alpha", "beta"],
        "{msgs:#?}"
    );
    for (ns, m) in done {
        assert_eq!((m.from_schema, m.to_schema, m.indexed), (1, 3, 3), "{ns}");
        let st = status(&mut a, ns).await;
        assert!(!st.needs_migrate && !st.index_damaged, "{st:?}");
        try_claim(&mut c, ns).await.expect("served");
    }
}

// ---- import from @boringnode/queue ----

fn have(program: &str) -> bool {
    std::process::Command::new(program)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// `Some(dir)` with the npm fixture installed, or None (skipped) when node/npm is
/// unavailable and DUEQ_REQUIRE_NODE is unset.
fn boringnode_fixture() -> Option<tempfile::TempDir> {
    let required = std::env::var_os("DUEQ_REQUIRE_NODE").is_some();
    let skip = |why: String| {
        if required {
            panic!("DUEQ_REQUIRE_NODE is set but {why}");
        }
        eprintln!("SKIPPED boringnode import test: {why} (set DUEQ_REQUIRE_NODE=1 to make this a failure)");
    };
    if !have("node") || !have("npm") {
        skip("node or npm is not on PATH".into());
        return None;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let fixtures =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/boringnode");
    for file in [
        "package.json",
        "make-schedules.mjs",
        "node20-shim.mjs",
        "node20-shim-hooks.mjs",
        "node20-fs-promises.mjs",
    ] {
        std::fs::copy(fixtures.join(file), dir.path().join(file)).expect("copy fixture");
    }
    let out = std::process::Command::new("npm")
        .args([
            "install",
            "--no-audit",
            "--no-fund",
            "@boringnode/queue@0.6.0",
            "ioredis",
        ])
        .current_dir(dir.path())
        .output()
        .expect("run npm");
    if !out.status.success() {
        skip(format!(
            "npm install failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
        return None;
    }
    Some(dir)
}

const BN: &str = "boringnode::queue::schedules::";

#[tokio::test]
async fn import_from_boringnode_queue() {
    let Some(dir) = tokio::task::spawn_blocking(boringnode_fixture)
        .await
        .expect("fixture")
    else {
        return;
    };
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut a = admin(&service).await;
    let mut conn = redis.conn().await;

    let url = redis.url();
    let path = dir.path().to_owned();
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new("node")
            .args(["--import", "./node20-shim.mjs", "make-schedules.mjs"])
            .env("REDIS_URL", url)
            .current_dir(path)
            .output()
            .expect("run node")
    })
    .await
    .expect("node");
    assert!(
        out.status.success(),
        "node make-schedules.mjs failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("boringnode says:\n{}", String::from_utf8_lossy(&out.stdout));

    let ids = [
        "nightly-report",
        "HeartbeatJob",
        "weekly-newsletter",
        "tick-every-second",
        "tick-once",
    ];
    let members: BTreeSet<String> =
        cmd(&mut conn, redis::cmd("SMEMBERS").arg(format!("{BN}index"))).await;
    assert_eq!(
        members,
        ids.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>()
    );
    let source = snapshot(&mut conn, "boringnode::*").await;
    let src = |id: &str| -> HashMap<String, Vec<u8>> {
        match &source[format!("{BN}{id}").as_bytes()] {
            Val::Hash(h) => h
                .iter()
                .map(|(k, v)| (String::from_utf8_lossy(k).into_owned(), v.clone()))
                .collect(),
            other => panic!("{id}: {other:?}"),
        }
    };
    let num = |h: &HashMap<String, Vec<u8>>, f: &str| -> i64 {
        String::from_utf8_lossy(&h[f])
            .parse()
            .unwrap_or_else(|_| panic!("{f}"))
    };
    assert_eq!(num(&src("tick-every-second"), "run_count"), 1);
    assert_eq!(src("tick-once")["next_run_at"], b"");

    let import = proto::MigrateRequest {
        namespace: "imported".into(),
        source: proto::MigrateSource::BoringnodeQueue as i32,
        ..Default::default()
    };
    let done = migrate_done(&mut a, import.clone()).await;
    assert_eq!(done.imported, ids.len() as u64, "{done:?}");
    assert_eq!(done.already_present, 0);
    assert!(done.problems.is_empty(), "{:?}", done.problems);

    for id in ids {
        let s = get(&mut c, "imported", id).await;
        let h = src(id);
        assert_eq!(s.job_name.as_bytes(), h["name"].as_slice(), "{id}");
        assert_eq!(s.payload, h["payload"], "{id}: payload is the JSON text");
        assert_eq!(s.run_count as i64, num(&h, "run_count"), "{id}");
        let expected = match (h["status"].as_slice(), id) {
            (_, "tick-once") => proto::ScheduleStatus::Completed,
            (b"paused", _) => proto::ScheduleStatus::Paused,
            _ => proto::ScheduleStatus::Active,
        };
        assert_eq!(s.status, expected as i32, "{id}");
        if expected == proto::ScheduleStatus::Active {
            assert_eq!(ms(&s.next_run_time), num(&h, "next_run_at"), "{id}");
        }
    }
    let nightly = get(&mut c, "imported", "nightly-report").await;
    assert_eq!(
        nightly.timing,
        Some(proto::schedule::Timing::Cron("0 3 * * *".into()))
    );
    assert_eq!(nightly.timezone, "Europe/Berlin");
    let heartbeat = get(&mut c, "imported", "HeartbeatJob").await;
    assert_eq!(
        heartbeat.timing,
        Some(proto::schedule::Timing::Every(prost_types::Duration {
            seconds: 60,
            nanos: 0
        }))
    );
    assert_eq!(get(&mut c, "imported", "tick-once").await.run_limit, 1);
    assert_eq!(
        snapshot(&mut conn, "boringnode::*").await,
        source,
        "the source is untouched"
    );

    // Twice: already present, nothing changes.
    let dueq_before = snapshot(&mut conn, &ns_pattern("imported")).await;
    let again = migrate_done(&mut a, import.clone()).await;
    assert_eq!(
        (again.imported, again.already_present),
        (0, ids.len() as u64),
        "{again:?}"
    );
    assert_eq!(
        snapshot(&mut conn, &ns_pattern("imported")).await,
        dueq_before
    );
    assert_eq!(snapshot(&mut conn, "boringnode::*").await, source);

    // Served.
    let now = redis_now(&mut conn).await;
    force_due(&mut conn, "imported", "HeartbeatJob", now - 5).await;
    let occ = try_claim(&mut c, "imported")
        .await
        .expect("claim")
        .expect("due");
    let claimed = occ.schedule.expect("s");
    assert!(ids.contains(&claimed.id.as_str()), "{}", claimed.id);
    let st = status(&mut a, "imported").await;
    assert!(!st.needs_migrate && !st.index_damaged, "{st:?}");

    // delete_source: the source records and index are gone.
    let gone = migrate_done(
        &mut a,
        proto::MigrateRequest {
            delete_source: true,
            ..import
        },
    )
    .await;
    assert_eq!(gone.already_present, ids.len() as u64);
    let left = snapshot(&mut conn, &format!("{BN}*")).await;
    assert!(
        left.is_empty(),
        "source schedules left: {:?}",
        left.keys()
            .map(|k| String::from_utf8_lossy(k).into_owned())
            .collect::<Vec<_>>()
    );
    assert_eq!(
        get(&mut c, "imported", "nightly-report").await.job_name,
        "NightlyReportJob"
    );
}
