//! Redis away under a running service: not there at startup, restarted (data and
//! script cache lost), its script cache flushed, killed under a long-poll.

use std::time::Duration;

use super::*;

/// Pins: without Redis the service is up but NOT_SERVING, and every call (a long-poll
/// too) is answered UNAVAILABLE naming Redis, without the password, before its
/// client gives up; when Redis appears the same instance serves.
#[tokio::test]
async fn starts_without_redis_answers_unavailable_then_recovers_when_it_appears() {
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let url = format!("redis://:secret@{addr}");
    let service = Service::start_unready(failing_fast(&url)).await;

    // Up and answering, but not ready, and it stays so across health ticks.
    for _ in 0..4 {
        assert_eq!(service.health().await, NOT_SERVING);
        assert_eq!(service.health_of("").await, NOT_SERVING);
        // Real time across health ticks (every 200 ms): the status holds through them.
        #[allow(clippy::disallowed_methods)]
        tokio::time::sleep(Duration::from_millis(150)).await;
    }

    let mut c = service.client().await;
    let r = upsert_with_deadline(&mut c, "ns", every("e", 60)).await;
    assert_unavailable("upsert", r, &addr);
    let r = claim_with_deadline(&mut c, "ns", 0, CLIENT_DEADLINE).await;
    assert_unavailable("claim", r, &addr);
    // A long-poll does not sit out its wait against a dead store either.
    let r = claim_with_deadline(&mut c, "ns", WAIT_PAST_DEADLINE_MS, CLIENT_DEADLINE).await;
    assert_unavailable("long-poll", r, &addr);
    let r = get_with_deadline(&mut c, "ns", "e").await;
    assert_unavailable("get", r, &addr);
    assert_eq!(service.health().await, NOT_SERVING);

    // Redis appears on that port, with the password: the same instance recovers.
    let redis = Redis::start_on(port).await;
    let _: () = cmd("CONFIG")
        .arg("SET")
        .arg("requirepass")
        .arg("secret")
        .query_async(&mut redis.conn().await)
        .await
        .expect("CONFIG SET requirepass");
    wait_health(&service, SERVING).await;

    let created = upsert_with_deadline(&mut c, "ns", every("e", 60))
        .await
        .expect("upsert after recovery");
    assert!(created.created);
    let mut conn = connect(&url).await; // authenticated
    let now = redis_now(&mut conn).await;
    force_due(&mut conn, "ns", "e", now - 5).await;
    let occ = claim_with_deadline(&mut c, "ns", 0, CLIENT_DEADLINE)
        .await
        .expect("claim after recovery")
        .expect("due");
    assert_eq!(occ.run_number, 1);
}

/// Pins: Redis killed under a running service: NOT_SERVING, UNAVAILABLE for every call
/// (none hangs, none sits out a long-poll), then SERVING again on the empty restart.
#[tokio::test]
async fn redis_restart_goes_not_serving_then_recovers_by_itself() {
    let mut redis = Redis::start().await;
    let addr = format!("127.0.0.1:{}", redis.port);
    let service = Service::start_with(failing_fast(&redis.url())).await;
    let mut c = service.client().await;
    // Several calls, so each pooled connection has been used before Redis dies.
    for i in 0..8 {
        upsert_with_deadline(&mut c, "ns", every(&format!("before-{i}"), 60))
            .await
            .expect("upsert");
    }
    assert!(claim_with_deadline(&mut c, "ns", 0, CLIENT_DEADLINE)
        .await
        .expect("claim")
        .is_none());

    redis.kill();
    wait_health(&service, NOT_SERVING).await;
    // More calls than pooled connections: dead cached ones and refused reconnects alike.
    for i in 0..6 {
        let r = upsert_with_deadline(&mut c, "ns", every("down", 60)).await;
        assert_unavailable(&format!("upsert {i}"), r, &addr);
        let r = claim_with_deadline(&mut c, "ns", 0, CLIENT_DEADLINE).await;
        assert_unavailable(&format!("claim {i}"), r, &addr);
    }
    let r = claim_with_deadline(&mut c, "ns", WAIT_PAST_DEADLINE_MS, CLIENT_DEADLINE).await;
    assert_unavailable("long-poll", r, &addr);
    let r = get_with_deadline(&mut c, "ns", "before-0").await;
    assert_unavailable("get", r, &addr);

    redis.restart().await; // empty: no data, no scripts
    wait_health(&service, SERVING).await;
    let mut conn = redis.conn().await;
    let mut claimed = Vec::new();
    for i in 0..6 {
        let id = format!("after-{i}");
        let created = upsert_with_deadline(&mut c, "ns", every(&id, 60))
            .await
            .expect("upsert after restart");
        assert!(created.created, "the restart lost the old data");
        let now = redis_now(&mut conn).await;
        force_due(&mut conn, "ns", &id, now - 5).await;
        let occ = claim_with_deadline(&mut c, "ns", 0, CLIENT_DEADLINE)
            .await
            .expect("claim after restart")
            .expect("due");
        claimed.push(occ.schedule.expect("s").id);
    }
    assert_eq!(
        claimed,
        (0..6).map(|i| format!("after-{i}")).collect::<Vec<_>>()
    );
}

/// Pins: a restart the health loop never sees costs at most one UNAVAILABLE per pooled
/// connection; functions come back through "Function not found" and dead connections are replaced.
#[tokio::test]
async fn redis_restart_between_health_checks_is_survived_with_unavailable_at_worst() {
    // The health loop never notices this restart (it checks hourly), so nothing reloads
    // the functions ahead of time: every library must come back through "Function not found", and
    // connections that died with the old server must be replaced, not reused.
    let mut redis = Redis::start().await;
    let addr = format!("127.0.0.1:{}", redis.port);
    let mut cfg = failing_fast(&redis.url());
    cfg.health_interval = Duration::from_secs(3600);
    let pool_size = usize::from(cfg.pool_size);
    let service = Service::start_with(cfg).await;
    let mut c = service.client().await;
    for i in 0..8 {
        upsert_with_deadline(&mut c, "ns", every(&format!("before-{i}"), 60))
            .await
            .expect("upsert");
    }

    redis.restart().await;
    let mut conn = redis.conn().await;
    // Each connection that was open when Redis died may fail once; then all is well.
    let mut failures = 0;
    let mut ok = 0;
    let patience = Patience::new("the service to recover from the restart");
    while ok < 2 * pool_size {
        patience.wait().await;
        let id = format!("after-{ok}");
        match upsert_with_deadline(&mut c, "ns", every(&id, 60)).await {
            Ok(created) => assert!(created.created, "the restart lost the old data"),
            Err(status) => {
                assert_unavailable("upsert", Err::<(), _>(status), &addr);
                failures += 1;
                continue;
            }
        }
        let now = redis_now(&mut conn).await;
        force_due(&mut conn, "ns", &id, now - 5).await;
        match claim_with_deadline(&mut c, "ns", 0, CLIENT_DEADLINE).await {
            Ok(occ) => {
                assert_eq!(occ.expect("due").schedule.expect("s").id, id);
                ok += 1;
            }
            Err(status) => {
                assert_unavailable("claim", Err::<(), _>(status), &addr);
                failures += 1;
            }
        }
    }
    assert!(
        failures <= pool_size,
        "{failures} failures: dead connections are reused instead of replaced"
    );
    assert_eq!(service.health().await, SERVING);
}

/// Pins: FUNCTION FLUSH (dueq's scripts are Redis functions) before any call (claims and long-polls included) is invisible
/// to the caller.
#[tokio::test]
async fn script_flush_is_transparent_to_every_call() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;
    let flusher = conn.clone();
    let flush = || {
        let mut conn = flusher.clone();
        async move {
            let _: () = query(&mut conn, cmd("FUNCTION").arg("FLUSH")).await;
        }
    };

    flush().await;
    assert!(upsert(&mut c, "ns", every("a", 60)).await.created);
    flush().await;
    // Yearly, so its next slot after the forced claim never falls in the long-poll below.
    upsert(&mut c, "ns", cron("b", "0 0 1 1 *", "Europe/Berlin")).await;
    flush().await;
    let listed = c
        .list_schedules(proto::ListSchedulesRequest {
            namespace: "ns".into(),
            ..Default::default()
        })
        .await
        .expect("list")
        .into_inner();
    assert_eq!(listed.schedules.len(), 2);
    flush().await;
    let paused = c
        .pause_schedule(proto::PauseScheduleRequest {
            namespace: "ns".into(),
            id: "a".into(),
            note: String::new(),
        })
        .await
        .expect("pause")
        .into_inner()
        .schedule
        .expect("s");
    assert_eq!(paused.status, proto::ScheduleStatus::Paused as i32);
    flush().await;
    let resumed = c
        .resume_schedule(proto::ResumeScheduleRequest {
            namespace: "ns".into(),
            id: "a".into(),
        })
        .await
        .expect("resume")
        .into_inner()
        .schedule
        .expect("s");
    assert_eq!(resumed.status, proto::ScheduleStatus::Active as i32);

    // Claims: an every, then a cron (its claim also writes the follow slot by script).
    for id in ["a", "b"] {
        let now = redis_now(&mut conn).await;
        force_due(&mut conn, "ns", id, now - 5).await;
        flush().await;
        let occ = claim(&mut c, "ns", 0).await.expect("due");
        assert_eq!(occ.schedule.expect("s").id, id);
    }
    flush().await;
    assert!(claim(&mut c, "ns", 0).await.is_none());

    // A long-poll: the namespace timer's peek and the claim both run scripts.
    let mut soon = every("soon", 60);
    soon.start_time = Some(ts(redis_now(&mut conn).await + SOON_MS));
    upsert(&mut c, "ns", soon).await;
    flush().await;
    let occ = claim(&mut c, "ns", LONG_POLL_MS)
        .await
        .expect("comes due in the poll");
    assert_eq!(occ.schedule.expect("s").id, "soon");

    flush().await;
    c.delete_schedule(proto::DeleteScheduleRequest {
        namespace: "ns".into(),
        id: "a".into(),
    })
    .await
    .expect("delete");
    assert_eq!(get(&mut c, "ns", "b").await.run_count, 1);
}

/// Pins issue 29 item 11: with the script cache flushed over and over from another
/// connection while calls run, a call whose script is gone again after it was
/// loaded is loaded and run again (a bounded number of times), so every call
/// succeeds or, at worst, fails UNAVAILABLE: never INTERNAL (a second NOSCRIPT in a
/// row was answered INTERNAL).
#[tokio::test]
async fn scripts_flushed_in_a_loop_never_make_a_call_internal() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flusher = {
        let (mut conn, stop) = (redis.conn().await, stop.clone());
        tokio::spawn(async move {
            let mut flushes = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let _: () = query(&mut conn, cmd("FUNCTION").arg("FLUSH")).await;
                flushes += 1;
            }
            flushes
        })
    };
    let mut ok = 0;
    for i in 0..200 {
        let mut req = job("q", "j");
        req.job_id = format!("j{i}");
        match c.enqueue(req).await {
            Ok(_) => ok += 1,
            Err(status) => assert_eq!(status.code(), Code::Unavailable, "enqueue {i}: {status:?}"),
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let flushes = flusher.await.expect("flusher");
    assert!(flushes > 0);
    enqueue(&mut c, job("q", "after")).await;
    eprintln!("{ok} of 200 enqueues succeeded over {flushes} script flushes");
}

/// Pins: a parked long-poll whose Redis dies (with work coming due in the outage) is
/// answered before its client's deadline, empty or UNAVAILABLE, never DEADLINE_EXCEEDED.
#[tokio::test]
async fn a_long_poll_is_answered_by_its_deadline_when_redis_dies() {
    let mut redis = Redis::start().await;
    let addr = format!("127.0.0.1:{}", redis.port);
    let service = Service::start_with(failing_fast(&redis.url())).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;

    // The worker asks to wait a minute but its own deadline is 5 s.
    let client_deadline = Duration::from_secs(5);
    let before = script_calls(&mut conn).await;
    let mut worker = c.clone();
    let poll = tokio::spawn(async move {
        claim_with_deadline(&mut worker, "ns", 60_000, client_deadline).await
    });
    wait_parked(&mut conn, before, 1).await;
    // A schedule that comes due during the outage: the wake-up must not hang either.
    let due = redis_now(&mut conn).await + SOON_MS;
    upsert(&mut c, "ns", every_hour_from("e", due)).await;
    redis.kill();

    let result = within_patience("the long-poll", poll)
        .await
        .expect("poll task");
    match result {
        Ok(None) => {}
        Ok(Some(occ)) => panic!("claimed from a dead Redis: {occ:?}"),
        Err(status) => assert_unavailable("long-poll", Err::<(), _>(status), &addr),
    }
}
