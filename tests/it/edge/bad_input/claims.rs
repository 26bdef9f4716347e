//! ClaimDueSchedule refuses bad requests at once and takes nothing.

use super::*;

fn bad_claims() -> Vec<(
    String,
    proto::ClaimDueScheduleRequest,
    &'static str,
    &'static str,
)> {
    let req =
        |namespace: &str, wait: Option<prost_types::Duration>| proto::ClaimDueScheduleRequest {
            namespace: namespace.into(),
            worker_id: "w".into(),
            wait,
            lease: None,
        };
    let duration = |seconds, nanos| Some(prost_types::Duration { seconds, nanos });
    let mut cases = vec![
        (
            "wait -1s".to_string(),
            req("ns", duration(-1, 0)),
            "wait",
            "must not be negative",
        ),
        (
            "wait -1ns".into(),
            req("ns", duration(0, -1)),
            "wait",
            "must not be negative",
        ),
        (
            "wait -1e12 s".into(),
            req("ns", duration(-1_000_000_000_000, 0)),
            "wait",
            "must not be negative",
        ),
        (
            "wait nanos 1e9".into(),
            req("ns", duration(0, 1_000_000_000)),
            "wait",
            "out of range",
        ),
        (
            "wait i64::MAX s".into(),
            req("ns", duration(i64::MAX, 0)),
            "wait",
            "out of range",
        ),
        (
            "worker_id of 257 bytes".into(),
            proto::ClaimDueScheduleRequest {
                worker_id: "w".repeat(257),
                ..req("ns", None)
            },
            "worker_id",
            "at most 256 bytes",
        ),
    ];
    for (name, namespace, reason) in bad_namespaces() {
        // A wait longer than the test's patience: the refusal must come at once.
        cases.push((
            name.to_string(),
            req(&namespace, wait(60_000)),
            "namespace",
            reason,
        ));
    }
    cases
}

pub(super) async fn run_claims(c: &mut Client, conn: &mut MultiplexedConnection) -> Vec<String> {
    let before = snapshot(conn).await;
    let mut failures = Vec::new();
    for (name, request, field, reason) in bad_claims() {
        // No client deadline, so the service cannot shorten the wait to one: only
        // refusing before waiting answers within PATIENCE.
        match tokio::time::timeout(PATIENCE, c.claim_due_schedule(request)).await {
            Ok(got) => failures.extend(rejection(&name, got, Code::InvalidArgument, field, reason)),
            Err(_) => failures.push(format!("{name}: not refused within {PATIENCE:?}")),
        }
        failures.extend(unchanged(&name, conn, &before).await);
    }
    failures
}

/// Pins: bad claims are refused naming the field, before any wait they ask for, and
/// take nothing, even with a schedule due.
#[tokio::test]
async fn bad_claims_are_rejected_at_once_naming_the_field() {
    let redis = Redis::start().await;
    let service = start(&redis).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;

    assert_no_failures(
        "ClaimDueSchedule on an empty database",
        run_claims(&mut c, &mut conn).await,
    );
    assert_eq!(dbsize(&mut conn).await, 0);

    // With a due schedule waiting, a bad claim must not take it.
    upsert(&mut c, "ns", every("due", 60)).await;
    let now = redis_now(&mut conn).await;
    force_due(&mut conn, "ns", "due", now - 10).await;
    assert_no_failures(
        "ClaimDueSchedule with a due schedule",
        run_claims(&mut c, &mut conn).await,
    );
    assert_eq!(
        get(&mut c, "ns", "due").await.run_count,
        0,
        "nothing was claimed"
    );
    assert!(
        claim(&mut c, "ns", 0).await.is_some(),
        "still due for a good claim"
    );
}
