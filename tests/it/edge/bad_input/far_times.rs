//! Times past 9999-12-31T23:59:59Z, the last a protobuf Timestamp can carry: every
//! field that sets one, directly or as a Duration from now, is refused naming the
//! field, and nothing is written (before, 10,000 years was accepted and later
//! returned as `12027-…`, which clients cannot parse).

use super::*;

/// 10,000 years, in seconds.
const TEN_THOUSAND_YEARS: i64 = 10_000 * 365 * 86_400;
/// 10000-01-01T00:00:00Z.
const YEAR_10000: i64 = 253_402_300_800;
/// 5000-06-01T00:00:00Z: past the range cron times are computed in.
const YEAR_5000: i64 = 95_634_691_200;

fn far() -> prost_types::Duration {
    prost_types::Duration {
        seconds: TEN_THOUSAND_YEARS,
        nanos: 0,
    }
}

fn enqueue_with(change: impl FnOnce(&mut proto::EnqueueRequest)) -> proto::EnqueueRequest {
    let mut request = job("q", "n");
    change(&mut request);
    request
}

/// Pins: delay, backoff.base, backoff.cap, retry_after, run_at, start_time and
/// end_time past the year 9999 (and a cron start_time past croner's year 5000) are
/// INVALID_ARGUMENT naming the field; Redis is unchanged.
#[tokio::test]
async fn times_past_the_year_9999_are_refused_naming_the_field() {
    let redis = Redis::start().await;
    let service = start(&redis).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;
    enqueue(&mut c, job("lease", "n")).await;
    let leased = claim_job(&mut c, &["lease"], 0, None).await.expect("a job");
    let before = snapshot(&mut conn).await;
    let mut failures = Vec::new();

    let backoff = |kind: proto::BackoffKind, base, cap| proto::Backoff {
        kind: kind as i32,
        base,
        cap,
        jitter: 0.0,
    };
    let enqueues = [
        (
            "delay",
            enqueue_with(|r| r.when = Some(proto::enqueue_request::When::Delay(far()))),
        ),
        (
            "backoff.base",
            enqueue_with(|r| {
                r.backoff = Some(backoff(proto::BackoffKind::Fixed, Some(far()), None))
            }),
        ),
        (
            "backoff.cap",
            enqueue_with(|r| {
                r.backoff = Some(backoff(
                    proto::BackoffKind::Exponential,
                    Some(dur(1_000)),
                    Some(far()),
                ))
            }),
        ),
    ];
    for (field, request) in enqueues {
        let got = c.enqueue(request).await;
        failures.extend(rejection(
            field,
            got,
            Code::InvalidArgument,
            field,
            "9999-12-31T23:59:59Z",
        ));
    }
    let got = c
        .enqueue(enqueue_with(|r| {
            r.when = Some(proto::enqueue_request::When::RunAt(
                prost_types::Timestamp {
                    seconds: YEAR_10000,
                    nanos: 0,
                },
            ))
        }))
        .await;
    failures.extend(rejection(
        "run_at",
        got,
        Code::InvalidArgument,
        "run_at",
        "9999-12-31",
    ));

    let got = c
        .fail_job(proto::FailJobRequest {
            namespace: "ns".into(),
            job_id: leased.job_id.clone(),
            lease_token: leased.lease_token.clone(),
            error: "later".into(),
            retry_after: Some(far()),
            ..Default::default()
        })
        .await;
    failures.extend(rejection(
        "retry_after",
        got,
        Code::InvalidArgument,
        "retry_after",
        "9999-12-31T23:59:59Z",
    ));

    let schedules = [
        (
            "start_time in the year 10000",
            proto::Schedule {
                start_time: stamp(YEAR_10000, 0),
                ..every("s", 60)
            },
            "schedule.start_time",
            "9999-12-31",
        ),
        (
            "end_time in the year 10000",
            proto::Schedule {
                end_time: stamp(YEAR_10000, 0),
                ..every("s", 60)
            },
            "schedule.end_time",
            "9999-12-31",
        ),
        (
            "cron start_time in the year 5000",
            proto::Schedule {
                start_time: stamp(YEAR_5000, 0),
                ..cron("s", "0 0 * * *", "")
            },
            "schedule.start_time",
            "up to the year 5000",
        ),
    ];
    for (case, schedule, field, reason) in schedules {
        let got = c
            .upsert_schedule(proto::UpsertScheduleRequest {
                namespace: "ns".into(),
                schedule: Some(schedule.clone()),
            })
            .await;
        failures.extend(rejection(case, got, Code::InvalidArgument, field, reason));
        let got = c.preview_schedule(previews::preview_of(schedule)).await;
        failures.extend(rejection(case, got, Code::InvalidArgument, field, reason));
    }
    failures.extend(unchanged("all of them", &mut conn, &before).await);
    assert_no_failures("times past 9999", failures);
}
