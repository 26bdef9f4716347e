//! QueueInfo's totals (`enqueued_total`, `completed_total`, `failed_total`), the
//! console's rates: what each counts.

use crate::common::*;

fn totals(info: &proto::QueueInfo) -> (u64, u64, u64) {
    (info.enqueued_total, info.completed_total, info.failed_total)
}

fn lease(claimed: &proto::ClaimedJob) -> proto::JobLease {
    proto::JobLease {
        job_id: claimed.job_id.clone(),
        lease_token: claimed.lease_token.clone(),
        result: Vec::new(),
    }
}

/// Pins: enqueued_total counts enqueues; completed_total counts AckJob, AckJobs and
/// the acks a ClaimJob carries; failed_total counts FailJob and a lease that expired
/// and was reclaimed by a claim. None goes down.
#[tokio::test]
async fn queue_totals_count_enqueues_acks_and_failures() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    for n in 0..6 {
        enqueue(&mut c, job("q", &format!("j{n}"))).await;
    }
    assert_eq!(totals(&listed_queue(&mut c, "q").await), (6, 0, 0));

    let one = claim_job(&mut c, &["q"], 0, None).await.expect("a job");
    ack_job(&mut c, &one.job_id, &one.lease_token)
        .await
        .expect("AckJob");
    assert_eq!(
        totals(&listed_queue(&mut c, "q").await),
        (6, 1, 0),
        "AckJob"
    );

    let two = claim_job(&mut c, &["q"], 0, None).await.expect("a job");
    let three = claim_job(&mut c, &["q"], 0, None).await.expect("a job");
    c.ack_jobs(proto::AckJobsRequest {
        namespace: "ns".into(),
        acks: vec![lease(&two), lease(&three)],
    })
    .await
    .expect("AckJobs");
    assert_eq!(
        totals(&listed_queue(&mut c, "q").await),
        (6, 3, 0),
        "AckJobs"
    );

    let four = claim_job(&mut c, &["q"], 0, None).await.expect("a job");
    let mut carried = claim_req(&["q"], 0, None);
    carried.acks = vec![lease(&four)];
    let five = c
        .claim_job(carried)
        .await
        .expect("a claim with an ack")
        .into_inner()
        .jobs
        .pop()
        .expect("a job");
    assert_eq!(
        totals(&listed_queue(&mut c, "q").await),
        (6, 4, 0),
        "a claim's ack"
    );

    fail_job(&mut c, &five.job_id, &five.lease_token, "boom")
        .await
        .expect("FailJob");
    assert_eq!(
        totals(&listed_queue(&mut c, "q").await),
        (6, 4, 1),
        "FailJob"
    );

    // The failed job (retried later) and the sixth are left; a short lease on the
    // next claim expires and a later claim reclaims it.
    let short = claim_job(&mut c, &["q"], LONG_POLL_MS, Some(300))
        .await
        .expect("a job");
    let mut reclaimed = None;
    let patience = Patience::new("the expired lease to be reclaimed");
    while reclaimed.is_none() {
        if let Some(job) = claim_job(&mut c, &["q"], LONG_POLL_MS, Some(60_000)).await {
            if job.job_id == short.job_id {
                reclaimed = Some(job);
            }
        }
        patience.wait().await;
    }
    let info = listed_queue(&mut c, "q").await;
    assert_eq!(
        totals(&info),
        (6, 4, 2),
        "the expired lease counted as a failure"
    );
    enqueue(&mut c, job("q", "j6")).await;
    assert_eq!(listed_queue(&mut c, "q").await.enqueued_total, 7);
}
