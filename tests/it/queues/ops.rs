//! Inspection and queue controls (issue 14): ListNamespaces, ListQueues and its
//! counts after every kind of transition, PauseQueue / ResumeQueue with waiting
//! long-polls, RetryDeadJobs and PurgeJobs in bounded batches and under concurrent
//! callers, Migrate's recount, and the bad input of each.

use std::collections::HashSet;

use tonic::Code;

use crate::common::*;

async fn queues(c: &mut Client, ns: &str) -> Vec<proto::QueueInfo> {
    c.list_queues(proto::ListQueuesRequest {
        namespace: ns.into(),
        ..Default::default()
    })
    .await
    .expect("list queues")
    .into_inner()
    .queues
}

/// (pending, delayed, active, dead) of a queue of namespace "ns".
async fn counts(c: &mut Client, queue: &str) -> (u64, u64, u64, u64) {
    let q = listed_queue(c, queue).await;
    assert!(q.counted, "{q:?}");
    (q.pending, q.delayed, q.active, q.dead)
}

fn one_attempt(queue: &str, name: &str) -> proto::EnqueueRequest {
    proto::EnqueueRequest {
        max_attempts: Some(1),
        ..job(queue, name)
    }
}

/// Makes `n` dead jobs in `queue` (one attempt each, failed).
async fn dead_jobs(c: &mut Client, queue: &str, n: usize) -> Vec<String> {
    let mut ids = Vec::new();
    for i in 0..n {
        ids.push(
            enqueue(c, one_attempt(queue, &format!("d{i}")))
                .await
                .job_id,
        );
    }
    let mut left = n;
    while left > 0 {
        let claimed = c
            .claim_job(proto::ClaimJobRequest {
                max_jobs: 100,
                acks: vec![],
                ..claim_req(&[queue], 0, None)
            })
            .await
            .expect("claim")
            .into_inner()
            .jobs;
        assert!(!claimed.is_empty(), "{left} jobs left to kill");
        for j in claimed {
            fail_job(c, &j.job_id, &j.lease_token, "boom")
                .await
                .expect("fail");
            left -= 1;
        }
    }
    ids
}

async fn retry_dead(c: &mut Client, queue: &str, limit: u32) -> proto::RetryDeadJobsResponse {
    c.retry_dead_jobs(proto::RetryDeadJobsRequest {
        namespace: "ns".into(),
        queue: queue.into(),
        limit,
        ..Default::default()
    })
    .await
    .expect("retry dead jobs")
    .into_inner()
}

async fn purge(
    c: &mut Client,
    queue: &str,
    state: proto::JobState,
    limit: u32,
) -> proto::PurgeJobsResponse {
    c.purge_jobs(proto::PurgeJobsRequest {
        namespace: "ns".into(),
        queue: queue.into(),
        state: state as i32,
        limit,
        ..Default::default()
    })
    .await
    .expect("purge")
    .into_inner()
}

async fn pause(c: &mut Client, queue: &str, paused: bool) -> bool {
    if paused {
        c.pause_queue(proto::PauseQueueRequest {
            namespace: "ns".into(),
            queue: queue.into(),
        })
        .await
        .expect("pause")
        .into_inner()
        .changed
    } else {
        c.resume_queue(proto::ResumeQueueRequest {
            namespace: "ns".into(),
            queue: queue.into(),
        })
        .await
        .expect("resume")
        .into_inner()
        .changed
    }
}

/// Enqueue 3, claim 1, ack 1 -> pending 2; a delayed job, a cancel; queues and
/// namespaces page by name; the oldest pending age is reported.
#[tokio::test]
async fn counts_are_exact_after_known_operations() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    for name in ["a", "b", "c"] {
        enqueue(&mut c, job("q", name)).await;
    }
    assert_eq!(counts(&mut c, "q").await, (3, 0, 0, 0));
    let claimed = claim_job(&mut c, &["q"], 0, None).await.expect("a job");
    assert_eq!(counts(&mut c, "q").await, (2, 0, 1, 0));
    ack_job(&mut c, &claimed.job_id, &claimed.lease_token)
        .await
        .expect("ack");
    assert_eq!(counts(&mut c, "q").await, (2, 0, 0, 0));

    let mut later = job("q", "later");
    later.when = Some(proto::enqueue_request::When::Delay(dur(3_600_000)));
    let later = enqueue(&mut c, later).await.job_id;
    assert_eq!(counts(&mut c, "q").await, (2, 1, 0, 0));
    c.cancel_job(proto::CancelJobRequest {
        namespace: "ns".into(),
        job_id: later,
    })
    .await
    .expect("cancel");
    assert_eq!(counts(&mut c, "q").await, (2, 0, 0, 0));

    let q = listed_queue(&mut c, "q").await;
    assert!(!q.paused);
    let age = q.oldest_pending_age.expect("a pending job has an age");
    assert!(age.seconds >= 0 && age.nanos >= 0, "{age:?}");

    // Paging: queues and namespaces by name.
    for queue in ["b", "a"] {
        enqueue(&mut c, job(queue, "x")).await;
    }
    let mut other = job("q", "x");
    other.namespace = "other".into();
    enqueue(&mut c, other).await;
    let first = c
        .list_queues(proto::ListQueuesRequest {
            namespace: "ns".into(),
            page_size: 2,
            page_token: String::new(),
        })
        .await
        .expect("page 1")
        .into_inner();
    let names: Vec<_> = first.queues.iter().map(|q| q.queue.as_str()).collect();
    assert_eq!(names, ["a", "b"]);
    assert!(first.read_time.is_some());
    let second = c
        .list_queues(proto::ListQueuesRequest {
            namespace: "ns".into(),
            page_size: 2,
            page_token: first.next_page_token,
        })
        .await
        .expect("page 2")
        .into_inner();
    let names: Vec<_> = second.queues.iter().map(|q| q.queue.as_str()).collect();
    assert_eq!(names, ["q"]);
    assert!(second.next_page_token.is_empty());
    assert!(queues(&mut c, "nothing-here").await.is_empty());

    let page = c
        .list_namespaces(proto::ListNamespacesRequest {
            page_size: 1,
            page_token: String::new(),
        })
        .await
        .expect("namespaces")
        .into_inner();
    assert_eq!(page.namespaces, ["ns"]);
    let page = c
        .list_namespaces(proto::ListNamespacesRequest {
            page_size: 1,
            page_token: page.next_page_token,
        })
        .await
        .expect("namespaces")
        .into_inner();
    assert_eq!(page.namespaces, ["other"]);
    assert!(page.next_page_token.is_empty());
}

/// An expired lease taken back by a claim, a failure retried now, one retried later,
/// and the last attempt going dead each move the counts.
#[tokio::test]
async fn counts_follow_lease_expiry_retries_and_death() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut req = job("q", "flaky");
    req.max_attempts = Some(3);
    let id = enqueue(&mut c, req).await.job_id;

    let first = claim_job(&mut c, &["q"], 0, Some(200))
        .await
        .expect("claimed");
    assert_eq!(counts(&mut c, "q").await, (0, 0, 1, 0));
    // The lease expires; the next claim takes it back (pending) and hands it out.
    let second = claim_job(&mut c, &["q"], LONG_POLL_MS, None)
        .await
        .expect("re-handed");
    assert_eq!((second.job_id.as_str(), second.attempt), (id.as_str(), 2));
    assert_ne!(second.lease_token, first.lease_token);
    assert_eq!(counts(&mut c, "q").await, (0, 0, 1, 0));

    // A failure with a later retry: delayed.
    c.fail_job(proto::FailJobRequest {
        namespace: "ns".into(),
        job_id: id.clone(),
        lease_token: second.lease_token.clone(),
        error: "later".into(),
        retry_after: Some(dur(3_600_000)),
        ..Default::default()
    })
    .await
    .expect("fail");
    assert_eq!(counts(&mut c, "q").await, (0, 1, 0, 0));

    // An expired lease of a job on its last attempt: dead when taken back.
    let mut last = job("q", "last");
    last.max_attempts = Some(1);
    let last = enqueue(&mut c, last).await.job_id;
    let held = claim_job(&mut c, &["q"], 0, Some(200))
        .await
        .expect("claimed");
    assert_eq!(held.job_id, last);
    assert_eq!(counts(&mut c, "q").await, (0, 1, 1, 0));
    let patience = Patience::new("the expired lease to be taken back");
    loop {
        // Each empty claim reclaims what has expired.
        assert!(claim_job(&mut c, &["q"], 0, None).await.is_none());
        if counts(&mut c, "q").await == (0, 1, 0, 1) {
            break;
        }
        patience.wait().await;
    }
    assert_eq!(state(&get_job(&mut c, &last).await), proto::JobState::Dead);
}

/// A paused queue: enqueues land, claims skip it, a long-poll waiting on it is not
/// woken for its jobs (it answers empty at its deadline) while one waiting on it and
/// another queue gets the other queue's job; resuming wakes a waiting long-poll.
#[tokio::test]
async fn a_paused_queue_is_skipped_and_its_waiters_are_not_woken_for_it() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    assert!(pause(&mut c, "q", true).await);
    assert!(!pause(&mut c, "q", true).await, "paused already");
    let q = listed_queue(&mut c, "q").await;
    assert!(q.paused, "a queue paused before its first job is listed");

    // Each waiter below is parked (its claim found nothing) before the write that
    // concerns it, so what it gets comes through the wake-up path.
    let mut conn = redis.conn().await;
    let mut waiter = service.client().await;
    let before = script_calls(&mut conn).await;
    let waiting = tokio::spawn(async move { claim_job(&mut waiter, &["q"], 1_500, None).await });
    wait_parked(&mut conn, before, 1).await;
    let id = enqueue(&mut c, job("q", "held")).await.job_id;
    assert!(
        waiting.await.expect("join").is_none(),
        "the waiter was not handed the paused queue's job"
    );
    assert!(claim_job(&mut c, &["q"], 0, None).await.is_none());
    assert_eq!(counts(&mut c, "q").await, (1, 0, 0, 0));

    // Waiting on a paused and an unpaused queue: the unpaused one's job comes.
    let mut waiter = service.client().await;
    let before = script_calls(&mut conn).await;
    let waiting =
        tokio::spawn(async move { claim_job(&mut waiter, &["q", "r"], LONG_POLL_MS, None).await });
    wait_parked(&mut conn, before, 1).await;
    let other = enqueue(&mut c, job("r", "free")).await.job_id;
    let got = waiting.await.expect("join").expect("r's job");
    assert_eq!(got.job_id, other);

    // Resuming wakes a waiter on the queue, which gets the held job.
    let mut waiter = service.client().await;
    let before = script_calls(&mut conn).await;
    let waiting =
        tokio::spawn(async move { claim_job(&mut waiter, &["q"], LONG_POLL_MS, None).await });
    wait_parked(&mut conn, before, 1).await;
    assert!(pause(&mut c, "q", false).await);
    assert!(!pause(&mut c, "q", false).await, "resumed already");
    let got = waiting.await.expect("join").expect("the held job");
    assert_eq!(got.job_id, id);
    assert!(!listed_queue(&mut c, "q").await.paused);
}

/// More dead jobs than one call retries: calls of `limit` (each run as several
/// bounded scripts) until `more` is false, then a repeated call finds nothing
/// (idempotent).
#[tokio::test]
async fn retry_dead_jobs_works_in_bounded_calls() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let ids = dead_jobs(&mut c, "q", 130).await;
    assert_eq!(counts(&mut c, "q").await, (0, 0, 0, 130));
    let mut calls = Vec::new();
    loop {
        let r = retry_dead(&mut c, "q", 60).await;
        calls.push((r.retried, r.more));
        if !r.more {
            break;
        }
    }
    assert_eq!(calls, [(60, true), (60, true), (10, false)]);
    let again = retry_dead(&mut c, "q", 10).await;
    assert_eq!((again.retried, again.more), (0, false));
    assert_eq!(counts(&mut c, "q").await, (130, 0, 0, 0));
    for id in &ids {
        let j = get_job(&mut c, id).await;
        assert_eq!((state(&j), j.attempts), (proto::JobState::Pending, 0));
        assert_eq!(j.errors.len(), 1, "the error history is kept");
    }
}

/// Two callers retrying one queue's dead jobs at once never retry a job twice.
#[tokio::test]
async fn concurrent_retry_dead_jobs_retry_each_job_once() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    dead_jobs(&mut c, "q", 120).await;
    let mut tasks = Vec::new();
    for _ in 0..2 {
        let mut caller = service.client().await;
        tasks.push(tokio::spawn(async move {
            let mut total = 0;
            loop {
                let r = retry_dead(&mut caller, "q", 7).await;
                total += r.retried;
                if !r.more {
                    return total;
                }
            }
        }));
    }
    let mut total = 0;
    for task in tasks {
        total += task.await.expect("join");
    }
    assert_eq!(total, 120, "each dead job retried by exactly one call");
    assert_eq!(counts(&mut c, "q").await, (120, 0, 0, 0));
    // Every job is claimable exactly once.
    let mut seen = HashSet::new();
    while let Some(j) = claim_job(&mut c, &["q"], 0, None).await {
        assert_eq!(j.attempt, 1);
        assert!(seen.insert(j.job_id), "a job handed out twice");
    }
    assert_eq!(seen.len(), 120);
}

/// PurgeJobs deletes pending (over several calls), delayed and dead jobs of one
/// queue, leaving the others; the jobs are gone and the counts follow.
#[tokio::test]
async fn purge_jobs_deletes_one_state_in_bounded_calls() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let dead = dead_jobs(&mut c, "q", 3).await;
    let mut pending = Vec::new();
    for i in 0..12 {
        let mut req = job("q", &format!("p{i}"));
        req.priority = i % 3;
        req.dedup_key = format!("k{i}");
        req.dedup_ttl = Some(dur(3_600_000));
        pending.push(enqueue(&mut c, req).await.job_id);
    }
    let mut later = job("q", "later");
    later.when = Some(proto::enqueue_request::When::Delay(dur(3_600_000)));
    let later = enqueue(&mut c, later).await.job_id;
    let kept = enqueue(&mut c, job("other", "kept")).await.job_id;
    // One pending job is cancelled: its stale ready entry is dropped on the way.
    c.cancel_job(proto::CancelJobRequest {
        namespace: "ns".into(),
        job_id: pending[11].clone(),
    })
    .await
    .expect("cancel");
    assert_eq!(counts(&mut c, "q").await, (11, 1, 0, 3));

    let mut purged = 0;
    let mut calls = 0;
    loop {
        let r = purge(&mut c, "q", proto::JobState::Pending, 5).await;
        purged += r.purged;
        calls += 1;
        assert!(r.purged <= 5);
        if !r.more {
            break;
        }
    }
    assert_eq!(purged, 11);
    assert!(calls >= 3, "{calls} calls");
    assert_eq!(counts(&mut c, "q").await, (0, 1, 0, 3));
    let again = purge(&mut c, "q", proto::JobState::Pending, 5).await;
    assert_eq!((again.purged, again.more), (0, false));

    let r = purge(&mut c, "q", proto::JobState::Delayed, 0).await;
    assert_eq!((r.purged, r.more), (1, false));
    let r = purge(&mut c, "q", proto::JobState::Dead, 2).await;
    assert_eq!((r.purged, r.more), (2, true));
    let r = purge(&mut c, "q", proto::JobState::Dead, 2).await;
    assert_eq!((r.purged, r.more), (1, false));
    assert_eq!(counts(&mut c, "q").await, (0, 0, 0, 0));
    assert_eq!(counts(&mut c, "other").await, (1, 0, 0, 0));

    for id in pending[..11].iter().chain(&dead).chain([&later]) {
        let status = c
            .get_job(proto::GetJobRequest {
                namespace: "ns".into(),
                job_id: id.clone(),
            })
            .await
            .expect_err("purged");
        assert_eq!(status.code(), Code::NotFound, "{id}");
    }
    assert_eq!(get_job(&mut c, &kept).await.name, "kept");
    // A purged job's dedup key is free again.
    let mut reuse = job("q", "again");
    reuse.dedup_key = "k0".into();
    reuse.dedup_ttl = Some(dur(3_600_000));
    let again = enqueue(&mut c, reuse).await;
    assert_eq!(again.outcome, proto::EnqueueOutcome::Created as i32);
    let mut conn = redis.conn().await;
    let left: Vec<String> = cmd("KEYS")
        .arg("dueq:{ns}:jp:*")
        .query_async(&mut conn)
        .await
        .expect("KEYS");
    assert!(left.is_empty(), "{left:?}");
}

/// A store whose jobs predate the counts (no counts, no dead sets, no registries)
/// lists its queues as not counted until Migrate recounts them exactly and
/// registers the namespace.
#[tokio::test]
async fn migrate_recounts_a_store_written_before_the_counts() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    dead_jobs(&mut c, "q", 2).await;
    for name in ["a", "b", "c"] {
        enqueue(&mut c, job("q", name)).await;
    }
    let claimed = claim_job(&mut c, &["q"], 0, None).await.expect("a job");
    assert_eq!(counts(&mut c, "q").await, (2, 0, 1, 2));

    let mut conn = redis.conn().await;
    let _: () = pipe()
        .cmd("HDEL")
        .arg("dueq:{ns}:meta")
        .arg("counts")
        .ignore()
        .cmd("DEL")
        .arg("dueq:{ns}:meta:q:q")
        .arg("dueq:{ns}:meta:dead:q")
        .arg("dueq:namespaces")
        .ignore()
        .query_async(&mut conn)
        .await
        .expect("as an old store");
    // The queue registry is kept so the queue shows (uncounted); the recount would
    // register it anyway.
    let q = listed_queue(&mut c, "q").await;
    assert!(!q.counted);

    // Jobs keep moving while uncounted: an ack.
    ack_job(&mut c, &claimed.job_id, &claimed.lease_token)
        .await
        .expect("ack");
    let mut admin = admin(&service).await;
    migrate_done(&mut admin, migrate_req("ns")).await;
    assert_eq!(counts(&mut c, "q").await, (2, 0, 0, 2));
    let page = c
        .list_namespaces(proto::ListNamespacesRequest::default())
        .await
        .expect("namespaces")
        .into_inner();
    assert_eq!(page.namespaces, ["ns"]);
    // A second Migrate changes nothing.
    migrate_done(&mut admin, migrate_req("ns")).await;
    assert_eq!(counts(&mut c, "q").await, (2, 0, 0, 2));
}

/// Every bad field is refused with INVALID_ARGUMENT naming it, and nothing is
/// written.
#[tokio::test]
async fn bad_input_is_refused_naming_the_field_and_writes_nothing() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    dead_jobs(&mut c, "q", 1).await;
    let mut conn = redis.conn().await;
    let before = snapshot(&mut conn).await;
    let long = "x".repeat(300);

    let mut refusals: Vec<(&str, Result<(), tonic::Status>)> = Vec::new();
    macro_rules! refused {
        ($field:expr, $call:expr) => {
            refusals.push(($field, $call.await.map(|_| ())));
        };
    }
    refused!(
        "page_size",
        c.list_namespaces(proto::ListNamespacesRequest {
            page_size: 1001,
            ..Default::default()
        })
    );
    refused!(
        "page_token",
        c.list_namespaces(proto::ListNamespacesRequest {
            page_token: "{ns}".into(),
            ..Default::default()
        })
    );
    refused!(
        "namespace",
        c.list_queues(proto::ListQueuesRequest {
            namespace: "bad ns".into(),
            ..Default::default()
        })
    );
    refused!(
        "page_size",
        c.list_queues(proto::ListQueuesRequest {
            namespace: "ns".into(),
            page_size: 5000,
            ..Default::default()
        })
    );
    refused!(
        "page_token",
        c.list_queues(proto::ListQueuesRequest {
            namespace: "ns".into(),
            page_token: long.clone(),
            ..Default::default()
        })
    );
    refused!(
        "queue",
        c.pause_queue(proto::PauseQueueRequest {
            namespace: "ns".into(),
            queue: String::new(),
        })
    );
    refused!(
        "namespace",
        c.pause_queue(proto::PauseQueueRequest {
            namespace: String::new(),
            queue: "q".into(),
        })
    );
    refused!(
        "queue",
        c.resume_queue(proto::ResumeQueueRequest {
            namespace: "ns".into(),
            queue: long.clone(),
        })
    );
    refused!(
        "limit",
        c.retry_dead_jobs(proto::RetryDeadJobsRequest {
            namespace: "ns".into(),
            queue: "q".into(),
            limit: 501,
            ..Default::default()
        })
    );
    refused!(
        "queue",
        c.retry_dead_jobs(proto::RetryDeadJobsRequest {
            namespace: "ns".into(),
            queue: String::new(),
            limit: 1,
            ..Default::default()
        })
    );
    for state in [
        proto::JobState::Unspecified as i32,
        proto::JobState::Active as i32,
        proto::JobState::Completed as i32,
        99,
    ] {
        refused!(
            "state",
            c.purge_jobs(proto::PurgeJobsRequest {
                namespace: "ns".into(),
                queue: "q".into(),
                state,
                limit: 1,
                ..Default::default()
            })
        );
    }
    refused!(
        "limit",
        c.purge_jobs(proto::PurgeJobsRequest {
            namespace: "ns".into(),
            queue: "q".into(),
            state: proto::JobState::Dead as i32,
            limit: 501,
            ..Default::default()
        })
    );
    for (field, result) in refusals {
        let status = result.expect_err(field);
        assert_eq!(status.code(), Code::InvalidArgument, "{field}: {status:?}");
        assert!(
            status.message().contains(field),
            "{field}: {}",
            status.message()
        );
    }
    assert_eq!(snapshot(&mut conn).await, before, "nothing was written");
}

async fn list_schedules(
    c: &mut Client,
    order: proto::ScheduleOrder,
    overdue_by: Option<u64>,
    page_size: u32,
    token: &str,
) -> Result<proto::ListSchedulesResponse, tonic::Status> {
    c.list_schedules(proto::ListSchedulesRequest {
        namespace: "ns".into(),
        page_size,
        page_token: token.into(),
        order: order as i32,
        overdue_by: overdue_by.map(dur),
        ..Default::default()
    })
    .await
    .map(tonic::Response::into_inner)
}

/// Every page of a by-next-run listing: the ids in order.
async fn all_by_next_run(c: &mut Client, overdue_by: Option<u64>, page_size: u32) -> Vec<String> {
    let mut ids = Vec::new();
    let mut token = String::new();
    loop {
        let page = list_schedules(
            c,
            proto::ScheduleOrder::NextRun,
            overdue_by,
            page_size,
            &token,
        )
        .await
        .expect("list");
        assert!(page.schedules.len() <= page_size as usize);
        let mut last = None;
        for s in page.schedules {
            let next = ms(&s.next_run_time);
            if let Some(previous) = last {
                assert!(previous <= next, "by next run");
            }
            last = Some(next);
            ids.push(s.id);
        }
        if page.next_page_token.is_empty() {
            return ids;
        }
        token = page.next_page_token;
    }
}

/// ListSchedules by next run pages through the active schedules in next-run order
/// (ties by id); with overdue_by only those due at least that long ago, the most
/// overdue first; paused ones are left out; bad combinations are refused.
#[tokio::test]
async fn list_schedules_by_next_run_and_overdue() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;
    let now = redis_now(&mut conn).await;
    // Due times: three overdue by an hour (two tied), one by a second, two in the
    // future; one paused.
    let plan: &[(&str, i64)] = &[
        ("late-b", now - 3_600_000),
        ("late-a", now - 3_600_000),
        ("later", now - 7_200_000),
        ("just", now - 1_000),
        ("soon", now + 3_600_000),
        ("far", now + 7_200_000),
        ("paused", now - 9_000_000),
    ];
    for (id, due) in plan {
        upsert(&mut c, "ns", every(id, 86_400)).await;
        force_due(&mut conn, "ns", id, *due).await;
    }
    c.pause_schedule(proto::PauseScheduleRequest {
        namespace: "ns".into(),
        id: "paused".into(),
        ..Default::default()
    })
    .await
    .expect("pause");

    let expected = ["later", "late-a", "late-b", "just", "soon", "far"];
    for size in [1, 2, 100] {
        assert_eq!(
            all_by_next_run(&mut c, None, size).await,
            expected,
            "page size {size}"
        );
    }
    assert_eq!(
        all_by_next_run(&mut c, Some(60_000), 1).await,
        ["later", "late-a", "late-b"],
        "overdue by a minute or more"
    );
    assert_eq!(
        all_by_next_run(&mut c, Some(0), 2).await,
        ["later", "late-a", "late-b", "just"]
    );
    // overdue_by alone (order unspecified) lists by next run too.
    let page = list_schedules(
        &mut c,
        proto::ScheduleOrder::Unspecified,
        Some(60_000),
        10,
        "",
    )
    .await
    .expect("list");
    let ids: Vec<_> = page.schedules.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(ids, ["later", "late-a", "late-b"]);

    // A page token from the id order is refused in the next-run order.
    let by_id = list_schedules(&mut c, proto::ScheduleOrder::Id, None, 1, "")
        .await
        .expect("by id");
    let refused = list_schedules(
        &mut c,
        proto::ScheduleOrder::NextRun,
        None,
        1,
        &by_id.next_page_token,
    )
    .await
    .expect_err("not a next-run token");
    assert_eq!(refused.code(), Code::InvalidArgument);
    assert!(refused.message().contains("page_token"), "{refused:?}");
    let refused = c
        .list_schedules(proto::ListSchedulesRequest {
            namespace: "ns".into(),
            status: proto::ScheduleStatus::Paused as i32,
            overdue_by: Some(dur(0)),
            ..Default::default()
        })
        .await
        .expect_err("paused schedules have no next run");
    assert_eq!(refused.code(), Code::InvalidArgument);
    assert!(refused.message().contains("status"), "{refused:?}");
    let refused = c
        .list_schedules(proto::ListSchedulesRequest {
            namespace: "ns".into(),
            order: 99,
            ..Default::default()
        })
        .await
        .expect_err("unknown order");
    assert!(refused.message().contains("order"), "{refused:?}");
    let refused = c
        .list_schedules(proto::ListSchedulesRequest {
            namespace: "ns".into(),
            overdue_by: Some(prost_types::Duration {
                seconds: -1,
                nanos: 0,
            }),
            ..Default::default()
        })
        .await
        .expect_err("negative");
    assert!(refused.message().contains("overdue_by"), "{refused:?}");
}
