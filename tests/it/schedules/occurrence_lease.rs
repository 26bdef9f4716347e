//! Leased schedule occurrences: ClaimDueSchedule with a lease is at-least-once (an
//! unacked occurrence is re-handed with attempt + 1) while the schedule still
//! advances exactly once; without a lease it stays at-most-once.

use deadpool_redis::redis;
use tonic::Code;

use crate::common::*;

async fn due_schedule(c: &mut Client, conn: &mut redis::aio::MultiplexedConnection, id: &str) {
    upsert(c, "ns", every(id, 3600)).await;
    let now = redis_now(conn).await;
    force_due(conn, "ns", id, now - 10).await;
}

#[tokio::test]
async fn a_leased_occurrence_is_acked_once() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;
    due_schedule(&mut c, &mut conn, "hb").await;

    let o = leased_claim(&mut c, "ns", 0, 5_000).await.expect("due");
    assert_eq!(o.attempt, 1);
    assert!(!o.lease_token.is_empty());
    assert!(ms(&o.lease_deadline) > ms(&o.claim_time));
    // The record the script wrote is keyed by the very id the worker got (the Lua
    // UUIDv5 agrees with the Rust one).
    let exists: i64 = cmd("EXISTS")
        .arg(format!("dueq:{{ns}}:o:{}", o.occurrence_id))
        .query_async(&mut conn)
        .await
        .expect("EXISTS");
    assert_eq!(exists, 1);

    ack_occurrence(&mut c, "ns", &o).await.expect("ack");
    let again = ack_occurrence(&mut c, "ns", &o)
        .await
        .expect_err("second ack");
    assert_eq!(again.code(), Code::Aborted, "{again:?}");
    assert_eq!(get(&mut c, "ns", "hb").await.run_count, 1);
    // Nothing is re-handed after the ack, even once the lease would have run out.
    assert!(leased_claim(&mut c, "ns", 0, 5_000).await.is_none());
}

/// Pins: an unacked leased occurrence is re-handed after its lease (attempt + 1, same
/// occurrence) to a waiting worker while the schedule advanced once.
#[tokio::test]
async fn an_unacked_occurrence_is_re_handed_after_its_lease_with_attempt_plus_one() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;
    due_schedule(&mut c, &mut conn, "hb").await;

    let first = leased_claim(&mut c, "ns", 0, 300).await.expect("due");
    // Another worker waiting with a lease gets it once the lease runs out (the wake
    // timer is armed at the deadline).
    let second = leased_claim(&mut c, "ns", LONG_POLL_MS, 60_000)
        .await
        .expect("re-handed within the wait");
    assert_eq!(second.occurrence_id, first.occurrence_id);
    assert_eq!(second.attempt, 2);
    assert_ne!(second.lease_token, first.lease_token);
    assert_eq!(ms(&second.due_time), ms(&first.due_time));
    assert_eq!(second.run_number, 1);
    assert!(ms(&second.claim_time) >= ms(&first.lease_deadline));

    // The schedule advanced exactly once.
    let s = get(&mut c, "ns", "hb").await;
    assert_eq!(s.run_count, 1);
    // The first holder's late ack is refused; the current holder's succeeds.
    assert_eq!(
        ack_occurrence(&mut c, "ns", &first)
            .await
            .expect_err("stale")
            .code(),
        Code::Aborted
    );
    ack_occurrence(&mut c, "ns", &second)
        .await
        .expect("current holder acks");
    // Once a lease as short as the first (300 ms) taken now has run out, the acked
    // occurrence is still not handed out.
    let acked_at = redis_now(&mut conn).await;
    wait_redis_past(&mut conn, acked_at + 350).await;
    assert!(leased_claim(&mut c, "ns", 0, 5_000).await.is_none());
}

#[tokio::test]
async fn without_a_lease_an_occurrence_is_at_most_once() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;
    due_schedule(&mut c, &mut conn, "hb").await;

    let o = claim(&mut c, "ns", 0).await.expect("due");
    assert!(o.lease_token.is_empty());
    assert!(o.lease_deadline.is_none());
    assert_eq!(o.attempt, 1);
    let leases: i64 = cmd("ZCARD")
        .arg("dueq:{ns}:oleases")
        .query_async(&mut conn)
        .await
        .expect("ZCARD");
    assert_eq!(leases, 0, "no lease record");
    assert!(
        leased_claim(&mut c, "ns", 500, 1_000).await.is_none(),
        "never re-handed"
    );
}

#[tokio::test]
async fn bad_occurrence_acks_and_leases() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let missing = c
        .ack_occurrence(proto::AckOccurrenceRequest {
            namespace: "ns".into(),
            occurrence_id: "no-such".into(),
            lease_token: "t".into(),
        })
        .await
        .expect_err("unknown");
    assert_eq!(missing.code(), Code::NotFound);
    let bad = c
        .claim_due_schedule(proto::ClaimDueScheduleRequest {
            namespace: "ns".into(),
            worker_id: "w".into(),
            wait: None,
            lease: Some(dur(0)),
        })
        .await
        .expect_err("zero lease");
    assert_eq!(bad.code(), Code::InvalidArgument);
    assert!(bad.message().starts_with("lease"));
}
