//! A full Redis (maxmemory reached under noeviction): nothing hands work out, and
//! everything that finishes or releases work still runs, so a full Redis drains
//! instead of re-handing leases nobody can finish.

use deadpool_redis::redis::{self, aio::MultiplexedConnection};

use super::*;

/// One number of `INFO memory`.
async fn info_memory(conn: &mut MultiplexedConnection, field: &str) -> u64 {
    let info: String = query(conn, cmd("INFO").arg("memory")).await;
    info.lines()
        .find_map(|line| line.strip_prefix(&format!("{field}:")))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("INFO memory has no {field}"))
}

/// Sets maxmemory a little above what Redis uses and writes filler until Redis
/// refuses a write: Redis is full, as it would be in production. Then maxmemory
/// goes a little below what it uses, so that memory freed in passing (a client's
/// buffers) cannot give it room again during the test.
pub(crate) async fn fill_redis(conn: &mut MultiplexedConnection) {
    let used = info_memory(conn, "used_memory").await;
    let _: () = query(
        conn,
        cmd("CONFIG")
            .arg("SET")
            .arg("maxmemory")
            .arg(used + 256 * 1024),
    )
    .await;
    let filler = vec![b'x'; 4096];
    for i in 0.. {
        let r: redis::RedisResult<()> = cmd("SET")
            .arg(format!("filler:{i}"))
            .arg(&filler)
            .query_async(conn)
            .await;
        match r {
            Ok(()) => assert!(i < 10_000, "Redis never filled up"),
            Err(e) if e.code() == Some("OOM") => break,
            Err(e) => panic!("filler: {e}"),
        }
    }
    let used = info_memory(conn, "used_memory").await;
    let _: () = query(
        conn,
        cmd("CONFIG")
            .arg("SET")
            .arg("maxmemory")
            .arg(used - 512 * 1024),
    )
    .await;
}

fn assert_full(what: &str, status: Status) {
    assert_eq!(status.code(), Code::ResourceExhausted, "{what}: {status:?}");
    let message = status.message();
    assert!(
        message.contains("out of memory") && message.contains("raise maxmemory"),
        "{what}: the message names the problem and the fix: {message}"
    );
}

/// Pins issue 12 item 4: at maxmemory, ClaimJob and ClaimDueSchedule are refused
/// RESOURCE_EXHAUSTED before they change anything (the job stays PENDING, its
/// attempts unchanged), while AckJob, FailJob, ExtendLease, CancelJob and
/// AckOccurrence on work handed out before still succeed.
#[tokio::test]
async fn a_full_redis_hands_out_nothing_and_lets_work_finish() {
    let redis = Redis::start().await;
    let service = Service::start_with(config_without_background_work(&redis.url())).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;
    for name in ["acked", "failed", "waiting", "cancelled"] {
        let mut req = job("q", name);
        req.job_id = name.into();
        enqueue(&mut c, req).await;
    }
    let acked = claim_job(&mut c, &["q"], 0, Some(60_000))
        .await
        .expect("acked");
    let failed = claim_job(&mut c, &["q"], 0, Some(60_000))
        .await
        .expect("failed");
    assert_eq!(
        (acked.job_id.as_str(), failed.job_id.as_str()),
        ("acked", "failed")
    );
    let claim_due = |lease: bool| proto::ClaimDueScheduleRequest {
        namespace: "ns".into(),
        worker_id: "w".into(),
        wait: None,
        lease: lease.then(|| dur(60_000)),
    };
    for id in ["leased", "due"] {
        upsert(&mut c, "ns", every(id, 3600)).await;
    }
    let now = redis_now(&mut conn).await;
    force_due(&mut conn, "ns", "leased", now - 20).await;
    let occurrence = c
        .claim_due_schedule(claim_due(true))
        .await
        .expect("claim occurrence")
        .into_inner()
        .occurrence
        .expect("due");
    force_due(&mut conn, "ns", "due", now - 10).await;

    fill_redis(&mut conn).await;

    let r = c.claim_job(claim_req(&["q"], 0, Some(60_000))).await;
    assert_full("ClaimJob", r.expect_err("a claim at maxmemory is refused"));
    let waiting = get_job(&mut c, "waiting").await;
    assert_eq!(state(&waiting), proto::JobState::Pending, "{waiting:?}");
    assert_eq!(waiting.attempts, 0, "the refused claim counted no attempt");
    let r = c.claim_due_schedule(claim_due(false)).await;
    assert_full("ClaimDueSchedule", r.expect_err("refused"));
    let r = c.claim_due_schedule(claim_due(true)).await;
    assert_full("leased ClaimDueSchedule", r.expect_err("refused"));
    assert_eq!(get(&mut c, "ns", "due").await.run_count, 0, "not fired");

    ack_job(&mut c, "acked", &acked.lease_token)
        .await
        .expect("AckJob at maxmemory");
    c.extend_lease(proto::ExtendLeaseRequest {
        progress: None,
        namespace: "ns".into(),
        job_id: "failed".into(),
        lease_token: failed.lease_token.clone(),
        lease: Some(dur(120_000)),
    })
    .await
    .expect("ExtendLease at maxmemory");
    fail_job(&mut c, "failed", &failed.lease_token, "full")
        .await
        .expect("FailJob at maxmemory");
    c.cancel_job(proto::CancelJobRequest {
        namespace: "ns".into(),
        job_id: "cancelled".into(),
    })
    .await
    .expect("CancelJob at maxmemory");
    c.ack_occurrence(proto::AckOccurrenceRequest {
        namespace: "ns".into(),
        occurrence_id: occurrence.occurrence_id.clone(),
        lease_token: occurrence.lease_token.clone(),
    })
    .await
    .expect("AckOccurrence at maxmemory");
    assert_eq!(
        state(&get_job(&mut c, "acked").await),
        proto::JobState::Completed
    );
    assert_eq!(
        state(&get_job(&mut c, "cancelled").await),
        proto::JobState::Cancelled
    );
    assert_eq!(get_job(&mut c, "waiting").await.attempts, 0);
    assert!(
        info_memory(&mut conn, "used_memory").await > info_memory(&mut conn, "maxmemory").await,
        "Redis was full throughout"
    );

    // Room again: the waiting job is handed out.
    let _: () = query(&mut conn, cmd("CONFIG").arg("SET").arg("maxmemory").arg(0)).await;
    let claimed = claim_job(&mut c, &["q"], 0, None).await.expect("claimable");
    assert_eq!(claimed.job_id, "waiting");
}
