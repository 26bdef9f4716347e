//! Many workers, two service instances, one Redis: every due occurrence is handed out
//! exactly once and none is missed.

use std::collections::HashMap;

use futures::{stream, StreamExt};

use crate::common::*;

const SCHEDULES: usize = 2_000;
const CLAIMERS_PER_INSTANCE: usize = 32;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_instances_64_claimers_2000_due_each_claimed_exactly_once() {
    let redis = Redis::start().await;
    let conn = redis.conn().await;
    two_instances_claim_each_due_occurrence_once(config(&redis.url()), conn).await;
}

/// The test above over any Redis: two instances of `config`, and `conn` a direct
/// connection to the Redis (or cluster master) that holds namespace "ns".
pub async fn two_instances_claim_each_due_occurrence_once(
    config: dueq::config::ServeConfig,
    mut conn: deadpool_redis::redis::aio::MultiplexedConnection,
) {
    let a = Service::start_with(config.clone()).await;
    let b = Service::start_with(config).await;

    // Hourly schedules: once claimed, their next slot is far beyond the test.
    let client = a.client().await;
    stream::iter(0..SCHEDULES)
        .for_each_concurrent(32, |i| {
            let mut c = client.clone();
            async move {
                upsert(&mut c, "ns", every(&format!("s{i}"), 3600)).await;
            }
        })
        .await;

    // All of them due at the same instant, as after an outage.
    let due = redis_now(&mut conn).await - 1_000;
    for i in 0..SCHEDULES {
        force_due(&mut conn, "ns", &format!("s{i}"), due).await;
    }

    let mut workers = Vec::new();
    for service in [&a, &b] {
        for _ in 0..CLAIMERS_PER_INSTANCE {
            let mut c = service.client().await;
            workers.push(tokio::spawn(async move {
                let mut got = Vec::new();
                // Long-poll until a short wait comes back empty twice in a row.
                let mut empty = 0;
                while empty < 2 {
                    match claim(&mut c, "ns", 300).await {
                        Some(occ) => {
                            empty = 0;
                            got.push(occ);
                        }
                        None => empty += 1,
                    }
                }
                got
            }));
        }
    }

    let mut by_id: HashMap<String, usize> = HashMap::new();
    let mut occurrence_ids = std::collections::HashSet::new();
    let mut per_worker = Vec::new();
    for worker in workers {
        let got = worker.await.expect("worker task");
        per_worker.push(got.len());
        for occ in got {
            let s = occ.schedule.expect("schedule");
            assert_eq!(ms(&occ.due_time), due, "{} claimed for its due slot", s.id);
            assert_eq!(occ.run_number, 1);
            assert!(
                occurrence_ids.insert(occ.occurrence_id),
                "occurrence id unique"
            );
            *by_id.entry(s.id).or_default() += 1;
        }
    }
    let twice: Vec<_> = by_id.iter().filter(|(_, n)| **n > 1).collect();
    assert!(twice.is_empty(), "claimed more than once: {twice:?}");
    assert_eq!(by_id.len(), SCHEDULES, "every due schedule claimed");
    assert!(
        per_worker.iter().filter(|n| **n > 0).count() > 1,
        "work spread over workers: {per_worker:?}"
    );

    // The store agrees: one run each, all re-scored into the future.
    let ids: Vec<String> = (0..SCHEDULES).map(|i| format!("s{i}")).collect();
    let runs: Vec<Option<String>> = schedule_layout(&mut conn, "ns", RecordOp::Read, &ids)
        .await
        .into_iter()
        .map(|fields| fields.get("runs").cloned())
        .collect();
    assert!(
        runs.iter().all(|r| r.as_deref() == Some("1")),
        "runs == 1 everywhere"
    );
    let still_due: i64 = cmd("ZCOUNT")
        .arg("dueq:{ns}:due")
        .arg("-inf")
        .arg(redis_now(&mut conn).await)
        .query_async(&mut conn)
        .await
        .expect("ZCOUNT");
    assert_eq!(still_due, 0);
    let indexed: i64 = cmd("ZCARD")
        .arg("dueq:{ns}:due")
        .query_async(&mut conn)
        .await
        .expect("ZCARD");
    assert_eq!(
        indexed, SCHEDULES as i64,
        "all stay indexed for their next run"
    );
}

/// Cron schedules take the compute-in-Rust path: concurrent claimers race on the
/// revision/expected-next check, and still each slot goes to exactly one of them.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn cron_claims_race_safely_across_instances() {
    let redis = Redis::start().await;
    let a = Service::start(&redis.url()).await;
    let b = Service::start(&redis.url()).await;
    let mut conn = redis.conn().await;
    let mut c = a.client().await;
    for i in 0..50 {
        upsert(
            &mut c,
            "ns",
            cron(&format!("c{i}"), "0 3 * * *", "Europe/Berlin"),
        )
        .await;
    }
    let due = redis_now(&mut conn).await - 1_000;
    for i in 0..50 {
        force_due(&mut conn, "ns", &format!("c{i}"), due).await;
    }
    let mut workers = Vec::new();
    for service in [&a, &b] {
        for _ in 0..16 {
            let mut c = service.client().await;
            workers.push(tokio::spawn(async move {
                let mut got = Vec::new();
                while let Some(occ) = claim(&mut c, "ns", 200).await {
                    got.push(occ.schedule.expect("schedule").id);
                }
                got
            }));
        }
    }
    let mut all = Vec::new();
    for w in workers {
        all.extend(w.await.expect("worker"));
    }
    all.sort();
    let before = all.len();
    all.dedup();
    assert_eq!(before, all.len(), "no cron slot claimed twice");
    assert_eq!(all.len(), 50, "every cron slot claimed");
}
