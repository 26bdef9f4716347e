//! Long-polls across replicas (issue 29): waiters learn of work written through
//! another replica from its announcement, a (re)subscription re-reads what they wait
//! on, and the only periodic Redis work is a safety net of a fixed size per interval,
//! however many namespaces wait.

use std::time::Duration;

use deadpool_redis::redis::aio::MultiplexedConnection;
use dueq::probe::Keys;

use crate::common::*;

/// A re-check no test outlasts: what wakes a waiter is not the safety net.
const NO_RECHECK: Duration = Duration::from_secs(3600);

fn in_ns(namespace: &str, queue: &str) -> proto::EnqueueRequest {
    let mut req = job(queue, "w");
    req.namespace = namespace.into();
    req
}

fn claim_in(namespace: &str, queue: &str, wait_ms: u64) -> proto::ClaimJobRequest {
    let mut req = claim_req(&[queue], wait_ms, None);
    req.namespace = namespace.into();
    req
}

async fn pause(client: &mut Client, queue: &str) {
    client
        .pause_queue(proto::PauseQueueRequest {
            namespace: "ns".into(),
            queue: queue.into(),
        })
        .await
        .expect("pause");
}

/// A job of a paused queue that then becomes claimable behind every replica's back
/// (its `paused` flag deleted by hand, as an older dueq or a restore might): nobody
/// announces it.
async fn resumed_unannounced(conn: &mut MultiplexedConnection, queue: &str) {
    let _: i64 = query(
        conn,
        cmd("HDEL")
            .arg(Keys::new("dueq", "ns").queue_state(queue))
            .arg("paused"),
    )
    .await;
}

/// Pins: a waiter on one replica gets a job enqueued through another at once, with
/// no re-check to find it (on main it waited out its wait and answered empty).
#[tokio::test]
async fn an_enqueue_through_another_replica_wakes_a_waiter_with_no_recheck() {
    let redis = Redis::start().await;
    let mut ca = config(&redis.url());
    ca.recheck_interval = NO_RECHECK;
    let a = Service::start_with(ca).await;
    let b = Service::start(&redis.url()).await;
    let mut client_a = a.client().await;
    let mut client_b = b.client().await;
    let mut conn = redis.conn().await;
    let before = script_calls(&mut conn).await;
    let waiter = tokio::spawn(async move { claim_job(&mut client_a, &["x"], 20_000, None).await });
    wait_parked(&mut conn, before, 1).await;
    let e = enqueue(&mut client_b, job("x", "elsewhere")).await;
    let got = waiter
        .await
        .expect("task")
        .expect("woken by the announcement");
    assert_eq!(got.job_id, e.job_id);
}

/// A waiter parked on one replica (re-checking every `recheck`) for queue "held",
/// whose job became claimable behind every replica's back; and that job's id.
struct Held {
    _redis: Redis,
    _service: Service,
    conn: MultiplexedConnection,
    waiter: tokio::task::JoinHandle<Option<proto::ClaimedJob>>,
    job_id: String,
}

async fn held_job_unannounced(recheck: Duration) -> Held {
    let redis = Redis::start().await;
    let mut ca = config(&redis.url());
    ca.recheck_interval = recheck;
    let service = Service::start_with(ca).await;
    let mut client = service.client().await;
    let mut conn = redis.conn().await;
    pause(&mut client, "held").await;
    let e = enqueue(&mut client, job("held", "w")).await;
    let before = script_calls(&mut conn).await;
    let waiter = tokio::spawn(async move { claim_job(&mut client, &["held"], 20_000, None).await });
    wait_parked(&mut conn, before, 1).await;
    resumed_unannounced(&mut conn, "held").await;
    Held {
        _redis: redis,
        _service: service,
        conn,
        waiter,
        job_id: e.job_id,
    }
}

/// Pins the safety net: work no replica announced is still found, by the
/// re-check, within the waiter's wait.
#[tokio::test]
async fn unannounced_work_is_found_by_the_safety_net() {
    let held = held_job_unannounced(Duration::from_millis(100)).await;
    let got = held
        .waiter
        .await
        .expect("task")
        .expect("found by the re-check");
    assert_eq!(got.job_id, held.job_id);
}

/// Pins: when the replica's subscription is lost (and announcements with it), its
/// re-subscription makes every waiting timer read Redis once.
#[tokio::test]
async fn a_lost_subscription_rereads_what_waiters_wait_on() {
    let mut held = held_job_unannounced(NO_RECHECK).await;
    let killed: i64 = query(
        &mut held.conn,
        cmd("CLIENT").arg("KILL").arg("TYPE").arg("pubsub"),
    )
    .await;
    assert!(
        killed >= 1,
        "the replica holds a subscription from the start"
    );
    let got = held
        .waiter
        .await
        .expect("task")
        .expect("found after the re-subscription");
    assert_eq!(got.job_id, held.job_id);
}

/// Pins item 6: idle long-polls in many namespaces cost a fixed number of Redis
/// calls per re-check interval for the whole replica (main: one peek per namespace
/// per interval, 300 a round here).
#[tokio::test]
async fn idle_long_polls_in_many_namespaces_cost_a_fixed_amount_per_interval() {
    const NAMESPACES: usize = 300;
    const RECHECK_MS: i64 = 100;
    let redis = Redis::start().await;
    let mut config = config_without_background_work(&redis.url());
    config.recheck_interval = Duration::from_millis(RECHECK_MS as u64);
    let service = Service::start_with(config).await;
    let client = service.client().await;
    let mut conn = redis.conn().await;
    let before = script_calls(&mut conn).await;
    let waiters: Vec<_> = (0..NAMESPACES)
        .map(|i| {
            let mut c = client.clone();
            tokio::spawn(async move {
                c.claim_job(claim_in(&format!("idle{i}"), "q", 60_000))
                    .await
            })
        })
        .collect();
    // Each parks after its claim and its timer's first peek.
    wait_parked(&mut conn, before, 2 * NAMESPACES as u64 - 1).await;
    reset_stats(&mut conn).await;
    let from = redis_now(&mut conn).await;
    let patience = Patience::new("ten re-check intervals to pass");
    while redis_now(&mut conn).await - from < 10 * RECHECK_MS {
        patience.wait().await;
    }
    let calls = script_calls(&mut conn).await;
    let rounds = ((redis_now(&mut conn).await - from) / RECHECK_MS + 2) as u64;
    let bound = rounds * dueq::probe::RECHECK_BATCH as u64;
    eprintln!("{calls} script calls in {rounds} rounds with {NAMESPACES} idle namespaces");
    assert!(
        calls <= bound,
        "{calls} script calls in {rounds} re-check rounds: more than {bound}"
    );
    // And they still wake: a job in one of them reaches its waiter.
    let mut c = client.clone();
    let e = enqueue(&mut c, in_ns("idle7", "q")).await;
    let mut waiters = waiters;
    let got = waiters
        .swap_remove(7)
        .await
        .expect("task")
        .expect("claim")
        .into_inner();
    assert_eq!(got.jobs.first().map(|j| j.job_id.clone()), Some(e.job_id));
    for w in waiters {
        w.abort();
    }
}

/// Pins item 5's other half: a replica that served many namespaces and is now idle
/// checks a fixed number of them per monitor look, not every one (main: 200 a look).
#[tokio::test]
async fn an_idle_replica_checks_a_few_namespaces_per_look() {
    const NAMESPACES: usize = 200;
    const CHECK_MS: i64 = 100;
    let redis = Redis::start().await;
    let mut config = config_without_background_work(&redis.url());
    config.check_interval = Duration::from_millis(CHECK_MS as u64);
    let service = Service::start_with(config).await;
    let mut client = service.client().await;
    let mut conn = redis.conn().await;
    for i in 0..NAMESPACES {
        enqueue(&mut client, in_ns(&format!("used{i}"), "q")).await;
    }
    reset_stats(&mut conn).await;
    let from = redis_now(&mut conn).await;
    let patience = Patience::new("thirty monitor looks to pass");
    while redis_now(&mut conn).await - from < 30 * CHECK_MS {
        patience.wait().await;
    }
    let calls = script_calls(&mut conn).await;
    let looks = ((redis_now(&mut conn).await - from) / CHECK_MS + 2) as u64;
    // One look may still check all of them (used since their last check).
    let bound = NAMESPACES as u64 + looks * dueq::probe::MONITOR_IDLE_BATCH as u64;
    eprintln!("{calls} script calls in {looks} looks with {NAMESPACES} idle namespaces");
    assert!(
        calls <= bound,
        "{calls} script calls in {looks} looks: more than {bound}"
    );
}
