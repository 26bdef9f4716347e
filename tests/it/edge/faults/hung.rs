//! A hung Redis (`DEBUG SLEEP`): calls fail UNAVAILABLE side by side within about
//! one `--redis-timeout`, not one after another, and the service recovers as soon as
//! Redis answers again.

use std::sync::{
    atomic::{AtomicBool, Ordering},
    Arc,
};

use super::*;

/// Long enough that concurrent calls failing one timeout after another (the bug:
/// each waiter made its own full reconnect attempt behind one lock) would still be
/// running when it ends, short enough to keep the test cheap.
const SLEEP_SECS: u64 = 6;

/// More calls than the sleep has seconds, each bounded by a 1 s Redis timeout.
const CALLS: usize = 12;

/// Pins issue 12 item 5: during a `DEBUG SLEEP`, concurrent GetJob calls all fail
/// UNAVAILABLE before Redis wakes up (no call waits behind another's reconnect
/// attempt), and the first call after Redis wakes succeeds.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_calls_fail_together_while_redis_hangs_and_recover_at_once() {
    let redis = Redis::start().await;
    let addr = format!("127.0.0.1:{}", redis.port);
    let mut cfg = config(&redis.url());
    cfg.redis_timeout = Duration::from_secs(1);
    // One connection: once a health probe has timed out on it, every call below
    // meets the reconnect path (with more, some calls would use a connection still
    // open and time out on their own, whatever reconnection does).
    cfg.pool_size = 1;
    let service = Service::start_with(cfg).await;
    let c = service.client().await;
    let mut req = job("q", "j");
    req.job_id = "j".into();
    enqueue(&mut c.clone(), req).await;

    // The sleep is sent from a connection of its own; `awake` is set when Redis
    // answers it, i.e. when Redis is awake again.
    let awake = Arc::new(AtomicBool::new(false));
    let sleeper = {
        let awake = awake.clone();
        let mut conn = redis.conn().await;
        tokio::spawn(async move {
            let _: () = query(&mut conn, cmd("DEBUG").arg("SLEEP").arg(SLEEP_SECS)).await;
            awake.store(true, Ordering::SeqCst);
        })
    };
    // A health probe times out and drops the connection: the calls below must
    // reconnect.
    wait_health(&service, NOT_SERVING).await;

    let calls: Vec<_> = (0..CALLS)
        .map(|_| {
            let mut c = c.clone();
            let awake = awake.clone();
            tokio::spawn(async move {
                let req = proto::GetJobRequest {
                    namespace: "ns".into(),
                    job_id: "j".into(),
                };
                let r = c.get_job(with_deadline(req, CLIENT_DEADLINE)).await;
                (r, awake.load(Ordering::SeqCst))
            })
        })
        .collect();
    for (i, call) in calls.into_iter().enumerate() {
        let (r, redis_was_awake) = call.await.expect("task");
        assert_unavailable(&format!("GetJob {i}"), r, &addr);
        assert!(
            !redis_was_awake,
            "GetJob {i} was answered only after Redis woke up: calls waited for each other"
        );
    }
    assert!(
        !awake.load(Ordering::SeqCst),
        "every call failed while Redis still slept"
    );

    within_patience("DEBUG SLEEP", sleeper)
        .await
        .expect("sleeper");
    let job = c
        .clone()
        .get_job(with_deadline(
            proto::GetJobRequest {
                namespace: "ns".into(),
                job_id: "j".into(),
            },
            CLIENT_DEADLINE,
        ))
        .await
        .expect("the first call after Redis wakes succeeds")
        .into_inner();
    assert_eq!(job.job.expect("job").job_id, "j");
}

/// Concurrent single Enqueues into one namespace while Redis hangs: more than the
/// grouping lane sends at once (two script calls in flight, src/jobs/coalesce.rs).
const ENQUEUES: usize = 8;

/// One field of `INFO stats`.
async fn info_stat(
    conn: &mut deadpool_redis::redis::aio::MultiplexedConnection,
    field: &str,
) -> u64 {
    let info: String = query(conn, cmd("INFO").arg("stats")).await;
    info.lines()
        .find_map(|line| line.strip_prefix(&format!("{field}:")))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("INFO stats has no {field}"))
}

/// Pins issue 29 item 12: with redis-server stopped (SIGSTOP: connections are
/// accepted by the kernel, nothing is answered), every one of 8 concurrent Enqueues
/// into one namespace fails UNAVAILABLE, and the callers that waited in the grouping
/// lane get the failed group's answer instead of going out as a new group on
/// another connection to the hung Redis, one more timeout later. What shows it: no
/// new connection reached Redis (on the old code the third group reconnected,
/// `total_connections_received` counts it once Redis runs again).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn enqueues_waiting_in_the_lane_share_the_failed_groups_answer() {
    let redis = Redis::start().await;
    let addr = format!("127.0.0.1:{}", redis.port);
    let mut cfg = config_without_background_work(&redis.url());
    cfg.redis_timeout = Duration::from_secs(1);
    // One connection, and no health probe or dispatcher visit (which reconnect once
    // the connection has failed) during the test: any connection made is one the
    // Enqueues made.
    cfg.pool_size = 1;
    cfg.health_interval = Duration::from_secs(3600);
    cfg.recheck_interval = Duration::from_secs(3600);
    let service = Service::start_with(cfg).await;
    let c = service.client().await;
    enqueue(&mut c.clone(), job("q", "warm")).await;
    let mut conn = redis.conn().await;
    let connections = info_stat(&mut conn, "total_connections_received").await;

    redis.signal(libc::SIGSTOP);
    let calls: Vec<_> = (0..ENQUEUES)
        .map(|i| {
            let mut c = c.clone();
            tokio::spawn(async move {
                let mut req = job("q", "hung");
                req.job_id = format!("hung-{i}");
                c.enqueue(with_deadline(req, CLIENT_DEADLINE)).await
            })
        })
        .collect();
    let mut answers = Vec::new();
    for call in calls {
        answers.push(call.await.expect("task"));
    }
    redis.signal(libc::SIGCONT);

    for (i, r) in answers.into_iter().enumerate() {
        assert_unavailable(&format!("Enqueue {i}"), r, &addr);
    }
    // A round trip first: a connection accepted while Redis was stopped is taken in
    // by the time Redis answers the next command after it.
    let _: String = query(&mut conn, &mut cmd("PING")).await;
    let clients: String = query(&mut conn, cmd("CLIENT").arg("LIST")).await;
    assert_eq!(
        info_stat(&mut conn, "total_connections_received").await,
        connections,
        "no group went out on a new connection after the first groups failed:\n{clients}"
    );
}
