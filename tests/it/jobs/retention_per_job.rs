//! Retention per job (issue 36): `EnqueueRequest.retention` says what happens to a
//! job once it has finished (remove it, keep the last N of its queue and state, keep
//! it for a while, or the server's retention); a removed or pruned job frees its
//! dedup key; ListQueues counts what was removed.

use std::time::Duration;

use tonic::Code;

use crate::common::*;

use proto::retention_rule::Rule;

fn rule(r: Rule) -> Option<proto::RetentionRule> {
    Some(proto::RetentionRule { rule: Some(r) })
}

fn retained(
    queue: &str,
    on_complete: Option<Rule>,
    on_fail: Option<Rule>,
) -> proto::EnqueueRequest {
    proto::EnqueueRequest {
        retention: Some(proto::JobRetention {
            on_complete: on_complete.and_then(rule),
            on_fail: on_fail.and_then(rule),
        }),
        ..job(queue, "x")
    }
}

async fn job_exists(c: &mut Client, id: &str) -> bool {
    match c
        .get_job(proto::GetJobRequest {
            namespace: "ns".into(),
            job_id: id.into(),
        })
        .await
    {
        Ok(_) => true,
        Err(s) if s.code() == Code::NotFound => false,
        Err(s) => panic!("{s:?}"),
    }
}

/// Claims the next job of `queue`, which must be `id`, and acks it.
async fn complete(c: &mut Client, queue: &str, id: &str) {
    let j = claim_job(c, &[queue], 0, None).await.expect("claim");
    assert_eq!(j.job_id, id, "claimed in enqueue order");
    ack_job(c, id, &j.lease_token).await.expect("ack");
}

/// Claims the next job of `queue`, which must be `id`, and fails it for good.
async fn kill(c: &mut Client, queue: &str, id: &str) {
    let j = claim_job(c, &[queue], 0, None).await.expect("claim");
    assert_eq!(j.job_id, id, "claimed in enqueue order");
    let r = c
        .fail_job(proto::FailJobRequest {
            namespace: "ns".into(),
            job_id: id.into(),
            lease_token: j.lease_token,
            error: "boom".into(),
            non_retryable: true,
            ..Default::default()
        })
        .await
        .expect("fail")
        .into_inner();
    assert_eq!(r.state, proto::JobState::Dead as i32);
}

fn with_dedup(mut req: proto::EnqueueRequest, key: &str) -> proto::EnqueueRequest {
    req.dedup_key = key.into();
    req.dedup_ttl = Some(dur(3_600_000));
    req
}

/// Pins: `on_complete.remove` deletes the job in the ack itself (GetJob NOT_FOUND at
/// once, gone from the listing), frees its dedup key so the next Enqueue with that
/// key creates a new job, and counts in ListQueues `removed`.
#[tokio::test]
async fn remove_on_complete_deletes_the_job_as_it_is_acked_and_frees_its_dedup_key() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;
    let req = with_dedup(retained("q", Some(Rule::Remove(true)), None), "dk");
    let first = enqueue(&mut c, req.clone()).await;
    assert_eq!(first.outcome, proto::EnqueueOutcome::Created as i32);
    let again = enqueue(&mut c, req.clone()).await;
    assert_eq!(again.outcome, proto::EnqueueOutcome::Duplicate as i32);
    complete(&mut c, "q", &first.job_id).await;
    assert!(
        !job_exists(&mut c, &first.job_id).await,
        "removed by its ack"
    );
    assert!(listed_job_ids(&mut conn, "ns", "q").await.is_empty());
    let info = queue_info(&mut c, "q").await.expect("q listed");
    assert_eq!(info.removed, 1);
    let next = enqueue(&mut c, req).await;
    assert_eq!(next.outcome, proto::EnqueueOutcome::Created as i32);
    assert_ne!(next.job_id, first.job_id, "the freed key makes a new job");
}

/// Pins: `on_fail.remove` deletes a job that ends dead (out of the dead set too) and
/// one that is cancelled; a completed job with only an on_fail rule keeps the server
/// default.
#[tokio::test]
async fn remove_on_fail_deletes_dead_and_cancelled_jobs_only() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let dies = enqueue(&mut c, retained("q", None, Some(Rule::Remove(true))))
        .await
        .job_id;
    let completes = enqueue(&mut c, retained("q", None, Some(Rule::Remove(true))))
        .await
        .job_id;
    let cancelled = enqueue(&mut c, retained("q", None, Some(Rule::Remove(true))))
        .await
        .job_id;
    kill(&mut c, "q", &dies).await;
    assert!(!job_exists(&mut c, &dies).await, "a dead job is removed");
    complete(&mut c, "q", &completes).await;
    assert!(job_exists(&mut c, &completes).await, "server default");
    let r = c
        .cancel_job(proto::CancelJobRequest {
            namespace: "ns".into(),
            job_id: cancelled.clone(),
        })
        .await
        .expect("cancel")
        .into_inner();
    assert_eq!(
        r.job.map(|j| j.state),
        Some(proto::JobState::Cancelled as i32)
    );
    assert!(!job_exists(&mut c, &cancelled).await, "a cancelled job too");
    let info = queue_info(&mut c, "q").await.expect("q listed");
    assert_eq!((info.dead, info.removed), (0, 2));
}

/// Pins: `keep_last N` keeps exactly the newest N finished jobs of its queue and
/// state: completed and dead are counted apart, another queue apart, and jobs with
/// the server default are not counted.
#[tokio::test]
async fn keep_last_keeps_exactly_the_newest_n_of_its_queue_and_state() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let keep2 = || retained("q", Some(Rule::KeepLast(2)), Some(Rule::KeepLast(1)));
    let mut completed = Vec::new();
    for _ in 0..5 {
        let id = enqueue(&mut c, keep2()).await.job_id;
        complete(&mut c, "q", &id).await;
        completed.push(id);
    }
    let plain = enqueue(&mut c, job("q", "default")).await.job_id;
    complete(&mut c, "q", &plain).await;
    let mut dead = Vec::new();
    for _ in 0..3 {
        let id = enqueue(&mut c, keep2()).await.job_id;
        kill(&mut c, "q", &id).await;
        dead.push(id);
    }
    let other = enqueue(&mut c, retained("r", Some(Rule::KeepLast(2)), None))
        .await
        .job_id;
    complete(&mut c, "r", &other).await;

    for (i, id) in completed.iter().enumerate() {
        assert_eq!(job_exists(&mut c, id).await, i >= 3, "completed job {i}");
    }
    for (i, id) in dead.iter().enumerate() {
        assert_eq!(job_exists(&mut c, id).await, i == 2, "dead job {i}");
    }
    assert!(job_exists(&mut c, &plain).await, "not counted, not removed");
    assert!(job_exists(&mut c, &other).await, "another queue");
    let info = queue_info(&mut c, "q").await.expect("q listed");
    assert_eq!((info.dead, info.removed), (1, 5));
}

/// Pins: `keep_for` removes the job once that long has passed since it finished
/// (never before, by Redis's clock), its dedup key with it, while a job with the
/// server default (24 h) stays.
#[tokio::test]
async fn keep_for_expires_the_job_while_the_server_default_keeps_others() {
    let keep_ms = 500;
    let redis = Redis::start().await;
    let mut config = config(&redis.url());
    config.job_prune_interval = Duration::from_millis(100);
    let service = Service::start_with(config).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;
    let plain = enqueue(&mut c, job("q", "default")).await.job_id;
    complete(&mut c, "q", &plain).await;
    let req = with_dedup(retained("q", Some(Rule::KeepFor(dur(keep_ms))), None), "dk");
    let kept = enqueue(&mut c, req.clone()).await.job_id;
    let finished_from = redis_now(&mut conn).await;
    complete(&mut c, "q", &kept).await;

    let patience = Patience::new("the keep_for job to be removed");
    while job_exists(&mut c, &kept).await {
        patience.wait().await;
    }
    let gone_by = redis_now(&mut conn).await;
    assert!(
        gone_by >= finished_from + keep_ms as i64,
        "removed {} ms after it finished",
        gone_by - finished_from
    );
    assert!(
        job_exists(&mut c, &plain).await,
        "the server default keeps it"
    );
    let next = enqueue(&mut c, req).await;
    assert_eq!(next.outcome, proto::EnqueueOutcome::Created as i32);
    let info = queue_info(&mut c, "q").await.expect("q listed");
    assert_eq!(info.removed, 1);
}

/// Pins: a job kept by its own rule is left out of the server's count: with
/// --job-retention-count 1, the default jobs are pruned down to one while the
/// keep_last jobs all stay.
#[tokio::test]
async fn jobs_kept_by_their_own_rule_are_left_out_of_the_server_count() {
    let redis = Redis::start().await;
    let mut config = config(&redis.url());
    config.job_retention_count = 1;
    config.job_prune_interval = Duration::from_millis(100);
    let service = Service::start_with(config).await;
    let mut c = service.client().await;
    let mut own = Vec::new();
    for _ in 0..3 {
        let id = enqueue(&mut c, retained("q", Some(Rule::KeepLast(10)), None))
            .await
            .job_id;
        complete(&mut c, "q", &id).await;
        own.push(id);
    }
    // Count retention visits a namespace when its finished set reaches a power of
    // two (lib/job.lua finish_entry): with the 3 jobs above, the fifth default job
    // makes it 8, so a visit comes after the last completion, whenever the pruner
    // ran before it.
    let mut plain = Vec::new();
    for _ in 0..5 {
        let id = enqueue(&mut c, job("q", "default")).await.job_id;
        complete(&mut c, "q", &id).await;
        plain.push(id);
    }
    let patience = Patience::new("the default jobs to be pruned down to one");
    while job_exists(&mut c, &plain[3]).await {
        patience.wait().await;
    }
    for id in &plain[..3] {
        assert!(!job_exists(&mut c, id).await, "{id} pruned");
    }
    assert!(
        job_exists(&mut c, &plain[4]).await,
        "the newest default job"
    );
    for id in &own {
        assert!(job_exists(&mut c, id).await, "kept by its own rule");
    }
}

/// Pins: each EnqueueBatch item carries its own retention.
#[tokio::test]
async fn batch_items_carry_their_own_retention() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let results = c
        .enqueue_batch(proto::EnqueueBatchRequest {
            namespace: "ns".into(),
            jobs: vec![
                retained("q", Some(Rule::Remove(true)), None),
                job("q", "default"),
            ],
        })
        .await
        .expect("batch")
        .into_inner()
        .results;
    let ids: Vec<String> = results
        .into_iter()
        .map(|r| match r.result {
            Some(proto::enqueue_batch_result::Result::Ok(ok)) => ok.job_id,
            other => panic!("{other:?}"),
        })
        .collect();
    for id in &ids {
        complete(&mut c, "q", id).await;
    }
    assert!(!job_exists(&mut c, &ids[0]).await, "removed");
    assert!(job_exists(&mut c, &ids[1]).await, "server default");
}

/// Pins: a bad rule is INVALID_ARGUMENT naming the field (with the item's index in
/// a batch), and nothing is written.
#[tokio::test]
async fn bad_rules_are_refused_naming_the_field_and_nothing_is_written() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let negative = prost_types::Duration {
        seconds: -1,
        nanos: 0,
    };
    let cases = [
        (
            retained("q", Some(Rule::KeepLast(0)), None),
            "retention.on_complete.keep_last",
        ),
        (
            retained("q", None, Some(Rule::KeepFor(dur(0)))),
            "retention.on_fail.keep_for",
        ),
        (
            retained("q", Some(Rule::KeepFor(negative)), None),
            "retention.on_complete.keep_for",
        ),
        (
            retained("q", None, Some(Rule::Remove(false))),
            "retention.on_fail.remove",
        ),
        (
            retained("q", Some(Rule::KeepLast(1_000_001)), None),
            "retention.on_complete.keep_last",
        ),
    ];
    for (req, field) in cases.clone() {
        let err = c.enqueue(req).await.expect_err(field);
        assert_eq!(err.code(), Code::InvalidArgument, "{field}: {err:?}");
        assert!(err.message().contains(field), "{field}: {}", err.message());
    }
    for (req, field) in cases {
        let results = c
            .enqueue_batch(proto::EnqueueBatchRequest {
                namespace: "ns".into(),
                jobs: vec![job("ok", "fine"), req],
            })
            .await
            .expect("batch")
            .into_inner()
            .results;
        match &results[1].result {
            Some(proto::enqueue_batch_result::Result::Error(e)) => {
                assert_eq!(e.code, Code::InvalidArgument as i32);
                assert!(
                    e.message.contains(&format!("jobs[1].{field}")),
                    "{}",
                    e.message
                );
            }
            other => panic!("{field}: {other:?}"),
        }
    }
    assert!(queue_info(&mut c, "q").await.is_none(), "nothing written");
}

/// Pins: two instances acking many keep_last jobs at once leave exactly the newest
/// N: each ack's script adds its job and trims the oldest, atomically.
#[tokio::test]
async fn two_instances_acking_keep_last_jobs_at_once_leave_exactly_n() {
    const JOBS: usize = 200;
    const KEEP: u32 = 7;
    let redis = Redis::start().await;
    let a = Service::start(&redis.url()).await;
    let b = Service::start(&redis.url()).await;
    let mut c = a.client().await;
    let reqs: Vec<proto::EnqueueRequest> = (0..JOBS)
        .map(|_| retained("q", Some(Rule::KeepLast(KEEP)), None))
        .collect();
    for chunk in reqs.chunks(100) {
        c.enqueue_batch(proto::EnqueueBatchRequest {
            namespace: "ns".into(),
            jobs: chunk.to_vec(),
        })
        .await
        .expect("batch");
    }
    let mut workers = Vec::new();
    for service in [&a, &b, &a, &b] {
        let mut c = service.client().await;
        workers.push(tokio::spawn(async move {
            let mut last = None;
            while let Some(j) = claim_job(&mut c, &["q"], 0, None).await {
                ack_job(&mut c, &j.job_id, &j.lease_token)
                    .await
                    .expect("ack");
                last = Some(j.job_id);
            }
            last
        }));
    }
    for w in workers {
        w.await.expect("worker");
    }
    let mut conn = redis.conn().await;
    let listed = listed_job_ids(&mut conn, "ns", "q").await;
    assert_eq!(listed.len(), KEEP as usize, "{listed:?}");
    for id in &listed {
        assert!(job_exists(&mut c, id).await);
    }
    let info = queue_info(&mut c, "q").await.expect("q listed");
    assert_eq!(info.removed, (JOBS - KEEP as usize) as u64);
}

/// Pins: docs/jobs.md's retention example runs, as one script, against the service,
/// and shows what it says: the first job gone after its ack, the same dedup key
/// making a second job, and ListQueues counting the removal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs grpcurl"]
async fn the_retention_example_runs() {
    crate::common::tools::require("grpcurl");
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let text = crate::doc_examples::run_fenced("retention-per-job", &service);
    assert_eq!(text.matches("ENQUEUE_OUTCOME_CREATED").count(), 2, "{text}");
    assert!(text.contains("\"removed\": \"1\""), "{text}");
    let mut c = service.client().await;
    let get = |id: &str| proto::GetJobRequest {
        namespace: "shop".into(),
        job_id: id.into(),
    };
    let gone = c.get_job(get("welcome-1")).await.expect_err("removed");
    assert_eq!(gone.code(), Code::NotFound);
    c.get_job(get("welcome-2")).await.expect("the new job");
}

/// Pins: RetryJob takes a dead keep_last job out of its queue's kept set, so a
/// revived job does not count among the last N of the dead jobs.
#[tokio::test]
async fn a_retried_job_leaves_the_kept_set() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;
    let kept_dead = || async {
        let mut conn = redis.conn().await;
        let n: i64 = cmd("ZCARD")
            .arg("dueq:{ns}:meta:kept:dead:q")
            .query_async(&mut conn)
            .await
            .expect("ZCARD");
        n
    };
    let id = enqueue(&mut c, retained("q", None, Some(Rule::KeepLast(3))))
        .await
        .job_id;
    kill(&mut c, "q", &id).await;
    assert_eq!(kept_dead().await, 1);
    c.retry_job(proto::RetryJobRequest {
        namespace: "ns".into(),
        job_id: id.clone(),
    })
    .await
    .expect("retry");
    assert_eq!(kept_dead().await, 0, "revived, out of the kept set");
    complete(&mut c, "q", &id).await;
    let kept_completed: i64 = cmd("ZCARD")
        .arg("dueq:{ns}:meta:kept:completed:q")
        .query_async(&mut conn)
        .await
        .expect("ZCARD");
    assert_eq!(kept_completed, 0, "on_complete keeps the server default");
    assert!(job_exists(&mut c, &id).await);
}
