//! GetSchedule's recent_runs (issue 17): the last 10 runs of a schedule with due time,
//! claim time, worker, attempt, outcome and lateness, bounded in Redis.

use crate::common::*;

async fn claim_as(
    c: &mut Client,
    worker: &str,
    lease_ms: Option<u64>,
) -> Option<proto::Occurrence> {
    c.claim_due_schedule(proto::ClaimDueScheduleRequest {
        namespace: "ns".into(),
        worker_id: worker.into(),
        wait: None,
        lease: lease_ms.map(dur),
    })
    .await
    .expect("claim")
    .into_inner()
    .occurrence
}

async fn runs(c: &mut Client) -> Vec<proto::ScheduleRun> {
    c.get_schedule(proto::GetScheduleRequest {
        namespace: "ns".into(),
        id: "s".into(),
    })
    .await
    .expect("get")
    .into_inner()
    .recent_runs
}

async fn llen(conn: &mut deadpool_redis::redis::aio::MultiplexedConnection) -> i64 {
    cmd("LLEN")
        .arg("dueq:{ns}:rr:s")
        .query_async(conn)
        .await
        .expect("LLEN")
}

/// Pins each outcome (lease expired for the last time, skipped for overlap, not
/// leased, acked), newest first, with worker, attempt and lateness; the list keeps
/// 10 and goes with the schedule.
#[tokio::test]
async fn get_schedule_shows_the_last_10_runs_with_their_outcomes() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;
    let schedule = proto::Schedule {
        overlap_policy: proto::OverlapPolicy::Skip as i32,
        max_attempts: 1,
        ..every("s", 3600)
    };
    upsert(&mut c, "ns", schedule).await;
    let now = redis_now(&mut conn).await;
    let s1 = now - 40_000;
    force_due(&mut conn, "ns", "s", s1).await;
    let first = claim_as(&mut c, "w1", Some(300)).await.expect("slot 1");
    let s2 = now - 30_000;
    force_due(&mut conn, "ns", "s", s2).await;
    assert!(
        claim_as(&mut c, "w2", None).await.is_none(),
        "skipped for overlap"
    );
    wait_redis_past(&mut conn, ms(&first.lease_deadline)).await;
    assert!(
        claim_as(&mut c, "w2", None).await.is_none(),
        "finishes slot 1's lease"
    );
    let s3 = now - 20_000;
    force_due(&mut conn, "ns", "s", s3).await;
    let third = claim_as(&mut c, "w2", None).await.expect("slot 3");
    let s4 = now - 10_000;
    force_due(&mut conn, "ns", "s", s4).await;
    let fourth = claim_as(&mut c, "w3", Some(60_000)).await.expect("slot 4");
    assert_eq!(
        runs(&mut c).await[0].outcome,
        proto::RunOutcome::Leased as i32
    );
    c.ack_occurrence(proto::AckOccurrenceRequest {
        namespace: "ns".into(),
        occurrence_id: fourth.occurrence_id.clone(),
        lease_token: fourth.lease_token.clone(),
    })
    .await
    .expect("ack");

    let got = runs(&mut c).await;
    let seen: Vec<(i64, i32, &str, u32)> = got
        .iter()
        .map(|r| (ms(&r.due_time), r.outcome, r.worker_id.as_str(), r.attempt))
        .collect();
    assert_eq!(
        seen,
        vec![
            (s4, proto::RunOutcome::Acked as i32, "w3", 1),
            (s3, proto::RunOutcome::NotLeased as i32, "w2", 1),
            (s2, proto::RunOutcome::SkippedOverlap as i32, "", 0),
            (s1, proto::RunOutcome::LeaseExpired as i32, "w1", 1),
        ]
    );
    assert_eq!(got[0].occurrence_id, fourth.occurrence_id);
    assert_eq!(got[1].occurrence_id, third.occurrence_id);
    assert_eq!(got[3].occurrence_id, first.occurrence_id);
    assert!(got[2].claim_time.is_none() && got[2].lateness.is_none());
    let lateness = got[1].lateness.as_ref().expect("lateness");
    let expected = ms(&third.claim_time) - s3;
    assert_eq!(
        lateness.seconds * 1000 + i64::from(lateness.nanos) / 1_000_000,
        expected
    );
    assert_eq!(got[0].kind, proto::OccurrenceKind::Scheduled as i32);

    // Bounded: 12 more runs leave the last 10.
    for k in 0..12 {
        force_due(&mut conn, "ns", "s", now - 5_000 + k).await;
        claim_as(&mut c, "w4", None).await.expect("run");
    }
    let got = runs(&mut c).await;
    assert_eq!(got.len(), 10);
    assert_eq!(ms(&got[0].due_time), now - 5_000 + 11, "newest first");
    assert_eq!(llen(&mut conn).await, 10);

    c.delete_schedule(proto::DeleteScheduleRequest {
        namespace: "ns".into(),
        id: "s".into(),
    })
    .await
    .expect("delete");
    assert_eq!(llen(&mut conn).await, 0, "deleted with the schedule");
}
