//! Repair: a damaged index or listing of a current namespace is reported and
//! rebuilt; bad requests are refused and corrupt records reported and left alone.

use std::collections::BTreeMap;

use tonic::Code;

use super::{checks::*, fixtures::*};
use crate::common::*;

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
    let _: () = query(&mut conn, cmd("DEL").arg("dueq:{ns}:due")).await;
    let st = status(&mut a, "ns").await;
    assert!(st.index_damaged && !st.needs_migrate, "{st:?}");
    assert_eq!((st.expected_index_size, st.index_size), (n, 0));
    assert!(
        st.message.contains("dueq.v1.QueueService/Migrate"),
        "{}",
        st.message
    );
    assert!(
        try_claim(&mut c, "ns", 0).await.expect("claim").is_none(),
        "lost with the index"
    );

    let done = migrate_done(&mut a, migrate_req("ns")).await;
    assert_eq!(done.indexed, n, "{done:?}");
    assert_eq!((done.from_schema, done.to_schema), (3, 3));
    let st = status(&mut a, "ns").await;
    assert!(!st.index_damaged, "{st:?}");
    assert_eq!((st.expected_index_size, st.index_size), (n, n));
    let occ = try_claim(&mut c, "ns", 0)
        .await
        .expect("claim")
        .expect("fires again");
    assert_eq!(occ.schedule.expect("s").id, "a0");

    // A stale score and a dangling id.
    let real: f64 = query(&mut conn, cmd("ZSCORE").arg("dueq:{ns}:due").arg("a1")).await;
    let _: () = query(
        &mut conn,
        cmd("ZADD").arg("dueq:{ns}:due").arg(12345).arg("a1"),
    )
    .await;
    let _: () = query(
        &mut conn,
        cmd("ZADD").arg("dueq:{ns}:due").arg(777).arg("ghost"),
    )
    .await;
    let done = migrate_done(&mut a, migrate_req("ns")).await;
    assert_eq!(
        (done.indexed, done.repaired, done.removed),
        (0, 1, 1),
        "{done:?}"
    );
    let fixed: f64 = query(&mut conn, cmd("ZSCORE").arg("dueq:{ns}:due").arg("a1")).await;
    assert_eq!(fixed, real);
    let ghost: Option<f64> =
        query(&mut conn, cmd("ZSCORE").arg("dueq:{ns}:due").arg("ghost")).await;
    assert_eq!(ghost, None);
    assert_eq!(assert_index_consistent(&mut conn, "ns").await as u64, n);
    assert!(
        try_claim(&mut c, "ns", 0).await.expect("claim").is_none(),
        "nothing forged fires"
    );

    // The listing lost (its keys deleted by hand): the record pass walks the
    // listing and sees nothing, but the index walk lists every active schedule again.
    let mut keys: Vec<String> = query(&mut conn, cmd("KEYS").arg("dueq:{ns}:lk:*")).await;
    keys.push("dueq:{ns}:lt".to_owned());
    let _: () = query(&mut conn, cmd("DEL").arg(&keys)).await;
    assert!(listed_schedule_ids(&mut conn, "ns").await.is_empty());
    let done = migrate_done(&mut a, migrate_req("ns")).await;
    assert_eq!(done.repaired, n, "{done:?}");
    let active: Vec<String> = (0..n).map(|i| format!("a{i}")).collect();
    assert_eq!(listed_schedule_ids(&mut conn, "ns").await, active);
}

#[tokio::test]
async fn bad_requests_and_corrupt_records() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut a = admin(&service).await;
    let mut conn = redis.conn().await;

    let err = migrate(&mut a, migrate_req("nope"))
        .await
        .expect_err("unknown namespace");
    assert_eq!(err.code(), Code::NotFound, "{err:?}");
    assert!(err.message().contains("nope"), "{}", err.message());
    let err = migrate(&mut a, migrate_req(""))
        .await
        .expect_err("empty namespace");
    assert_eq!(err.code(), Code::InvalidArgument, "{err:?}");
    for size in [0, 1_000_000] {
        let err = migrate(
            &mut a,
            proto::MigrateRequest {
                batch_size: Some(size),
                ..migrate_req("ns")
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
            ..migrate_req("ns")
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
    let _: () = query(
        &mut conn,
        cmd("SET").arg("dueq:{bad}:s:str").arg("not a hash"),
    )
    .await;
    let _: () = query(
        &mut conn,
        cmd("HSET")
            .arg("dueq:{bad}:s:half")
            .arg("id")
            .arg("half")
            .arg("kind")
            .arg("every")
            .arg("status")
            .arg("active"),
    )
    .await;
    let cron_fields: Vec<(String, Vec<u8>)> =
        query(&mut conn, cmd("HGETALL").arg("dueq:{bad}:s:cron-src")).await;
    let mut hset = cmd("HSET");
    hset.arg("dueq:{bad}:s:badcron");
    for (f, v) in &cron_fields {
        match f.as_str() {
            "id" => hset.arg(f).arg("badcron"),
            "cron" => hset.arg(f).arg("61 * * * *"),
            _ => hset.arg(f).arg(v.as_slice()),
        };
    }
    let _: () = query(&mut conn, &mut hset).await;
    let _: () = query(
        &mut conn,
        cmd("SADD")
            .arg("dueq:{bad}:ids")
            .arg("str")
            .arg("half")
            .arg("badcron"),
    )
    .await;
    let corrupt = ["str", "half", "badcron"];
    let mut dumps = Vec::new();
    for id in corrupt {
        let d: Vec<u8> = query(&mut conn, cmd("DUMP").arg(format!("dueq:{{bad}}:s:{id}"))).await;
        dumps.push(d);
    }

    let done = migrate_done(&mut a, migrate_req("bad")).await;
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
        let after: Vec<u8> =
            query(&mut conn, cmd("DUMP").arg(format!("dueq:{{bad}}:s:{id}"))).await;
        assert_eq!(&after, before, "{id} left byte for byte");
        let score: Option<f64> =
            query(&mut conn, cmd("ZSCORE").arg("dueq:{bad}:due").arg(*id)).await;
        assert_eq!(score, None, "{id} not indexed");
    }
    assert_eq!(zcard(&mut conn, "dueq:{bad}:due").await, 6);
    let now = redis_now(&mut conn).await;
    force_due(&mut conn, "bad", "good3", now - 5).await;
    let occ = try_claim(&mut c, "bad", 0)
        .await
        .expect("claim")
        .expect("due");
    assert_eq!(occ.schedule.expect("s").id, "good3");
}

/// The `all_namespaces` scan also matches a job id ending in `}:meta`: that key is
/// reported and skipped, a namespace that fails is reported and the rest still run,
/// and a namespace after both has its damaged index repaired.
#[tokio::test]
async fn all_namespaces_skips_keys_that_are_not_namespaces_and_survives_a_failure() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut a = admin(&service).await;
    let mut conn = redis.conn().await;
    let mut hostile = job("q", "hostile");
    hostile.job_id = "x}:meta".into();
    enqueue(&mut c, hostile).await;
    // A namespace-shaped meta key holding the wrong type: this namespace fails.
    let _: () = query(&mut conn, cmd("SET").arg("dueq:{broken}:meta").arg("x")).await;
    upsert(&mut c, "zz", every("late", 3600)).await;
    let _: () = query(&mut conn, cmd("DEL").arg("dueq:{zz}:due")).await;
    assert!(status(&mut a, "zz").await.index_damaged);

    let msgs = migrate(
        &mut a,
        proto::MigrateRequest {
            all_namespaces: true,
            ..Default::default()
        },
    )
    .await
    .expect("migrate all_namespaces completes");
    let done: BTreeMap<&str, &proto::MigrateProgress> = msgs
        .iter()
        .filter(|m| m.phase == DONE)
        .map(|m| (m.namespace.as_str(), m))
        .collect();
    let skipped = done.get("").expect("a summary of skipped keys");
    assert_eq!(skipped.problems.len(), 1, "{skipped:?}");
    assert_eq!(skipped.problems[0].id, "dueq:{ns}:j:x}:meta");
    let broken = done
        .get("broken")
        .expect("the failed namespace is reported");
    assert!(
        broken.problems[0].reason.contains("not migrated"),
        "{broken:?}"
    );
    assert!(done["ns"].problems.is_empty(), "{:?}", done["ns"]);
    assert_eq!(done["zz"].indexed, 1, "{:?}", done["zz"]);
    assert!(!status(&mut a, "zz").await.index_damaged);
    assert_eq!(done.len(), 4, "{msgs:#?}");
}
