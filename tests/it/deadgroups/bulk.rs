//! Acting on groups: RetryDeadJobs and PurgeJobs of one group, the counts against
//! the jobs themselves after every way out of dead (RetryJob, DeleteJob, PurgeJobs,
//! RetryDeadJobs, retention), a large group in bounded batches, and Migrate.

use std::time::Duration;

use tonic::Code;

use super::*;

async fn retry_group(
    c: &mut Client,
    queue: &str,
    fingerprint: &str,
    limit: u32,
) -> proto::RetryDeadJobsResponse {
    c.retry_dead_jobs(proto::RetryDeadJobsRequest {
        namespace: "ns".into(),
        queue: queue.into(),
        limit,
        error_fingerprint: fingerprint.into(),
    })
    .await
    .expect("retry dead jobs")
    .into_inner()
}

async fn purge_group(
    c: &mut Client,
    queue: &str,
    fingerprint: &str,
    limit: u32,
) -> proto::PurgeJobsResponse {
    c.purge_jobs(proto::PurgeJobsRequest {
        namespace: "ns".into(),
        queue: queue.into(),
        state: proto::JobState::Unspecified as i32,
        limit,
        error_fingerprint: fingerprint.into(),
    })
    .await
    .expect("purge")
    .into_inner()
}

async fn is_gone(c: &mut Client, id: &str) -> bool {
    let got = c
        .get_job(proto::GetJobRequest {
            namespace: "ns".into(),
            job_id: id.into(),
        })
        .await;
    matches!(got, Err(status) if status.code() == Code::NotFound)
}

/// Retrying a group makes only its jobs pending: not the queue's other groups, not
/// the same error's group in another queue. Purging a group deletes only its jobs.
#[tokio::test]
async fn retry_and_purge_of_a_group_touch_only_that_group() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut jobs = of_kind("q", 'A', 3);
    jobs.extend(of_kind("q", 'B', 2));
    jobs.extend(of_kind("r", 'A', 2));
    let ids = kill(&mut c, jobs).await;
    let fp_a = fingerprint(&mut c, "q", 'A').await;
    let fp_b = fingerprint(&mut c, "q", 'B').await;

    let retried = retry_group(&mut c, "q", &fp_a, 0).await;
    assert_eq!((retried.retried, retried.more), (3, false));
    let states: Vec<proto::JobState> = {
        let mut out = Vec::new();
        for id in &ids {
            out.push(state(&get_job(&mut c, id).await));
        }
        out
    };
    use proto::JobState::{Dead, Pending};
    assert_eq!(states, [Pending, Pending, Pending, Dead, Dead, Dead, Dead]);
    let want: BTreeMap<_, _> = [(key("q", 'B'), 2), (key("r", 'A'), 2)].into();
    assert_eq!(grouped(&mut c).await, want);

    let purged = purge_group(&mut c, "q", &fp_b, 0).await;
    assert_eq!((purged.purged, purged.more), (2, false));
    assert!(is_gone(&mut c, &ids[3]).await && is_gone(&mut c, &ids[4]).await);
    let want: BTreeMap<_, _> = [(key("r", 'A'), 2)].into();
    assert_eq!(grouped(&mut c).await, want);
    assert_eq!(listed_queue(&mut c, "q").await.dead, 0);
    assert_eq!(listed_queue(&mut c, "q").await.pending, 3);
    // Again: nothing left in either group.
    let again = retry_group(&mut c, "q", &fp_a, 0).await;
    assert_eq!((again.retried, again.more), (0, false));
    let again = purge_group(&mut c, "q", &fp_b, 0).await;
    assert_eq!((again.purged, again.more), (0, false));
}

/// Pins: the groups are the dead jobs, exactly, after jobs leave dead every way
/// there is (RetryJob, DeleteJob, PurgeJobs and RetryDeadJobs of a group, pruned by
/// a retention rule) and come back dead with another error.
#[tokio::test]
async fn group_counts_stay_exact_across_retry_delete_purge_and_prune() {
    let redis = Redis::start().await;
    let mut cfg = config(&redis.url());
    cfg.job_prune_interval = Duration::from_millis(100);
    let service = Service::start_with(cfg).await;
    let mut c = service.client().await;
    let mut jobs = of_kind("q", 'A', 12);
    jobs.extend(of_kind("q", 'B', 8));
    jobs.extend(of_kind("q", 'C', 5));
    jobs.extend(of_kind("r", 'A', 4));
    let ids = kill(&mut c, jobs).await;
    let queues = ["q", "r"];
    assert_eq!(grouped(&mut c).await, truth(&mut c, &queues).await);

    let mut revived = Vec::new();
    for id in &ids[..3] {
        c.retry_job(proto::RetryJobRequest {
            namespace: "ns".into(),
            job_id: id.clone(),
        })
        .await
        .expect("retry job");
        revived.push(id.clone());
    }
    for id in &ids[12..14] {
        c.delete_job(proto::DeleteJobRequest {
            namespace: "ns".into(),
            job_id: id.clone(),
        })
        .await
        .expect("delete job");
    }
    let fp_c = fingerprint(&mut c, "q", 'C').await;
    let purged = purge_group(&mut c, "q", &fp_c, 100).await;
    assert_eq!((purged.purged, purged.more), (5, false));
    let fp_b = fingerprint(&mut c, "q", 'B').await;
    let retried = retry_group(&mut c, "q", &fp_b, 3).await;
    assert_eq!((retried.retried, retried.more), (3, true));
    assert_eq!(grouped(&mut c).await, truth(&mut c, &queues).await);

    // The six revived jobs die again, of C: they join C's group, reborn.
    let mut errors = HashMap::new();
    for j in list_all_jobs(&mut c, "ns", "q", 1000).await {
        if state(&j) == proto::JobState::Pending {
            errors.insert(j.job_id.clone(), message('C', 100 + errors.len()));
        }
    }
    assert_eq!(errors.len(), 6);
    fail_all(&mut c, &["q".to_owned()], &errors).await;
    let now = grouped(&mut c).await;
    assert_eq!(now, truth(&mut c, &queues).await);
    let want: BTreeMap<_, _> = [
        (key("q", 'A'), 9),
        (key("q", 'B'), 3),
        (key("q", 'C'), 6),
        (key("r", 'A'), 4),
    ]
    .into();
    assert_eq!(now, want);

    // Dead jobs pruned by their retention rule leave their group (D's, whole).
    let keep_briefly = |req: proto::EnqueueRequest| proto::EnqueueRequest {
        retention: Some(proto::JobRetention {
            on_complete: None,
            on_fail: Some(proto::RetentionRule {
                rule: Some(proto::retention_rule::Rule::KeepFor(dur(1))),
            }),
        }),
        ..req
    };
    let mut brief: Vec<_> = of_kind("q", 'D', 3);
    brief.extend(of_kind("q", 'A', 2));
    let brief = brief
        .into_iter()
        .map(|(req, m)| (keep_briefly(req), m))
        .collect();
    let pruned = kill(&mut c, brief).await;
    let patience = Patience::new("the kept-briefly dead jobs to be pruned");
    for id in &pruned {
        while !is_gone(&mut c, id).await {
            patience.wait().await;
        }
    }
    assert_eq!(grouped(&mut c).await, want);
    assert_eq!(truth(&mut c, &queues).await, want);
}

/// Pins invariant 3 for a group: 5,000 dead jobs of one group are retried across
/// bounded calls (at most 500 each, as `limit` allows), each reply counting what it
/// did; the queue's other group is untouched.
#[tokio::test]
async fn a_large_group_is_retried_in_bounded_batches() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut jobs = of_kind("q", 'A', 5000);
    jobs.extend(of_kind("q", 'B', 10));
    kill(&mut c, jobs).await;
    let fp = fingerprint(&mut c, "q", 'A').await;
    let mut calls = Vec::new();
    loop {
        let r = retry_group(&mut c, "q", &fp, 500).await;
        calls.push((r.retried, r.more));
        if !r.more {
            break;
        }
        assert!(calls.len() < 20, "{calls:?}");
    }
    let mut want = vec![(500, true); 9];
    want.push((500, false));
    assert_eq!(calls, want);
    let want: BTreeMap<_, _> = [(key("q", 'B'), 10)].into();
    assert_eq!(grouped(&mut c).await, want);
    let q = listed_queue(&mut c, "q").await;
    assert_eq!((q.pending, q.dead), (5000, 10));
}

/// Dead jobs stored before the groups (their keys deleted here) are counted by a
/// dry run, which writes nothing, and indexed by Migrate; a second Migrate finds
/// nothing to do.
#[tokio::test]
async fn migrate_indexes_dead_jobs_stored_before_the_groups() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut jobs = of_kind("q", 'A', 3);
    jobs.extend(of_kind("q", 'B', 2));
    jobs.extend(of_kind("r", 'A', 1));
    kill(&mut c, jobs).await;
    let before = grouped(&mut c).await;
    assert_eq!(before.values().sum::<u64>(), 6);

    let mut conn = redis.conn().await;
    let keys: Vec<String> = query(&mut conn, cmd("KEYS").arg("dueq:{ns}:meta:dg*")).await;
    assert!(keys.len() >= 4, "{keys:?}");
    let _: i64 = query(&mut conn, cmd("DEL").arg(&keys)).await;
    assert!(groups(&mut c, "").await.is_empty());

    let mut admin = admin(&service).await;
    let dry = migrate_done(
        &mut admin,
        proto::MigrateRequest {
            dry_run: true,
            ..migrate_req("ns")
        },
    )
    .await;
    assert_eq!(dry.repaired, 6, "{dry:?}");
    assert!(
        groups(&mut c, "").await.is_empty(),
        "a dry run writes nothing"
    );

    let real = migrate_done(&mut admin, migrate_req("ns")).await;
    assert_eq!(real.repaired, 6, "{real:?}");
    let after = grouped(&mut c).await;
    assert_eq!(after, before);
    assert_eq!(after, truth(&mut c, &["q", "r"]).await);
    let again = migrate_done(&mut admin, migrate_req("ns")).await;
    assert_eq!(again.repaired, 0, "{again:?}");
    assert_eq!(grouped(&mut c).await, before);
}

/// A job whose last lease ran out joins the group of "lease expired"; dead nodes of a
/// flow leave their group when RetryDeadJobs re-arms one and RetryFlow the rest.
#[tokio::test]
async fn lease_expiry_and_flow_nodes_keep_the_groups_exact() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let id = enqueue(&mut c, one_attempt("l", "abandoned")).await.job_id;
    claim_job(&mut c, &["l"], 0, Some(200))
        .await
        .expect("claim");
    let patience = Patience::new("the lease to run out and a claim to find it");
    while state(&get_job(&mut c, &id).await) != proto::JobState::Dead {
        assert!(claim_job(&mut c, &["l"], 0, None).await.is_none());
        patience.wait().await;
    }
    let expired = groups(&mut c, "l").await;
    assert_eq!(expired.len(), 1);
    assert_eq!(
        (expired[0].count, expired[0].sample_error.as_str()),
        (1, "lease expired")
    );

    let node = |reference: &str| proto::FlowNode {
        r#ref: reference.into(),
        job: Some(one_attempt("f", reference)),
        after: vec![],
        on_dependency_failure: 0,
    };
    c.enqueue_flow(proto::EnqueueFlowRequest {
        namespace: "ns".into(),
        flow_id: "fl".into(),
        nodes: vec![node("a"), node("b"), node("c")],
    })
    .await
    .expect("EnqueueFlow");
    let mut errors = HashMap::new();
    for j in list_all_jobs(&mut c, "ns", "f", 100).await {
        errors.insert(j.job_id.clone(), message('A', errors.len()));
    }
    fail_all(&mut c, &["f".to_owned()], &errors).await;
    let queues = ["l", "f"];
    assert_eq!(grouped(&mut c).await, truth(&mut c, &queues).await);
    assert_eq!(grouped(&mut c).await[&key("f", 'A')], 3);
    let fp = fingerprint(&mut c, "f", 'A').await;
    let one = retry_group(&mut c, "f", &fp, 1).await;
    assert_eq!((one.retried, one.more), (1, true));
    assert_eq!(grouped(&mut c).await[&key("f", 'A')], 2);
    c.retry_flow(proto::RetryFlowRequest {
        namespace: "ns".into(),
        flow_id: "fl".into(),
    })
    .await
    .expect("RetryFlow");
    let now = grouped(&mut c).await;
    assert_eq!(now, truth(&mut c, &queues).await);
    assert!(!now.contains_key(&key("f", 'A')), "{now:?}");
}
