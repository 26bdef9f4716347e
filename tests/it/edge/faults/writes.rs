//! Writes Redis cannot take: grouped enqueues when it dies, any write when it is out
//! of memory, and jobs whose callers gave up while it was paused.

use std::time::Duration;

use deadpool_redis::redis::aio::MultiplexedConnection;

use super::*;

async fn set_maxmemory(conn: &mut MultiplexedConnection, bytes: u64) {
    let _: () = query(conn, cmd("CONFIG").arg("SET").arg("maxmemory").arg(bytes)).await;
}

/// Concurrent single Enqueues share script calls; when Redis dies every caller in a
/// shared call gets its own UNAVAILABLE before its client gives up (none hangs, none
/// is told it succeeded), and after the restart the same service enqueues again.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn grouped_enqueues_each_get_unavailable_when_redis_dies_then_recover() {
    let mut redis = Redis::start().await;
    let addr = format!("127.0.0.1:{}", redis.port);
    let service = Service::start_with(failing_fast(&redis.url())).await;
    let c = service.client().await;
    enqueue(&mut c.clone(), job("q", "warm")).await;

    redis.kill();
    let calls: Vec<_> = (0..64)
        .map(|i| {
            let mut c = c.clone();
            tokio::spawn(async move {
                c.enqueue(with_deadline(
                    job("q", &format!("down-{i}")),
                    CLIENT_DEADLINE,
                ))
                .await
                .map(|r| r.into_inner())
            })
        })
        .collect();
    for (i, call) in calls.into_iter().enumerate() {
        let r = call.await.expect("task");
        assert_unavailable(&format!("enqueue {i}"), r, &addr);
    }

    redis.restart().await;
    wait_health(&service, SERVING).await;
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
    upsert(&mut c, "ns", every("before", 60)).await;
    enqueue(&mut c, job("q", "before")).await;
    let before = snapshot(&mut conn).await;

    set_maxmemory(&mut conn, 1).await;
    let refused = |what: &str, status: Status| {
        assert_eq!(status.code(), Code::ResourceExhausted, "{what}: {status:?}");
        assert!(
            status.message().contains("out of memory") && status.message().contains("maxmemory"),
            "{what}: {}",
            status.message()
        );
    };
    let r = upsert_with_deadline(&mut c, "ns", every("during", 60)).await;
    refused("upsert", r.expect_err("upsert must be refused"));
    let r = c
        .enqueue(with_deadline(job("q", "during"), CLIENT_DEADLINE))
        .await;
    refused("enqueue", r.expect_err("enqueue must be refused"));
    let batch = proto::EnqueueBatchRequest {
        namespace: "ns".into(),
        jobs: vec![job("q", "b1"), job("q", "b2")],
    };
    let r = c.enqueue_batch(with_deadline(batch, CLIENT_DEADLINE)).await;
    refused("batch", r.expect_err("batch must be refused"));

    set_maxmemory(&mut conn, 0).await;
    assert_eq!(
        snapshot(&mut conn).await,
        before,
        "the refused calls wrote nothing"
    );
    upsert_with_deadline(&mut c, "ns", every("after", 60))
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
/// (The pause and the gaps are wide so a loaded box still sends and gives up in order.)
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_job_whose_caller_gave_up_before_it_was_sent_is_not_enqueued() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let c = service.client().await;
    let mut conn = redis.conn().await;
    enqueue(&mut c.clone(), job("q", "warm")).await;

    let _: () = cmd("CLIENT")
        .arg("PAUSE")
        .arg(3_000)
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
            c.enqueue(with_deadline(req, CLIENT_DEADLINE)).await
        }));
        // Real time for the call to reach Redis and block there, before the next
        // goes out: Redis is paused, so nothing there can be watched meanwhile.
        #[allow(clippy::disallowed_methods)]
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    // These wait behind them and give up long before Redis answers.
    let gave_up: Vec<_> = (0..20)
        .map(|i| {
            let mut c = c.clone();
            tokio::spawn(async move {
                let mut req = job("q", "late");
                req.job_id = format!("gave-up-{i}");
                c.enqueue(with_deadline(req, Duration::from_millis(500)))
                    .await
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
        let sent = exists(&mut conn, &format!("dueq:{{ns}}:j:sent-{i}")).await;
        assert!(sent, "sent-{i} was in flight and is enqueued");
    }
    // The service has stopped sending scripts: a gave-up job sent after the pause
    // would have landed by now.
    wait_quiet(&mut conn, 10).await;
    for i in 0..20 {
        let enqueued = exists(&mut conn, &format!("dueq:{{ns}}:j:gave-up-{i}")).await;
        assert!(!enqueued, "gave-up-{i}: its caller was told it failed");
    }
}
