//! Jitter (issue 17): a slot is handed out by a deterministic offset in [0, jitter)
//! after its nominal time, derived from its occurrence id; due_time stays nominal and
//! the occurrence carries the jittered time.

use deadpool_redis::redis;

use crate::common::*;

const HOUR: i64 = 3_600_000;
const JITTER: i64 = 3_599_000;

/// domain::occurrence_id, written out independently.
fn occurrence_id(ns: &str, id: &str, due_ms: i64, rev: u64) -> String {
    let name = format!("{}:{ns}|{}:{id}|{due_ms}|{rev}", ns.len(), id.len());
    let space = uuid::Uuid::from_u128(0x6475_6571_0000_4000_8000_0000_0000_0001);
    uuid::Uuid::new_v5(&space, name.as_bytes()).to_string()
}

/// The documented offset: 48 bits of the id (hex digits 1-8, 10-13) mod the jitter.
fn offset(occurrence: &str, jitter: i64) -> i64 {
    let digits = format!("{}{}", &occurrence[0..8], &occurrence[9..13]);
    i64::from_str_radix(&digits, 16).expect("hex") % jitter
}

/// Pins: a due slot is not handed out before its nominal time plus the offset its
/// occurrence id gives (the index holds exactly that time); an earlier slot whose
/// jittered time has passed is handed out with due_time nominal and jittered_time =
/// due + offset.
#[tokio::test]
async fn jitter_delays_each_slot_by_the_offset_of_its_occurrence_id() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;
    let now = redis_now(&mut conn).await / 1000 * 1000;
    let start = now - 10_000 - 5 * HOUR;
    let recent = start + 5 * HOUR; // a slot 10 s ago
                                   // An id whose recent slot's offset is well past now (almost every id).
    let id = (0..100)
        .map(|i| format!("j{i}"))
        .find(|id| offset(&occurrence_id("ns", id, recent, 1), JITTER) > 120_000)
        .expect("an id with a late offset");
    let schedule = proto::Schedule {
        start_time: Some(ts(start)),
        jitter: Some(dur(JITTER as u64)),
        ..every(&id, 3600)
    };
    let stored = upsert(&mut c, "ns", schedule)
        .await
        .schedule
        .expect("schedule");
    assert_eq!(stored.jitter, Some(dur(JITTER as u64)));

    force_due(&mut conn, "ns", &id, recent).await;
    assert!(
        claim(&mut c, "ns", 0).await.is_none(),
        "not before its jittered time"
    );
    let score: i64 = cmd("ZSCORE")
        .arg("dueq:{ns}:due")
        .arg(&id)
        .query_async(&mut conn)
        .await
        .expect("ZSCORE");
    let recent_id = occurrence_id("ns", &id, recent, 1);
    assert_eq!(
        score,
        recent + offset(&recent_id, JITTER),
        "indexed at the jittered time"
    );
    assert_eq!(
        ms(&get(&mut c, "ns", &id).await.next_run_time),
        recent,
        "nominal"
    );
    // Listed by next run all the same (the listing reads the derived score).
    let listed = c
        .list_schedules(proto::ListSchedulesRequest {
            namespace: "ns".into(),
            order: proto::ScheduleOrder::NextRun as i32,
            ..Default::default()
        })
        .await
        .expect("list")
        .into_inner()
        .schedules;
    assert_eq!(listed.len(), 1, "{listed:?}");

    // The first slot, 5 hours ago: its jittered time (under an hour later) has passed.
    force_due(&mut conn, "ns", &id, start).await;
    let o = claim(&mut c, "ns", 0).await.expect("jittered time passed");
    let start_id = occurrence_id("ns", &id, start, 1);
    assert_eq!(o.occurrence_id, start_id);
    assert_eq!(ms(&o.due_time), start, "due_time stays nominal");
    assert_eq!(ms(&o.jittered_time), start + offset(&start_id, JITTER));
    assert!(ms(&o.claim_time) >= ms(&o.jittered_time));
}

/// Pins: without jitter an occurrence carries no jittered_time and is indexed at its
/// nominal time.
#[tokio::test]
async fn without_jitter_there_is_no_jittered_time() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;
    upsert(&mut c, "ns", every("s", 3600)).await;
    let due = redis_now(&mut conn).await - 1_000;
    force_due(&mut conn, "ns", "s", due).await;
    let o = claim(&mut c, "ns", 0).await.expect("due");
    assert!(o.jittered_time.is_none());
    assert_eq!(ms(&o.due_time), due);
}

/// Pins: Migrate, dry run and real, finds nothing to repair in the index entries of
/// a jittered schedule and of one with a waiting trigger (their scores are the
/// derived due times, not the nominal next runs), and the real run leaves them
/// where they were.
#[tokio::test]
async fn migrate_finds_nothing_to_repair_in_jittered_or_triggered_schedules() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut admin = admin(&service).await;
    let mut conn = redis.conn().await;
    let jittered = proto::Schedule {
        jitter: Some(dur(JITTER as u64)),
        ..every("jittered", 3600)
    };
    upsert(&mut c, "ns", jittered).await;
    upsert(&mut c, "ns", every("triggered", 86_400)).await;
    c.trigger_schedule(proto::TriggerScheduleRequest {
        namespace: "ns".into(),
        id: "triggered".into(),
        ignore_overlap: false,
    })
    .await
    .expect("trigger");
    let scores = |conn: &mut redis::aio::MultiplexedConnection| {
        let mut conn = conn.clone();
        async move {
            let scores: Vec<(String, i64)> = cmd("ZRANGE")
                .arg("dueq:{ns}:due")
                .arg(0)
                .arg(-1)
                .arg("WITHSCORES")
                .query_async(&mut conn)
                .await
                .expect("ZRANGE");
            scores
        }
    };
    let before = scores(&mut conn).await;
    assert_eq!(before.len(), 2, "{before:?}");

    let dry = migrate_done(
        &mut admin,
        proto::MigrateRequest {
            dry_run: true,
            ..migrate_req("ns")
        },
    )
    .await;
    assert_eq!((dry.scanned, dry.repaired), (2, 0), "dry run: {dry:?}");
    let done = migrate_done(&mut admin, migrate_req("ns")).await;
    assert_eq!((done.scanned, done.repaired), (2, 0), "real run: {done:?}");
    assert_eq!(scores(&mut conn).await, before, "the index is untouched");
}
