//! Flow control under faults (issue 32): a dueq instance killed while holding leases
//! leaks no slot (they come back with the leases' expiry); a Redis restarted mid-run
//! from its snapshot leaks none either; and an idle key costs nothing in Redis.

use crate::common::*;

const Q: &str = "q";

/// Pins: an instance killed -9 while its workers hold a lease of every key leaves
/// the slots held until the leases expire, then the survivor hands out one job of
/// each key again (no slot lost, none freed early).
#[tokio::test]
async fn a_killed_instance_s_slots_come_back_when_its_leases_expire() {
    let redis = Redis::start().await;
    let mut conn = redis.conn().await;
    let doomed = Service::start(&redis.url()).await;
    let survivor = Service::start(&redis.url()).await;
    let mut on_doomed = doomed.client().await;
    let mut c = survivor.client().await;
    set_policy(&mut c, Q, per_key_max_running(1)).await;
    let jobs: Vec<_> = (0..20)
        .map(|i| concurrency_job(Q, &format!("k{}", i % 10), &format!("k{}", i % 10)))
        .collect();
    enqueue_all(&mut c, jobs).await;

    let mut req = claim_req(&[Q], 0, Some(500));
    req.max_jobs = 20;
    let held = on_doomed
        .claim_job(req)
        .await
        .expect("claim")
        .into_inner()
        .jobs;
    assert_eq!(held.len(), 10, "one per key");
    doomed.kill();
    assert!(claim_many(&mut c, Q, 20).await.is_empty(), "every key held");

    let last = held
        .iter()
        .map(|j| ms(&j.lease_deadline))
        .max()
        .expect("held");
    wait_redis_past(&mut conn, last).await;
    let again = claim_many(&mut c, Q, 20).await;
    let mut keys: Vec<String> = again.iter().map(|j| j.name.clone()).collect();
    keys.sort();
    let expected: Vec<String> = (0..10).map(|k| format!("k{k}")).collect();
    assert_eq!(keys, expected, "one job of each key, again");
}

/// Acks (through `c`) every job of "q" it can claim until `n` were acked; jobs of a
/// key whose slot leaked would never come, and the patience would run out.
async fn drain(c: &mut Client, n: usize) {
    let mut acked = 0;
    let mut patience = Patience::new(format!("job {} of {n} to be claimable", acked + 1));
    while acked < n {
        let jobs = match c
            .claim_job({
                let mut req = claim_req(&[Q], 500, Some(600_000));
                req.max_jobs = 50;
                req
            })
            .await
        {
            Ok(r) => r.into_inner().jobs,
            Err(_) => {
                patience.wait().await;
                continue;
            }
        };
        for j in jobs {
            if ack_job(c, &j.job_id, &j.lease_token).await.is_ok() {
                acked += 1;
                patience = Patience::new(format!("job {} of {n} to be claimable", acked + 1));
            }
        }
    }
}

/// Pins: Redis restarted mid-run from its snapshot (taken while keys' slots were
/// held; acks after it are lost with the restart) leaks no slot: once the leases the
/// snapshot holds expire, every job of every key is handed out and finished, and no
/// flow key is left.
#[tokio::test]
async fn a_redis_restart_mid_run_leaks_no_slot() {
    let mut redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    set_policy(&mut c, Q, per_key_max_running(1)).await;
    let jobs: Vec<_> = (0..60)
        .map(|i| concurrency_job(Q, &format!("k{}", i % 6), &format!("k{}", i % 6)))
        .collect();
    enqueue_all(&mut c, jobs).await;
    let mut req = claim_req(&[Q], 0, Some(800));
    req.max_jobs = 20;
    let held = c.claim_job(req).await.expect("claim").into_inner().jobs;
    assert_eq!(held.len(), 6, "one per key");

    let mut conn = redis.conn().await;
    let _: () = query(&mut conn, &mut cmd("SAVE")).await;
    drop(conn);
    // Acked after the snapshot: lost with the restart, so the slots stay held in
    // the restarted Redis until these leases expire.
    for j in &held {
        ack_job(&mut c, &j.job_id, &j.lease_token)
            .await
            .expect("ack");
    }
    redis.restart().await;

    let patience = Patience::new("the service on the restarted Redis");
    while c
        .get_queue_policy(proto::GetQueuePolicyRequest {
            namespace: "ns".into(),
            queue: Q.into(),
        })
        .await
        .is_err()
    {
        patience.wait().await;
    }
    drain(&mut c, 60).await;
    let mut conn = redis.conn().await;
    let left = flow_keys(&mut conn).await;
    assert!(left.is_empty(), "no slot or lane left: {left:?}");
}

/// Pins: an idle key costs nothing in Redis: after every job of 100 keys (each a
/// fairness, concurrency and rate key, under round-robin with per-key limits) has
/// finished — some failed and retried, some released — no flow key remains for
/// them once their rate state has run out.
#[tokio::test]
async fn an_idle_key_costs_no_redis_key() {
    let redis = Redis::start().await;
    let mut conn = redis.conn().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let period = 100;
    set_policy(
        &mut c,
        Q,
        proto::QueuePolicy {
            per_key_max_running: 2,
            per_key_rate: Some(rate(1000, period, 10)),
            fairness: proto::Fairness::RoundRobin as i32,
            ..Default::default()
        },
    )
    .await;
    let jobs: Vec<_> = (0..300)
        .map(|i| {
            let k = format!("key{}", i % 100);
            let mut r = keyed_job(Q, &k, &k, &k, &k);
            r.max_attempts = Some(3);
            r.backoff = Some(proto::Backoff {
                kind: proto::BackoffKind::Fixed as i32,
                base: Some(dur(10)),
                cap: None,
                jitter: 0.0,
            });
            r
        })
        .collect();
    enqueue_all(&mut c, jobs).await;
    assert!(!flow_keys(&mut conn).await.is_empty(), "lanes are stored");

    let mut finished = 0;
    let mut turn = 0u32;
    let patience = Patience::new("all 300 jobs to finish");
    while finished < 300 {
        let got = claim_many(&mut c, Q, 50).await;
        if got.is_empty() {
            patience.wait().await;
        }
        for j in got {
            turn += 1;
            if turn.is_multiple_of(7) && j.attempt < 3 {
                fail_job(&mut c, &j.job_id, &j.lease_token, "retry")
                    .await
                    .expect("fail");
            } else {
                ack_job(&mut c, &j.job_id, &j.lease_token)
                    .await
                    .expect("ack");
                finished += 1;
            }
        }
    }
    // The rate state (a GCRA time per key) expires one interval after its last start.
    let now = redis_now(&mut conn).await;
    wait_redis_past(&mut conn, now + period as i64).await;
    let mut left = Vec::new();
    for key in flow_keys(&mut conn).await {
        if exists(&mut conn, &key).await {
            left.push(key);
        }
    }
    assert!(left.is_empty(), "idle keys still cost: {left:?}");
}
