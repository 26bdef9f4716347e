//! Schedule policies (issue 17): catch-up policies and the catch-up window, with the
//! skip counters they keep. Outages are simulated by moving a schedule's next run into
//! the past (`force_due`), as a clock jump would.

use std::collections::HashMap;

use futures::{stream, StreamExt};
use tonic::{Code, Status};

use crate::common::*;

const HOUR: i64 = 3_600_000;

fn hourly(id: &str, policy: proto::CatchupPolicy, limit: u32) -> proto::Schedule {
    proto::Schedule {
        catchup_policy: policy as i32,
        catchup_limit: limit,
        ..every(id, 3600)
    }
}

/// The latest whole hour at or before Redis's clock: the newest slot of an hourly
/// `every` schedule (aligned to the epoch).
async fn latest_hour(conn: &mut deadpool_redis::redis::aio::MultiplexedConnection) -> i64 {
    redis_now(conn).await / HOUR * HOUR
}

#[tokio::test]
async fn catchup_one_hands_out_the_oldest_missed_slot_and_counts_the_rest() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;
    upsert(&mut c, "ns", hourly("s", proto::CatchupPolicy::One, 0)).await;
    let latest = latest_hour(&mut conn).await;
    force_due(&mut conn, "ns", "s", latest - 10 * HOUR).await;
    let occ = claim(&mut c, "ns", 0).await.expect("one occurrence");
    assert_eq!(
        ms(&occ.due_time),
        latest - 10 * HOUR,
        "the oldest missed slot"
    );
    assert_eq!(occ.skipped_runs, 10);
    assert!(claim(&mut c, "ns", 0).await.is_none(), "only one");
    let s = get(&mut c, "ns", "s").await;
    assert_eq!((s.skipped_catchup, s.skipped_window), (10, 0));
    assert_eq!(s.catchup_policy, proto::CatchupPolicy::One as i32);
    assert_eq!(ms(&s.next_run_time), latest + HOUR);
}

#[tokio::test]
async fn catchup_skip_hands_out_nothing_for_missed_slots() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;
    upsert(&mut c, "ns", hourly("s", proto::CatchupPolicy::Skip, 0)).await;
    let latest = latest_hour(&mut conn).await;
    force_due(&mut conn, "ns", "s", latest - 3 * HOUR).await;
    assert!(
        claim(&mut c, "ns", 0).await.is_none(),
        "missed slots are not handed out"
    );
    let s = get(&mut c, "ns", "s").await;
    assert_eq!(s.skipped_catchup, 4, "slots latest-3h ..= latest");
    assert_eq!(s.run_count, 0);
    assert_eq!(
        ms(&s.next_run_time),
        latest + HOUR,
        "the first slot after now"
    );
}

/// A claim that comes late but before the next slot is due is not a missed slot.
#[tokio::test]
async fn catchup_skip_still_hands_out_a_late_current_slot() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;
    upsert(&mut c, "ns", hourly("s", proto::CatchupPolicy::Skip, 0)).await;
    let latest = latest_hour(&mut conn).await;
    force_due(&mut conn, "ns", "s", latest).await;
    let occ = claim(&mut c, "ns", 0).await.expect("the current slot");
    assert_eq!((ms(&occ.due_time), occ.skipped_runs), (latest, 0));
    assert_eq!(get(&mut c, "ns", "s").await.skipped_catchup, 0);
}

/// ALL after a 30-hour outage with a cap of 3 and a window of 5.5 hours: the 31 due
/// slots lose the ones older than the window, then all but the 3 most recent; those 3
/// come out oldest first, one per claim.
#[tokio::test]
async fn catchup_all_with_a_cap_and_a_window_after_an_outage() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;
    upsert(
        &mut c,
        "ns",
        proto::Schedule {
            catchup_window: Some(dur(5 * 3_600_000 + 1_800_000)),
            ..hourly("s", proto::CatchupPolicy::All, 3)
        },
    )
    .await;
    let latest = latest_hour(&mut conn).await;
    force_due(&mut conn, "ns", "s", latest - 30 * HOUR).await;
    let mut due = Vec::new();
    while let Some(occ) = claim(&mut c, "ns", 0).await {
        due.push(ms(&occ.due_time));
        assert!(due.len() <= 3, "at most catchup_limit: {due:?}");
    }
    assert_eq!(due, vec![latest - 2 * HOUR, latest - HOUR, latest]);
    let s = get(&mut c, "ns", "s").await;
    assert_eq!(
        s.skipped_window + s.skipped_catchup,
        28,
        "31 due slots, 3 handed out: {s:?}"
    );
    assert!((25..=26).contains(&s.skipped_window), "{s:?}");
    assert_eq!(s.run_count, 3);
    assert_eq!(ms(&s.next_run_time), latest + HOUR);
}

/// ALL hands out every missed slot when they fit the cap, each with the occurrence
/// id the live schedule gives that slot.
#[tokio::test]
async fn catchup_all_hands_out_each_missed_slot_oldest_first() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;
    upsert(&mut c, "ns", hourly("s", proto::CatchupPolicy::All, 100)).await;
    let latest = latest_hour(&mut conn).await;
    force_due(&mut conn, "ns", "s", latest - 5 * HOUR).await;
    let mut got = Vec::new();
    while let Some(occ) = claim(&mut c, "ns", 0).await {
        got.push(occ);
    }
    let due: Vec<i64> = got.iter().map(|o| ms(&o.due_time)).collect();
    assert_eq!(
        due,
        (0..6).rev().map(|k| latest - k * HOUR).collect::<Vec<_>>()
    );
    let mut ids: Vec<&str> = got.iter().map(|o| o.occurrence_id.as_str()).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 6, "one id per slot");
    assert!(got.iter().all(|o| o.skipped_runs == 0));
    let s = get(&mut c, "ns", "s").await;
    assert_eq!(
        (s.skipped_catchup, s.skipped_window, s.run_count),
        (0, 0, 6)
    );
}

/// The window applies under ONE too: the occurrence handed out is the oldest slot
/// inside it.
#[tokio::test]
async fn catchup_window_skips_slots_older_than_the_window_under_one() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;
    upsert(
        &mut c,
        "ns",
        proto::Schedule {
            catchup_window: Some(dur(2 * 3_600_000 + 1_800_000)),
            ..hourly("s", proto::CatchupPolicy::Unspecified, 0)
        },
    )
    .await;
    let latest = latest_hour(&mut conn).await;
    force_due(&mut conn, "ns", "s", latest - 10 * HOUR).await;
    let occ = claim(&mut c, "ns", 0).await.expect("one occurrence");
    let due = ms(&occ.due_time);
    assert!(
        due == latest - 2 * HOUR || due == latest - HOUR,
        "the oldest slot within 2.5 h: {due} vs latest {latest}"
    );
    let s = get(&mut c, "ns", "s").await;
    assert_eq!(s.skipped_window + s.skipped_catchup, 10, "{s:?}");
    assert_eq!(occ.skipped_runs, 10);
    assert!(claim(&mut c, "ns", 0).await.is_none());
}

/// Policies are not timing: changing them keeps the revision, the next run and the
/// skip counters; GetSchedule shows what was written.
#[tokio::test]
async fn changing_a_policy_keeps_revision_next_run_and_counters() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;
    upsert(&mut c, "ns", hourly("s", proto::CatchupPolicy::Skip, 0)).await;
    let latest = latest_hour(&mut conn).await;
    force_due(&mut conn, "ns", "s", latest - 2 * HOUR).await;
    assert!(claim(&mut c, "ns", 0).await.is_none());
    let before = get(&mut c, "ns", "s").await;
    assert_eq!(before.skipped_catchup, 3);
    let after = upsert(
        &mut c,
        "ns",
        proto::Schedule {
            catchup_window: Some(dur(60_000)),
            ..hourly("s", proto::CatchupPolicy::All, 7)
        },
    )
    .await
    .schedule
    .expect("schedule");
    assert_eq!(after.revision, before.revision);
    assert_eq!(after.next_run_time, before.next_run_time);
    assert_eq!(after.skipped_catchup, 3);
    assert_eq!(
        (
            after.catchup_policy,
            after.catchup_limit,
            ms_of(&after.catchup_window)
        ),
        (proto::CatchupPolicy::All as i32, 7, 60_000)
    );
    // Back to the defaults: they read back as the defaults.
    let reset = upsert(&mut c, "ns", every("s", 3600))
        .await
        .schedule
        .expect("s");
    assert_eq!(
        (
            reset.catchup_policy,
            reset.catchup_limit,
            reset.catchup_window
        ),
        (proto::CatchupPolicy::One as i32, 0, None)
    );
    assert_eq!(reset.skipped_catchup, 3);
}

fn ms_of(d: &Option<prost_types::Duration>) -> i64 {
    let d = d.as_ref().expect("duration set");
    d.seconds * 1000 + i64::from(d.nanos) / 1_000_000
}

/// The fire times PreviewSchedule lists for `schedule` on the 25 hours from `from`.
async fn preview_day(c: &mut Client, schedule: proto::Schedule, from: i64) -> Vec<i64> {
    c.preview_schedule(proto::PreviewScheduleRequest {
        namespace: "ns".into(),
        target: Some(proto::preview_schedule_request::Target::Schedule(schedule)),
        count: 100,
        from_time: Some(ts(from)),
    })
    .await
    .expect("preview")
    .into_inner()
    .fire_times
    .iter()
    .map(|t| ms(&t.time))
    .filter(|&t| t < from + 25 * HOUR)
    .collect()
}

/// DST on a real 2026 date: America/New_York falls back on 2026-11-01 (01:00-02:00
/// EDT, then 01:00-02:00 EST). Two schedules on that day only, claimed with ALL after
/// the whole day was missed: a half-hourly (interval) cron, whose slots in the
/// repeated hour are real twice, and a fixed-time one (hours 0-3), whose 01:00 fires
/// once (the DST policy in src/timing/cron.rs). Each real slot is handed out exactly
/// once, oldest first, at the instants PreviewSchedule lists; then they wait for 2027.
#[tokio::test]
async fn catchup_all_across_the_fall_back_hour_fires_each_slot_once() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;
    let all = |id: &str, expr: &str| proto::Schedule {
        catchup_policy: proto::CatchupPolicy::All as i32,
        catchup_limit: 1000,
        ..cron(id, expr, "America/New_York")
    };
    let at = |rfc3339: &str| {
        chrono::DateTime::parse_from_rfc3339(rfc3339)
            .expect("date")
            .timestamp_millis()
    };
    let midnight_edt = at("2026-11-01T00:00:00-04:00");
    assert!(
        redis_now(&mut conn).await > midnight_edt + 25 * HOUR,
        "the test day is in the past"
    );
    let mut expected = HashMap::new();
    for (id, expr) in [("half", "0,30 * 1 11 *"), ("fixed", "0 0-3 1 11 *")] {
        upsert(&mut c, "ns", all(id, expr)).await;
        expected.insert(
            id.to_owned(),
            preview_day(&mut c, all(id, expr), midnight_edt).await,
        );
        force_due(&mut conn, "ns", id, midnight_edt).await;
    }
    assert_eq!(
        expected["half"].len(),
        50,
        "48 wall-clock slots, 2 of them twice"
    );
    assert_eq!(
        expected["fixed"],
        vec![
            midnight_edt,
            at("2026-11-01T01:00:00-04:00"),
            at("2026-11-01T02:00:00-05:00"),
            at("2026-11-01T03:00:00-05:00")
        ],
        "01:00 fires once, at its first pass"
    );
    let mut due: HashMap<String, Vec<i64>> = HashMap::new();
    let mut n = 0;
    while let Some(occ) = claim(&mut c, "ns", 0).await {
        let id = occ.schedule.as_ref().expect("schedule").id.clone();
        due.entry(id).or_default().push(ms(&occ.due_time));
        n += 1;
        assert!(n <= 100, "runaway: {due:?}");
    }
    assert_eq!(due, expected, "each real slot once, oldest first");
    for (id, runs) in [("half", 50), ("fixed", 4)] {
        let s = get(&mut c, "ns", id).await;
        assert_eq!((s.skipped_catchup, s.run_count), (0, runs), "{id}");
        let next = at("2027-11-01T00:00:00-04:00");
        assert_eq!(ms(&s.next_run_time), next, "{id}");
    }
}

const SCHEDULES: usize = 150;
const CLAIMERS_PER_INSTANCE: usize = 32;

/// Two service instances x 32 claimers over `SCHEDULES` schedules with `policy`, each
/// `behind` hours behind; returns every (schedule id, due) handed out, and asserts
/// none was handed out twice.
async fn two_replicas_drain(
    policy: proto::CatchupPolicy,
    limit: u32,
    behind: i64,
) -> (HashMap<String, Vec<i64>>, Vec<proto::Schedule>) {
    let redis = Redis::start().await;
    let a = Service::start(&redis.url()).await;
    let b = Service::start(&redis.url()).await;
    let mut conn = redis.conn().await;
    let client = a.client().await;
    stream::iter(0..SCHEDULES)
        .for_each_concurrent(16, |i| {
            let mut c = client.clone();
            async move {
                upsert(&mut c, "ns", hourly(&format!("s{i}"), policy, limit)).await;
            }
        })
        .await;
    let latest = latest_hour(&mut conn).await;
    for i in 0..SCHEDULES {
        force_due(&mut conn, "ns", &format!("s{i}"), latest - behind * HOUR).await;
    }
    let mut workers = Vec::new();
    for service in [&a, &b] {
        for _ in 0..CLAIMERS_PER_INSTANCE {
            let mut c = service.client().await;
            workers.push(tokio::spawn(async move {
                let mut got = Vec::new();
                let mut empty = 0;
                while empty < 2 {
                    match claim(&mut c, "ns", 200).await {
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
    let mut all = Vec::new();
    for w in workers {
        all.extend(w.await.expect("worker"));
    }
    // Claims that only skip (SKIP's plans) hand nothing out, so the workers above
    // may give up while some schedules are still behind: a claim would skip them
    // (nothing stalls), so claim until no entry is due.
    let mut c = a.client().await;
    for _ in 0..10 * SCHEDULES {
        let now = redis_now(&mut conn).await;
        let due: u64 = query(
            &mut conn,
            cmd("ZCOUNT").arg("dueq:{ns}:due").arg("-inf").arg(now),
        )
        .await;
        if due == 0 {
            break;
        }
        all.extend(claim(&mut c, "ns", 0).await);
    }
    let mut handed: HashMap<String, Vec<i64>> = HashMap::new();
    let mut ids: HashMap<String, usize> = HashMap::new();
    {
        for occ in all {
            *ids.entry(occ.occurrence_id.clone()).or_default() += 1;
            let id = occ.schedule.as_ref().expect("schedule").id.clone();
            handed.entry(id).or_default().push(ms(&occ.due_time));
        }
    }
    let twice: Vec<_> = ids.iter().filter(|(_, n)| **n > 1).collect();
    assert!(twice.is_empty(), "handed out twice: {twice:?}");
    for due in handed.values_mut() {
        due.sort_unstable();
        let n = due.len();
        due.dedup();
        assert_eq!(due.len(), n, "a slot handed out twice: {due:?}");
    }
    let mut schedules = Vec::new();
    for i in 0..SCHEDULES {
        schedules.push(get(&mut c, "ns", &format!("s{i}")).await);
    }
    (handed, schedules)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_replicas_catchup_one_exactly_once() {
    let (handed, schedules) = two_replicas_drain(proto::CatchupPolicy::One, 0, 2).await;
    assert_eq!(handed.len(), SCHEDULES, "every schedule fired");
    assert!(handed.values().all(|d| d.len() == 1), "once each");
    assert!(
        schedules.iter().all(|s| s.skipped_catchup == 2),
        "skips counted once"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_replicas_catchup_skip_exactly_once() {
    let (handed, schedules) = two_replicas_drain(proto::CatchupPolicy::Skip, 0, 2).await;
    assert!(
        handed.is_empty(),
        "missed slots are not handed out: {handed:?}"
    );
    assert!(
        schedules
            .iter()
            .all(|s| s.skipped_catchup == 3 && s.run_count == 0),
        "three skipped per schedule, counted once: {:?}",
        schedules
            .iter()
            .map(|s| (s.skipped_catchup, s.run_count, s.next_run_time))
            .collect::<Vec<_>>()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_replicas_catchup_all_exactly_once() {
    let (handed, schedules) = two_replicas_drain(proto::CatchupPolicy::All, 3, 4).await;
    assert_eq!(handed.len(), SCHEDULES, "every schedule fired");
    assert!(
        handed.values().all(|d| d.len() == 3),
        "the 3 most recent of 5 slots each"
    );
    assert!(
        schedules
            .iter()
            .all(|s| s.skipped_catchup == 2 && s.run_count == 3),
        "skips counted once"
    );
}

async fn pause_with(c: &mut Client, id: &str, note: &str) -> Result<proto::Schedule, Status> {
    c.pause_schedule(proto::PauseScheduleRequest {
        namespace: "ns".into(),
        id: id.into(),
        note: note.into(),
    })
    .await
    .map(|r| r.into_inner().schedule.expect("schedule"))
}

/// PauseSchedule's note is shown by GetSchedule and ListSchedules until resumed.
#[tokio::test]
async fn a_pause_note_is_shown_until_resumed() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    upsert(&mut c, "ns", every("s", 3600)).await;
    let paused = pause_with(&mut c, "s", "deploy freeze, ask #ops")
        .await
        .expect("pause");
    assert_eq!(paused.pause_note, "deploy freeze, ask #ops");
    assert_eq!(
        get(&mut c, "ns", "s").await.pause_note,
        "deploy freeze, ask #ops"
    );
    // Pausing again with a note replaces it; without one keeps it.
    pause_with(&mut c, "s", "until Monday")
        .await
        .expect("pause");
    pause_with(&mut c, "s", "").await.expect("pause");
    let listed = c
        .list_schedules(proto::ListSchedulesRequest {
            namespace: "ns".into(),
            ..Default::default()
        })
        .await
        .expect("list")
        .into_inner()
        .schedules;
    assert_eq!(listed[0].pause_note, "until Monday");
    let resumed = c
        .resume_schedule(proto::ResumeScheduleRequest {
            namespace: "ns".into(),
            id: "s".into(),
        })
        .await
        .expect("resume")
        .into_inner()
        .schedule
        .expect("schedule");
    assert_eq!(resumed.pause_note, "");
    assert_eq!(get(&mut c, "ns", "s").await.pause_note, "");
}

/// A note over 1 KiB is INVALID_ARGUMENT naming `note`, and nothing is written; 1 KiB
/// exactly is accepted.
#[tokio::test]
async fn a_pause_note_over_1_kib_is_refused_and_writes_nothing() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;
    upsert(&mut c, "ns", every("s", 3600)).await;
    let before = snapshot(&mut conn).await;
    let refused = pause_with(&mut c, "s", &"n".repeat(1025))
        .await
        .expect_err("too long");
    assert_eq!(refused.code(), Code::InvalidArgument);
    assert!(refused.message().starts_with("note: "), "{refused:?}");
    assert_eq!(snapshot(&mut conn).await, before, "nothing written");
    let paused = pause_with(&mut c, "s", &"n".repeat(1024))
        .await
        .expect("1 KiB");
    assert_eq!(paused.pause_note.len(), 1024);
}

/// `every` is aligned to the Unix epoch; `offset` moves its slots within the
/// interval, and is timing: changing it changes the revision and the next run.
#[tokio::test]
async fn every_offset_moves_the_slots_and_is_timing() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let plain = upsert(&mut c, "ns", every("s", 3600))
        .await
        .schedule
        .expect("s");
    assert_eq!(
        ms(&plain.next_run_time) % HOUR,
        0,
        "on the hour (epoch-aligned)"
    );
    let shifted = upsert(
        &mut c,
        "ns",
        proto::Schedule {
            offset: Some(dur(900_000)),
            ..every("s", 3600)
        },
    )
    .await
    .schedule
    .expect("s");
    assert_eq!(ms(&shifted.next_run_time) % HOUR, 900_000, "minute 15");
    assert_eq!(shifted.revision, plain.revision + 1);
    let got = get(&mut c, "ns", "s").await;
    assert_eq!(ms_of(&got.offset), 900_000);
    assert_eq!(got.next_run_time, shifted.next_run_time);
    let preview = c
        .preview_schedule(proto::PreviewScheduleRequest {
            namespace: "ns".into(),
            target: Some(proto::preview_schedule_request::Target::Id("s".into())),
            count: 3,
            from_time: None,
        })
        .await
        .expect("preview")
        .into_inner()
        .fire_times;
    assert!(preview.iter().all(|t| ms(&t.time) % HOUR == 900_000));
    let back = upsert(&mut c, "ns", every("s", 3600))
        .await
        .schedule
        .expect("s");
    assert_eq!((back.revision, back.offset), (shifted.revision + 1, None));
    assert_eq!(ms(&back.next_run_time) % HOUR, 0);
}
