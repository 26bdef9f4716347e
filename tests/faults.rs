//! Faults: Redis unreachable, restarted, script cache flushed; instances crashing or
//! shutting down under workers. Nothing may panic, hang, leak the Redis password or
//! stall a schedule; the service recovers by itself.

mod common;

use std::time::Duration;

use common::*;
use deadpool_redis::redis::{self, aio::MultiplexedConnection};
use tokio::time::Instant;
use tonic::{Code, Status};
use tonic_health::pb::health_check_response::ServingStatus;

const SERVING: i32 = ServingStatus::Serving as i32;
const NOT_SERVING: i32 = ServingStatus::NotServing as i32;

/// Every call carries this client deadline; a call that "hangs" runs into it.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(10);
/// A call answered within this is "prompt" (no Redis timeout, no wait honoured).
const PROMPT: Duration = Duration::from_secs(2);

fn request<T>(message: T, timeout: Duration) -> tonic::Request<T> {
    let mut request = tonic::Request::new(message);
    request.set_timeout(timeout);
    request
}

async fn try_upsert(
    c: &mut Client,
    ns: &str,
    schedule: proto::Schedule,
) -> Result<proto::UpsertScheduleResponse, Status> {
    let req = proto::UpsertScheduleRequest {
        namespace: ns.into(),
        schedule: Some(schedule),
    };
    c.upsert_schedule(request(req, CLIENT_TIMEOUT))
        .await
        .map(tonic::Response::into_inner)
}

async fn try_claim(
    c: &mut Client,
    ns: &str,
    wait_ms: u64,
    timeout: Duration,
) -> Result<Option<proto::Occurrence>, Status> {
    let req = proto::ClaimDueScheduleRequest {
        namespace: ns.into(),
        worker_id: "faults".into(),
        wait: wait(wait_ms),
        lease: None,
    };
    c.claim_due_schedule(request(req, timeout))
        .await
        .map(|r| r.into_inner().occurrence)
}

async fn try_get(c: &mut Client, ns: &str, id: &str) -> Result<proto::Schedule, Status> {
    let req = proto::GetScheduleRequest {
        namespace: ns.into(),
        id: id.into(),
    };
    c.get_schedule(request(req, CLIENT_TIMEOUT))
        .await
        .map(|r| r.into_inner().schedule.expect("schedule"))
}

/// Runs `call`, asserting it answers within `PROMPT`.
async fn prompt<T>(what: &str, call: impl std::future::Future<Output = T>) -> T {
    let started = Instant::now();
    let out = tokio::time::timeout(CLIENT_TIMEOUT + Duration::from_secs(1), call)
        .await
        .unwrap_or_else(|_| panic!("{what}: hung past the client deadline"));
    assert!(
        started.elapsed() < PROMPT,
        "{what}: took {:?}, not prompt",
        started.elapsed()
    );
    out
}

/// Asserts UNAVAILABLE naming the Redis address, without leaking a password.
fn assert_unavailable<T: std::fmt::Debug>(what: &str, result: Result<T, Status>, addr: &str) {
    let status = match result {
        Err(status) => status,
        Ok(ok) => panic!("{what}: expected UNAVAILABLE, got {ok:?}"),
    };
    assert_eq!(status.code(), Code::Unavailable, "{what}: {status:?}");
    assert!(
        status.message().contains(addr),
        "{what}: message {:?} does not name {addr}",
        status.message()
    );
    assert!(
        !status.message().contains("secret"),
        "{what}: message {:?} leaks the password",
        status.message()
    );
}

/// Polls both health names until they report `want`.
async fn wait_health(service: &Service, want: i32, within: Duration) {
    let deadline = Instant::now() + within;
    loop {
        let (named, all) = (service.health().await, service.health_of("").await);
        if named == want && all == want {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "health never became {want} within {within:?} (service {named}, \"\" {all})"
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

async fn zscore(conn: &mut MultiplexedConnection, ns: &str, id: &str) -> Option<i64> {
    let s: Option<f64> = redis::cmd("ZSCORE")
        .arg(format!("dueq:{{{ns}}}:due"))
        .arg(id)
        .query_async(conn)
        .await
        .expect("ZSCORE");
    s.map(|s| s as i64)
}

/// EVALSHA calls Redis has served so far (claims and wake-timer peeks are scripts).
async fn evalsha_calls(conn: &mut MultiplexedConnection) -> u64 {
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query_async(conn)
        .await
        .expect("INFO");
    info.lines()
        .find_map(|l| l.strip_prefix("cmdstat_evalsha:calls="))
        .and_then(|rest| rest.split(',').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// Waits until a long-poll started after `before` was counted is parked: its claim
/// ran (one EVALSHA) and, because it waits, the namespace timer peeked (another).
async fn wait_parked(conn: &mut MultiplexedConnection, before: u64) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while evalsha_calls(conn).await < before + 2 {
        assert!(Instant::now() < deadline, "the long-poll never parked");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn script_flush_cmd() -> redis::Cmd {
    redis::cmd("SCRIPT").arg("FLUSH").clone()
}

// ---- 1. Redis unreachable at startup ----

#[tokio::test]
async fn starts_without_redis_answers_unavailable_then_recovers_when_it_appears() {
    let port = Redis::free_port();
    let addr = format!("127.0.0.1:{port}");
    let url = format!("redis://:secret@{addr}");
    let service = Service::start_unready(config(&url)).await;

    // Up and answering, but not ready, and it stays so across health ticks.
    for _ in 0..4 {
        assert_eq!(service.health().await, NOT_SERVING);
        assert_eq!(service.health_of("").await, NOT_SERVING);
        tokio::time::sleep(Duration::from_millis(150)).await;
    }

    let mut c = service.client().await;
    let r = prompt("upsert", try_upsert(&mut c, "ns", every("e", 60))).await;
    assert_unavailable("upsert", r, &addr);
    let r = prompt("claim", try_claim(&mut c, "ns", 0, CLIENT_TIMEOUT)).await;
    assert_unavailable("claim", r, &addr);
    // A long-poll does not sit out its wait against a dead store either.
    let r = prompt("long-poll", try_claim(&mut c, "ns", 5_000, CLIENT_TIMEOUT)).await;
    assert_unavailable("long-poll", r, &addr);
    let r = prompt("get", try_get(&mut c, "ns", "e")).await;
    assert_unavailable("get", r, &addr);
    assert_eq!(service.health().await, NOT_SERVING);

    // Redis appears on that port, with the password: the same instance recovers.
    let redis = Redis::start_on(port).await;
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("requirepass")
        .arg("secret")
        .query_async(&mut redis.conn().await)
        .await
        .expect("CONFIG SET requirepass");
    wait_health(&service, SERVING, Duration::from_secs(5)).await;

    let created = try_upsert(&mut c, "ns", every("e", 60))
        .await
        .expect("upsert after recovery");
    assert!(created.created);
    let mut conn = redis::Client::open(url.as_str())
        .expect("url")
        .get_multiplexed_async_connection()
        .await
        .expect("authenticated connection");
    let now = redis_now(&mut conn).await;
    force_due(&mut conn, "ns", "e", now - 5).await;
    let occ = try_claim(&mut c, "ns", 0, CLIENT_TIMEOUT)
        .await
        .expect("claim after recovery")
        .expect("due");
    assert_eq!(occ.run_number, 1);
}

// ---- 2. Redis restarted (data and script cache lost) under a running service ----

#[tokio::test]
async fn redis_restart_goes_not_serving_then_recovers_by_itself() {
    let mut redis = Redis::start().await;
    let addr = format!("127.0.0.1:{}", redis.port);
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    // Several calls, so each pooled connection has been used before Redis dies.
    for i in 0..8 {
        try_upsert(&mut c, "ns", every(&format!("before-{i}"), 60))
            .await
            .expect("upsert");
    }
    assert!(try_claim(&mut c, "ns", 0, CLIENT_TIMEOUT)
        .await
        .expect("claim")
        .is_none());

    redis.kill();
    wait_health(&service, NOT_SERVING, Duration::from_secs(5)).await;
    // More calls than pooled connections: dead cached ones and refused reconnects alike.
    for i in 0..6 {
        let r = prompt("upsert", try_upsert(&mut c, "ns", every("down", 60))).await;
        assert_unavailable(&format!("upsert {i}"), r, &addr);
        let r = prompt("claim", try_claim(&mut c, "ns", 0, CLIENT_TIMEOUT)).await;
        assert_unavailable(&format!("claim {i}"), r, &addr);
    }
    let r = prompt("long-poll", try_claim(&mut c, "ns", 5_000, CLIENT_TIMEOUT)).await;
    assert_unavailable("long-poll", r, &addr);
    let r = prompt("get", try_get(&mut c, "ns", "before-0")).await;
    assert_unavailable("get", r, &addr);

    redis.restart().await; // empty: no data, no scripts
    wait_health(&service, SERVING, Duration::from_secs(5)).await;
    let mut conn = redis.conn().await;
    let mut claimed = Vec::new();
    for i in 0..6 {
        let id = format!("after-{i}");
        let created = try_upsert(&mut c, "ns", every(&id, 60))
            .await
            .expect("upsert after restart");
        assert!(created.created, "the restart lost the old data");
        let now = redis_now(&mut conn).await;
        force_due(&mut conn, "ns", &id, now - 5).await;
        let occ = try_claim(&mut c, "ns", 0, CLIENT_TIMEOUT)
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

#[tokio::test]
async fn redis_restart_between_health_checks_is_survived_with_unavailable_at_worst() {
    // The health loop never notices this restart (it checks hourly), so nothing reloads
    // the scripts ahead of time: every script must come back through NOSCRIPT, and
    // connections that died with the old server must be replaced, not reused.
    let mut redis = Redis::start().await;
    let addr = format!("127.0.0.1:{}", redis.port);
    let mut cfg = config(&redis.url());
    cfg.health_interval = Duration::from_secs(3600);
    let pool_size = usize::from(cfg.pool_size);
    let service = Service::start_with(cfg).await;
    let mut c = service.client().await;
    for i in 0..8 {
        try_upsert(&mut c, "ns", every(&format!("before-{i}"), 60))
            .await
            .expect("upsert");
    }

    redis.restart().await;
    let mut conn = redis.conn().await;
    // Each connection that was open when Redis died may fail once; then all is well.
    let mut failures = 0;
    let mut ok = 0;
    let deadline = Instant::now() + Duration::from_secs(5);
    while ok < 2 * pool_size {
        assert!(Instant::now() < deadline, "never recovered");
        let id = format!("after-{ok}");
        match prompt("upsert", try_upsert(&mut c, "ns", every(&id, 60))).await {
            Ok(created) => assert!(created.created, "the restart lost the old data"),
            Err(status) => {
                assert_unavailable("upsert", Err::<(), _>(status), &addr);
                failures += 1;
                continue;
            }
        }
        let now = redis_now(&mut conn).await;
        force_due(&mut conn, "ns", &id, now - 5).await;
        match prompt("claim", try_claim(&mut c, "ns", 0, CLIENT_TIMEOUT)).await {
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

// ---- 3. SCRIPT FLUSH under a running service ----

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
            let _: () = script_flush_cmd()
                .query_async(&mut conn)
                .await
                .expect("SCRIPT FLUSH");
        }
    };

    flush().await;
    assert!(upsert(&mut c, "ns", every("a", 60)).await.created);
    flush().await;
    upsert(&mut c, "ns", cron("b", "*/5 * * * *", "Europe/Berlin")).await;
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
    let now = redis_now(&mut conn).await;
    let mut soon = every("soon", 60);
    soon.start_time = Some(ts(now + 300));
    upsert(&mut c, "ns", soon).await;
    flush().await;
    let occ = claim(&mut c, "ns", 5_000)
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

// ---- 4. Instances crashing ----

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
        let score = zscore(&mut conn, ns, id)
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

#[tokio::test]
async fn killing_an_instance_with_a_waiting_long_poll_leaves_the_work_to_the_others() {
    let redis = Redis::start().await;
    let mut conn = redis.conn().await;
    let doomed = Service::start(&redis.url()).await;
    let survivor = Service::start(&redis.url()).await;
    let mut on_doomed = doomed.client().await;
    let mut on_survivor = survivor.client().await;

    let before = evalsha_calls(&mut conn).await;
    let doomed_poll = tokio::spawn(async move {
        try_claim(&mut on_doomed, "ns", 20_000, Duration::from_secs(25)).await
    });
    wait_parked(&mut conn, before).await;
    let before = evalsha_calls(&mut conn).await;
    let mut c = on_survivor.clone();
    let survivor_poll =
        tokio::spawn(async move { try_claim(&mut c, "ns", 8_000, CLIENT_TIMEOUT).await });
    wait_parked(&mut conn, before).await;

    // The crash. `kill()` aborts the server task, but tonic runs connections on their own
    // tasks, which outlive it; a real crash takes the worker's call down with the process.
    doomed.kill();
    doomed_poll.abort();

    // Work that comes due after the crash goes to the worker waiting on the survivor.
    let now = redis_now(&mut conn).await;
    let mut s = every("e", 60);
    s.start_time = Some(ts(now + 1_000));
    upsert(&mut on_survivor, "ns", s).await;
    let started = Instant::now();
    let occ = survivor_poll
        .await
        .expect("poll task")
        .expect("survivor's poll answers")
        .expect("and hands out the occurrence");
    assert_eq!(occ.schedule.expect("s").id, "e");
    assert!(started.elapsed() < Duration::from_secs(4), "not stalled");

    // And later slots keep coming through the survivor.
    let now = redis_now(&mut conn).await;
    force_due(&mut conn, "ns", "e", now - 5).await;
    let occ = claim(&mut on_survivor, "ns", 0).await.expect("due");
    assert_eq!(occ.run_number, 2);
}

// ---- 5. Redis dies under a long-poll ----

#[tokio::test]
async fn a_long_poll_is_answered_by_its_deadline_when_redis_dies() {
    let mut redis = Redis::start().await;
    let addr = format!("127.0.0.1:{}", redis.port);
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;
    // A schedule that comes due during the outage: the wake-up must not hang either.
    let now = redis_now(&mut conn).await;
    let mut s = every("e", 60);
    s.start_time = Some(ts(now + 800));
    upsert(&mut c, "ns", s).await;

    // The worker asks to wait 30 s but its own deadline is 2 s.
    let client_deadline = Duration::from_secs(2);
    let before = evalsha_calls(&mut conn).await;
    let started = Instant::now();
    let poll = tokio::spawn(async move { try_claim(&mut c, "ns", 30_000, client_deadline).await });
    wait_parked(&mut conn, before).await;
    redis.kill();

    let result = tokio::time::timeout(client_deadline + Duration::from_secs(2), poll)
        .await
        .expect("the long-poll hung")
        .expect("poll task");
    let elapsed = started.elapsed();
    match result {
        Ok(None) => {}
        Ok(Some(occ)) => panic!("claimed from a dead Redis: {occ:?}"),
        Err(status) => assert_unavailable("long-poll", Err::<(), _>(status), &addr),
    }
    assert!(
        elapsed < client_deadline,
        "answered after the client deadline ({elapsed:?})"
    );
}

// ---- 6. Graceful shutdown under a long-poll ----

#[tokio::test]
async fn graceful_shutdown_answers_a_waiting_long_poll_empty_at_once() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;

    let before = evalsha_calls(&mut conn).await;
    let poll = tokio::spawn(async move {
        let result = try_claim(&mut c, "ns", 30_000, Duration::from_secs(35)).await;
        (result, Instant::now())
    });
    wait_parked(&mut conn, before).await;

    let stopping = Instant::now();
    tokio::time::timeout(Duration::from_secs(5), service.stop())
        .await
        .expect("stop() did not complete");
    let stopped_in = stopping.elapsed();
    let (result, answered_at) = tokio::time::timeout(Duration::from_secs(5), poll)
        .await
        .expect("the long-poll was not answered")
        .expect("poll task");
    let occurrence = result.expect("an answer, not an error");
    assert!(occurrence.is_none(), "empty: {occurrence:?}");
    assert!(
        answered_at.duration_since(stopping) < Duration::from_secs(1),
        "answered {:?} after stop, not promptly",
        answered_at.duration_since(stopping)
    );
    assert!(
        stopped_in < Duration::from_secs(2),
        "stop() took {stopped_in:?}"
    );
}

#[tokio::test]
async fn a_worker_that_vanishes_mid_poll_leaves_no_phantom_waiter() {
    // A worker that crashes or disconnects mid-poll: the server drops the call. The
    // namespace timer must then go idle (no waiters, no Redis traffic), not keep
    // polling Redis for a waiter that is gone.
    let redis = Redis::start().await;
    let mut cfg = config(&redis.url());
    cfg.recheck_interval = Duration::from_millis(50);
    let service = Service::start_with(cfg).await;
    let mut conn = redis.conn().await;

    let mut worker = service.client().await;
    let before = evalsha_calls(&mut conn).await;
    let poll =
        tokio::spawn(async move { try_claim(&mut worker, "ns", 20_000, CLIENT_TIMEOUT).await });
    wait_parked(&mut conn, before).await;
    poll.abort();

    // Idle means: no peek for six re-check intervals in a row.
    let deadline = Instant::now() + Duration::from_secs(3);
    let mut last = evalsha_calls(&mut conn).await;
    let mut quiet_since = Instant::now();
    while quiet_since.elapsed() < Duration::from_millis(300) {
        assert!(
            Instant::now() < deadline,
            "the namespace timer keeps polling Redis for a waiter that is gone"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
        let now = evalsha_calls(&mut conn).await;
        if now != last {
            (last, quiet_since) = (now, Instant::now());
        }
    }

    // The timer wakes from idle for the next worker.
    let mut c = service.client().await;
    let now = redis_now(&mut conn).await;
    let mut s = every("e", 60);
    s.start_time = Some(ts(now + 200));
    upsert(&mut c, "ns", s).await;
    let occ = claim(&mut c, "ns", 5_000)
        .await
        .expect("comes due in the poll");
    assert_eq!(occ.schedule.expect("s").id, "e");
}

/// Concurrent single Enqueues share script calls; when Redis dies every caller in a
/// shared call gets its own prompt UNAVAILABLE (none hangs, none is told it
/// succeeded), and after the restart the same service enqueues again.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn grouped_enqueues_each_get_unavailable_when_redis_dies_then_recover() {
    let mut redis = Redis::start().await;
    let addr = format!("127.0.0.1:{}", redis.port);
    let service = Service::start(&redis.url()).await;
    let c = service.client().await;
    enqueue(&mut c.clone(), job("q", "warm")).await;

    redis.kill();
    let started = Instant::now();
    let calls: Vec<_> = (0..64)
        .map(|i| {
            let mut c = c.clone();
            tokio::spawn(async move {
                c.enqueue(request(job("q", &format!("down-{i}")), CLIENT_TIMEOUT))
                    .await
                    .map(|r| r.into_inner())
            })
        })
        .collect();
    for (i, call) in calls.into_iter().enumerate() {
        let r = call.await.expect("task");
        assert_unavailable(&format!("enqueue {i}"), r, &addr);
    }
    assert!(
        started.elapsed() < PROMPT * 2,
        "64 grouped enqueues answered in {:?}",
        started.elapsed()
    );

    redis.restart().await;
    wait_health(&service, SERVING, Duration::from_secs(5)).await;
    let calls: Vec<_> = (0..64)
        .map(|i| {
            let mut c = c.clone();
            tokio::spawn(async move { enqueue(&mut c, job("q", &format!("up-{i}"))).await })
        })
        .collect();
    for call in calls {
        let r = call.await.expect("task");
        assert_eq!(r.outcome, proto::EnqueueOutcome::Created as i32);
    }
    let mut conn = redis.conn().await;
    let listed = listed_job_ids(&mut conn, "ns", "q").await.len();
    assert_eq!(
        listed, 64,
        "the restarted Redis holds exactly the 64 new jobs"
    );
}

/// Redis at maxmemory (noeviction) refuses writes: every writing RPC answers
/// RESOURCE_EXHAUSTED saying so and what to do, nothing is half-written, and
/// once memory is available again the same calls succeed.
#[tokio::test]
async fn redis_out_of_memory_is_resource_exhausted_and_writes_nothing() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;
    try_upsert(&mut c, "ns", every("before", 60))
        .await
        .expect("upsert");
    enqueue(&mut c, job("q", "before")).await;
    let before = snapshot(&mut conn).await;

    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("maxmemory")
        .arg(1)
        .query_async(&mut conn)
        .await
        .expect("CONFIG SET maxmemory");
    let refused = |what: &str, status: Status| {
        assert_eq!(status.code(), Code::ResourceExhausted, "{what}: {status:?}");
        assert!(
            status.message().contains("out of memory") && status.message().contains("maxmemory"),
            "{what}: {}",
            status.message()
        );
    };
    let r = prompt("upsert", try_upsert(&mut c, "ns", every("during", 60))).await;
    refused("upsert", r.expect_err("upsert must be refused"));
    let r = prompt(
        "enqueue",
        c.enqueue(request(job("q", "during"), CLIENT_TIMEOUT)),
    )
    .await;
    refused("enqueue", r.expect_err("enqueue must be refused"));
    let batch = proto::EnqueueBatchRequest {
        namespace: "ns".into(),
        jobs: vec![job("q", "b1"), job("q", "b2")],
    };
    let r = prompt("batch", c.enqueue_batch(request(batch, CLIENT_TIMEOUT))).await;
    refused("batch", r.expect_err("batch must be refused"));

    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("maxmemory")
        .arg(0)
        .query_async(&mut conn)
        .await
        .expect("CONFIG SET maxmemory");
    assert_eq!(
        snapshot(&mut conn).await,
        before,
        "the refused calls wrote nothing"
    );
    try_upsert(&mut c, "ns", every("after", 60))
        .await
        .expect("upsert after memory is back");
    assert_eq!(
        enqueue(&mut c, job("q", "after")).await.outcome,
        proto::EnqueueOutcome::Created as i32
    );
}

/// A job whose caller gave up while it waited for a shared script call (its
/// deadline passed behind calls stuck on a paused Redis) is not enqueued: the
/// caller was told it failed and will enqueue it again. Jobs already sent are.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_job_whose_caller_gave_up_before_it_was_sent_is_not_enqueued() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let c = service.client().await;
    let mut conn = redis.conn().await;
    enqueue(&mut c.clone(), job("q", "warm")).await;

    let _: () = redis::cmd("CLIENT")
        .arg("PAUSE")
        .arg(1500)
        .arg("ALL")
        .query_async(&mut conn)
        .await
        .expect("CLIENT PAUSE");
    // Two calls go out and block in Redis: the namespace's two calls in flight.
    let mut sent = Vec::new();
    for i in 0..2 {
        let mut c = c.clone();
        sent.push(tokio::spawn(async move {
            let mut req = job("q", "sent");
            req.job_id = format!("sent-{i}");
            c.enqueue(request(req, CLIENT_TIMEOUT)).await
        }));
        tokio::time::sleep(Duration::from_millis(150)).await;
    }
    // These wait behind them and give up long before Redis answers.
    let gave_up: Vec<_> = (0..20)
        .map(|i| {
            let mut c = c.clone();
            tokio::spawn(async move {
                let mut req = job("q", "late");
                req.job_id = format!("gave-up-{i}");
                c.enqueue(request(req, Duration::from_millis(300))).await
            })
        })
        .collect();
    for call in gave_up {
        let status = call.await.expect("task").expect_err("must time out");
        // The client's own timer (Cancelled) or the server's (DeadlineExceeded).
        assert!(
            matches!(status.code(), Code::DeadlineExceeded | Code::Cancelled),
            "{status:?}"
        );
    }
    for call in sent {
        call.await
            .expect("task")
            .expect("sent before the pause ended");
    }
    // The lane has drained by now (the sent calls answered after the pause).
    let mut conn = redis.conn().await;
    for i in 0..2 {
        let exists: bool = redis::cmd("EXISTS")
            .arg(format!("dueq:{{ns}}:j:sent-{i}"))
            .query_async(&mut conn)
            .await
            .expect("EXISTS");
        assert!(exists, "sent-{i} was in flight and is enqueued");
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    for i in 0..20 {
        let exists: bool = redis::cmd("EXISTS")
            .arg(format!("dueq:{{ns}}:j:gave-up-{i}"))
            .query_async(&mut conn)
            .await
            .expect("EXISTS");
        assert!(!exists, "gave-up-{i}: its caller was told it failed");
    }
}
