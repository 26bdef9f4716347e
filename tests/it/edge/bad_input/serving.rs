//! One service, every kind of bad request, and it still serves good ones.

use super::{
    by_id::{run_not_found, run_other_rpcs},
    claims::run_claims,
    previews::run_previews,
    upsert_cases::bad_upserts,
    upserts::run_upserts,
    wire::{both_on_the_wire, only_every, upsert_raw},
    *,
};

/// After every kind of bad request, on one service, it still serves good ones.
#[tokio::test]
async fn service_keeps_serving_after_bad_input() {
    let redis = Redis::start().await;
    let service = start(&redis).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;

    let mut failures = run_upserts(&mut c, &mut conn, bad_upserts("s1")).await;
    failures.extend(run_claims(&mut c, &mut conn).await);
    failures.extend(run_previews(&mut c, &mut conn).await);
    failures.extend(run_other_rpcs(&mut c, &mut conn).await);
    failures.extend(run_not_found(&mut c, &mut conn).await);
    let got = upsert_raw(
        &service,
        "ns",
        both_on_the_wire(cron("s1", "0 * * * *", ""), only_every(0)),
    )
    .await;
    failures.extend(rejection(
        "both on the wire",
        got,
        Code::InvalidArgument,
        "schedule.every",
        "",
    ));
    assert_no_failures("bad input of every kind", failures);
    assert_eq!(dbsize(&mut conn).await, 0, "bad input wrote nothing");

    assert_eq!(
        service.health().await,
        tonic_health::pb::health_check_response::ServingStatus::Serving as i32
    );
    // The same client (and its connection) still works.
    let created = upsert(&mut c, "ns", every("s1", 60)).await;
    assert!(created.created);
    let stored = get(&mut c, "ns", "s1").await;
    assert_eq!(Some(stored.clone()), created.schedule);
    assert_eq!(stored.status, proto::ScheduleStatus::Active as i32);
    let now = redis_now(&mut conn).await;
    force_due(&mut conn, "ns", "s1", now - 10).await;
    let occurrence = claim(&mut c, "ns", 0).await.expect("due");
    assert_eq!(occurrence.run_number, 1);
    // And so does a fresh one.
    let mut fresh = service.client().await;
    assert_eq!(get(&mut fresh, "ns", "s1").await.run_count, 1);
}
