//! Long-polling ClaimDueSchedule: prompt wake-ups, no per-waiter Redis traffic, only as
//! many wake-ups as due work, and deadlines honoured.

mod common;

use std::time::{Duration, Instant};

use common::*;
use deadpool_redis::redis::{self, aio::MultiplexedConnection};

/// Calls of EVALSHA+EVAL since the last CONFIG RESETSTAT (every dueq Redis access that
/// touches data is a script).
async fn script_calls(conn: &mut MultiplexedConnection) -> u64 {
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query_async(conn)
        .await
        .expect("INFO");
    info.lines()
        .filter(|l| l.starts_with("cmdstat_evalsha:") || l.starts_with("cmdstat_eval:"))
        .filter_map(|l| {
            l.split([':', ','])
                .find_map(|kv| kv.strip_prefix("calls="))
                .and_then(|n| n.parse::<u64>().ok())
        })
        .sum()
}

async fn reset_stats(conn: &mut MultiplexedConnection) {
    let _: () = redis::cmd("CONFIG")
        .arg("RESETSTAT")
        .query_async(conn)
        .await
        .expect("RESETSTAT");
}

fn spawn_waiters(
    client: &Client,
    n: usize,
    wait_ms: u64,
) -> Vec<tokio::task::JoinHandle<Option<proto::Occurrence>>> {
    (0..n)
        .map(|_| {
            let mut c = client.clone();
            tokio::spawn(async move { claim(&mut c, "ns", wait_ms).await })
        })
        .collect()
}

#[tokio::test]
async fn a_waiting_worker_gets_the_schedule_promptly_when_it_becomes_due() {
    let redis = Redis::start().await;
    // A long re-check proves the wake-up comes from the timer armed by the upsert.
    let mut config = config(&redis.url());
    config.recheck_interval = Duration::from_secs(30);
    let service = Service::start_with(config).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;

    let waiter = spawn_waiters(&c, 1, 10_000).pop().expect("one");
    tokio::time::sleep(Duration::from_millis(100)).await;

    let due = redis_now(&mut conn).await + 400;
    let mut s = every("soon", 3600);
    s.start_time = Some(ts(due));
    upsert(&mut c, "ns", s).await;

    let occ = waiter
        .await
        .expect("task")
        .expect("woken with the schedule");
    assert_eq!(ms(&occ.due_time), due);
    let late = ms(&occ.claim_time) - due;
    // Claim time is Redis's clock; a few ms normally, generous for a loaded CI box.
    assert!((0..250).contains(&late), "claimed {late} ms after due");
}

#[tokio::test]
async fn an_upsert_through_another_replica_is_seen_by_the_bounded_recheck() {
    let redis = Redis::start().await;
    let mut config_a = config(&redis.url());
    config_a.recheck_interval = Duration::from_millis(300);
    let a = Service::start_with(config_a).await;
    let b = Service::start(&redis.url()).await;
    let ca = a.client().await;
    let mut cb = b.client().await;
    let mut conn = redis.conn().await;

    let started = Instant::now();
    let waiter = spawn_waiters(&ca, 1, 10_000).pop().expect("one");
    tokio::time::sleep(Duration::from_millis(100)).await;
    let due = redis_now(&mut conn).await + 100;
    let mut s = every("elsewhere", 3600);
    s.start_time = Some(ts(due));
    upsert(&mut cb, "ns", s).await;

    let occ = waiter
        .await
        .expect("task")
        .expect("seen through the re-check");
    assert_eq!(occ.schedule.expect("s").id, "elsewhere");
    assert!(ms(&occ.claim_time) >= due);
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn idle_waiters_send_nothing_to_redis_per_waiter() {
    let redis = Redis::start().await;
    let mut config = config(&redis.url());
    config.recheck_interval = Duration::from_millis(500);
    let service = Service::start_with(config).await;
    let c = service.client().await;
    let mut conn = redis.conn().await;

    let waiters = spawn_waiters(&c, 50, 8_000);
    // Let every waiter make its first claim attempt and park.
    tokio::time::sleep(Duration::from_millis(700)).await;
    reset_stats(&mut conn).await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let calls = script_calls(&mut conn).await;
    eprintln!("script calls: {calls}");
    // One timer re-check per 500 ms for the namespace, whatever the number of waiters:
    // about 6 in 3 s. Polling per waiter would be 50 per round.
    assert!(
        calls <= 10,
        "{calls} script calls in 3 s with 50 idle waiters"
    );
    assert!(calls >= 2, "the bounded re-check runs ({calls})");
    for w in waiters {
        w.abort();
    }
}

#[tokio::test]
async fn only_as_many_waiters_wake_as_there_are_due_occurrences() {
    let redis = Redis::start().await;
    let mut config = config(&redis.url());
    config.recheck_interval = Duration::from_secs(30);
    let service = Service::start_with(config).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;

    let waiters = spawn_waiters(&c, 20, 3_000);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let due = redis_now(&mut conn).await + 300;
    for id in ["x", "y", "z"] {
        let mut s = every(id, 3600);
        s.start_time = Some(ts(due));
        upsert(&mut c, "ns", s).await;
    }
    reset_stats(&mut conn).await;
    let mut claimed = Vec::new();
    let mut empty = 0;
    for w in waiters {
        match w.await.expect("task") {
            Some(occ) => claimed.push(occ.schedule.expect("s").id),
            None => empty += 1,
        }
    }
    claimed.sort();
    assert_eq!(claimed, ["x", "y", "z"]);
    assert_eq!(empty, 17);
    // Three claims, a peek or two by the timer, and at most a baton pass each; a
    // thundering herd would be 20 claims.
    let calls = script_calls(&mut conn).await;
    eprintln!("script calls: {calls}");
    assert!(
        calls <= 10,
        "{calls} script calls to hand out 3 occurrences"
    );
}

#[tokio::test]
async fn the_wait_is_capped_by_the_server_and_by_the_client_deadline() {
    let redis = Redis::start().await;
    let mut config = config(&redis.url());
    config.max_wait = Duration::from_millis(800);
    let service = Service::start_with(config).await;
    let mut c = service.client().await;

    // Server cap: asks for 60 s, answered empty after about 0.8 s.
    let started = Instant::now();
    assert!(claim(&mut c, "ns", 60_000).await.is_none());
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(750) && took < Duration::from_secs(5),
        "capped wait took {took:?}"
    );

    // Client deadline: 400 ms timeout, 60 s asked, cap raised: an empty OK answer
    // arrives before the deadline instead of DEADLINE_EXCEEDED/CANCELLED.
    let mut config2 = common::config(&redis.url());
    config2.max_wait = Duration::from_secs(60);
    let service2 = Service::start_with(config2).await;
    let mut c2 = service2.client().await;
    let mut request = tonic::Request::new(proto::ClaimDueScheduleRequest {
        namespace: "ns".into(),
        worker_id: "w".into(),
        wait: wait(60_000),
        lease: None,
    });
    request.set_timeout(Duration::from_millis(400));
    let started = Instant::now();
    let reply = c2
        .claim_due_schedule(request)
        .await
        .expect("empty answer, not an error");
    assert!(reply.into_inner().occurrence.is_none());
    assert!(started.elapsed() < Duration::from_millis(400));
}

#[tokio::test]
async fn a_cancelled_long_poll_consumes_nothing() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;

    // A worker gives up (drops its call) while waiting.
    let waiter = spawn_waiters(&c, 1, 30_000).pop().expect("one");
    tokio::time::sleep(Duration::from_millis(200)).await;
    waiter.abort();
    tokio::time::sleep(Duration::from_millis(100)).await;

    let due = redis_now(&mut conn).await + 200;
    let mut s = every("kept", 3600);
    s.start_time = Some(ts(due));
    upsert(&mut c, "ns", s).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    // The abandoned call claimed nothing: the occurrence is still there for a worker.
    let occ = claim(&mut c, "ns", 2_000).await.expect("still claimable");
    assert_eq!(occ.run_number, 1);
}
