//! ClaimDueSchedule semantics: missed runs, limits, start/end, index repair, occurrence ids.

use crate::common::*;

#[tokio::test]
async fn missed_runs_fire_once_and_report_skipped() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;
    upsert(&mut c, "ns", every("e", 60)).await;
    let now = redis_now(&mut conn).await;
    // Pretend the service was down for 10 minutes: the slot 10 minutes ago is due.
    let slot = (now / 60_000 - 10) * 60_000;
    force_due(&mut conn, "ns", "e", slot).await;
    let occ = claim(&mut c, "ns", 0).await.expect("fires after downtime");
    assert_eq!(ms(&occ.due_time), slot);
    assert!(
        (9..=10).contains(&occ.skipped_runs),
        "skipped {}",
        occ.skipped_runs
    );
    let next = ms(&occ.schedule.as_ref().expect("s").next_run_time);
    let claimed_at = ms(&occ.claim_time);
    assert!(
        next > claimed_at && next <= claimed_at + 60_000,
        "next is the first slot after now"
    );
    assert_eq!(next % 60_000, 0);
    assert!(
        claim(&mut c, "ns", 0).await.is_none(),
        "fires once, not once per missed slot"
    );
}

#[tokio::test]
async fn cron_missed_runs_are_computed_in_rust() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;
    upsert(&mut c, "ns", cron("c", "*/5 * * * *", "Europe/Berlin")).await;
    let now = redis_now(&mut conn).await;
    let slot = (now / 300_000 - 12) * 300_000; // an hour of 5-minute slots ago
    force_due(&mut conn, "ns", "c", slot).await;
    let occ = claim(&mut c, "ns", 0).await.expect("due");
    assert_eq!(ms(&occ.due_time), slot);
    assert!(
        (11..=12).contains(&occ.skipped_runs),
        "skipped {}",
        occ.skipped_runs
    );
    let next = ms(&occ.schedule.as_ref().expect("s").next_run_time);
    assert!(next > ms(&occ.claim_time) && next % 300_000 == 0);
    assert!(claim(&mut c, "ns", 0).await.is_none());
}

#[tokio::test]
async fn run_limit_fires_exactly_n_times_then_leaves_the_index() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;
    let mut s = every("lim", 60);
    s.run_limit = 3;
    upsert(&mut c, "ns", s).await;
    for run in 1..=3 {
        let now = redis_now(&mut conn).await;
        force_due(&mut conn, "ns", "lim", now - 5).await;
        let occ = claim(&mut c, "ns", 0).await.expect("due");
        assert_eq!(occ.run_number, run);
    }
    let s = get(&mut c, "ns", "lim").await;
    assert_eq!(s.status, proto::ScheduleStatus::Completed as i32);
    assert_eq!(s.run_count, 3);
    assert!(s.next_run_time.is_none());
    assert_eq!(due_score(&mut conn, "ns", "lim").await, None);
    // A forged entry cannot make it fire a fourth time.
    let now = redis_now(&mut conn).await;
    force_due(&mut conn, "ns", "lim", now - 5).await;
    assert!(claim(&mut c, "ns", 0).await.is_none());
    assert_eq!(due_score(&mut conn, "ns", "lim").await, None, "repaired");
    assert_eq!(get(&mut c, "ns", "lim").await.run_count, 3);
}

/// Pins: start_time anchors the first run, end_time ends the schedule after its last
/// slot (completed, out of the index), and an end_time already past creates it completed.
#[tokio::test]
async fn end_time_and_start_time_bound_the_runs() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;
    let now = redis_now(&mut conn).await;

    // start_time in the future: first run is the start, not before.
    let start = (now / 1000 + 3600) * 1000 + 500;
    let mut s = every("later", 60);
    s.start_time = Some(ts(start));
    let stored = upsert(&mut c, "ns", s).await.schedule.expect("s");
    assert_eq!(ms(&stored.next_run_time), start, "anchored at start_time");

    // end_time: the slot after end is never scheduled. Real time, no forcing: the
    // only slot before end_time is start_time, soon.
    let mut s = every("ending", 60);
    let start = redis_now(&mut conn).await + SOON_MS;
    s.start_time = Some(ts(start));
    s.end_time = Some(ts(start + 30_000));
    let stored = upsert(&mut c, "ns", s).await.schedule.expect("s");
    assert_eq!(ms(&stored.next_run_time), start);
    let occ = claim(&mut c, "ns", LONG_POLL_MS)
        .await
        .expect("the one slot fires");
    assert_eq!(ms(&occ.due_time), start);
    let after = occ.schedule.expect("s");
    assert_eq!(after.status, proto::ScheduleStatus::Completed as i32);
    assert!(after.next_run_time.is_none());
    assert_eq!(
        due_score(&mut conn, "ns", "ending").await,
        None,
        "left the index"
    );
    assert!(
        claim(&mut c, "ns", 0).await.is_none(),
        "nothing after end_time"
    );

    // An end_time already past: created completed, nothing to claim.
    let mut s = every("over", 60);
    s.start_time = Some(ts(now - 7_200_000));
    s.end_time = Some(ts(now - 3_600_000));
    let stored = upsert(&mut c, "ns", s).await.schedule.expect("s");
    assert_eq!(stored.status, proto::ScheduleStatus::Completed as i32);
    assert!(claim(&mut c, "ns", 0).await.is_none());
}

#[tokio::test]
async fn claim_repairs_a_corrupted_index() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;
    let now = redis_now(&mut conn).await;
    upsert(&mut c, "ns", every("stale", 60)).await;
    upsert(&mut c, "ns", every("good", 60)).await;
    let real_next = ms(&get(&mut c, "ns", "stale").await.next_run_time);

    // Dangling id (no hash), a stale score (hash says later), and a genuinely due one.
    let _: () = cmd("ZADD")
        .arg("dueq:{ns}:due")
        .arg(now - 3000)
        .arg("ghost")
        .query_async(&mut conn)
        .await
        .expect("zadd");
    let _: () = cmd("ZADD")
        .arg("dueq:{ns}:due")
        .arg(now - 2000)
        .arg("stale")
        .query_async(&mut conn)
        .await
        .expect("zadd");
    force_due(&mut conn, "ns", "good", now - 1000).await;

    let occ = claim(&mut c, "ns", 0)
        .await
        .expect("the valid one is claimed");
    assert_eq!(occ.schedule.expect("s").id, "good");
    assert_eq!(
        due_score(&mut conn, "ns", "ghost").await,
        None,
        "dangling id removed"
    );
    assert_eq!(
        due_score(&mut conn, "ns", "stale").await,
        Some(real_next),
        "re-scored from hash"
    );
    assert_eq!(
        get(&mut c, "ns", "stale").await.run_count,
        0,
        "stale entry not fired"
    );

    // A missing entry whose hash says it is due: any upsert re-asserts it.
    force_due(&mut conn, "ns", "stale", now - 500).await;
    let _: () = cmd("ZREM")
        .arg("dueq:{ns}:due")
        .arg("stale")
        .query_async(&mut conn)
        .await
        .expect("zrem");
    assert!(
        claim(&mut c, "ns", 0).await.is_none(),
        "the index is the only way in"
    );
    upsert(&mut c, "ns", every("stale", 60)).await;
    let occ = claim(&mut c, "ns", 0).await.expect("re-indexed by upsert");
    assert_eq!(occ.schedule.expect("s").id, "stale");
}

#[tokio::test]
async fn occurrence_ids_are_deterministic() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;
    upsert(&mut c, "ns", every("o", 60)).await;
    let slot = (redis_now(&mut conn).await / 60_000 - 1) * 60_000;
    force_due(&mut conn, "ns", "o", slot).await;
    let first = claim(&mut c, "ns", 0).await.expect("due");
    // The same nominal slot, re-delivered (e.g. restored from a backup), has the same id.
    force_due(&mut conn, "ns", "o", slot).await;
    let again = claim(&mut c, "ns", 0).await.expect("due again");
    assert_eq!(first.occurrence_id, again.occurrence_id);
    // Another slot, or a changed timing (new revision), gives another id.
    force_due(&mut conn, "ns", "o", slot - 60_000).await;
    let other = claim(&mut c, "ns", 0).await.expect("due");
    assert_ne!(other.occurrence_id, first.occurrence_id);
    upsert(&mut c, "ns", every("o", 30)).await;
    force_due(&mut conn, "ns", "o", slot).await;
    let revised = claim(&mut c, "ns", 0).await.expect("due");
    assert_ne!(revised.occurrence_id, first.occurrence_id);
}
