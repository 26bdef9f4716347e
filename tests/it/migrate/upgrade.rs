//! Upgrades: a pre-index (schema 1) or schema-2 namespace is refused by every
//! schedule call until Migrate converts it, keeping every field; idempotently.

use std::collections::BTreeMap;

use deadpool_redis::redis::aio::MultiplexedConnection;

use super::{checks::*, fixtures::*};
use crate::common::*;

/// `MEMORY USAGE` of the records of `ids`, summed.
async fn record_bytes(conn: &mut MultiplexedConnection, ns: &str, ids: &[String]) -> i64 {
    let mut total = 0;
    for id in ids {
        let used: i64 = query(
            conn,
            cmd("MEMORY")
                .arg("USAGE")
                .arg(format!("dueq:{{{ns}}}:s:{id}")),
        )
        .await;
        total += used;
    }
    total
}

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
    let err = try_claim(&mut c, "ns", 0).await.expect_err("claim refused");
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
    let before = contents(&mut conn, "*").await;
    let dry = migrate_done(
        &mut a,
        proto::MigrateRequest {
            dry_run: true,
            ..migrate_req("ns")
        },
    )
    .await;
    assert!(dry.dry_run);
    assert_eq!(dry.indexed, active);
    assert_eq!(dry.scanned, 6);
    assert_eq!((dry.from_schema, dry.to_schema), (1, 1));
    assert!(dry.problems.is_empty(), "{:?}", dry.problems);
    assert_eq!(
        contents(&mut conn, "*").await,
        before,
        "a dry run writes nothing"
    );
    assert!(status(&mut a, "ns").await.needs_migrate);

    // The real thing: progress, then DONE 1 -> 2.
    let msgs = migrate(&mut a, migrate_req("ns")).await.expect("migrate");
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
    let occ = try_claim(&mut c, "ns", 0)
        .await
        .expect("claim")
        .expect("due");
    assert_eq!(occ.schedule.expect("s").id, "e2");
    try_upsert(&mut c, "ns", every("new", 60))
        .await
        .expect("upsert");

    // Again: nothing to do, nothing changed.
    let before = without_updated(contents(&mut conn, &ns_pattern("ns")).await);
    let again = migrate_done(&mut a, migrate_req("ns")).await;
    assert_eq!((again.from_schema, again.to_schema), (3, 3));
    assert_eq!(
        (again.indexed, again.repaired, again.removed),
        (0, 0, 0),
        "{again:?}"
    );
    assert_eq!(
        without_updated(contents(&mut conn, &ns_pattern("ns")).await),
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
    let ran = try_claim(&mut c, "two", 0)
        .await
        .expect("claim")
        .expect("due");
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
    let before = contents(&mut conn, "*").await;
    assert_schedule_calls_refused(&mut c, "two", "e", 2).await;
    assert_eq!(
        contents(&mut conn, "*").await,
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
            ..migrate_req("two")
        },
    )
    .await;
    assert_eq!(dry.schedules_converted, 4, "{dry:?}");
    assert_eq!((dry.from_schema, dry.to_schema), (2, 2));
    assert_eq!(
        contents(&mut conn, "*").await,
        before,
        "a dry run writes nothing"
    );

    let done = migrate_done(&mut a, migrate_req("two")).await;
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
    let again = upsert(&mut c, "two", cron("c", "*/5 * * * *", "Europe/Berlin"))
        .await
        .schedule
        .expect("schedule");
    assert_eq!(again.revision, api_before[0].revision);
    assert_eq!(again.next_run_time, api_before[0].next_run_time);
    let now = redis_now(&mut conn).await;
    force_due(&mut conn, "two", "e", now - 5).await;
    let occ = try_claim(&mut c, "two", 0)
        .await
        .expect("claim")
        .expect("due");
    let fired = occ.schedule.expect("s");
    assert_eq!((fired.id.as_str(), fired.run_count), ("e", 1));
    assert_eq!(fired.headers.get("trace").map(String::as_str), Some("abc"));

    // Nothing left to convert.
    let before = contents(&mut conn, &ns_pattern("two")).await;
    let twice = migrate_done(&mut a, migrate_req("two")).await;
    assert_eq!(
        (
            twice.from_schema,
            twice.to_schema,
            twice.schedules_converted
        ),
        (3, 3, 0)
    );
    assert_eq!(contents(&mut conn, &ns_pattern("two")).await, before);
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
    let _: () = query(
        &mut conn,
        cmd("HSET").arg("dueq:{jobs}:meta").arg("schema").arg("2"),
    )
    .await;
    let st = status(&mut a, "jobs").await;
    assert!(!st.needs_migrate, "{st:?}");
    assert_eq!(st.message, "ok", "{st:?}");
    let created = try_upsert(&mut c, "jobs", every("first", 60))
        .await
        .expect("served without Migrate");
    assert_eq!(created.schedule.expect("schedule").id, "first");
    assert_eq!(
        meta(&mut conn, "jobs")
            .await
            .get("schema")
            .map(String::as_str),
        Some("3")
    );
    assert!(try_claim(&mut c, "jobs", 0).await.expect("claim").is_none());
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
        try_claim(&mut c, ns, 0).await.expect("served");
    }
}
