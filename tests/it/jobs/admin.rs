//! GetJob, ListJobs, CancelJob, RetryJob and their errors.

use tonic::Code;

use crate::common::*;

async fn list(
    c: &mut Client,
    queue: &str,
    state: proto::JobState,
    page_size: u32,
    token: &str,
) -> proto::ListJobsResponse {
    c.list_jobs(proto::ListJobsRequest {
        namespace: "ns".into(),
        queue: queue.into(),
        state: state as i32,
        page_size,
        page_token: token.into(),
        view: proto::JobView::Full as i32,
        filter: None,
    })
    .await
    .expect("list")
    .into_inner()
}

#[tokio::test]
async fn list_pages_through_a_queue_in_enqueue_order_with_a_state_filter() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut ids = Vec::new();
    for i in 0..25 {
        let mut req = job("q", &format!("j{i}"));
        if i % 5 == 0 {
            req.when = Some(proto::enqueue_request::When::Delay(dur(3_600_000)));
        }
        ids.push(enqueue(&mut c, req).await.job_id);
    }
    enqueue(&mut c, job("other", "not listed")).await;

    let mut seen = Vec::new();
    let mut token = String::new();
    loop {
        let page = list(&mut c, "q", proto::JobState::Unspecified, 10, &token).await;
        assert!(page.jobs.len() <= 10);
        seen.extend(page.jobs.into_iter().map(|j| j.job_id));
        if page.next_page_token.is_empty() {
            break;
        }
        token = page.next_page_token;
    }
    assert_eq!(seen, ids);

    let mut delayed = Vec::new();
    let mut token = String::new();
    loop {
        let page = list(&mut c, "q", proto::JobState::Delayed, 2, &token).await;
        delayed.extend(page.jobs.into_iter().map(|j| j.name));
        if page.next_page_token.is_empty() {
            break;
        }
        token = page.next_page_token;
    }
    assert_eq!(delayed, ["j0", "j5", "j10", "j15", "j20"]);

    let bad = c
        .list_jobs(proto::ListJobsRequest {
            namespace: "ns".into(),
            queue: "q".into(),
            page_token: "garbage".into(),
            ..Default::default()
        })
        .await
        .expect_err("bad token");
    assert_eq!(bad.code(), Code::InvalidArgument);
    assert!(bad.message().starts_with("page_token"));
}

#[tokio::test]
async fn cancel_only_pending_or_delayed_jobs() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;

    let pending = enqueue(&mut c, job("q", "p")).await.job_id;
    let mut req = job("q", "d");
    req.when = Some(proto::enqueue_request::When::Delay(dur(200)));
    let delayed = enqueue(&mut c, req).await.job_id;
    for id in [&pending, &delayed] {
        let j = c
            .cancel_job(proto::CancelJobRequest {
                namespace: "ns".into(),
                job_id: id.clone(),
            })
            .await
            .expect("cancel")
            .into_inner()
            .job
            .expect("job");
        assert_eq!(state(&j), proto::JobState::Cancelled);
        assert!(j.finish_time.is_some());
    }
    // Neither is ever claimed, even after the delay.
    assert!(claim_job(&mut c, &["q"], 500, None).await.is_none());

    let active = enqueue(&mut c, job("q", "a")).await.job_id;
    let claimed = claim_job(&mut c, &["q"], 0, None).await.expect("claim");
    // A finished job is refused; an active one stays active, its worker asked to stop
    // (issue 30: tests/it/jobs/progress.rs).
    let refused = c
        .cancel_job(proto::CancelJobRequest {
            namespace: "ns".into(),
            job_id: pending.clone(),
        })
        .await
        .expect_err("not cancellable");
    assert_eq!(refused.code(), Code::FailedPrecondition, "{refused:?}");
    let asked = c
        .cancel_job(proto::CancelJobRequest {
            namespace: "ns".into(),
            job_id: active.clone(),
        })
        .await
        .expect("cancel an active job")
        .into_inner()
        .job
        .expect("job");
    assert!(asked.cancel_requested);
    assert_eq!(
        state(&get_job(&mut c, &active).await),
        proto::JobState::Active
    );
    ack_job(&mut c, &active, &claimed.lease_token)
        .await
        .expect("ack");
}

#[tokio::test]
async fn retry_only_dead_jobs_and_unknown_ids_are_not_found() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let pending = enqueue(&mut c, job("q", "p")).await.job_id;
    let refused = c
        .retry_job(proto::RetryJobRequest {
            namespace: "ns".into(),
            job_id: pending,
        })
        .await
        .expect_err("not dead");
    assert_eq!(refused.code(), Code::FailedPrecondition);

    let id = "missing".to_string();
    let not_found = [
        c.get_job(proto::GetJobRequest {
            namespace: "ns".into(),
            job_id: id.clone(),
        })
        .await
        .map(|_| ())
        .err(),
        c.cancel_job(proto::CancelJobRequest {
            namespace: "ns".into(),
            job_id: id.clone(),
        })
        .await
        .map(|_| ())
        .err(),
        c.retry_job(proto::RetryJobRequest {
            namespace: "ns".into(),
            job_id: id.clone(),
        })
        .await
        .map(|_| ())
        .err(),
        ack_job(&mut c, &id, "t").await.map(|_| ()).err(),
        fail_job(&mut c, &id, "t", "e").await.map(|_| ()).err(),
        c.extend_lease(proto::ExtendLeaseRequest {
            progress: None,
            namespace: "ns".into(),
            job_id: id.clone(),
            lease_token: "t".into(),
            lease: Some(dur(1_000)),
        })
        .await
        .map(|_| ())
        .err(),
    ];
    for status in not_found {
        let status = status.expect("refused");
        assert_eq!(status.code(), Code::NotFound, "{status:?}");
    }
}

#[tokio::test]
async fn job_ids_with_key_syntax_never_alias_other_records() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    for (id, queue) in [
        ("jdone", "qr:x"),
        ("}{x", "jdone"),
        ("qr:q", "q"),
        ("a b ü", "}{"),
    ] {
        let mut req = job(queue, "n");
        req.job_id = id.into();
        assert_eq!(
            enqueue(&mut c, req).await.outcome,
            proto::EnqueueOutcome::Created as i32,
            "{id}"
        );
        let j = get_job(&mut c, id).await;
        assert_eq!((j.job_id.as_str(), j.queue.as_str()), (id, queue));
    }
    for queue in ["qr:x", "jdone", "q", "}{"] {
        let j = claim_job(&mut c, &[queue], 0, None).await.expect(queue);
        assert_eq!(j.queue, queue);
        ack_job(&mut c, &j.job_id, &j.lease_token)
            .await
            .expect("ack");
    }
}

#[tokio::test]
async fn listing_spans_buckets_and_crosses_a_pruned_gap_in_bounded_calls() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;
    let mut ids = Vec::new();
    for i in 0..150 {
        ids.push(enqueue(&mut c, job("q", &format!("j{i}"))).await.job_id);
    }
    // As if 20,000 jobs had been enqueued, finished and pruned: their numbers are
    // used, their listing buckets (64 numbers each) are gone.
    let _: i64 = cmd("HINCRBY")
        .arg("dueq:{ns}:meta")
        .arg("n:q")
        .arg(20_000)
        .query_async(&mut conn)
        .await
        .expect("HINCRBY");
    for i in 150..160 {
        ids.push(enqueue(&mut c, job("q", &format!("j{i}"))).await.job_id);
    }

    let (mut seen, mut calls, mut token) = (Vec::new(), 0, String::new());
    loop {
        let page = list(&mut c, "q", proto::JobState::Unspecified, 100, &token).await;
        calls += 1;
        assert!(page.jobs.len() <= 100);
        seen.extend(page.jobs.into_iter().map(|j| j.job_id));
        if page.next_page_token.is_empty() {
            break;
        }
        token = page.next_page_token;
    }
    assert_eq!(
        seen, ids,
        "every job once, in enqueue order, across the gap"
    );
    // 313 empty buckets lie in the gap and a call reads at most 256 buckets, so the
    // gap takes at least one call of its own (an empty page with a token).
    assert!(calls >= 3, "{calls} calls");
}

#[tokio::test]
async fn a_job_key_holding_something_else_is_internal_and_changes_nothing() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;
    enqueue(&mut c, job("q", "real")).await;
    let _: () = cmd("SET")
        .arg("dueq:{ns}:j:garbled")
        .arg("not msgpack \u{1}")
        .query_async(&mut conn)
        .await
        .expect("SET");
    let before = snapshot(&mut conn).await;
    let get = c
        .get_job(proto::GetJobRequest {
            namespace: "ns".into(),
            job_id: "garbled".into(),
        })
        .await
        .expect_err("unreadable");
    assert_eq!(get.code(), Code::Internal);
    assert!(get.message().contains("garbled"), "{}", get.message());
    let cancel = c
        .cancel_job(proto::CancelJobRequest {
            namespace: "ns".into(),
            job_id: "garbled".into(),
        })
        .await
        .expect_err("unreadable");
    assert_eq!(cancel.code(), Code::Internal);
    let ack = ack_job(&mut c, "garbled", "t")
        .await
        .expect_err("unreadable");
    assert_eq!(ack.code(), Code::Internal);
    assert_eq!(snapshot(&mut conn).await, before, "nothing was written");
}

/// Cancelling a pending job leaves its ready entry behind (removing it from the
/// middle of a list would be O(N)); claims drop such entries as they meet them,
/// a bounded number per script call, and still reach the live job behind 100 of them.
#[tokio::test]
async fn claims_step_over_the_entries_of_cancelled_jobs() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;
    for i in 0..100 {
        let id = enqueue(&mut c, job("q", &format!("c{i}"))).await.job_id;
        c.cancel_job(proto::CancelJobRequest {
            namespace: "ns".into(),
            job_id: id,
        })
        .await
        .expect("cancel");
    }
    let live = enqueue(&mut c, job("q", "live")).await.job_id;
    let claimed = claim_job(&mut c, &["q"], 2_000, None)
        .await
        .expect("the live job behind the cancelled ones");
    assert_eq!(claimed.job_id, live);
    let left: i64 = cmd("LLEN")
        .arg("dueq:{ns}:rl:0:q")
        .query_async(&mut conn)
        .await
        .expect("LLEN");
    assert_eq!(left, 0, "the stale entries were dropped on the way");
}
