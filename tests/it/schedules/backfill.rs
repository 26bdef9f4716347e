//! BackfillSchedule (issue 17): one occurrence per slot of the timing in a past range,
//! oldest first, marked as backfill, with the ids the live schedule gives those slots.

use tonic::Code;

use crate::common::*;

const HOUR: i64 = 3_600_000;

async fn backfill(
    c: &mut Client,
    id: &str,
    start_ms: i64,
    end_ms: i64,
) -> Result<proto::BackfillScheduleResponse, tonic::Status> {
    c.backfill_schedule(proto::BackfillScheduleRequest {
        namespace: "ns".into(),
        id: id.into(),
        start_time: Some(ts(start_ms)),
        end_time: Some(ts(end_ms)),
    })
    .await
    .map(tonic::Response::into_inner)
}

/// Pins: the backfilled slots are handed out one per claim, oldest first, as
/// OCCURRENCE_KIND_BACKFILL, with exactly the occurrence ids the live schedule gave
/// the same slots; the next run does not move; a repeated call adds nothing.
#[tokio::test]
async fn backfill_hands_out_each_slot_oldest_first_with_the_ids_the_live_schedule_gave() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;
    upsert(&mut c, "ns", every("s", 3600)).await;
    let hour = redis_now(&mut conn).await / HOUR * HOUR;

    // The live schedule hands out the three slots before this hour.
    let mut live = Vec::new();
    for k in [3, 2, 1] {
        force_due(&mut conn, "ns", "s", hour - k * HOUR).await;
        let o = claim(&mut c, "ns", 0).await.expect("live slot");
        assert_eq!(ms(&o.due_time), hour - k * HOUR);
        live.push(o.occurrence_id);
    }
    let before = get(&mut c, "ns", "s").await;

    let answer = backfill(&mut c, "s", hour - 3 * HOUR - 1, hour - HOUR)
        .await
        .expect("backfill");
    assert_eq!((answer.slots, answer.added, answer.waiting), (3, 3, 3));
    assert_eq!(
        ms(&get(&mut c, "ns", "s").await.backfill_time),
        hour - 3 * HOUR
    );
    let again = backfill(&mut c, "s", hour - 3 * HOUR, hour - HOUR)
        .await
        .expect("again");
    assert_eq!((again.slots, again.added, again.waiting), (3, 0, 3));

    let mut handed = Vec::new();
    for k in [3, 2, 1] {
        let o = claim(&mut c, "ns", 0).await.expect("backfilled slot");
        assert_eq!(o.kind, proto::OccurrenceKind::Backfill as i32);
        assert_eq!(ms(&o.due_time), hour - k * HOUR, "oldest first");
        handed.push(o.occurrence_id);
    }
    assert_eq!(handed, live, "the ids the live schedule gave");
    assert!(claim(&mut c, "ns", 0).await.is_none(), "each once");
    let after = get(&mut c, "ns", "s").await;
    assert_eq!(
        after.next_run_time, before.next_run_time,
        "next run not moved"
    );
    assert!(after.backfill_time.is_none());
    assert_eq!(after.run_count, before.run_count + 3);
}

/// Pins the bad ranges (INVALID_ARGUMENT naming the field) and the refusals, none of
/// which writes anything; 1,000 slots are accepted, 1,001 are not.
#[tokio::test]
async fn backfill_refuses_bad_ranges_and_writes_nothing() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;
    upsert(&mut c, "ns", every("s", 1)).await;
    let now = redis_now(&mut conn).await / 1000 * 1000;
    let from = now - 3_600_000;

    let before = snapshot(&mut conn).await;
    let cases = [
        (from, from - 1, Code::InvalidArgument, "end_time"),
        (
            from,
            from + 1_000_000,
            Code::InvalidArgument,
            "more than 1000 slots",
        ),
        (from, now + 60_000, Code::InvalidArgument, "future"),
    ];
    for (start, end, code, text) in cases {
        let e = backfill(&mut c, "s", start, end)
            .await
            .expect_err("refused");
        assert_eq!(e.code(), code, "{e:?}");
        assert!(e.message().contains(text), "{e:?}");
    }
    let missing = backfill(&mut c, "nope", from, from)
        .await
        .expect_err("missing");
    assert_eq!(missing.code(), Code::NotFound, "{missing:?}");
    let no_end = c
        .backfill_schedule(proto::BackfillScheduleRequest {
            namespace: "ns".into(),
            id: "s".into(),
            start_time: Some(ts(from)),
            end_time: None,
        })
        .await
        .expect_err("no end");
    assert_eq!(no_end.code(), Code::InvalidArgument);
    assert!(no_end.message().contains("end_time"), "{no_end:?}");
    assert_eq!(snapshot(&mut conn).await, before, "nothing written");

    let ok = backfill(&mut c, "s", from, from + 999_000)
        .await
        .expect("1000 slots");
    assert_eq!(ok.slots, 1000);

    c.pause_schedule(proto::PauseScheduleRequest {
        namespace: "ns".into(),
        id: "s".into(),
        note: String::new(),
    })
    .await
    .expect("pause");
    let before = snapshot(&mut conn).await;
    let paused = backfill(&mut c, "s", from, from).await.expect_err("paused");
    assert_eq!(paused.code(), Code::FailedPrecondition, "{paused:?}");
    assert_eq!(snapshot(&mut conn).await, before, "nothing written");
}

/// Pins: DeleteSchedule removes the schedule's backfill set with it.
#[tokio::test]
async fn backfill_set_is_deleted_with_its_schedule() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;
    upsert(&mut c, "ns", every("s", 3600)).await;
    let hour = redis_now(&mut conn).await / HOUR * HOUR;
    backfill(&mut c, "s", hour - 5 * HOUR, hour - HOUR)
        .await
        .expect("backfill");
    let keys: Vec<String> = cmd("KEYS")
        .arg("dueq:{ns}:bf:*")
        .query_async(&mut conn)
        .await
        .expect("KEYS");
    assert_eq!(keys, vec!["dueq:{ns}:bf:s".to_owned()]);
    c.delete_schedule(proto::DeleteScheduleRequest {
        namespace: "ns".into(),
        id: "s".into(),
    })
    .await
    .expect("delete");
    let keys: Vec<String> = cmd("KEYS")
        .arg("dueq:{ns}:bf:*")
        .query_async(&mut conn)
        .await
        .expect("KEYS");
    assert!(keys.is_empty(), "{keys:?}");
    assert!(claim(&mut c, "ns", 0).await.is_none());
}

/// Pins exactly once for backfills: 40 schedules with 5 backfilled slots each, two
/// instances × 32 claimers racing; every slot is handed out once, each schedule's
/// oldest first.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn backfills_two_instances_64_claimers_exactly_once() {
    const SCHEDULES: usize = 40;
    let redis = Redis::start().await;
    let a = Service::start(&redis.url()).await;
    let b = Service::start(&redis.url()).await;
    let mut c = a.client().await;
    let mut conn = redis.conn().await;
    let hour = redis_now(&mut conn).await / HOUR * HOUR;
    for i in 0..SCHEDULES {
        let id = format!("s{i}");
        upsert(&mut c, "ns", every(&id, 3600)).await;
        let answer = backfill(&mut c, &id, hour - 5 * HOUR, hour - HOUR)
            .await
            .expect("backfill");
        assert_eq!(answer.added, 5);
    }
    let mut workers = Vec::new();
    for service in [&a, &b] {
        for _ in 0..32 {
            let mut w = service.client().await;
            workers.push(tokio::spawn(async move {
                let mut got = Vec::new();
                let mut empty = 0;
                while empty < 2 {
                    match claim(&mut w, "ns", 300).await {
                        Some(o) => {
                            empty = 0;
                            got.push(o);
                        }
                        None => empty += 1,
                    }
                }
                got
            }));
        }
    }
    let mut by: std::collections::HashMap<String, Vec<(i64, u64)>> = Default::default();
    let mut ids = std::collections::HashSet::new();
    for w in workers {
        for o in w.await.expect("worker") {
            assert_eq!(o.kind, proto::OccurrenceKind::Backfill as i32);
            assert!(ids.insert(o.occurrence_id.clone()), "handed out twice");
            let s = o.schedule.expect("schedule");
            by.entry(s.id)
                .or_default()
                .push((ms(&o.due_time), s.run_count));
        }
    }
    assert_eq!(ids.len(), SCHEDULES * 5);
    for (id, mut slots) in by {
        // In run order (run_count), the slots are oldest first.
        slots.sort_by_key(|(_, run)| *run);
        let due: Vec<i64> = slots.iter().map(|(d, _)| *d).collect();
        let expected: Vec<i64> = (1..=5).rev().map(|k| hour - k * HOUR).collect();
        assert_eq!(due, expected, "{id}");
    }
}
