//! Retention: finished jobs are pruned by age and by count, off the request path,
//! and live jobs never are.

use std::time::Duration;

use tonic::Code;

use crate::common::*;

async fn finish_one(c: &mut Client, queue: &str) -> String {
    let id = enqueue(c, job(queue, "x")).await.job_id;
    let j = claim_job(c, &[queue], 0, None).await.expect("claim");
    ack_job(c, &id, &j.lease_token).await.expect("ack");
    id
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

/// Pins: completed, dead and cancelled jobs are pruned once older than the retention
/// age (never before, by Redis's clock), with their index entries and dedup keys;
/// live jobs never are.
#[tokio::test]
async fn finished_jobs_are_pruned_after_the_retention_age() {
    let retention_ms = 1_000;
    let redis = Redis::start().await;
    let mut config = config(&redis.url());
    config.job_retention = Duration::from_millis(retention_ms as u64);
    config.job_prune_interval = Duration::from_millis(100);
    let service = Service::start_with(config).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;

    // Each job finishes no earlier than Redis's clock read just before its last call.
    let completed_from = redis_now(&mut conn).await;
    let completed = finish_one(&mut c, "q").await;
    let mut req = job("q", "dies");
    req.max_attempts = Some(1);
    let dead = enqueue(&mut c, req).await.job_id;
    let j = claim_job(&mut c, &["q"], 0, None).await.expect("claim");
    let dead_from = redis_now(&mut conn).await;
    fail_job(&mut c, &dead, &j.lease_token, "x")
        .await
        .expect("fail");
    let mut req = job("q", "cancel me");
    req.dedup_key = "dk".into();
    req.dedup_ttl = Some(dur(3_600_000));
    let cancelled = enqueue(&mut c, req).await.job_id;
    let cancelled_from = redis_now(&mut conn).await;
    c.cancel_job(proto::CancelJobRequest {
        namespace: "ns".into(),
        job_id: cancelled.clone(),
    })
    .await
    .expect("cancel");
    let mut req = job("q", "live");
    req.when = Some(proto::enqueue_request::When::Delay(dur(3_600_000)));
    let live = enqueue(&mut c, req).await.job_id;

    // Pruned, but only once the retention age has passed since it finished.
    for (id, finished_from) in [
        (&completed, completed_from),
        (&dead, dead_from),
        (&cancelled, cancelled_from),
    ] {
        let patience = Patience::new(format!("{id} to be pruned"));
        while job_exists(&mut c, id).await {
            patience.wait().await;
        }
        let gone_by = redis_now(&mut conn).await;
        assert!(
            gone_by >= finished_from + retention_ms,
            "{id} was pruned within {} ms of finishing, before the retention age",
            gone_by - finished_from
        );
    }
    assert!(
        job_exists(&mut c, &live).await,
        "live jobs are never pruned"
    );
    // Their index entries went with them: the listing holds only the live job, the
    // finished set is empty and the pruned job's dedup key is released.
    let listing = listed_job_ids(&mut conn, "ns", "q").await;
    assert_eq!(listing, std::slice::from_ref(&live));
    let done: i64 = cmd("ZCARD")
        .arg("dueq:{ns}:jdone")
        .query_async(&mut conn)
        .await
        .expect("ZCARD");
    assert_eq!(done, 0);
    let dedup: i64 = cmd("EXISTS")
        .arg("dueq:{ns}:dd:dk")
        .query_async(&mut conn)
        .await
        .expect("EXISTS");
    assert_eq!(dedup, 0);
}

/// Pins: beyond the retention count, the oldest finished jobs are pruned and the
/// newest kept.
#[tokio::test]
async fn only_the_newest_finished_jobs_beyond_the_count_are_kept() {
    let redis = Redis::start().await;
    let mut config = config(&redis.url());
    config.job_retention_count = 3;
    config.job_prune_interval = Duration::from_millis(100);
    let service = Service::start_with(config).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;
    let mut ids = Vec::new();
    for _ in 0..6 {
        ids.push(finish_one(&mut c, "q").await);
        // The next one finishes on a later ms of Redis's clock.
        let finished = redis_now(&mut conn).await;
        wait_redis_past(&mut conn, finished).await;
    }
    let patience = Patience::new("the oldest three to be pruned");
    for id in &ids[..3] {
        while job_exists(&mut c, id).await {
            patience.wait().await;
        }
    }
    let mut kept = Vec::new();
    for id in &ids {
        kept.push(job_exists(&mut c, id).await);
    }
    assert_eq!(kept, [false, false, false, true, true, true]);
}

async fn strlen(conn: &mut deadpool_redis::redis::aio::MultiplexedConnection, key: &str) -> i64 {
    cmd("STRLEN")
        .arg(key)
        .query_async(conn)
        .await
        .expect("STRLEN")
}

/// A payload over 1 KiB lives in a key of its own, so the record a transition
/// rewrites stays small; every read gives the payload back, a REPLACE moves it in or
/// out, and pruning removes it with the job.
#[tokio::test]
async fn a_large_payload_is_kept_out_of_its_record_and_pruned_with_it() {
    let redis = Redis::start().await;
    let mut config = config(&redis.url());
    config.job_retention = Duration::from_millis(300);
    config.job_prune_interval = Duration::from_millis(100);
    let service = Service::start_with(config).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;

    let big: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
    let mut req = job("q", "big");
    req.payload = big.clone();
    req.dedup_key = "big".into();
    req.dedup_ttl = Some(dur(3_600_000));
    req.dedup_mode = proto::DedupMode::Replace as i32;
    let id = enqueue(&mut c, req).await.job_id;
    let (record, payload) = (
        format!("dueq:{{ns}}:j:{id}"),
        format!("dueq:{{ns}}:jp:{id}"),
    );
    assert!(
        strlen(&mut conn, &record).await < 200,
        "the record stays small"
    );
    assert_eq!(strlen(&mut conn, &payload).await, 200_000);
    assert_eq!(get_job(&mut c, &id).await.payload, big);

    // REPLACE with a small payload brings it back inline and drops the key; with a
    // big one again, out.
    let mut small = job("q", "big");
    small.payload = b"small".to_vec();
    small.dedup_key = "big".into();
    small.dedup_ttl = Some(dur(3_600_000));
    small.dedup_mode = proto::DedupMode::Replace as i32;
    let r = enqueue(&mut c, small.clone()).await;
    assert_eq!(r.outcome, proto::EnqueueOutcome::Replaced as i32);
    assert_eq!(get_job(&mut c, &id).await.payload, b"small");
    assert_eq!(
        strlen(&mut conn, &payload).await,
        0,
        "the payload key is gone"
    );
    small.payload = big.clone();
    enqueue(&mut c, small).await;
    assert_eq!(strlen(&mut conn, &payload).await, 200_000);

    let claimed = claim_job(&mut c, &["q"], 0, None).await.expect("claim");
    assert_eq!(claimed.payload, big);
    assert!(strlen(&mut conn, &record).await < 200);
    ack_job(&mut c, &id, &claimed.lease_token)
        .await
        .expect("ack");
    let patience = Patience::new("the big job to be pruned");
    while job_exists(&mut c, &id).await {
        patience.wait().await;
    }
    assert_eq!(strlen(&mut conn, &payload).await, 0, "pruned with its job");
}

/// The namespaces the prune due-set holds, with their scores.
async fn prune_due(
    conn: &mut deadpool_redis::redis::aio::MultiplexedConnection,
) -> Vec<(String, i64)> {
    let pairs: Vec<(String, f64)> = query(
        conn,
        cmd("ZRANGE")
            .arg("dueq:prune-due")
            .arg(0)
            .arg(-1)
            .arg("WITHSCORES"),
    )
    .await;
    pairs.into_iter().map(|(ns, at)| (ns, at as i64)).collect()
}

/// Pins: pruning is driven from Redis, not by what a replica served: a namespace
/// whose jobs only one replica ever touched is pruned by another (whose pruner is
/// the only one running), and once nothing is kept it leaves the prune due-set.
#[tokio::test]
async fn a_namespace_served_by_one_replica_is_pruned_by_another() {
    let redis = Redis::start().await;
    let a = Service::start_with(config_without_background_work(&redis.url())).await;
    let mut pruning = config_without_background_work(&redis.url());
    pruning.job_retention = Duration::from_millis(300);
    pruning.job_prune_interval = Duration::from_millis(100);
    let _b = Service::start_with(pruning).await;
    let mut c = a.client().await;
    let mut conn = redis.conn().await;

    let finished_from = redis_now(&mut conn).await;
    let id = finish_one(&mut c, "q").await;
    let patience = Patience::new("the other replica to prune the job");
    while job_exists(&mut c, &id).await {
        patience.wait().await;
    }
    assert!(
        redis_now(&mut conn).await >= finished_from + 300,
        "not before its age"
    );
    let patience = Patience::new("the namespace to leave the due-set");
    while !prune_due(&mut conn).await.is_empty() {
        patience.wait().await;
    }
    assert_eq!(zcard(&mut conn, "dueq:{ns}:jdone").await, 0);
}

/// Pins: namespaces that finished jobs and went idle cost no background scripts
/// while their jobs are kept: each waits in the due-set, scored by when its oldest
/// finished job passes the retention age, instead of being visited every tick.
#[tokio::test]
async fn idle_namespaces_with_kept_jobs_cost_no_background_scripts() {
    let redis = Redis::start().await;
    let mut config = config_without_background_work(&redis.url());
    config.job_retention = Duration::from_secs(3600);
    config.job_prune_interval = Duration::from_millis(50);
    let service = Service::start_with(config).await;
    let c = service.client().await;
    let mut conn = redis.conn().await;

    let finished_from = redis_now(&mut conn).await;
    for i in 0..20 {
        let ns = format!("ns{i}");
        let mut c = c.clone();
        let mut req = job("q", "x");
        req.namespace = ns.clone();
        let id = enqueue(&mut c, req).await.job_id;
        let mut claim = claim_req(&["q"], 0, None);
        claim.namespace = ns.clone();
        let j = c
            .claim_job(claim)
            .await
            .expect("claim")
            .into_inner()
            .jobs
            .remove(0);
        c.ack_job(proto::AckJobRequest {
            result: Vec::new(),
            namespace: ns,
            job_id: id,
            lease_token: j.lease_token,
        })
        .await
        .expect("ack");
    }
    // The first visits schedule each namespace at its retention time; then nothing.
    wait_quiet(&mut conn, 15).await;
    let due = prune_due(&mut conn).await;
    assert_eq!(due.len(), 20, "{due:?}");
    for (ns, at) in due {
        assert!(
            at >= finished_from + 3_600_000,
            "{ns} is due at {at}, before its age"
        );
    }
}

/// Pins: a job that goes dead because its last lease ran out (found by a later
/// claim) registers its namespace for pruning too, and is pruned.
#[tokio::test]
async fn a_job_dead_by_an_expired_lease_is_pruned() {
    let redis = Redis::start().await;
    let mut config = config_without_background_work(&redis.url());
    config.job_retention = Duration::from_millis(300);
    config.job_prune_interval = Duration::from_millis(100);
    let service = Service::start_with(config).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;

    let mut req = job("q", "abandoned");
    req.max_attempts = Some(1);
    let id = enqueue(&mut c, req).await.job_id;
    claim_job(&mut c, &["q"], 0, Some(200))
        .await
        .expect("claim");
    // The namespace's first use registered it; with nothing finished it leaves again.
    let patience = Patience::new("the first visit to drop the namespace");
    while !prune_due(&mut conn).await.is_empty() {
        patience.wait().await;
    }
    let patience = Patience::new("the lease to run out and a claim to find it");
    loop {
        assert!(claim_job(&mut c, &["q"], 0, None).await.is_none());
        if state(&get_job(&mut c, &id).await) == proto::JobState::Dead {
            break;
        }
        patience.wait().await;
    }
    let patience = Patience::new("the dead job to be pruned");
    while job_exists(&mut c, &id).await {
        patience.wait().await;
    }
}
