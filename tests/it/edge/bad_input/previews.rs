//! PreviewSchedule refuses bad schedules, counts and targets.

use super::*;

fn preview(
    target: Option<proto::preview_schedule_request::Target>,
) -> proto::PreviewScheduleRequest {
    proto::PreviewScheduleRequest {
        namespace: "ns".into(),
        target,
        count: 5,
        from_time: None,
    }
}

pub(super) fn preview_of(schedule: proto::Schedule) -> proto::PreviewScheduleRequest {
    preview(Some(proto::preview_schedule_request::Target::Schedule(
        schedule,
    )))
}

pub(super) fn preview_id(namespace: &str, id: &str) -> proto::PreviewScheduleRequest {
    proto::PreviewScheduleRequest {
        namespace: namespace.into(),
        ..preview(Some(proto::preview_schedule_request::Target::Id(id.into())))
    }
}

fn bad_previews() -> Vec<(
    &'static str,
    proto::PreviewScheduleRequest,
    &'static str,
    &'static str,
)> {
    vec![
        (
            "cron minute 61",
            preview_of(cron("", "61 * * * *", "")),
            "schedule.cron",
            "cron field 1 (minute) value 61 is out of range 0-59",
        ),
        (
            "@every is not cron",
            preview_of(cron("", "@every 5m", "")),
            "schedule.cron",
            "set every instead",
        ),
        (
            "legacy zone EST",
            preview_of(cron("", "0 9 * * *", "EST")),
            "schedule.timezone",
            "America/New_York",
        ),
        (
            "time zone in the wrong case",
            preview_of(cron("", "0 9 * * *", "Europe/berlin")),
            "schedule.timezone",
            "did you mean Europe/Berlin?",
        ),
        (
            "time zone with every",
            preview_of(proto::Schedule {
                timezone: "Asia/Tokyo".into(),
                ..every("", 60)
            }),
            "schedule.timezone",
            "no effect with every",
        ),
        (
            "cron never matching (31st of Feb and the 30-day months)",
            preview_of(cron("", "0 0 31 2,4,6,9,11 *", "")),
            "schedule.cron",
            "never matches",
        ),
        (
            "cron with 3 fields",
            preview_of(cron("", "* * *", "")),
            "schedule.cron",
            "got 3",
        ),
        (
            "cron never matching",
            preview_of(cron("", "0 0 30 2 *", "")),
            "schedule.cron",
            "never matches",
        ),
        (
            "unknown time zone",
            preview_of(cron("", "0 * * * *", "Mars/Olympus")),
            "schedule.timezone",
            "Mars/Olympus",
        ),
        (
            "every 0",
            preview_of(every("", 0)),
            "schedule.every",
            "must be positive",
        ),
        (
            "every 500ms",
            preview_of(every_exact("", 0, 500_000_000)),
            "schedule.every",
            "at least 1s",
        ),
        (
            "neither cron nor every",
            preview_of(no_timing("")),
            "schedule.cron",
            "exactly one",
        ),
        (
            "end_time equal to start_time",
            preview_of(proto::Schedule {
                start_time: Some(ts(2_000_000_000_000)),
                end_time: Some(ts(2_000_000_000_000)),
                ..every("", 60)
            }),
            "schedule.end_time",
            "must be after start_time",
        ),
        (
            "count 1001",
            proto::PreviewScheduleRequest {
                count: 1001,
                ..preview_of(every("", 60))
            },
            "count",
            "at most 1000",
        ),
        (
            "count u32::MAX",
            proto::PreviewScheduleRequest {
                count: u32::MAX,
                ..preview_of(every("", 60))
            },
            "count",
            "at most 1000",
        ),
        (
            "from_time seconds -1e12",
            proto::PreviewScheduleRequest {
                from_time: stamp(-1_000_000_000_000, 0),
                ..preview_of(every("", 60))
            },
            "from_time",
            "between 1970-01-01 and 9999-12-31",
        ),
        (
            "from_time nanos 1e9",
            proto::PreviewScheduleRequest {
                from_time: stamp(1_800_000_000, 1_000_000_000),
                ..preview_of(every("", 60))
            },
            "from_time",
            "nanos",
        ),
        ("no target", preview(None), "target", "set id or schedule"),
        (
            "stored id in a bad namespace",
            preview_id("a:b", "s1"),
            "namespace",
            "may only contain",
        ),
        (
            "stored id empty",
            preview_id("ns", ""),
            "id",
            "must not be empty",
        ),
        (
            "stored id of 257 bytes",
            preview_id("ns", &"i".repeat(257)),
            "id",
            "at most 256 bytes",
        ),
    ]
}

pub(super) async fn run_previews(c: &mut Client, conn: &mut MultiplexedConnection) -> Vec<String> {
    let before = snapshot(conn).await;
    let mut failures = Vec::new();
    for (name, request, field, reason) in bad_previews() {
        let got = c.preview_schedule(request).await;
        failures.extend(rejection(name, got, Code::InvalidArgument, field, reason));
        failures.extend(unchanged(name, conn, &before).await);
    }
    failures
}

#[tokio::test]
async fn bad_previews_are_rejected_naming_the_field() {
    let redis = Redis::start().await;
    let service = start(&redis).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;

    assert_no_failures("PreviewSchedule", run_previews(&mut c, &mut conn).await);
    assert_eq!(dbsize(&mut conn).await, 0);
}
