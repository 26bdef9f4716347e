//! SetScheduleNextRun (issue 36): the next run moves (advanced or postponed) without
//! touching the timing; it is handed out as a slot with its own occurrence id, then
//! the timing goes on from its first slot after it. Refusals write nothing; a claim
//! and the call never both win one slot.

use std::collections::{HashMap, HashSet};

use futures::{stream, StreamExt};
use tonic::Code;

use super::target::{enqueued, target, targeted, wait_jobs};
use crate::common::*;

const HOUR: i64 = 3_600_000;

async fn set_next_run(
    c: &mut Client,
    id: &str,
    at_ms: i64,
    expected_revision: u64,
) -> Result<proto::Schedule, tonic::Status> {
    c.set_schedule_next_run(proto::SetScheduleNextRunRequest {
        namespace: "ns".into(),
        id: id.into(),
        next_run_time: Some(ts(at_ms)),
        expected_revision,
    })
    .await
    .map(|r| r.into_inner().schedule.expect("the schedule"))
}

/// The first slot of an epoch-anchored interval strictly after `t`.
fn grid_after(t: i64, every: i64) -> i64 {
    (t.div_euclid(every) + 1) * every
}

/// Pins advancing: a next run set just after the last run (now) is handed out by the next
/// claim with due_time = that time, as a scheduled slot with its own occurrence id;
/// the revision does not change, and the `every` timing goes on at its own grid (the
/// hour after the claim), not an interval after the new time. A run claimed before
/// the call is not undone: its lease still acks.
#[tokio::test]
async fn advancing_hands_the_new_time_out_now_then_the_timing_goes_on() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;
    upsert(&mut c, "ns", every("s", 3600)).await;
    let due = redis_now(&mut conn).await - 60_000;
    force_due(&mut conn, "ns", "s", due).await;
    let first = leased_claim(&mut c, "ns", 0, 60_000)
        .await
        .expect("the due slot");
    let before = get(&mut c, "ns", "s").await;
    assert!(ms(&before.next_run_time) > redis_now(&mut conn).await);

    // Just after the last run (the earliest allowed), off the grid, so the test tells
    // the two rules apart.
    let mut at = ms(&first.claim_time) + 1;
    if at % HOUR == 0 {
        at += 1;
    }
    let set = set_next_run(&mut c, "s", at, before.revision)
        .await
        .expect("set");
    assert_eq!(ms(&set.next_run_time), at);
    assert_eq!(set.revision, before.revision, "the timing did not change");
    assert_eq!(
        (set.run_count, &set.last_run_time),
        (before.run_count, &before.last_run_time),
        "output-only history untouched"
    );
    assert_eq!(due_score(&mut conn, "ns", "s").await, Some(at));
    ack_occurrence(&mut c, "ns", &first)
        .await
        .expect("the run claimed before is not undone");

    let o = claim(&mut c, "ns", 2_000).await.expect("the new next run");
    assert_eq!(ms(&o.due_time), at);
    assert_eq!(o.kind, proto::OccurrenceKind::Scheduled as i32);
    assert_ne!(o.occurrence_id, first.occurrence_id);
    let after = get(&mut c, "ns", "s").await;
    assert_eq!(after.revision, before.revision);
    assert_eq!(after.run_count, before.run_count + 1);
    let claimed_at = ms(&o.claim_time);
    assert_eq!(ms(&after.next_run_time), grid_after(claimed_at, HOUR));
    assert_ne!(
        ms(&after.next_run_time),
        at + HOUR,
        "the grid, not at + every"
    );
    assert!(claim(&mut c, "ns", 0).await.is_none(), "handed out once");
}

/// Waits for the next occurrence (long-polling, the new next run wakes the poll) and
/// returns its due time.
async fn next_due(c: &mut Client) -> i64 {
    let patience = Patience::new("an occurrence");
    loop {
        if let Some(o) = claim(c, "ns", 5_000).await {
            return ms(&o.due_time);
        }
        patience.wait().await;
    }
}

/// Pins postponing, for `every` and cron: the slots before the new time are not
/// handed out; the new time (off the timing's slots) is, then the timing's first slot
/// after it.
#[tokio::test]
async fn postponing_every_and_cron_hands_out_the_new_time_then_the_timings_next_slot() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    for (id, schedule) in [
        ("every", every("every", 3)),
        ("cron", cron("cron", "*/3 * * * * *", "UTC")),
    ] {
        upsert(&mut c, "ns", schedule).await;
        let next = ms(&get(&mut c, "ns", id).await.next_run_time);
        // A slot later, plus 1.1 s: off the timing, and 1.9 s before the next slot
        // (the margin a slow claim has before that slot is due too).
        let at = next + 4_100;
        let set = set_next_run(&mut c, id, at, 0).await.expect("postpone");
        assert_eq!(ms(&set.next_run_time), at);
        assert_eq!(next_due(&mut c).await, at, "{id}: the new time first");
        assert_eq!(
            next_due(&mut c).await,
            grid_after(at, 3_000),
            "{id}: then the timing's next slot"
        );
        c.delete_schedule(proto::DeleteScheduleRequest {
            namespace: "ns".into(),
            id: id.into(),
        })
        .await
        .expect("delete");
    }
}

/// Pins expected_revision: a mismatch is ABORTED naming the current revision and
/// writes nothing; the current revision, or 0, passes.
#[tokio::test]
async fn an_expected_revision_mismatch_is_aborted_and_writes_nothing() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;
    upsert(&mut c, "ns", every("s", 3600)).await;
    let changed = upsert(&mut c, "ns", every("s", 7200)).await;
    let rev = changed.schedule.expect("schedule").revision;
    assert_eq!(rev, 2);
    let at = redis_now(&mut conn).await + HOUR + 123;
    let before = snapshot(&mut conn).await;
    let stale = set_next_run(&mut c, "s", at, 1).await.expect_err("stale");
    assert_eq!(stale.code(), Code::Aborted, "{stale:?}");
    assert!(stale.message().contains("revision 2"), "{stale:?}");
    assert!(stale.message().contains("expected_revision 1"), "{stale:?}");
    assert_eq!(snapshot(&mut conn).await, before, "nothing written");
    let set = set_next_run(&mut c, "s", at, rev).await.expect("current");
    assert_eq!((ms(&set.next_run_time), set.revision), (at, rev));
    let set = set_next_run(&mut c, "s", at + 1, 0)
        .await
        .expect("unchecked");
    assert_eq!(ms(&set.next_run_time), at + 1);
}

async fn refused(
    c: &mut Client,
    conn: &mut deadpool_redis::redis::aio::MultiplexedConnection,
    id: &str,
    at_ms: i64,
    code: Code,
    needle: &str,
) {
    let before = snapshot(conn).await;
    let err = set_next_run(c, id, at_ms, 0).await.expect_err(needle);
    assert_eq!(err.code(), code, "{err:?}");
    assert!(err.message().contains(needle), "{needle}: {err:?}");
    assert_eq!(snapshot(conn).await, before, "{needle}: nothing written");
}

/// Pins the state refusals: unknown (NOT_FOUND), paused (FAILED_PRECONDITION: resume
/// it first), completed by its run limit or its end time (FAILED_PRECONDITION saying
/// which); none writes anything.
#[tokio::test]
async fn unknown_paused_and_completed_schedules_are_refused_and_nothing_is_written() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;
    let at = redis_now(&mut conn).await + HOUR;
    refused(&mut c, &mut conn, "nope", at, Code::NotFound, "not found").await;

    let paused = proto::Schedule {
        paused: true,
        ..every("paused", 3600)
    };
    upsert(&mut c, "ns", paused).await;
    refused(
        &mut c,
        &mut conn,
        "paused",
        at,
        Code::FailedPrecondition,
        "resume it",
    )
    .await;

    let once = proto::Schedule {
        run_limit: 1,
        ..every("once", 3600)
    };
    upsert(&mut c, "ns", once).await;
    let due = redis_now(&mut conn).await - 1_000;
    force_due(&mut conn, "ns", "once", due).await;
    claim(&mut c, "ns", 0).await.expect("its one run");
    assert_eq!(
        get(&mut c, "ns", "once").await.status,
        proto::ScheduleStatus::Completed as i32
    );
    refused(
        &mut c,
        &mut conn,
        "once",
        at,
        Code::FailedPrecondition,
        "run_limit",
    )
    .await;

    let now = redis_now(&mut conn).await;
    let ended = proto::Schedule {
        start_time: Some(ts(now - 3 * HOUR)),
        end_time: Some(ts(now - HOUR)),
        ..every("ended", 3600)
    };
    upsert(&mut c, "ns", ended).await;
    refused(
        &mut c,
        &mut conn,
        "ended",
        at,
        Code::FailedPrecondition,
        "end_time",
    )
    .await;
}

/// Pins the time refusals (INVALID_ARGUMENT naming next_run_time, nothing written):
/// unset; more than a day in the past without a catch-up window, more than the window
/// with one; not after the last run (that slot was handed out); before start_time;
/// after end_time; not a valid Timestamp.
#[tokio::test]
async fn a_next_run_out_of_bounds_is_invalid_and_nothing_is_written() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;
    let now = redis_now(&mut conn).await;
    upsert(&mut c, "ns", every("s", 3600)).await;
    let windowed = proto::Schedule {
        catchup_window: Some(dur(30 * 60_000)),
        ..every("w", 3600)
    };
    upsert(&mut c, "ns", windowed).await;
    let bounded = proto::Schedule {
        start_time: Some(ts(now + 2 * HOUR)),
        end_time: Some(ts(now + 10 * HOUR)),
        ..every("b", 3600)
    };
    upsert(&mut c, "ns", bounded).await;

    let before = snapshot(&mut conn).await;
    for request in [
        proto::SetScheduleNextRunRequest {
            namespace: "ns".into(),
            id: "s".into(),
            ..Default::default()
        },
        proto::SetScheduleNextRunRequest {
            namespace: "ns".into(),
            id: "s".into(),
            next_run_time: Some(prost_types::Timestamp {
                seconds: now / 1000,
                nanos: -1,
            }),
            ..Default::default()
        },
    ] {
        let err = c
            .set_schedule_next_run(request)
            .await
            .expect_err("malformed");
        assert_eq!(err.code(), Code::InvalidArgument, "{err:?}");
        assert!(err.message().contains("next_run_time"), "{err:?}");
    }
    assert_eq!(snapshot(&mut conn).await, before, "nothing written");

    let bad = Code::InvalidArgument;
    let day = 86_400_000;
    refused(
        &mut c,
        &mut conn,
        "s",
        now - 2 * day,
        bad,
        "one day before now",
    )
    .await;
    refused(&mut c, &mut conn, "w", now - HOUR, bad, "catchup_window").await;
    refused(&mut c, &mut conn, "b", now + HOUR, bad, "start_time").await;
    refused(&mut c, &mut conn, "b", now + 11 * HOUR, bad, "end_time").await;
    set_next_run(&mut c, "b", now + 3 * HOUR + 5, 0)
        .await
        .expect("inside the bounds");

    force_due(&mut conn, "ns", "s", now - 60_000).await;
    let o = claim(&mut c, "ns", 0).await.expect("the due slot");
    let last = ms(&o.claim_time);
    refused(&mut c, &mut conn, "s", ms(&o.due_time), bad, "last run").await;
    refused(&mut c, &mut conn, "s", last, bad, "next_run_time").await;
    set_next_run(&mut c, "s", last + 1, 0)
        .await
        .expect("just after the last run");
}

/// Pins target schedules (issue 30): the next run moves in the target index (never
/// the workers' one), a postponed run is not dispatched, and an advanced one becomes
/// a job at once, its slot (due time) the new next run.
#[tokio::test]
async fn a_target_schedules_next_run_moves_and_its_job_appears_at_the_new_time() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;
    upsert(&mut c, "ns", targeted(every("t", 3600), target("q"))).await;
    let now = redis_now(&mut conn).await;
    let later = now + 5 * HOUR + 17;
    set_next_run(&mut c, "t", later, 0).await.expect("postpone");
    let index = |key: &str| format!("dueq:{{ns}}:{key}");
    let score: Option<i64> = query(&mut conn, cmd("ZSCORE").arg(index("due:t")).arg("t")).await;
    assert_eq!(score, Some(later), "in the target index");
    let workers: Option<i64> = query(&mut conn, cmd("ZSCORE").arg(index("due")).arg("t")).await;
    assert_eq!(workers, None, "not in the workers' index");

    let at = redis_now(&mut conn).await - 1_000;
    set_next_run(&mut c, "t", at, 0).await.expect("advance");
    let jobs = wait_jobs(&mut c, "q", 1).await;
    let slot = jobs[0].schedule.as_ref().expect("the slot");
    assert_eq!(ms(&slot.due_time), at);
    let runs = enqueued(&mut c, "ns", "t").await;
    assert_eq!(runs[0].occurrence_id, jobs[0].job_id);
    let after = get(&mut c, "ns", "t").await;
    assert_eq!(
        ms(&after.next_run_time),
        grid_after(ms(&after.last_run_time), HOUR)
    );
    assert!(
        claim(&mut c, "ns", 0).await.is_none(),
        "workers never see it"
    );
}

const RACED: usize = 200;

/// Pins the race: 16 claimers per instance and SetScheduleNextRun callers on both
/// instances, over 200 schedules due at one slot, each call moving the next run a
/// millisecond past that slot. Whichever script runs first wins: either the slot is
/// claimed and the call is refused (INVALID_ARGUMENT naming the last run), or the call
/// moves the next run and the new time is handed out instead. So every schedule is
/// handed out exactly once, at the slot or at the new time, and the call succeeded
/// exactly when the new time was handed out.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn claims_and_next_run_changes_through_two_instances_never_share_a_slot() {
    let redis = Redis::start().await;
    let a = Service::start(&redis.url()).await;
    let b = Service::start(&redis.url()).await;
    let mut conn = redis.conn().await;
    let mut c = a.client().await;
    for i in 0..RACED {
        upsert(&mut c, "ns", every(&format!("s{i}"), 3600)).await;
    }
    let due = redis_now(&mut conn).await - 5_000;
    for i in 0..RACED {
        force_due(&mut conn, "ns", &format!("s{i}"), due).await;
    }
    let mut claimers = Vec::new();
    for service in [&a, &b] {
        for _ in 0..16 {
            let mut c = service.client().await;
            claimers.push(tokio::spawn(async move {
                let mut got = Vec::new();
                let mut empty = 0;
                while empty < 3 {
                    match claim(&mut c, "ns", 300).await {
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
    let clients = [a.client().await, b.client().await];
    // The claims take the due schedules in id order (one score): the calls go the
    // other way, so the two sides meet somewhere in the middle.
    let mut order: Vec<String> = (0..RACED).map(|i| format!("s{i}")).collect();
    order.sort_unstable_by(|x, y| y.cmp(x));
    let sets: HashMap<String, bool> = stream::iter(order.into_iter().enumerate())
        .map(|(i, id)| {
            let mut c = clients[i % 2].clone();
            async move {
                let won = match set_next_run(&mut c, &id, due + 1, 0).await {
                    Ok(_) => true,
                    Err(e) => {
                        assert_eq!(e.code(), Code::InvalidArgument, "{e:?}");
                        assert!(e.message().contains("last run"), "{e:?}");
                        false
                    }
                };
                (id, won)
            }
        })
        .buffer_unordered(16)
        .collect()
        .await;
    let mut handed: Vec<proto::Occurrence> = Vec::new();
    for claimer in claimers {
        handed.extend(claimer.await.expect("claimer"));
    }
    // (A run set after the claimers gave up is due: drain it.)
    while let Some(o) = claim(&mut c, "ns", 0).await {
        handed.push(o);
    }
    let mut by_schedule: HashMap<String, Vec<i64>> = HashMap::new();
    let mut ids = HashSet::new();
    for o in &handed {
        let id = o.schedule.as_ref().expect("schedule").id.clone();
        by_schedule.entry(id).or_default().push(ms(&o.due_time));
        assert!(
            ids.insert(o.occurrence_id.clone()),
            "an id handed out twice"
        );
    }
    let mut won = 0;
    for (id, set_won) in &sets {
        let expected = if *set_won { due + 1 } else { due };
        assert_eq!(by_schedule.get(id), Some(&vec![expected]), "{id}");
        won += usize::from(*set_won);
    }
    assert_eq!(by_schedule.len(), RACED);
    // Both sides won some races, or the test proved nothing (it logs the split).
    eprintln!("SetScheduleNextRun won {won} of {RACED} races");
    assert!(won > 0 && won < RACED, "one-sided: {won} of {RACED}");
}

/// Pins what later writes do to a hand-set next run: an upsert that leaves the timing
/// alone keeps it (and the revision); one that changes the timing recomputes the next
/// run from now; pausing and resuming computes it from now too.
#[tokio::test]
async fn an_upsert_keeps_a_hand_set_next_run_unless_the_timing_changes() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;
    upsert(&mut c, "ns", every("s", 3600)).await;
    let at = redis_now(&mut conn).await + 5 * HOUR + 17;
    set_next_run(&mut c, "s", at, 0).await.expect("set");

    let renamed = proto::Schedule {
        job_name: "renamed".into(),
        ..every("s", 3600)
    };
    let kept = upsert(&mut c, "ns", renamed).await.schedule.expect("s");
    assert_eq!((ms(&kept.next_run_time), kept.revision), (at, 1));

    let retimed = upsert(&mut c, "ns", every("s", 7200))
        .await
        .schedule
        .expect("s");
    assert_eq!(retimed.revision, 2);
    let now = redis_now(&mut conn).await;
    assert_eq!(ms(&retimed.next_run_time), grid_after(now, 2 * HOUR));

    set_next_run(&mut c, "s", at, 2).await.expect("set again");
    c.pause_schedule(proto::PauseScheduleRequest {
        namespace: "ns".into(),
        id: "s".into(),
        note: String::new(),
    })
    .await
    .expect("pause");
    let resumed = c
        .resume_schedule(proto::ResumeScheduleRequest {
            namespace: "ns".into(),
            id: "s".into(),
        })
        .await
        .expect("resume")
        .into_inner()
        .schedule
        .expect("s");
    let now = redis_now(&mut conn).await;
    assert_eq!(ms(&resumed.next_run_time), grid_after(now, 2 * HOUR));
}
