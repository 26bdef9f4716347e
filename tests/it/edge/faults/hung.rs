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
