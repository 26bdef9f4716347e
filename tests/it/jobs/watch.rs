//! WatchJob (issue 30): a job's changes as a stream of growing versions, resumed from
//! a version, heard across instances and across a Redis restart, ending NOT_FOUND
//! when the job goes; one read per change however many watch; the cap; and the
//! Work stream's cancel message, which rides on the same announcements.

use tonic::{Code, Status, Streaming};

use crate::common::*;
use proto::{work_request::Request as In, work_response::Response as Out};

type Watch = Streaming<proto::WatchJobResponse>;

async fn open_watch(c: &mut Client, id: &str, after_version: u64) -> Result<Watch, Status> {
    within_patience(
        "opening a WatchJob stream",
        c.watch_job(proto::WatchJobRequest {
            namespace: "ns".into(),
            job_id: id.into(),
            after_version,
            view: 0,
        }),
    )
    .await
    .map(tonic::Response::into_inner)
}

async fn watch(c: &mut Client, id: &str, after_version: u64) -> Watch {
    open_watch(c, id, after_version).await.expect("WatchJob")
}

/// The stream's next job, or how it ended.
async fn next(stream: &mut Watch) -> Result<Option<proto::Job>, Status> {
    let message = within_patience("the watcher's next message", stream.message()).await?;
    Ok(message.map(|m| m.job.expect("a job")))
}

async fn next_job(stream: &mut Watch) -> proto::Job {
    next(stream)
        .await
        .expect("the stream is healthy")
        .expect("the stream is open")
}

async fn extend(c: &mut Client, id: &str, token: &str) {
    c.extend_lease(proto::ExtendLeaseRequest {
        namespace: "ns".into(),
        job_id: id.into(),
        lease_token: token.into(),
        lease: Some(dur(600_000)),
        progress: None,
    })
    .await
    .expect("extend");
}

/// Waits until `n` replicas hold the job-changes subscription (one PSUBSCRIBE
/// each): changes from then on are heard as they are announced, not found by the
/// re-read that follows a (re)subscription.
async fn wait_subscribed(redis: &Redis, n: i64) {
    let mut conn = redis.conn().await;
    let patience = Patience::new(format!("{n} job-changes subscription(s)"));
    while query::<i64>(&mut conn, cmd("PUBSUB").arg("NUMPAT")).await != n {
        patience.wait().await;
    }
}

/// Enqueues job `id` in queue "q".
async fn enqueue_id(c: &mut Client, id: &str) {
    let mut req = job("q", "watched");
    req.job_id = id.into();
    enqueue(c, req).await;
}

#[tokio::test]
async fn a_watcher_sees_each_change_as_a_growing_version_until_completed() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    enqueue_id(&mut c, "w1").await;
    let mut stream = watch(&mut c, "w1", 0).await;
    let first = next_job(&mut stream).await;
    assert_eq!(state(&first), proto::JobState::Pending);
    assert!(first.version >= 1, "{first:?}");
    assert!(first.payload.is_empty(), "BASIC view by default");
    wait_subscribed(&redis, 1).await;

    let claimed = claim_job(&mut c, &["q"], 0, Some(600_000))
        .await
        .expect("claimed");
    let active = next_job(&mut stream).await;
    assert_eq!(state(&active), proto::JobState::Active);
    assert!(active.version > first.version, "{active:?}");

    extend(&mut c, "w1", &claimed.lease_token).await;
    let extended = next_job(&mut stream).await;
    assert_eq!(state(&extended), proto::JobState::Active);
    assert!(extended.version > active.version, "{extended:?}");

    ack_job(&mut c, "w1", &claimed.lease_token)
        .await
        .expect("ack");
    let done = next_job(&mut stream).await;
    assert_eq!(state(&done), proto::JobState::Completed);
    assert!(done.version > extended.version, "{done:?}");
    assert_eq!(done.version, get_job(&mut c, "w1").await.version);
}

#[tokio::test]
async fn a_watch_resumes_after_a_version_without_sending_it_again() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    enqueue_id(&mut c, "r1").await;
    let seen = get_job(&mut c, "r1").await.version;

    // Resumed before the current version: the current one at once.
    let mut behind = watch(&mut c, "r1", seen - 1).await;
    assert_eq!(next_job(&mut behind).await.version, seen);

    // Resumed at it: nothing until the job changes, then the new version.
    let mut resumed = watch(&mut c, "r1", seen).await;
    wait_subscribed(&redis, 1).await;
    claim_job(&mut c, &["q"], 0, None).await.expect("claimed");
    let changed = next_job(&mut resumed).await;
    assert!(changed.version > seen, "{changed:?}");
    assert_eq!(state(&changed), proto::JobState::Active);
}

#[tokio::test]
async fn a_change_made_through_another_instance_reaches_the_watcher() {
    let redis = Redis::start().await;
    let a = Service::start(&redis.url()).await;
    let b = Service::start(&redis.url()).await;
    let (mut ca, mut cb) = (a.client().await, b.client().await);
    enqueue_id(&mut cb, "x1").await;
    let mut stream = watch(&mut ca, "x1", 0).await;
    let first = next_job(&mut stream).await;
    wait_subscribed(&redis, 1).await;
    claim_job(&mut cb, &["q"], 0, None).await.expect("claimed");
    let changed = next_job(&mut stream).await;
    assert_eq!(state(&changed), proto::JobState::Active);
    assert!(changed.version > first.version);
}

#[tokio::test]
async fn a_watcher_sees_the_next_change_after_redis_restarts() {
    let mut redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    enqueue_id(&mut c, "rs1").await;
    let mut stream = watch(&mut c, "rs1", 0).await;
    let first = next_job(&mut stream).await;
    // The data survives the restart (an RDB the restarted server loads); the
    // subscription and the service's connections do not.
    let mut conn = redis.conn().await;
    let _: () = query(&mut conn, &mut cmd("SAVE")).await;
    drop(conn);
    redis.restart().await;

    let patience = Patience::new("a claim through the restarted Redis");
    let claimed = loop {
        match c.claim_job(claim_req(&["q"], 0, None)).await {
            Ok(r) if !r.get_ref().jobs.is_empty() => break r.into_inner().jobs.remove(0),
            Ok(r) => panic!("the job survived the restart: {r:?}"),
            Err(_) => patience.wait().await,
        }
    };
    let changed = next_job(&mut stream).await;
    assert_eq!(state(&changed), proto::JobState::Active);
    assert!(changed.version > first.version);
    // Subscribed again: later changes are announced as before.
    wait_subscribed(&redis, 1).await;
    extend(&mut c, "rs1", &claimed.lease_token).await;
    assert!(next_job(&mut stream).await.version > changed.version);
}

#[tokio::test]
async fn a_change_made_while_the_subscription_is_down_is_seen_once_it_is_back() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    enqueue_id(&mut c, "d1").await;
    let mut stream = watch(&mut c, "d1", 0).await;
    let first = next_job(&mut stream).await;
    wait_subscribed(&redis, 1).await;
    // Drop the replica's subscription and keep it from coming back: the claim's
    // announcement is heard by nobody.
    let mut conn = redis.conn().await;
    let _: () = query(
        &mut conn,
        cmd("ACL").arg(&["SETUSER", "default", "-psubscribe"]),
    )
    .await;
    let _: i64 = query(&mut conn, cmd("CLIENT").arg(&["KILL", "TYPE", "pubsub"])).await;
    wait_subscribed(&redis, 0).await;
    claim_job(&mut c, &["q"], 0, None).await.expect("claimed");
    // Once it is back, the watcher re-reads its job and sees what it missed.
    let _: () = query(
        &mut conn,
        cmd("ACL").arg(&["SETUSER", "default", "+psubscribe"]),
    )
    .await;
    let changed = next_job(&mut stream).await;
    assert_eq!(state(&changed), proto::JobState::Active);
    assert!(changed.version > first.version);
}

/// Pins: the subscription connects with the service's URL credentials and TLS
/// files: a TLS-only Redis, an ACL user in the URL, and a default user that may not
/// PSUBSCRIBE (so a subscription made without the URL's user would be refused).
#[tokio::test]
async fn the_subscription_uses_the_urls_acl_user_and_tls() {
    const PASSWORD: &str = "watch-acl-7c1e";
    let certs = Certs::generate();
    let redis = Redis::start_tls(&certs, "optional").await;
    let mut conn = redis.conn().await;
    let _: () = query(
        &mut conn,
        cmd("ACL").arg(
            &[
                "SETUSER",
                "watcher",
                "on",
                &format!(">{PASSWORD}"),
                "~*",
                "&*",
                "+@all",
            ][..],
        ),
    )
    .await;
    let _: () = query(
        &mut conn,
        cmd("ACL").arg(&["SETUSER", "default", "-psubscribe"]),
    )
    .await;
    let mut config = config(&format!(
        "rediss://watcher:{PASSWORD}@127.0.0.1:{}",
        redis.port
    ));
    config.redis_tls_ca = Some(certs.ca.clone());
    let service = Service::start_with(config).await;
    let mut c = service.client().await;
    enqueue_id(&mut c, "t1").await;
    let mut stream = watch(&mut c, "t1", 0).await;
    let first = next_job(&mut stream).await;
    wait_subscribed(&redis, 1).await;
    claim_job(&mut c, &["q"], 0, None).await.expect("claimed");
    assert!(next_job(&mut stream).await.version > first.version);
}

#[tokio::test]
async fn an_unknown_job_and_a_job_purged_while_watched_are_not_found() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let status = open_watch(&mut c, "nope", 0)
        .await
        .expect_err("no such job");
    assert_eq!(status.code(), Code::NotFound, "{status:?}");
    assert!(status.message().contains("nope"), "{status:?}");
    let status = open_watch(&mut c, "", 0).await.expect_err("no job id");
    assert_eq!(status.code(), Code::InvalidArgument, "{status:?}");
    assert!(status.message().contains("job_id"), "{status:?}");

    enqueue_id(&mut c, "p1").await;
    let mut stream = watch(&mut c, "p1", 0).await;
    next_job(&mut stream).await;
    c.purge_jobs(proto::PurgeJobsRequest {
        namespace: "ns".into(),
        queue: "q".into(),
        state: proto::JobState::Pending as i32,
        limit: 10,
        ..Default::default()
    })
    .await
    .expect("purge");
    let end = next(&mut stream).await.expect_err("the stream ends");
    assert_eq!(end.code(), Code::NotFound, "{end:?}");
}

#[tokio::test]
async fn two_hundred_watchers_of_one_job_cost_one_read_per_change() {
    let redis = Redis::start().await;
    let metrics = format!("127.0.0.1:{}", free_port());
    let mut config = config_without_background_work(&redis.url());
    config.metrics_listen = Some(metrics.clone());
    let service = Service::start_with(config).await;
    let mut c = service.client().await;
    enqueue_id(&mut c, "m1").await;
    let mut streams = Vec::new();
    for _ in 0..200 {
        let mut stream = watch(&mut c, "m1", 0).await;
        next_job(&mut stream).await;
        streams.push(stream);
    }
    // The replica's one pattern subscription is in place: from here each change is
    // heard once, whatever the number of watchers.
    wait_subscribed(&redis, 1).await;
    let reads = || async { scrape(&metrics).await.value("dueq_watch_reads_total") };
    let before = reads().await;

    let claimed = claim_job(&mut c, &["q"], 0, Some(600_000))
        .await
        .expect("claimed");
    let mut changes = 1;
    for _ in 0..3 {
        extend(&mut c, "m1", &claimed.lease_token).await;
        changes += 1;
    }
    ack_job(&mut c, "m1", &claimed.lease_token)
        .await
        .expect("ack");
    changes += 1;
    let last = get_job(&mut c, "m1").await.version;
    for stream in &mut streams {
        let mut job = next_job(stream).await;
        while job.version < last {
            job = next_job(stream).await;
        }
        assert_eq!(state(&job), proto::JobState::Completed);
    }
    let read = reads().await - before;
    // Each change read once (a renewal of the watch may add one); 200 watchers that
    // each read would be 200 a change.
    assert!(
        read >= 1.0 && read <= f64::from(changes) + 1.0,
        "{read} reads for {changes} changes"
    );
}

#[tokio::test]
async fn watches_beyond_max_watches_are_refused_naming_the_flag() {
    let redis = Redis::start().await;
    let mut config = config(&redis.url());
    config.max_watches = 2;
    let service = Service::start_with(config).await;
    let mut c = service.client().await;
    enqueue_id(&mut c, "c1").await;
    let first = watch(&mut c, "c1", 0).await;
    let _second = watch(&mut c, "c1", 0).await;
    let status = open_watch(&mut c, "c1", 0).await.expect_err("over the cap");
    assert_eq!(status.code(), Code::ResourceExhausted, "{status:?}");
    assert!(status.message().contains("--max-watches"), "{status:?}");
    // A closed stream gives its place back.
    drop(first);
    let patience = Patience::new("a place under --max-watches");
    while open_watch(&mut c, "c1", 0).await.is_err() {
        patience.wait().await;
    }
}

#[tokio::test]
async fn a_work_stream_is_told_once_of_a_cancel_of_a_job_it_holds() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    enqueue_id(&mut c, "k1").await;
    let (tx, mut work) = open_work(&mut c, "q").await;
    let Out::Job(held) = next_work(&mut work).await else {
        panic!("expected the job")
    };
    // The subscription must be up before the cancel is announced.
    wait_subscribed(&redis, 1).await;
    let cancelled = c
        .cancel_job(proto::CancelJobRequest {
            namespace: "ns".into(),
            job_id: "k1".into(),
        })
        .await
        .expect("CancelJob of the held job")
        .into_inner()
        .job
        .expect("the job");
    assert!(cancelled.cancel_requested, "{cancelled:?}");
    match next_work(&mut work).await {
        Out::Cancel(lease) => {
            assert_eq!(lease.job_id, "k1");
            assert_eq!(lease.lease_token, held.lease_token);
        }
        other => panic!("expected the cancel, got {other:?}"),
    }
    // Told once: an extend saves the record again with the cancel asked, which is
    // announced again. A watcher on this instance seeing that version means the
    // instance heard it.
    let mut watcher = watch(&mut c, "k1", 0).await;
    let version = next_job(&mut watcher).await.version;
    let extended = c
        .extend_lease(proto::ExtendLeaseRequest {
            namespace: "ns".into(),
            job_id: "k1".into(),
            lease_token: held.lease_token.clone(),
            lease: Some(dur(600_000)),
            progress: None,
        })
        .await
        .expect("extend")
        .into_inner();
    assert!(extended.cancel_requested, "the extend's reply tells it too");
    assert!(next_job(&mut watcher).await.version > version);
    tx.send(work_request(In::Ack(proto::JobLease {
        job_id: "k1".into(),
        lease_token: held.lease_token.clone(),
        result: Vec::new(),
    })))
    .await
    .expect("ack");
    match next_work(&mut work).await {
        Out::Ack(a) => assert_eq!(a.code, 0, "{a:?}"),
        other => panic!("expected the ack's answer and no second cancel, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs grpcurl"]
async fn the_docs_watch_example_prints_the_finished_job_once() {
    crate::common::tools::require("grpcurl");
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let addr = service.addr.to_string();
    let commands = crate::doc_examples::commands_between("watch-example");
    assert_eq!(commands.len(), 3, "{commands:?}");
    for command in &commands[..2] {
        let (ok, text) = tokio::task::block_in_place(|| crate::doc_examples::run(command, &addr));
        assert!(ok, "{command}\n{text}");
    }
    let (ok, text) = tokio::task::block_in_place(|| crate::doc_examples::run(&commands[2], &addr));
    assert!(!ok, "-max-time ends the stream:\n{text}");
    assert!(text.contains("DeadlineExceeded"), "{text}");
    assert_eq!(
        text.matches("\"version\"").count(),
        1,
        "one message:\n{text}"
    );
    assert!(text.contains("JOB_STATE_CANCELLED"), "{text}");
}
