//! A namespace whose metadata vanished (`DEL` by hand, eviction under another
//! policy, a partial restore) while its records remain: no call re-creates the
//! metadata over them; it is refused with the Migrate command and reported, and
//! Migrate rebuilds it from the records so every stored job is claimed once.

use std::collections::BTreeSet;

use super::*;

const OLD_JOBS: usize = 20;
const NEW_JOBS: usize = 5;

/// Pins issue 12 item 6: after `DEL` of a namespace's meta, job and schedule calls
/// are refused FAILED_PRECONDITION with the Migrate command and write nothing,
/// GetNamespaceStatus says so, and Migrate rebuilds the metadata: all 20 old jobs
/// and the new ones are claimed exactly once, and the schedule is served again.
#[tokio::test]
async fn lost_meta_is_refused_reported_and_rebuilt_by_migrate() {
    let redis = Redis::start().await;
    let service = Service::start_with(config_without_background_work(&redis.url())).await;
    let mut c = service.client().await;
    let mut admin = admin(&service).await;
    let mut conn = redis.conn().await;
    for i in 0..OLD_JOBS {
        let mut req = job("q", "old");
        req.job_id = format!("old-{i}");
        enqueue(&mut c, req).await;
    }
    upsert(&mut c, "ns", every("s", 3600)).await;

    let _: () = query(&mut conn, cmd("DEL").arg("dueq:{ns}:meta")).await;
    let before = snapshot(&mut conn).await;

    let mut req = job("q", "new");
    req.job_id = "refused".into();
    refused_until_migrate("Enqueue", c.enqueue(req).await.expect_err("refused"));
    let r = c.claim_job(claim_req(&["q"], 0, None)).await;
    refused_until_migrate("ClaimJob", r.expect_err("refused"));
    let r = c
        .get_job(proto::GetJobRequest {
            namespace: "ns".into(),
            job_id: "old-0".into(),
        })
        .await;
    refused_until_migrate("GetJob", r.expect_err("refused"));
    let r = try_upsert(&mut c, "ns", every("s2", 3600)).await;
    refused_until_migrate("UpsertSchedule", r.expect_err("refused"));
    let r = try_claim(&mut c, "ns", 0).await;
    refused_until_migrate("ClaimDueSchedule", r.expect_err("refused"));
    assert_eq!(
        snapshot(&mut conn).await,
        before,
        "the refused calls wrote nothing"
    );

    let st = status(&mut admin, "ns").await;
    assert!(st.jobs_need_migrate && st.needs_migrate, "{st:?}");
    assert!(
        st.message.contains("job metadata") && st.message.contains("missing"),
        "{}",
        st.message
    );
    assert!(
        st.message.contains("QueueService/Migrate"),
        "{}",
        st.message
    );

    migrate_done(&mut admin, migrate_req("ns")).await;
    let st = status(&mut admin, "ns").await;
    assert!(!st.jobs_need_migrate && !st.needs_migrate, "{st:?}");
    assert_eq!(st.message, "ok");

    for i in 0..NEW_JOBS {
        let mut req = job("q", "new");
        req.job_id = format!("new-{i}");
        let r = enqueue(&mut c, req).await;
        assert_eq!(r.outcome, proto::EnqueueOutcome::Created as i32);
    }
    let mut claimed = Vec::new();
    while let Some(j) = claim_job(&mut c, &["q"], 0, None).await {
        claimed.push(j.job_id);
    }
    let distinct: BTreeSet<&String> = claimed.iter().collect();
    assert_eq!(distinct.len(), claimed.len(), "claimed twice: {claimed:?}");
    let expected: BTreeSet<String> = (0..OLD_JOBS)
        .map(|i| format!("old-{i}"))
        .chain((0..NEW_JOBS).map(|i| format!("new-{i}")))
        .collect();
    assert_eq!(
        claimed.iter().cloned().collect::<BTreeSet<_>>(),
        expected,
        "every old job and every new one is claimed"
    );
    assert_eq!(
        list_all_jobs(&mut c, "ns", "q", 100).await.len(),
        OLD_JOBS + NEW_JOBS,
        "every job is listed"
    );
    // The schedule side is served again, its listing count rebuilt.
    assert_eq!(get(&mut c, "ns", "s").await.id, "s");
    upsert(&mut c, "ns", every("s2", 3600)).await;
    c.delete_schedule(proto::DeleteScheduleRequest {
        namespace: "ns".into(),
        id: "s2".into(),
    })
    .await
    .expect("delete");
    let listed: i64 = query(&mut conn, cmd("HGET").arg("dueq:{ns}:meta").arg("listed")).await;
    assert_eq!(listed, 1, "the listing count is the listing's size");
}

/// Jobs stored before the jobs marker existed get it from the next Migrate, after
/// which a lost meta is refused like any other.
#[tokio::test]
async fn migrate_marks_jobs_stored_before_the_marker() {
    let redis = Redis::start().await;
    let service = Service::start_with(config_without_background_work(&redis.url())).await;
    let mut c = service.client().await;
    let mut admin = admin(&service).await;
    let mut conn = redis.conn().await;
    enqueue(&mut c, job("q", "old")).await;
    let _: () = query(&mut conn, cmd("DEL").arg("dueq:{ns}:meta:jobs")).await;

    migrate_done(&mut admin, migrate_req("ns")).await;
    assert!(exists(&mut conn, "dueq:{ns}:meta:jobs").await);
    let _: () = query(&mut conn, cmd("DEL").arg("dueq:{ns}:meta")).await;
    let r = c.enqueue(job("q", "new")).await;
    refused_until_migrate("Enqueue", r.expect_err("refused"));
}
