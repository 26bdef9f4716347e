//! Time zones and DST through the API, on real 2026 transition dates:
//! America/New_York springs forward 2026-03-08 02:00→03:00 and falls back 2026-11-01
//! 02:00→01:00; Europe/Berlin springs forward 2026-03-29 02:00→03:00 and falls back
//! 2026-10-25 03:00→02:00. PreviewSchedule runs the same code the claim path uses to
//! compute cron occurrences.

use crate::common::*;

async fn preview(
    c: &mut Client,
    expr: &str,
    tz: &str,
    from: &str,
    count: u32,
) -> Vec<proto::FireTime> {
    let from = chrono::DateTime::parse_from_rfc3339(from)
        .expect("from")
        .timestamp_millis();
    c.preview_schedule(proto::PreviewScheduleRequest {
        namespace: "ns".into(),
        target: Some(proto::preview_schedule_request::Target::Schedule(cron(
            "p", expr, tz,
        ))),
        count,
        from_time: Some(ts(from)),
    })
    .await
    .expect("preview")
    .into_inner()
    .fire_times
}

fn utc(t: &proto::FireTime) -> String {
    let ms = ms(&t.time);
    chrono::DateTime::from_timestamp_millis(ms)
        .expect("ms")
        .format("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

/// Fire times falling on the local calendar day `day` ("2026-03-08").
fn on_local_day<'a>(times: &'a [proto::FireTime], day: &str) -> Vec<&'a proto::FireTime> {
    times
        .iter()
        .filter(|t| t.local_time.starts_with(day))
        .collect()
}

#[tokio::test]
async fn a_daily_time_in_the_spring_forward_gap_fires_once_after_the_gap() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;

    let ny = preview(
        &mut c,
        "30 2 * * *",
        "America/New_York",
        "2026-03-06T00:00:00Z",
        5,
    )
    .await;
    let day = on_local_day(&ny, "2026-03-08");
    assert_eq!(day.len(), 1, "fires once on the gap day: {ny:?}");
    assert_eq!(
        utc(day[0]),
        "2026-03-08T07:00:00Z",
        "03:00 EDT, first instant after the gap"
    );
    assert!(day[0].dst_adjusted, "marked as moved by DST");
    assert!(!day[0].note.is_empty());
    assert_eq!(day[0].utc_offset_seconds, -4 * 3600);
    // The days around it are untouched.
    let before = on_local_day(&ny, "2026-03-07");
    assert_eq!(utc(before[0]), "2026-03-07T07:30:00Z");
    assert!(!before[0].dst_adjusted);
    assert_eq!(
        utc(on_local_day(&ny, "2026-03-09")[0]),
        "2026-03-09T06:30:00Z"
    );

    let berlin = preview(
        &mut c,
        "30 2 * * *",
        "Europe/Berlin",
        "2026-03-28T00:00:00Z",
        3,
    )
    .await;
    let day = on_local_day(&berlin, "2026-03-29");
    assert_eq!(day.len(), 1, "{berlin:?}");
    assert_eq!(utc(day[0]), "2026-03-29T01:00:00Z", "03:00 CEST");
    assert!(day[0].dst_adjusted);
}

#[tokio::test]
async fn a_daily_time_in_the_repeated_fall_back_hour_fires_once() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;

    let ny = preview(
        &mut c,
        "30 1 * * *",
        "America/New_York",
        "2026-10-31T00:00:00Z",
        4,
    )
    .await;
    let day = on_local_day(&ny, "2026-11-01");
    assert_eq!(day.len(), 1, "fires once, not twice: {ny:?}");
    assert_eq!(utc(day[0]), "2026-11-01T05:30:00Z", "the first 01:30, EDT");
    assert_eq!(
        utc(on_local_day(&ny, "2026-11-02")[0]),
        "2026-11-02T06:30:00Z"
    );

    let berlin = preview(
        &mut c,
        "30 2 * * *",
        "Europe/Berlin",
        "2026-10-24T00:00:00Z",
        4,
    )
    .await;
    let day = on_local_day(&berlin, "2026-10-25");
    assert_eq!(day.len(), 1, "{berlin:?}");
    assert_eq!(utc(day[0]), "2026-10-25T00:30:00Z", "the first 02:30, CEST");
}

#[tokio::test]
async fn an_every_30_minutes_cron_stays_strictly_increasing_across_both_transitions() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;

    for (tz, from) in [
        ("America/New_York", "2026-03-08T04:00:00Z"),
        ("America/New_York", "2026-11-01T03:00:00Z"),
        ("Europe/Berlin", "2026-03-28T22:00:00Z"),
        ("Europe/Berlin", "2026-10-24T22:00:00Z"),
    ] {
        let times = preview(&mut c, "*/30 * * * *", tz, from, 16).await;
        assert_eq!(times.len(), 16);
        let ms: Vec<i64> = times.iter().map(|t| ms(&t.time)).collect();
        for pair in ms.windows(2) {
            assert!(
                pair[0] < pair[1],
                "{tz} from {from}: not increasing: {ms:?}"
            );
            // Real time between interval slots is 30 min; the gap removes an hour
            // of wall clock but no real time, so no step is ever longer.
            assert_eq!(pair[1] - pair[0], 30 * 60_000, "{tz} from {from}");
        }
    }
}

#[tokio::test]
async fn preview_of_a_stored_schedule_uses_its_zone() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    upsert(
        &mut c,
        "ns",
        cron("daily", "30 2 * * *", "America/New_York"),
    )
    .await;
    let from = chrono::DateTime::parse_from_rfc3339("2026-03-07T12:00:00Z")
        .expect("from")
        .timestamp_millis();
    let reply = c
        .preview_schedule(proto::PreviewScheduleRequest {
            namespace: "ns".into(),
            target: Some(proto::preview_schedule_request::Target::Id("daily".into())),
            count: 2,
            from_time: Some(ts(from)),
        })
        .await
        .expect("preview")
        .into_inner();
    assert_eq!(reply.timezone, "America/New_York");
    let got: Vec<String> = reply.fire_times.iter().map(utc).collect();
    assert_eq!(got, ["2026-03-08T07:00:00Z", "2026-03-09T06:30:00Z"]);
    assert!(reply.fire_times[0]
        .local_time
        .starts_with("2026-03-08T03:00:00"));
}

#[tokio::test]
async fn a_claimed_cron_schedule_is_next_due_at_its_zoned_slot() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;
    upsert(&mut c, "ns", cron("berlin", "0 9 * * *", "Europe/Berlin")).await;
    let now = redis_now(&mut conn).await;
    force_due(&mut conn, "ns", "berlin", now - 1000).await;
    let occ = claim(&mut c, "ns", 0).await.expect("due");
    let next = ms(&occ.schedule.expect("s").next_run_time);
    let local = chrono::DateTime::from_timestamp_millis(next)
        .expect("ms")
        .with_timezone(&chrono_tz::Europe::Berlin);
    assert_eq!(local.format("%H:%M:%S").to_string(), "09:00:00", "{local}");
    assert!(next > now && next - now <= 25 * 3600 * 1000);
}
