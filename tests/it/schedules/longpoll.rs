//! Long-polling ClaimDueSchedule: woken by the timer a write arms, no per-waiter Redis
//! traffic, only as many wake-ups as due work, and deadlines honoured.

use std::time::Duration;

use deadpool_redis::redis::aio::MultiplexedConnection;

use futures::{stream::FuturesUnordered, StreamExt};

use crate::common::*;

/// A re-check interval no test outlasts: a waiter that gets work was woken by a timer.
const NO_RECHECK: Duration = Duration::from_secs(3600);

type Waiter = tokio::task::JoinHandle<Option<proto::Occurrence>>;

/// `n` workers long-polling namespace "ns" for `wait_ms`, once all are parked (each
/// ran its claim, and the namespace timer peeked).
async fn parked_waiters(
    client: &Client,
    conn: &mut MultiplexedConnection,
    n: u64,
    wait_ms: u64,
) -> Vec<Waiter> {
    let before = script_calls(conn).await;
    let waiters = (0..n)
        .map(|_| {
            let mut c = client.clone();
            tokio::spawn(async move { claim(&mut c, "ns", wait_ms).await })
        })
        .collect();
    wait_parked(conn, before, n).await;
    waiters
}

async fn parked_waiter(client: &Client, conn: &mut MultiplexedConnection, wait_ms: u64) -> Waiter {
    let mut waiters = parked_waiters(client, conn, 1, wait_ms).await;
    waiters.pop().expect("one")
}

/// Pins: a parked waiter is handed a schedule when it comes due, by the timer the
/// upsert armed (the re-check never runs), never before its due time.
#[tokio::test]
async fn a_waiting_worker_gets_the_schedule_when_it_becomes_due() {
    let redis = Redis::start().await;
    let mut config = config(&redis.url());
    config.recheck_interval = NO_RECHECK;
    let service = Service::start_with(config).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;

    let waiter = parked_waiter(&c, &mut conn, LONG_POLL_MS).await;

    let due = redis_now(&mut conn).await + SOON_MS;
    upsert(&mut c, "ns", every_hour_from("soon", due)).await;

    let occ = waiter
        .await
        .expect("task")
        .expect("woken with the schedule within the wait");
    assert_eq!(ms(&occ.due_time), due);
    // Claim time is Redis's clock: the one clock, so never early.
    assert!(ms(&occ.claim_time) >= due, "claimed before it was due");
}

/// Pins: an upsert through another replica reaches this one's waiter through that
/// replica's announcement (no re-check runs), within the waiter's wait.
#[tokio::test]
async fn an_upsert_through_another_replica_is_announced_to_the_waiter() {
    let redis = Redis::start().await;
    let mut config_a = config(&redis.url());
    config_a.recheck_interval = NO_RECHECK;
    let a = Service::start_with(config_a).await;
    let b = Service::start(&redis.url()).await;
    let ca = a.client().await;
    let mut cb = b.client().await;
    let mut conn = redis.conn().await;

    let waiter = parked_waiter(&ca, &mut conn, LONG_POLL_MS).await;
    let due = redis_now(&mut conn).await + SOON_MS;
    upsert(&mut cb, "ns", every_hour_from("elsewhere", due)).await;

    let occ = waiter
        .await
        .expect("task")
        .expect("announced within the wait");
    assert_eq!(occ.schedule.expect("s").id, "elsewhere");
    assert!(ms(&occ.claim_time) >= due);
}

/// Pins: idle waiters cost one Redis call per re-check for the whole namespace, not
/// one per waiter.
#[tokio::test]
async fn idle_waiters_send_nothing_to_redis_per_waiter() {
    const WAITERS: u64 = 50;
    const RECHECK_MS: i64 = 500;
    let redis = Redis::start().await;
    let mut config = config_without_background_work(&redis.url());
    config.recheck_interval = Duration::from_millis(RECHECK_MS as u64);
    let service = Service::start_with(config).await;
    let c = service.client().await;
    let mut conn = redis.conn().await;

    let waiters = parked_waiters(&c, &mut conn, WAITERS, 60_000).await;
    reset_stats(&mut conn).await;
    let from = redis_now(&mut conn).await;

    // Let the re-check run a few rounds.
    let patience = Patience::new("the bounded re-check to run");
    while script_calls(&mut conn).await < 4 {
        patience.wait().await;
    }
    let calls = script_calls(&mut conn).await;
    // Rounds by Redis's clock: a slow box only makes more of them, and this bound looser.
    let rounds = ((redis_now(&mut conn).await - from) / RECHECK_MS + 1) as u64;
    eprintln!("{calls} script calls in {rounds} re-check rounds");
    // One peek per round for the namespace, a few stragglers at most; polling per
    // waiter would be 50 a round.
    assert!(
        calls <= rounds + 5,
        "{calls} script calls in {rounds} re-check rounds with {WAITERS} idle waiters"
    );
    for w in waiters {
        w.abort();
    }
}

/// Pins: three due occurrences wake three of twenty waiters (a few script calls),
/// not a thundering herd of twenty claims; the other seventeen stay parked until the
/// service stops, when they answer empty.
#[tokio::test]
async fn only_as_many_waiters_wake_as_there_are_due_occurrences() {
    let redis = Redis::start().await;
    let mut config = config_without_background_work(&redis.url());
    config.recheck_interval = NO_RECHECK;
    let service = Service::start_with(config).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;

    let mut waiters: FuturesUnordered<Waiter> = parked_waiters(&c, &mut conn, 20, LONG_POLL_MS)
        .await
        .into_iter()
        .collect();
    let due = redis_now(&mut conn).await + SOON_MS;
    for id in ["x", "y", "z"] {
        upsert(&mut c, "ns", every_hour_from(id, due)).await;
    }
    reset_stats(&mut conn).await;
    let mut claimed = Vec::new();
    while claimed.len() < 3 {
        let answer = waiters.next().await.expect("a waiter").expect("task");
        let occ = answer.expect("no waiter answers empty while it waits");
        claimed.push(occ.schedule.expect("s").id);
    }
    claimed.sort();
    assert_eq!(claimed, ["x", "y", "z"]);
    // Three claims, a peek or two by the timer, and at most a baton pass each; a
    // thundering herd would be twenty claims.
    wait_quiet(&mut conn, 15).await;
    let calls = script_calls(&mut conn).await;
    eprintln!("script calls: {calls}");
    assert!(
        calls <= 10,
        "{calls} script calls to hand out 3 occurrences"
    );
    // Shutdown answers every parked long-poll, empty.
    service.stop().await;
    let mut empty = 0;
    while let Some(answer) = waiters.next().await {
        assert!(answer.expect("task").is_none(), "nothing else was due");
        empty += 1;
    }
    assert_eq!(empty, 17);
}

/// Pins: the server caps a long-poll's wait (it parks, then answers empty long before
/// the 60 s asked), and a client deadline shorter than the wait gets an empty OK, not
/// DEADLINE_EXCEEDED.
#[tokio::test]
async fn the_wait_is_capped_by_the_server_and_by_the_client_deadline() {
    let redis = Redis::start().await;
    let mut conn = redis.conn().await;
    let mut short_cap = config(&redis.url());
    short_cap.max_wait = Duration::from_millis(800);
    let service = Service::start_with(short_cap).await;
    let c = service.client().await;

    // Server cap: asks for 60 s (no client deadline), is answered empty after the cap.
    let capped = parked_waiter(&c, &mut conn, 60_000).await;
    let answer = within_patience("a wait capped at 0.8 s", capped)
        .await
        .expect("task");
    assert!(answer.is_none());

    // Client deadline: 3 s, 60 s asked, cap raised: an empty OK answer arrives before
    // the deadline instead of DEADLINE_EXCEEDED/CANCELLED.
    let mut config2 = config(&redis.url());
    config2.max_wait = Duration::from_secs(60);
    let service2 = Service::start_with(config2).await;
    let mut c2 = service2.client().await;
    let reply = c2
        .claim_due_schedule(with_deadline(
            claim_due_req("ns", 60_000),
            Duration::from_secs(3),
        ))
        .await
        .expect("empty answer, not an error");
    assert!(reply.into_inner().occurrence.is_none());
}

/// Pins: a long-poll the worker abandons claims nothing; what comes due afterwards is
/// still there for the next worker.
#[tokio::test]
async fn a_cancelled_long_poll_consumes_nothing() {
    let redis = Redis::start().await;
    let mut config = config(&redis.url());
    config.recheck_interval = Duration::from_millis(50);
    let service = Service::start_with(config).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;

    // A worker gives up (drops its call) while waiting; the namespace timer goes
    // idle once the service has let go of it.
    let waiter = parked_waiter(&c, &mut conn, 60_000).await;
    waiter.abort();
    wait_quiet(&mut conn, 15).await;

    let due = redis_now(&mut conn).await + SOON_MS;
    upsert(&mut c, "ns", every_hour_from("kept", due)).await;
    let patience = Patience::new("the schedule to come due");
    while redis_now(&mut conn).await < due {
        patience.wait().await;
    }
    // The abandoned call claimed nothing: the occurrence is still there for a worker.
    let occ = claim(&mut c, "ns", 0).await.expect("still claimable");
    assert_eq!(occ.run_number, 1);
}
