//! TriggerSchedule (issue 17): an occurrence now, outside the timing, marked as
//! triggered, with its own deterministic id; it respects the overlap policy unless
//! told not to, and never moves the next run.

use tonic::Code;

use crate::common::*;

async fn trigger(
    c: &mut Client,
    id: &str,
    ignore_overlap: bool,
) -> Result<proto::TriggerScheduleResponse, tonic::Status> {
    c.trigger_schedule(proto::TriggerScheduleRequest {
        namespace: "ns".into(),
        id: id.into(),
        ignore_overlap,
    })
    .await
    .map(tonic::Response::into_inner)
}

/// Pins: a trigger is handed out by the next claim, now, as OCCURRENCE_KIND_TRIGGERED
/// with the id TriggerSchedule returned (not the id of a slot); the next run does not
/// move; a second trigger is another occurrence; a re-handed one stays triggered.
#[tokio::test]
async fn trigger_hands_out_an_occurrence_now_without_moving_the_next_run() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;
    upsert(&mut c, "ns", every("s", 3600)).await;
    let before = get(&mut c, "ns", "s").await;
    assert!(claim(&mut c, "ns", 0).await.is_none(), "nothing due yet");

    let t = trigger(&mut c, "s", false).await.expect("trigger");
    let now = redis_now(&mut conn).await;
    assert!(ms(&t.due_time) <= now && ms(&t.due_time) > now - 60_000);
    let waiting = get(&mut c, "ns", "s").await;
    assert_eq!(ms(&waiting.triggered_time), ms(&t.due_time));
    assert_eq!(waiting.next_run_time, before.next_run_time);

    let o = claim(&mut c, "ns", 0)
        .await
        .expect("the triggered occurrence");
    assert_eq!(o.kind, proto::OccurrenceKind::Triggered as i32);
    assert_eq!(o.occurrence_id, t.occurrence_id);
    assert_eq!(ms(&o.due_time), ms(&t.due_time));
    let after = get(&mut c, "ns", "s").await;
    assert_eq!(
        after.next_run_time, before.next_run_time,
        "next run not moved"
    );
    assert!(after.triggered_time.is_none());
    assert_eq!(after.run_count, 1);
    assert!(claim(&mut c, "ns", 0).await.is_none(), "handed out once");

    // A slot of the timing is a scheduled occurrence, with another id.
    let slot = redis_now(&mut conn).await - 1_000;
    force_due(&mut conn, "ns", "s", slot).await;
    let live = claim(&mut c, "ns", 0).await.expect("the slot");
    assert_eq!(live.kind, proto::OccurrenceKind::Scheduled as i32);
    assert_ne!(live.occurrence_id, t.occurrence_id);

    let second = trigger(&mut c, "s", false).await.expect("second trigger");
    assert_ne!(second.occurrence_id, t.occurrence_id);
    let first = leased_claim(&mut c, "ns", 0, 300)
        .await
        .expect("second triggered");
    assert_eq!(first.occurrence_id, second.occurrence_id);
    wait_redis_past(&mut conn, ms(&first.lease_deadline)).await;
    let again = leased_claim(&mut c, "ns", 0, 5_000)
        .await
        .expect("re-handed");
    assert_eq!(
        (again.attempt, again.kind),
        (2, proto::OccurrenceKind::Triggered as i32)
    );
    assert_eq!(again.occurrence_id, second.occurrence_id);
}

/// Pins the refusals (each writes nothing): an unknown schedule (NOT_FOUND), a paused
/// one, one that already has a trigger waiting (FAILED_PRECONDITION); pausing and
/// deleting drop a waiting trigger.
#[tokio::test]
async fn trigger_refuses_a_missing_or_paused_schedule_and_a_second_waiting_one() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;
    let missing = trigger(&mut c, "nope", false).await.expect_err("missing");
    assert_eq!(missing.code(), Code::NotFound, "{missing:?}");

    upsert(
        &mut c,
        "ns",
        proto::Schedule {
            paused: true,
            ..every("s", 3600)
        },
    )
    .await;
    let before_call = snapshot(&mut conn).await;
    let paused = trigger(&mut c, "s", false).await.expect_err("paused");
    assert_eq!(paused.code(), Code::FailedPrecondition, "{paused:?}");
    assert!(paused.message().contains("resume"), "{paused:?}");
    assert_eq!(snapshot(&mut conn).await, before_call, "nothing written");

    c.resume_schedule(proto::ResumeScheduleRequest {
        namespace: "ns".into(),
        id: "s".into(),
    })
    .await
    .expect("resume");
    let first = trigger(&mut c, "s", false).await.expect("trigger");
    let before_call = snapshot(&mut conn).await;
    let twice = trigger(&mut c, "s", false)
        .await
        .expect_err("one waits already");
    assert_eq!(twice.code(), Code::FailedPrecondition, "{twice:?}");
    assert!(twice.message().contains(&first.occurrence_id), "{twice:?}");
    assert_eq!(snapshot(&mut conn).await, before_call, "nothing written");

    c.pause_schedule(proto::PauseScheduleRequest {
        namespace: "ns".into(),
        id: "s".into(),
        note: String::new(),
    })
    .await
    .expect("pause");
    assert!(
        get(&mut c, "ns", "s").await.triggered_time.is_none(),
        "dropped by the pause"
    );
    c.resume_schedule(proto::ResumeScheduleRequest {
        namespace: "ns".into(),
        id: "s".into(),
    })
    .await
    .expect("resume");
    assert!(claim(&mut c, "ns", 0).await.is_none());

    trigger(&mut c, "s", false).await.expect("trigger again");
    c.delete_schedule(proto::DeleteScheduleRequest {
        namespace: "ns".into(),
        id: "s".into(),
    })
    .await
    .expect("delete");
    assert!(
        claim(&mut c, "ns", 0).await.is_none(),
        "deleted with its schedule"
    );
}

/// Pins overlap for triggers: under SKIP (and BUFFER_ONE) a trigger while a leased
/// occurrence is outstanding is refused, naming ignore_overlap, and writes nothing;
/// with ignore_overlap it is handed out while the lease is still outstanding; under
/// ALLOW_ALL it is never refused.
#[tokio::test]
async fn trigger_during_an_outstanding_lease_respects_the_overlap_policy() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;
    for (id, policy) in [
        ("skip", proto::OverlapPolicy::Skip),
        ("buffer", proto::OverlapPolicy::BufferOne),
        ("all", proto::OverlapPolicy::AllowAll),
    ] {
        let schedule = proto::Schedule {
            overlap_policy: policy as i32,
            ..every(id, 3600)
        };
        upsert(&mut c, "ns", schedule).await;
        let slot = redis_now(&mut conn).await - 1_000;
        force_due(&mut conn, "ns", id, slot).await;
        let outstanding = leased_claim(&mut c, "ns", 0, 60_000)
            .await
            .expect("due slot");
        assert_eq!(outstanding.schedule.expect("schedule").id, id);
        let before_call = snapshot(&mut conn).await;
        match policy {
            proto::OverlapPolicy::AllowAll => {
                trigger(&mut c, id, false).await.expect("allow all");
            }
            _ => {
                let refused = trigger(&mut c, id, false).await.expect_err("overlap");
                assert_eq!(refused.code(), Code::FailedPrecondition, "{refused:?}");
                assert!(refused.message().contains("ignore_overlap"), "{refused:?}");
                assert!(refused.message().contains(&outstanding.occurrence_id));
                assert_eq!(snapshot(&mut conn).await, before_call, "nothing written");
                trigger(&mut c, id, true).await.expect("ignore_overlap");
            }
        }
        let o = leased_claim(&mut c, "ns", 0, 60_000)
            .await
            .expect("triggered while leased");
        assert_eq!(o.kind, proto::OccurrenceKind::Triggered as i32);
        assert_eq!(get(&mut c, "ns", id).await.skipped_overlap, 0);
    }
}

/// Pins exactly once for triggers: 100 triggered schedules, two instances × 32
/// claimers racing; each triggered occurrence is handed out exactly once, and no
/// schedule's next run moved.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn triggers_two_instances_64_claimers_exactly_once() {
    const SCHEDULES: usize = 100;
    let redis = Redis::start().await;
    let a = Service::start(&redis.url()).await;
    let b = Service::start(&redis.url()).await;
    let mut c = a.client().await;
    let mut triggered = std::collections::HashMap::new();
    for i in 0..SCHEDULES {
        let id = format!("s{i}");
        upsert(&mut c, "ns", every(&id, 3600)).await;
        let t = trigger(&mut c, &id, false).await.expect("trigger");
        triggered.insert(t.occurrence_id, id);
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
    let mut seen = std::collections::HashSet::new();
    for w in workers {
        for o in w.await.expect("worker") {
            assert_eq!(o.kind, proto::OccurrenceKind::Triggered as i32);
            let id = triggered.get(&o.occurrence_id).expect("a triggered id");
            assert_eq!(&o.schedule.expect("schedule").id, id);
            assert!(seen.insert(o.occurrence_id), "handed out twice");
        }
    }
    assert_eq!(seen.len(), SCHEDULES);
}
