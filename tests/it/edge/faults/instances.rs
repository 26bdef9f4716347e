//! Instances crashing or shutting down, and workers vanishing, under long-polls.

use std::time::Duration;

use super::*;

/// Pins: an instance that dies right after handing out occurrences leaves every
/// schedule indexed for its next run, and the survivor fires it again.
#[tokio::test]
async fn an_instance_killed_right_after_a_claim_never_stalls_the_schedule() {
    let redis = Redis::start().await;
    let mut conn = redis.conn().await;
    let first = Service::start(&redis.url()).await;
    let mut c = first.client().await;
    upsert(&mut c, "every", every("e", 60)).await;
    upsert(&mut c, "cron", cron("c", "*/5 * * * *", "UTC")).await;
    for (ns, id) in [("every", "e"), ("cron", "c")] {
        let now = redis_now(&mut conn).await;
        force_due(&mut conn, ns, id, now - 5).await;
        let occ = claim(&mut c, ns, 0).await.expect("due");
        assert_eq!(occ.run_number, 1);
    }
    // Crash right after the claims (the cron's follow-slot write may never happen).
    first.kill();

    let now = redis_now(&mut conn).await;
    let second = Service::start(&redis.url()).await;
    let mut c = second.client().await;
    for (ns, id) in [("every", "e"), ("cron", "c")] {
        let score = due_score(&mut conn, ns, id)
            .await
            .unwrap_or_else(|| panic!("{id} left the due index"));
        assert!(score > now, "{id}: next run {score} is not after now {now}");
        let s = get(&mut c, ns, id).await;
        assert_eq!(s.status, proto::ScheduleStatus::Active as i32);
        assert_eq!(ms(&s.next_run_time), score, "{id}: hash and index agree");
        assert!(claim(&mut c, ns, 0).await.is_none(), "{id}: not due twice");

        let now = redis_now(&mut conn).await;
        force_due(&mut conn, ns, id, now - 5).await;
        let occ = claim(&mut c, ns, 0)
            .await
            .expect("fires again via the survivor");
        assert_eq!(occ.run_number, 2);
        assert_eq!(occ.schedule.expect("s").id, id);
    }
}

/// Pins: work coming due after an instance died under a waiting worker is handed to
/// the worker waiting on the survivor, within that worker's wait.
#[tokio::test]
async fn killing_an_instance_with_a_waiting_long_poll_leaves_the_work_to_the_others() {
    let redis = Redis::start().await;
    let mut conn = redis.conn().await;
    let doomed = Service::start(&redis.url()).await;
    let survivor = Service::start(&redis.url()).await;
    let mut on_doomed = doomed.client().await;
    let mut on_survivor = survivor.client().await;

    let before = script_calls(&mut conn).await;
    let doomed_poll = tokio::spawn(async move {
        claim_with_deadline(&mut on_doomed, "ns", 20_000, Duration::from_secs(25)).await
    });
    wait_parked(&mut conn, before, 1).await;
    let before = script_calls(&mut conn).await;
    let mut c = on_survivor.clone();
    let survivor_poll = tokio::spawn(async move {
        claim_with_deadline(&mut c, "ns", LONG_POLL_MS, CLIENT_DEADLINE).await
    });
    wait_parked(&mut conn, before, 1).await;

    // The crash. `kill()` aborts the server task, but tonic runs connections on their own
    // tasks, which outlive it; a real crash takes the worker's call down with the process.
    doomed.kill();
    doomed_poll.abort();

    // Work that comes due after the crash goes to the worker waiting on the survivor.
    let due = redis_now(&mut conn).await + SOON_MS;
    upsert(&mut on_survivor, "ns", every_hour_from("e", due)).await;
    let occ = survivor_poll
        .await
        .expect("poll task")
        .expect("survivor's poll answers")
        .expect("and hands out the occurrence within its wait");
    assert_eq!(occ.schedule.expect("s").id, "e");

    // And later slots keep coming through the survivor.
    let now = redis_now(&mut conn).await;
    force_due(&mut conn, "ns", "e", now - 5).await;
    let occ = claim(&mut on_survivor, "ns", 0).await.expect("due");
    assert_eq!(occ.run_number, 2);
}

/// Pins: shutdown answers a parked long-poll empty (not cut off, not left to sit out
/// its minute), and the service then stops, though its grace would allow minutes.
#[tokio::test]
async fn graceful_shutdown_answers_a_waiting_long_poll_empty_at_once() {
    let redis = Redis::start().await;
    let mut config = config(&redis.url());
    // Longer than PATIENCE: a stop() that waited on the long-poll would not end in time.
    config.shutdown_grace = Duration::from_secs(120);
    let service = Service::start_with(config).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;

    let before = script_calls(&mut conn).await;
    // A minute's wait and no client deadline: only the shutdown can end it sooner.
    let poll = tokio::spawn(async move { try_claim(&mut c, "ns", 60_000).await });
    wait_parked(&mut conn, before, 1).await;

    service.stop().await;
    let result = within_patience("the long-poll's answer", poll)
        .await
        .expect("poll task");
    let occurrence = result.expect("an answer, not an error");
    assert!(occurrence.is_none(), "empty: {occurrence:?}");
}

/// Pins: when a worker vanishes mid-poll the server drops the call and the namespace
/// timer goes idle (no Redis traffic for a waiter that is gone), then wakes for the
/// next worker.
#[tokio::test]
async fn a_worker_that_vanishes_mid_poll_leaves_no_phantom_waiter() {
    let redis = Redis::start().await;
    let mut cfg = config(&redis.url());
    cfg.recheck_interval = Duration::from_millis(50);
    let service = Service::start_with(cfg).await;
    let mut conn = redis.conn().await;

    let mut worker = service.client().await;
    let before = script_calls(&mut conn).await;
    let poll = tokio::spawn(async move {
        claim_with_deadline(&mut worker, "ns", 20_000, CLIENT_DEADLINE).await
    });
    wait_parked(&mut conn, before, 1).await;
    poll.abort();

    // Idle means: no peek for six re-check intervals in a row (15 checks >= 20 ms apart).
    wait_quiet(&mut conn, 15).await;

    // The timer wakes from idle for the next worker.
    let mut c = service.client().await;
    let mut s = every("e", 60);
    s.start_time = Some(ts(redis_now(&mut conn).await + SOON_MS));
    upsert(&mut c, "ns", s).await;
    let occ = claim(&mut c, "ns", LONG_POLL_MS)
        .await
        .expect("comes due in the poll");
    assert_eq!(occ.schedule.expect("s").id, "e");
}
