//! Overlap policies (issue 17): what a slot does that comes due while an earlier
//! leased occurrence of its schedule is still leased and unacked. The "next slot comes
//! due" is simulated by moving the schedule's next run into the past (`force_due`), as
//! a clock jump would; leases are real.

use std::collections::{HashMap, HashSet};

use deadpool_redis::redis::aio::MultiplexedConnection;
use futures::{stream, StreamExt};
use tonic::Code;

use crate::common::*;

const LEASE_MS: u64 = 60_000;

fn hourly(id: &str, policy: proto::OverlapPolicy) -> proto::Schedule {
    proto::Schedule {
        overlap_policy: policy as i32,
        ..every(id, 3600)
    }
}

/// Makes the schedule's next slot due now (a second before Redis's clock, minus
/// `back` ms so successive slots differ); returns the slot.
async fn slot_due(conn: &mut MultiplexedConnection, id: &str, back: i64) -> i64 {
    let slot = redis_now(conn).await - 1_000 - back;
    force_due(conn, "ns", id, slot).await;
    slot
}

/// Pins SKIP across two instances: while instance A's leased occurrence is
/// outstanding, neither instance hands out the next slot (leased or not); it is
/// counted in skipped_overlap and in the metric, and the schedule moves past it.
/// After the ack, the next slot is handed out as usual.
#[tokio::test]
async fn overlap_skip_skips_slots_while_a_lease_is_outstanding_across_two_instances() {
    let redis = Redis::start().await;
    let metrics = format!("127.0.0.1:{}", free_port());
    let a = Service::start(&redis.url()).await;
    let mut config = config(&redis.url());
    config.metrics_listen = Some(metrics.clone());
    let b = Service::start_with(config).await;
    let (mut ca, mut cb) = (a.client().await, b.client().await);
    let mut conn = redis.conn().await;
    upsert(&mut ca, "ns", hourly("s", proto::OverlapPolicy::Skip)).await;

    let t1 = slot_due(&mut conn, "s", 20).await;
    let first = leased_claim(&mut ca, "ns", 0, LEASE_MS)
        .await
        .expect("first slot");
    assert_eq!(ms(&first.due_time), t1);

    slot_due(&mut conn, "s", 10).await;
    assert!(
        leased_claim(&mut cb, "ns", 0, LEASE_MS).await.is_none(),
        "skipped on B"
    );
    let s = get(&mut cb, "ns", "s").await;
    assert_eq!((s.skipped_overlap, s.run_count), (1, 1));
    assert!(
        ms(&s.next_run_time) > redis_now(&mut conn).await,
        "moved past it"
    );
    let scraped = scrape(&metrics).await;
    assert_eq!(
        scraped.value("dueq_schedule_skipped_runs_total{namespace=\"ns\",reason=\"overlap\"}"),
        1.0,
        "{}",
        scraped.body
    );

    slot_due(&mut conn, "s", 5).await;
    assert!(
        claim(&mut ca, "ns", 0).await.is_none(),
        "an unleased claim skips too"
    );
    assert_eq!(get(&mut ca, "ns", "s").await.skipped_overlap, 2);

    ack_occurrence(&mut cb, "ns", &first)
        .await
        .expect("ack on the other instance");
    let t4 = slot_due(&mut conn, "s", 0).await;
    let next = leased_claim(&mut cb, "ns", 0, LEASE_MS)
        .await
        .expect("handed out after the ack");
    assert_eq!(ms(&next.due_time), t4);
    let s = get(&mut ca, "ns", "s").await;
    assert_eq!((s.skipped_overlap, s.run_count), (2, 2));
    assert_eq!(s.overlap_policy, proto::OverlapPolicy::Skip as i32);
}

/// Pins ALLOW_ALL (the default): a slot that comes due while a lease is outstanding
/// is handed out at once, as its own occurrence.
#[tokio::test]
async fn overlap_allow_all_hands_out_while_a_lease_is_outstanding() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;
    upsert(&mut c, "ns", every("s", 3600)).await;

    slot_due(&mut conn, "s", 10).await;
    let first = leased_claim(&mut c, "ns", 0, LEASE_MS)
        .await
        .expect("first");
    let t2 = slot_due(&mut conn, "s", 0).await;
    let second = leased_claim(&mut c, "ns", 0, LEASE_MS)
        .await
        .expect("handed out while leased");
    assert_eq!(ms(&second.due_time), t2);
    assert_ne!(second.occurrence_id, first.occurrence_id);
    let s = get(&mut c, "ns", "s").await;
    assert_eq!((s.skipped_overlap, s.run_count), (0, 2));
    assert_eq!(s.overlap_policy, proto::OverlapPolicy::AllowAll as i32);
}

/// Pins BUFFER_ONE released by the ack: the first slot that comes due while a lease
/// is outstanding waits (buffered_time), a second one is skipped, and the ack hands
/// the waiting slot — with its own due time — to a worker already long-polling.
#[tokio::test]
async fn overlap_buffer_one_hands_out_the_held_slot_when_the_outstanding_one_is_acked() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;
    upsert(&mut c, "ns", hourly("s", proto::OverlapPolicy::BufferOne)).await;

    slot_due(&mut conn, "s", 20).await;
    let first = leased_claim(&mut c, "ns", 0, LEASE_MS)
        .await
        .expect("first");
    let t2 = slot_due(&mut conn, "s", 10).await;
    assert!(
        leased_claim(&mut c, "ns", 0, LEASE_MS).await.is_none(),
        "held back"
    );
    let s = get(&mut c, "ns", "s").await;
    assert_eq!(ms(&s.buffered_time), t2);
    assert_eq!(s.skipped_overlap, 0);
    slot_due(&mut conn, "s", 0).await;
    assert!(
        leased_claim(&mut c, "ns", 0, LEASE_MS).await.is_none(),
        "buffer full"
    );
    let s = get(&mut c, "ns", "s").await;
    assert_eq!((ms(&s.buffered_time), s.skipped_overlap), (t2, 1));

    // The waiter parks (its claim found the slot held) before the ack, so the held
    // slot reaches it through the wake-up the ack causes.
    let mut waiting = service.client().await;
    let before = script_calls(&mut conn).await;
    let waiter =
        tokio::spawn(async move { leased_claim(&mut waiting, "ns", LONG_POLL_MS, LEASE_MS).await });
    wait_parked(&mut conn, before, 1).await;
    ack_occurrence(&mut c, "ns", &first).await.expect("ack");
    let held = waiter
        .await
        .expect("waiter")
        .expect("the held slot, on the ack");
    assert_eq!(ms(&held.due_time), t2);
    assert_ne!(held.occurrence_id, first.occurrence_id);
    let s = get(&mut c, "ns", "s").await;
    assert!(s.buffered_time.is_none());
    assert_eq!((s.run_count, s.skipped_overlap), (2, 1));
    assert!(
        leased_claim(&mut c, "ns", 0, LEASE_MS).await.is_none(),
        "handed out once"
    );
}

/// Pins BUFFER_ONE released by the final lease expiry: with max_attempts 2 the first
/// expiry re-hands the outstanding occurrence (the slot keeps waiting); the second
/// expiry is its last, so the held slot is handed out and a late ack is refused.
#[tokio::test]
async fn overlap_buffer_one_hands_out_the_held_slot_when_the_lease_expires_for_the_last_time() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;
    let schedule = proto::Schedule {
        max_attempts: 2,
        ..hourly("s", proto::OverlapPolicy::BufferOne)
    };
    upsert(&mut c, "ns", schedule).await;

    slot_due(&mut conn, "s", 10).await;
    let first = leased_claim(&mut c, "ns", 0, 300).await.expect("first");
    let t2 = slot_due(&mut conn, "s", 0).await;
    assert!(claim(&mut c, "ns", 0).await.is_none(), "held back");
    assert_eq!(ms(&get(&mut c, "ns", "s").await.buffered_time), t2);

    let again = leased_claim(&mut c, "ns", LONG_POLL_MS, 300)
        .await
        .expect("re-handed");
    assert_eq!(
        (again.occurrence_id.as_str(), again.attempt),
        (first.occurrence_id.as_str(), 2)
    );
    assert_eq!(
        ms(&get(&mut c, "ns", "s").await.buffered_time),
        t2,
        "still waiting"
    );

    // An unleased claim finishes the last expiry and takes the held slot.
    let held = claim(&mut c, "ns", LONG_POLL_MS)
        .await
        .expect("held slot after the last expiry");
    assert_eq!(ms(&held.due_time), t2);
    let late = ack_occurrence(&mut c, "ns", &again)
        .await
        .expect_err("finished");
    assert_eq!(late.code(), Code::Aborted, "{late:?}");
    assert!(
        leased_claim(&mut c, "ns", 0, 5_000).await.is_none(),
        "never re-handed a third time"
    );
    let s = get(&mut c, "ns", "s").await;
    assert_eq!((s.run_count, s.skipped_overlap, s.max_attempts), (2, 0, 2));
}

/// Pins: pausing drops a held slot (counted as skipped), so neither the resume nor the
/// ack of the outstanding occurrence hands it out.
#[tokio::test]
async fn overlap_buffer_one_pausing_drops_the_held_slot() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;
    upsert(&mut c, "ns", hourly("s", proto::OverlapPolicy::BufferOne)).await;

    slot_due(&mut conn, "s", 10).await;
    let first = leased_claim(&mut c, "ns", 0, LEASE_MS)
        .await
        .expect("first");
    slot_due(&mut conn, "s", 0).await;
    assert!(claim(&mut c, "ns", 0).await.is_none(), "held back");
    assert!(get(&mut c, "ns", "s").await.buffered_time.is_some());

    c.pause_schedule(proto::PauseScheduleRequest {
        namespace: "ns".into(),
        id: "s".into(),
        note: String::new(),
    })
    .await
    .expect("pause");
    let s = get(&mut c, "ns", "s").await;
    assert!(s.buffered_time.is_none(), "dropped");
    assert_eq!(s.skipped_overlap, 1);
    c.resume_schedule(proto::ResumeScheduleRequest {
        namespace: "ns".into(),
        id: "s".into(),
    })
    .await
    .expect("resume");
    ack_occurrence(&mut c, "ns", &first).await.expect("ack");
    assert!(claim(&mut c, "ns", 0).await.is_none(), "nothing held");
    assert_eq!(get(&mut c, "ns", "s").await.run_count, 1);
}

const SCHEDULES: usize = 150;
const CLAIMERS_PER_INSTANCE: usize = 32;

/// Every worker of `clients` claims (leased, without acking) until two short waits in a
/// row come back empty.
async fn drain(clients: &[Client]) -> Vec<proto::Occurrence> {
    let mut workers = Vec::new();
    for client in clients {
        let mut c = client.clone();
        workers.push(tokio::spawn(async move {
            let mut got = Vec::new();
            let mut empty = 0;
            while empty < 2 {
                match leased_claim(&mut c, "ns", 300, LEASE_MS).await {
                    Some(o) => {
                        empty = 0;
                        got.push(o);
                    }
                    None => empty += 1,
                }
            }
            got
        }));
    }
    let mut all = Vec::new();
    for w in workers {
        all.extend(w.await.expect("worker"));
    }
    all
}

/// Two rounds over `SCHEDULES` schedules with `policy`, 2 instances × 32 leased
/// claimers: round 1 hands each first slot out; the round-1 occurrences stay unacked
/// while every schedule's next slot comes due (round 2); then all round-1 occurrences
/// are acked while the claimers poll (round 3). Returns the occurrences of each round
/// and each schedule's skipped_overlap at the end.
async fn three_rounds(policy: proto::OverlapPolicy) -> ([Vec<proto::Occurrence>; 3], Vec<u64>) {
    let redis = Redis::start().await;
    let a = Service::start(&redis.url()).await;
    let b = Service::start(&redis.url()).await;
    let mut conn = redis.conn().await;
    let ids: Vec<String> = (0..SCHEDULES).map(|i| format!("s{i}")).collect();
    let client = a.client().await;
    stream::iter(ids.clone())
        .for_each_concurrent(32, |id| {
            let mut c = client.clone();
            async move {
                upsert(&mut c, "ns", hourly(&id, policy)).await;
            }
        })
        .await;
    let mut clients = Vec::new();
    for service in [&a, &b] {
        for _ in 0..CLAIMERS_PER_INSTANCE {
            clients.push(service.client().await);
        }
    }
    for id in &ids {
        slot_due(&mut conn, id, 20).await;
    }
    let round1 = drain(&clients).await;
    for id in &ids {
        slot_due(&mut conn, id, 0).await;
    }
    let round2 = drain(&clients).await;
    let drained = tokio::spawn({
        let clients = clients.clone();
        async move { drain(&clients).await }
    });
    stream::iter(round1.clone())
        .for_each_concurrent(16, |o| {
            let mut c = client.clone();
            async move { ack_occurrence(&mut c, "ns", &o).await.expect("ack round 1") }
        })
        .await;
    let round3 = drained.await.expect("round 3");
    // The meta `indexed` count (namespace status) still matches the due index after
    // the held-back, released and skipped slots.
    let indexed: Option<i64> = cmd("HGET")
        .arg("dueq:{ns}:meta")
        .arg("indexed")
        .query_async(&mut conn)
        .await
        .expect("HGET");
    let zcard: i64 = cmd("ZCARD")
        .arg("dueq:{ns}:due")
        .query_async(&mut conn)
        .await
        .expect("ZCARD");
    assert_eq!(indexed.unwrap_or(0), zcard, "meta indexed == ZCARD due");
    assert_eq!(
        zcard, SCHEDULES as i64,
        "every schedule indexed for its next run"
    );
    let mut skipped = Vec::new();
    for id in &ids {
        let mut c = client.clone();
        skipped.push(get(&mut c, "ns", id).await.skipped_overlap);
    }
    ([round1, round2, round3], skipped)
}

/// Per schedule id, the due times handed out; and every occurrence id once.
fn by_schedule(rounds: &[&Vec<proto::Occurrence>]) -> HashMap<String, Vec<i64>> {
    let mut seen = HashSet::new();
    let mut by: HashMap<String, Vec<i64>> = HashMap::new();
    for o in rounds.iter().flat_map(|r| r.iter()) {
        assert!(
            seen.insert(o.occurrence_id.clone()),
            "occurrence {} twice",
            o.occurrence_id
        );
        let id = o.schedule.as_ref().expect("schedule").id.clone();
        by.entry(id).or_default().push(ms(&o.due_time));
    }
    by
}

/// Pins exactly once under ALLOW_ALL with two instances: both slots of every schedule
/// are handed out once each, the second while the first is outstanding.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn overlap_allow_all_two_instances_64_claimers_exactly_once() {
    let ([r1, r2, r3], skipped) = three_rounds(proto::OverlapPolicy::AllowAll).await;
    assert!(skipped.iter().all(|n| *n == 0), "{skipped:?}");
    assert_eq!((r1.len(), r2.len(), r3.len()), (SCHEDULES, SCHEDULES, 0));
    let by = by_schedule(&[&r1, &r2]);
    assert_eq!(by.len(), SCHEDULES);
    assert!(by.values().all(|d| d.len() == 2 && d[0] != d[1]), "{by:?}");
}

/// Pins exactly once under SKIP with two instances: the second slot of every schedule
/// is skipped by exactly one claim (skipped_overlap 1), never handed out.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn overlap_skip_two_instances_64_claimers_exactly_once() {
    let ([r1, r2, r3], skipped) = three_rounds(proto::OverlapPolicy::Skip).await;
    assert_eq!((r1.len(), r2.len(), r3.len()), (SCHEDULES, 0, 0));
    assert_eq!(by_schedule(&[&r1]).len(), SCHEDULES);
    assert!(skipped.iter().all(|n| *n == 1), "{skipped:?}");
}

/// Pins exactly once under BUFFER_ONE with two instances: the second slot of every
/// schedule waits while the first is outstanding and is handed out exactly once after
/// its ack, racing 64 claimers.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn overlap_buffer_one_two_instances_64_claimers_exactly_once() {
    let ([r1, r2, r3], skipped) = three_rounds(proto::OverlapPolicy::BufferOne).await;
    assert!(skipped.iter().all(|n| *n == 0), "{skipped:?}");
    assert_eq!((r1.len(), r2.len(), r3.len()), (SCHEDULES, 0, SCHEDULES));
    let by = by_schedule(&[&r1, &r3]);
    assert_eq!(by.len(), SCHEDULES);
    assert!(by.values().all(|d| d.len() == 2 && d[0] < d[1]), "{by:?}");
}
