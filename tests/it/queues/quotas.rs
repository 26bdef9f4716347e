//! Per-namespace quotas (issue 13): enforced inside the scripts, answered
//! RESOURCE_EXHAUSTED naming the flag, nothing written, room again after a delete.

use tonic::Code;

use crate::common::*;

/// Pins: with --max-schedules-per-namespace 2, a third create is refused naming the
/// flag and writes nothing; an update of a stored schedule still passes; another
/// namespace has its own count; a delete makes room.
#[tokio::test]
async fn schedules_beyond_the_quota_are_refused() {
    let redis = Redis::start().await;
    let mut config = config(&redis.url());
    config.max_schedules_per_namespace = 2;
    let service = Service::start_with(config).await;
    let mut c = service.client().await;
    upsert(&mut c, "ns", every("a", 60)).await;
    upsert(&mut c, "ns", every("b", 60)).await;

    let refused = try_upsert(&mut c, "ns", every("c", 60))
        .await
        .expect_err("over the quota");
    assert_eq!(refused.code(), Code::ResourceExhausted, "{refused:?}");
    assert!(
        refused.message().contains("--max-schedules-per-namespace"),
        "{refused:?}"
    );
    let missing = c
        .get_schedule(proto::GetScheduleRequest {
            namespace: "ns".into(),
            id: "c".into(),
        })
        .await
        .expect_err("nothing written");
    assert_eq!(missing.code(), Code::NotFound);

    let updated = upsert(&mut c, "ns", every("a", 120)).await;
    assert!(!updated.created, "an update is not a create");
    upsert(&mut c, "other", every("c", 60)).await;

    c.delete_schedule(proto::DeleteScheduleRequest {
        namespace: "ns".into(),
        id: "b".into(),
    })
    .await
    .expect("delete");
    let created = upsert(&mut c, "ns", every("c", 60)).await;
    assert!(created.created, "room again after the delete");
}

fn assert_job_quota(status: &tonic::Status) {
    assert_eq!(status.code(), Code::ResourceExhausted, "{status:?}");
    assert!(
        status.message().contains("--max-jobs-per-namespace"),
        "{status:?}"
    );
}

async fn job_missing(c: &mut Client, id: &str) -> bool {
    match c
        .get_job(proto::GetJobRequest {
            namespace: "ns".into(),
            job_id: id.into(),
        })
        .await
    {
        Ok(_) => false,
        Err(s) if s.code() == Code::NotFound => true,
        Err(s) => panic!("{s:?}"),
    }
}

fn job_with_id(id: &str) -> proto::EnqueueRequest {
    proto::EnqueueRequest {
        job_id: id.into(),
        ..job("q", "x")
    }
}

/// Pins: with --max-jobs-per-namespace 2, a third unfinished job is refused naming
/// the flag and nothing is written for it; a repeated job id still answers
/// DUPLICATE; another namespace has its own count; an ack and a cancel each make
/// room.
#[tokio::test]
async fn jobs_beyond_the_quota_are_refused() {
    let redis = Redis::start().await;
    let mut config = config(&redis.url());
    config.max_jobs_per_namespace = 2;
    let service = Service::start_with(config).await;
    let mut c = service.client().await;
    enqueue(&mut c, job_with_id("a")).await;
    enqueue(&mut c, job_with_id("b")).await;

    let refused = c
        .enqueue(job_with_id("c"))
        .await
        .expect_err("over the quota");
    assert_job_quota(&refused);
    assert!(job_missing(&mut c, "c").await, "nothing written");

    let again = enqueue(&mut c, job_with_id("a")).await;
    assert_eq!(again.outcome(), proto::EnqueueOutcome::Duplicate);
    let mut elsewhere = job_with_id("c");
    elsewhere.namespace = "other".into();
    enqueue(&mut c, elsewhere).await;

    // A leased job still counts; its ack makes room for one.
    let claimed = claim_job(&mut c, &["q"], 0, None).await.expect("claim");
    assert_job_quota(
        &c.enqueue(job_with_id("c"))
            .await
            .expect_err("leased counts"),
    );
    ack_job(&mut c, &claimed.job_id, &claimed.lease_token)
        .await
        .expect("ack");
    enqueue(&mut c, job_with_id("c")).await;
    assert_job_quota(&c.enqueue(job_with_id("d")).await.expect_err("full again"));

    c.cancel_job(proto::CancelJobRequest {
        namespace: "ns".into(),
        job_id: "c".into(),
    })
    .await
    .expect("cancel");
    let created = enqueue(&mut c, job_with_id("d")).await;
    assert_eq!(created.outcome(), proto::EnqueueOutcome::Created);
}

/// Pins: an EnqueueBatch that crosses the quota stores the items that fit and
/// answers the rest RESOURCE_EXHAUSTED per item, writing nothing for them.
#[tokio::test]
async fn a_batch_over_the_job_quota_is_refused_per_item() {
    let redis = Redis::start().await;
    let mut config = config(&redis.url());
    config.max_jobs_per_namespace = 3;
    let service = Service::start_with(config).await;
    let mut c = service.client().await;
    enqueue(&mut c, job_with_id("first")).await;

    let ids = ["b0", "b1", "b2", "b3"];
    let results = c
        .enqueue_batch(proto::EnqueueBatchRequest {
            namespace: "ns".into(),
            jobs: ids.iter().map(|id| job_with_id(id)).collect(),
        })
        .await
        .expect("batch")
        .into_inner()
        .results;
    assert_eq!(results.len(), 4);
    for (i, r) in results.iter().enumerate() {
        assert_eq!(r.index as usize, i);
        match (&r.result, i < 2) {
            (Some(proto::enqueue_batch_result::Result::Ok(ok)), true) => {
                assert_eq!(ok.outcome(), proto::EnqueueOutcome::Created)
            }
            (Some(proto::enqueue_batch_result::Result::Error(e)), false) => {
                assert_eq!(e.code, Code::ResourceExhausted as i32, "{e:?}");
                assert!(e.message.contains("--max-jobs-per-namespace"), "{e:?}");
            }
            other => panic!("item {i}: {other:?}"),
        }
    }
    assert!(job_missing(&mut c, "b2").await && job_missing(&mut c, "b3").await);
    assert!(!job_missing(&mut c, "b1").await);
}

/// Pins: many concurrent Enqueues (grouped into shared script calls) never create
/// more jobs than the quota allows.
#[tokio::test]
async fn concurrent_enqueues_never_exceed_the_job_quota() {
    let redis = Redis::start().await;
    let mut config = config(&redis.url());
    config.max_jobs_per_namespace = 10;
    let service = Service::start_with(config).await;
    let c = service.client().await;
    let calls = (0..60).map(|i| {
        let mut c = c.clone();
        async move { c.enqueue(job_with_id(&format!("j{i}"))).await }
    });
    let answers = futures::future::join_all(calls).await;
    let created = answers.iter().filter(|a| a.is_ok()).count();
    for refused in answers.iter().filter_map(|a| a.as_ref().err()) {
        assert_job_quota(refused);
    }
    assert_eq!(created, 10, "exactly the quota was created");
    let stored = list_all_jobs(&mut c.clone(), "ns", "q", 100).await;
    assert_eq!(stored.len(), 10);
}

/// Pins: pruning finished jobs keeps the count right, so room made by acks stays
/// room once those jobs are deleted (the count is of records, less finished ones).
#[tokio::test]
async fn pruned_jobs_leave_the_job_quota_count_right() {
    let redis = Redis::start().await;
    let mut config = config(&redis.url());
    config.max_jobs_per_namespace = 2;
    config.job_retention_count = 0;
    config.job_prune_interval = std::time::Duration::from_millis(50);
    let service = Service::start_with(config).await;
    let mut c = service.client().await;
    for id in ["a", "b"] {
        enqueue(&mut c, job_with_id(id)).await;
        let j = claim_job(&mut c, &["q"], 0, None).await.expect("claim");
        ack_job(&mut c, &j.job_id, &j.lease_token)
            .await
            .expect("ack");
    }
    let patience = Patience::new("the finished jobs are pruned");
    while !(job_missing(&mut c, "a").await && job_missing(&mut c, "b").await) {
        patience.wait().await;
    }
    enqueue(&mut c, job_with_id("c")).await;
    enqueue(&mut c, job_with_id("d")).await;
    assert_job_quota(&c.enqueue(job_with_id("e")).await.expect_err("full"));
}
