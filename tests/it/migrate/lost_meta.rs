//! A namespace that lost its meta and its jobs marker together (issue 29 item 13):
//! the data itself shows the jobs, so the namespace is refused like any lost meta
//! instead of being served as a new one over its stored jobs.

use std::collections::BTreeSet;

use crate::common::*;

/// Jobs stored before the loss, over two queues and more than one Migrate batch.
const OLD_JOBS: usize = 120;

/// Pins issue 29 item 13: after `DEL :meta :meta:jobs`, Enqueue, ClaimJob and
/// ListJobs are refused FAILED_PRECONDITION and write nothing (on the old code
/// Enqueue answered OK with the counters restarted at 1, and the old jobs were
/// neither claimable nor listed), GetNamespaceStatus says Migrate is needed, and
/// Migrate recounts from the records: every old job and every new one is listed
/// and claimed exactly once.
#[tokio::test]
async fn meta_and_marker_lost_together_are_refused_until_migrate_rebuilds_them() {
    let redis = Redis::start().await;
    let service = Service::start_with(config_without_background_work(&redis.url())).await;
    let mut c = service.client().await;
    let mut admin = admin(&service).await;
    let mut conn = redis.conn().await;
    let queue_of = |i: usize| if i.is_multiple_of(3) { "q2" } else { "q" };
    for i in 0..OLD_JOBS {
        let mut req = job(queue_of(i), "old");
        req.job_id = format!("old-{i}");
        enqueue(&mut c, req).await;
    }

    let _: () = query(
        &mut conn,
        cmd("DEL").arg("dueq:{ns}:meta").arg("dueq:{ns}:meta:jobs"),
    )
    .await;
    let before = snapshot(&mut conn).await;

    let mut req = job("q", "new");
    req.job_id = "refused".into();
    refused_until_migrate("Enqueue", c.enqueue(req).await.expect_err("refused"));
    let r = c.claim_job(claim_req(&["q", "q2"], 0, None)).await;
    refused_until_migrate("ClaimJob", r.expect_err("refused"));
    let r = c
        .list_jobs(proto::ListJobsRequest {
            namespace: "ns".into(),
            queue: "q".into(),
            ..Default::default()
        })
        .await;
    refused_until_migrate("ListJobs", r.expect_err("refused"));
    assert_eq!(
        snapshot(&mut conn).await,
        before,
        "the refused calls wrote nothing"
    );

    let st = status(&mut admin, "ns").await;
    assert!(st.jobs_need_migrate, "{st:?}");
    assert!(
        st.message.contains("job metadata") && st.message.contains("QueueService/Migrate"),
        "{}",
        st.message
    );

    migrate_done(&mut admin, migrate_req("ns")).await;
    let st = status(&mut admin, "ns").await;
    assert!(!st.jobs_need_migrate && !st.needs_migrate, "{st:?}");

    let mut req = job("q", "new");
    req.job_id = "new".into();
    let r = enqueue(&mut c, req).await;
    assert_eq!(r.outcome, proto::EnqueueOutcome::Created as i32);
    let listed = list_all_jobs(&mut c, "ns", "q", 100).await.len()
        + list_all_jobs(&mut c, "ns", "q2", 100).await.len();
    assert_eq!(listed, OLD_JOBS + 1, "every job is listed");
    let mut claimed = Vec::new();
    while let Some(j) = claim_job(&mut c, &["q", "q2"], 0, None).await {
        claimed.push(j.job_id);
    }
    let distinct: BTreeSet<&String> = claimed.iter().collect();
    assert_eq!(distinct.len(), claimed.len(), "claimed twice: {claimed:?}");
    let expected: BTreeSet<String> = (0..OLD_JOBS)
        .map(|i| format!("old-{i}"))
        .chain(["new".to_owned()])
        .collect();
    assert_eq!(
        claimed.into_iter().collect::<BTreeSet<_>>(),
        expected,
        "every old job and the new one is claimed"
    );
}
