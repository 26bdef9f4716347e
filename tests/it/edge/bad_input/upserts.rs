//! UpsertSchedule refuses every bad case, on an empty store and over an existing
//! schedule, and a payload over the limit is RESOURCE_EXHAUSTED.

use super::{upsert_cases::*, *};

/// A record's stored bytes (DUMP: its type and encoding included).
async fn raw_record(conn: &mut MultiplexedConnection, key: &str) -> Vec<u8> {
    let dump: Option<Vec<u8>> = query(conn, cmd("DUMP").arg(key)).await;
    dump.unwrap_or_default()
}

/// Sends every case; checks the status and, after each, that Redis is unchanged.
pub(super) async fn run_upserts(
    c: &mut Client,
    conn: &mut MultiplexedConnection,
    cases: Vec<UpsertCase>,
) -> Vec<String> {
    let before = snapshot(conn).await;
    let mut failures = Vec::new();
    for case in cases {
        let got = c
            .upsert_schedule(proto::UpsertScheduleRequest {
                namespace: case.namespace,
                schedule: case.schedule,
            })
            .await;
        failures.extend(rejection(
            &case.name,
            got,
            case.code,
            case.field,
            &case.reason,
        ));
        failures.extend(unchanged(&case.name, conn, &before).await);
    }
    failures
}

#[tokio::test]
async fn bad_upserts_are_rejected_naming_the_field_and_write_nothing() {
    let redis = Redis::start().await;
    let service = start(&redis).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;

    let failures = run_upserts(&mut c, &mut conn, bad_upserts("s1")).await;
    assert_no_failures("UpsertSchedule on an empty database", failures);
    let mut keys: Vec<String> = cmd("KEYS")
        .arg("*")
        .query_async(&mut conn)
        .await
        .expect("KEYS");
    keys.retain(|k| k != INSTANCE_KEY);
    assert!(keys.is_empty(), "rejected upserts wrote {keys:?}");
}

#[tokio::test]
async fn bad_upsert_of_an_existing_schedule_leaves_it_byte_for_byte() {
    let redis = Redis::start().await;
    let service = start(&redis).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;

    // A schedule with runtime state (one claim) and a neighbour in the same namespace.
    let mut keep = every("keep", 60);
    keep.payload = b"original".to_vec();
    keep.headers.insert("h".into(), "v".into());
    upsert(&mut c, "ns", keep).await;
    upsert(&mut c, "ns", cron("other", "0 0 * * *", "Europe/Berlin")).await;
    let now = redis_now(&mut conn).await;
    force_due(&mut conn, "ns", "keep", now - 10).await;
    assert!(claim(&mut c, "ns", 0).await.is_some(), "keep was due");
    let stored = get(&mut c, "ns", "keep").await;

    let key = "dueq:{ns}:s:keep";
    let record_before = raw_record(&mut conn, key).await;
    assert!(!record_before.is_empty(), "{key} exists");

    let failures = run_upserts(&mut c, &mut conn, bad_upserts("keep")).await;
    assert_no_failures("UpsertSchedule over an existing schedule", failures);

    assert_eq!(
        raw_record(&mut conn, key).await,
        record_before,
        "{key} changed (DUMP before/after)"
    );
    assert_eq!(get(&mut c, "ns", "keep").await, stored);
}

#[tokio::test]
async fn payload_over_max_payload_size_is_resource_exhausted() {
    let redis = Redis::start().await;
    let service = start(&redis).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;

    let with_payload = |len: usize| proto::Schedule {
        payload: vec![b'p'; len],
        ..every("big", 60)
    };
    for len in [PAYLOAD_LIMIT + 1, 64 * 1024, 3 * 1024 * 1024] {
        let got = c
            .upsert_schedule(proto::UpsertScheduleRequest {
                namespace: "ns".into(),
                schedule: Some(with_payload(len)),
            })
            .await;
        let failure = rejection(
            &format!("payload of {len} bytes"),
            got,
            Code::ResourceExhausted,
            "schedule.payload",
            &format!("{len} bytes exceeds the limit of {PAYLOAD_LIMIT} bytes (--max-payload-size)"),
        );
        assert_eq!(failure, None);
    }
    // Over the message size, tonic refuses the request before any handler sees it;
    // the answer still names the limit's flag, as RESOURCE_EXHAUSTED.
    let over_message = 4 * 1024 * 1024 + 1;
    let got = c
        .upsert_schedule(proto::UpsertScheduleRequest {
            namespace: "ns".into(),
            schedule: Some(with_payload(over_message)),
        })
        .await;
    let failure = rejection(
        "a request over --max-message-size",
        got,
        Code::ResourceExhausted,
        "request",
        "exceeds the server's --max-message-size of 4194304 bytes",
    );
    assert_eq!(failure, None);
    let got = c
        .enqueue(proto::EnqueueRequest {
            payload: vec![b'p'; over_message],
            ..job("q", "big")
        })
        .await;
    let failure = rejection(
        "an Enqueue over --max-message-size",
        got,
        Code::ResourceExhausted,
        "request",
        "--max-message-size",
    );
    assert_eq!(failure, None);
    assert_eq!(
        dbsize(&mut conn).await,
        0,
        "oversized payloads wrote nothing"
    );

    // Exactly the limit is accepted and round-trips.
    let created = upsert(&mut c, "ns", with_payload(PAYLOAD_LIMIT)).await;
    assert!(created.created);
    assert_eq!(
        get(&mut c, "ns", "big").await.payload,
        vec![b'p'; PAYLOAD_LIMIT]
    );

    // Growing it past the limit is refused and keeps the stored payload.
    let before = snapshot(&mut conn).await;
    let got = c
        .upsert_schedule(proto::UpsertScheduleRequest {
            namespace: "ns".into(),
            schedule: Some(with_payload(PAYLOAD_LIMIT + 1)),
        })
        .await;
    assert_eq!(
        got.map(|_| ()).map_err(|e| e.code()),
        Err(Code::ResourceExhausted)
    );
    assert_eq!(
        unchanged("oversized update", &mut conn, &before).await,
        None
    );
}
