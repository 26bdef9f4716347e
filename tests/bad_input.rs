//! Bad input gets INVALID_ARGUMENT naming the field, and nothing is written.
//!
//! Every table case is sent through real gRPC to the real service on a real Redis. A
//! case fails when the code is wrong, when the status message does not start with
//! `<field>: `, or when Redis holds different data afterwards. All cases of a table
//! run before the test fails, and the failure lists every case that went wrong.

mod common;

use common::*;
use deadpool_redis::redis::{self, aio::MultiplexedConnection};
use prost::Message as _;
use tonic::{codegen::http::uri::PathAndQuery, Code, Status};

/// The `max_payload_size` of the services in this file.
const PAYLOAD_LIMIT: usize = 1024;
/// Status messages travel in an HTTP/2 header: they must stay short whatever the input.
const MAX_STATUS_MESSAGE: usize = 1100;

async fn start(redis: &Redis) -> Service {
    let mut config = config(&redis.url());
    config.max_payload_size = PAYLOAD_LIMIT;
    Service::start_with(config).await
}

// ---- what a rejected call must look like ----

fn shown(message: &str) -> String {
    let cut = (0..=message.len().min(300))
        .rev()
        .find(|&i| message.is_char_boundary(i))
        .unwrap_or(0);
    if cut < message.len() {
        format!("{:?}...", &message[..cut])
    } else {
        format!("{message:?}")
    }
}

/// None when `got` is the expected error: `code`, a message starting with
/// `<field>: ` and containing `reason`, short enough for a header.
fn rejection<T>(
    case: &str,
    got: Result<T, Status>,
    code: Code,
    field: &str,
    reason: &str,
) -> Option<String> {
    let status = match got {
        Ok(_) => {
            return Some(format!(
                "{case}: expected {code:?} naming {field:?}, got OK"
            ))
        }
        Err(status) => status,
    };
    let message = status.message();
    let mut problems = Vec::new();
    if status.code() != code {
        problems.push(format!("code {:?}, expected {code:?}", status.code()));
    }
    if !message.starts_with(&format!("{field}: ")) {
        problems.push(format!("message does not start with \"{field}: \""));
    }
    let leaf = field.rsplit('.').next().unwrap_or(field);
    if message.starts_with(&format!("{field}: {leaf}: ")) {
        problems.push("message names the field twice".to_string());
    }
    if !message.contains(reason) {
        problems.push(format!("message does not contain {reason:?}"));
    }
    if message.len() > MAX_STATUS_MESSAGE {
        problems.push(format!("message is {} bytes long", message.len()));
    }
    (!problems.is_empty()).then(|| {
        format!(
            "{case}: {} (message {})",
            problems.join(", "),
            shown(message)
        )
    })
}

fn assert_no_failures(what: &str, failures: Vec<String>) {
    assert!(
        failures.is_empty(),
        "{what}: {} case(s) failed:\n  {}",
        failures.len(),
        failures.join("\n  ")
    );
}

// ---- what Redis holds ----

/// Every key with its type and contents, in key order: hashes as HGETALL (field
/// order included), sorted sets as ZRANGE WITHSCORES, anything else as DUMP.
type Snapshot = Vec<(String, String, Vec<Vec<u8>>)>;

async fn snapshot(conn: &mut MultiplexedConnection) -> Snapshot {
    let mut keys: Vec<String> = redis::cmd("KEYS")
        .arg("*")
        .query_async(conn)
        .await
        .expect("KEYS");
    keys.sort();
    let mut out = Vec::with_capacity(keys.len());
    for key in keys {
        let kind: String = redis::cmd("TYPE")
            .arg(&key)
            .query_async(conn)
            .await
            .expect("TYPE");
        let contents: Vec<Vec<u8>> = match kind.as_str() {
            "hash" => redis::cmd("HGETALL")
                .arg(&key)
                .query_async(conn)
                .await
                .expect("HGETALL"),
            "zset" => redis::cmd("ZRANGE")
                .arg(&key)
                .arg(0)
                .arg(-1)
                .arg("WITHSCORES")
                .query_async(conn)
                .await
                .expect("ZRANGE"),
            _ => vec![redis::cmd("DUMP")
                .arg(&key)
                .query_async(conn)
                .await
                .expect("DUMP")],
        };
        out.push((key, kind, contents));
    }
    out
}

async fn dbsize(conn: &mut MultiplexedConnection) -> i64 {
    redis::cmd("DBSIZE")
        .query_async(conn)
        .await
        .expect("DBSIZE")
}

/// A record's stored bytes (DUMP: its type and encoding included).
async fn raw_record(conn: &mut MultiplexedConnection, key: &str) -> Vec<u8> {
    redis::cmd("DUMP")
        .arg(key)
        .query_async::<Option<Vec<u8>>>(conn)
        .await
        .expect("DUMP")
        .unwrap_or_default()
}

/// None when Redis still holds exactly `before`.
async fn unchanged(
    case: &str,
    conn: &mut MultiplexedConnection,
    before: &Snapshot,
) -> Option<String> {
    let after = snapshot(conn).await;
    if &after == before {
        return None;
    }
    let keys = |s: &Snapshot| s.iter().map(|(k, _, _)| k.clone()).collect::<Vec<_>>();
    let changed: Vec<String> = after
        .iter()
        .filter(|entry| !before.contains(entry))
        .map(|(k, _, _)| k.clone())
        .collect();
    Some(format!(
        "{case}: Redis changed: keys before {:?}, after {:?}, new or changed {changed:?}",
        keys(before),
        keys(&after)
    ))
}

// ---- request builders ----

fn stamp(seconds: i64, nanos: i32) -> Option<prost_types::Timestamp> {
    Some(prost_types::Timestamp { seconds, nanos })
}

fn every_exact(id: &str, seconds: i64, nanos: i32) -> proto::Schedule {
    proto::Schedule {
        timing: Some(proto::schedule::Timing::Every(prost_types::Duration {
            seconds,
            nanos,
        })),
        ..every(id, 60)
    }
}

fn no_timing(id: &str) -> proto::Schedule {
    proto::Schedule {
        timing: None,
        ..every(id, 60)
    }
}

fn headers(pairs: impl IntoIterator<Item = (String, String)>, id: &str) -> proto::Schedule {
    proto::Schedule {
        headers: pairs.into_iter().collect(),
        ..every(id, 60)
    }
}

/// Namespaces that would break (or are outside) the key scheme `<prefix>:{<ns>}:...`.
fn bad_namespaces() -> Vec<(&'static str, String, &'static str)> {
    vec![
        ("empty namespace", String::new(), "must not be empty"),
        ("namespace of 65 bytes", "n".repeat(65), "at most 64"),
        ("namespace of 1 MiB", "n".repeat(1 << 20), "at most 64"),
        ("namespace with {", "a{b".into(), "may only contain"),
        ("namespace with }", "a}b".into(), "may only contain"),
        (
            "namespace that is a hash tag",
            "{ns}".into(),
            "may only contain",
        ),
        ("namespace with :", "a:b".into(), "may only contain"),
        ("namespace with a space", "a b".into(), "may only contain"),
        ("namespace with a tab", "a\tb".into(), "may only contain"),
        (
            "namespace with a newline",
            "a\nb".into(),
            "may only contain",
        ),
        ("namespace with *", "a*".into(), "may only contain"),
        ("non-ASCII namespace", "ünï".into(), "may only contain"),
        ("CJK namespace", "日本".into(), "may only contain"),
    ]
}

struct UpsertCase {
    name: String,
    namespace: String,
    schedule: Option<proto::Schedule>,
    code: Code,
    field: &'static str,
    reason: String,
}

fn invalid(
    name: impl Into<String>,
    schedule: proto::Schedule,
    field: &'static str,
    reason: impl Into<String>,
) -> UpsertCase {
    UpsertCase {
        name: name.into(),
        namespace: "ns".into(),
        schedule: Some(schedule),
        code: Code::InvalidArgument,
        field,
        reason: reason.into(),
    }
}

/// Every bad UpsertSchedule. Cases that are not about the id use `id`, so they can be
/// aimed at an existing schedule.
fn bad_upserts(id: &str) -> Vec<UpsertCase> {
    let mut cases = vec![
        // timing: cron xor every (the timing module names `cron` for a missing timing)
        invalid(
            "neither cron nor every",
            no_timing(id),
            "schedule.cron",
            "exactly one of cron or every",
        ),
        invalid(
            "empty cron",
            cron(id, "", ""),
            "schedule.cron",
            "exactly one of cron or every",
        ),
        invalid("blank cron", cron(id, "  \t ", ""), "schedule.cron", ""),
        // cron
        invalid(
            "cron minute 61",
            cron(id, "61 * * * *", ""),
            "schedule.cron",
            "cannot parse \"61 * * * *\"",
        ),
        invalid(
            "cron hour 24",
            cron(id, "0 24 * * *", ""),
            "schedule.cron",
            "cannot parse",
        ),
        invalid(
            "cron month 13",
            cron(id, "0 0 1 13 *", ""),
            "schedule.cron",
            "cannot parse",
        ),
        invalid(
            "cron garbage field",
            cron(id, "a b c d e", ""),
            "schedule.cron",
            "cannot parse",
        ),
        invalid(
            "cron with 3 fields",
            cron(id, "* * *", ""),
            "schedule.cron",
            "got 3",
        ),
        invalid(
            "cron with 7 fields (years)",
            cron(id, "0 0 0 1 1 * 2030", ""),
            "schedule.cron",
            "got 7",
        ),
        invalid(
            "cron never matching (Feb 30)",
            cron(id, "0 0 30 2 *", ""),
            "schedule.cron",
            "never matches",
        ),
        invalid(
            "cron never matching (31st of 30-day months)",
            cron(id, "0 0 31 4,6,9,11 *", ""),
            "schedule.cron",
            "never matches",
        ),
        invalid(
            "cron of 200 KB (echoed input)",
            cron(id, &format!("x{} * * * *", "y".repeat(200_000)), ""),
            "schedule.cron",
            "cannot parse",
        ),
        // timezone
        invalid(
            "unknown time zone",
            cron(id, "0 * * * *", "Mars/Olympus"),
            "schedule.timezone",
            "Mars/Olympus",
        ),
        invalid(
            "unknown time zone with every",
            proto::Schedule {
                timezone: "Mars/Olympus".into(),
                ..every(id, 60)
            },
            "schedule.timezone",
            "Mars/Olympus",
        ),
        invalid(
            "time zone of 100 KB (echoed input)",
            cron(id, "0 * * * *", &"Z".repeat(100_000)),
            "schedule.timezone",
            "unknown IANA time zone",
        ),
        // every
        invalid(
            "every 0",
            every(id, 0),
            "schedule.every",
            "must be positive",
        ),
        invalid(
            "every -1s",
            every(id, -1),
            "schedule.every",
            "must not be negative",
        ),
        invalid(
            "every -1ns",
            every_exact(id, 0, -1),
            "schedule.every",
            "must not be negative",
        ),
        invalid(
            "every i64::MIN s",
            every(id, i64::MIN),
            "schedule.every",
            "must not be negative",
        ),
        invalid(
            "every 1ns",
            every_exact(id, 0, 1),
            "schedule.every",
            "at least 1s",
        ),
        invalid(
            "every 500ms",
            every_exact(id, 0, 500_000_000),
            "schedule.every",
            "at least 1s",
        ),
        invalid(
            "every 999ms",
            every_exact(id, 0, 999_000_000),
            "schedule.every",
            "at least 1s",
        ),
        invalid(
            "every nanos 1e9",
            every_exact(id, 1, 1_000_000_000),
            "schedule.every",
            "out of range",
        ),
        invalid(
            "every 367 days",
            every(id, 367 * 86_400),
            "schedule.every",
            "at most 366 days",
        ),
        invalid(
            "every i64::MAX s",
            every(id, i64::MAX),
            "schedule.every",
            "out of range",
        ),
        // start / end
        invalid(
            "end_time before start_time",
            proto::Schedule {
                start_time: Some(ts(2_000_000_000_000)),
                end_time: Some(ts(1_999_999_999_999)),
                ..every(id, 60)
            },
            "schedule.end_time",
            "must be after start_time",
        ),
        invalid(
            "end_time equal to start_time",
            proto::Schedule {
                start_time: Some(ts(2_000_000_000_000)),
                end_time: Some(ts(2_000_000_000_000)),
                ..cron(id, "0 * * * *", "")
            },
            "schedule.end_time",
            "must be after start_time",
        ),
        // timestamps out of range
        invalid(
            "start_time seconds -1e12",
            proto::Schedule {
                start_time: stamp(-1_000_000_000_000, 0),
                ..every(id, 60)
            },
            "schedule.start_time",
            "between 1970-01-01 and 9999-12-31",
        ),
        invalid(
            "start_time before 1970",
            proto::Schedule {
                start_time: stamp(-1, 999_999_999),
                ..every(id, 60)
            },
            "schedule.start_time",
            "between 1970-01-01 and 9999-12-31",
        ),
        invalid(
            "start_time nanos -1",
            proto::Schedule {
                start_time: stamp(1_800_000_000, -1),
                ..every(id, 60)
            },
            "schedule.start_time",
            "nanos",
        ),
        invalid(
            "end_time nanos 1e9",
            proto::Schedule {
                end_time: stamp(1_800_000_000, 1_000_000_000),
                ..every(id, 60)
            },
            "schedule.end_time",
            "nanos",
        ),
        invalid(
            "end_time in year 10000",
            proto::Schedule {
                end_time: stamp(253_402_300_800, 0),
                ..every(id, 60)
            },
            "schedule.end_time",
            "between 1970-01-01 and 9999-12-31",
        ),
        invalid(
            "end_time seconds i64::MAX",
            proto::Schedule {
                end_time: stamp(i64::MAX, 0),
                ..cron(id, "0 * * * *", "")
            },
            "schedule.end_time",
            "between 1970-01-01 and 9999-12-31",
        ),
        // ids
        invalid(
            "id of 257 bytes",
            every(&"i".repeat(257), 60),
            "schedule.id",
            "at most 256 bytes, got 257",
        ),
        invalid(
            "id of 129 two-byte characters (258 bytes)",
            every(&"é".repeat(129), 60),
            "schedule.id",
            "at most 256 bytes, got 258",
        ),
        // other definition fields
        invalid(
            "run_limit above 2^53",
            proto::Schedule {
                run_limit: (1 << 53) + 1,
                ..every(id, 60)
            },
            "schedule.run_limit",
            "at most",
        ),
        invalid(
            "job_name of 257 bytes",
            proto::Schedule {
                job_name: "j".repeat(257),
                ..every(id, 60)
            },
            "schedule.job_name",
            "at most 256 bytes",
        ),
        invalid(
            "65 headers",
            headers((0..65).map(|i| (format!("h{i}"), "v".into())), id),
            "schedule.headers",
            "at most 64",
        ),
        invalid(
            "header with an empty key",
            headers([(String::new(), "v".into())], id),
            "schedule.headers",
            "must not be empty",
        ),
        invalid(
            "header key of 257 bytes",
            headers([("k".repeat(257), "v".into())], id),
            "schedule.headers",
            "at most 256 bytes",
        ),
        invalid(
            "header value of 8193 bytes",
            headers([("k".into(), "v".repeat(8193))], id),
            "schedule.headers",
            "at most 8192 bytes",
        ),
        // missing message
        UpsertCase {
            name: "missing schedule".into(),
            namespace: "ns".into(),
            schedule: None,
            code: Code::InvalidArgument,
            field: "schedule",
            reason: "is required".into(),
        },
        // payload: a size limit, not a malformed value
        UpsertCase {
            name: "payload one byte over max_payload_size".into(),
            namespace: "ns".into(),
            schedule: Some(proto::Schedule {
                payload: vec![7; PAYLOAD_LIMIT + 1],
                ..every(id, 60)
            }),
            code: Code::ResourceExhausted,
            field: "schedule.payload",
            reason: format!(
                "{} bytes exceeds the limit of {PAYLOAD_LIMIT} bytes",
                PAYLOAD_LIMIT + 1
            ),
        },
    ];
    for (name, namespace, reason) in bad_namespaces() {
        cases.push(UpsertCase {
            namespace,
            ..invalid(name, every(id, 60), "namespace", reason)
        });
    }
    cases
}

/// Sends every case; checks the status and, after each, that Redis is unchanged.
async fn run_upserts(
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
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg("*")
        .query_async(&mut conn)
        .await
        .expect("KEYS");
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
            &format!("{len} bytes exceeds the limit of {PAYLOAD_LIMIT} bytes"),
        );
        assert_eq!(failure, None);
    }
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

/// UpsertScheduleRequest with `schedule` as raw bytes, so a test can put both `cron`
/// and `every` on the wire (the generated oneof cannot hold both).
#[derive(Clone, PartialEq, prost::Message)]
struct RawUpsertRequest {
    #[prost(string, tag = "1")]
    namespace: String,
    #[prost(bytes = "vec", tag = "2")]
    schedule: Vec<u8>,
}

async fn upsert_raw(
    service: &Service,
    namespace: &str,
    schedule: Vec<u8>,
) -> Result<proto::UpsertScheduleResponse, Status> {
    let channel = tonic::transport::Channel::from_shared(service.endpoint())
        .expect("endpoint")
        .connect()
        .await
        .expect("connect");
    let mut grpc = tonic::client::Grpc::new(channel);
    grpc.ready().await.expect("ready");
    let codec: tonic_prost::ProstCodec<RawUpsertRequest, proto::UpsertScheduleResponse> =
        tonic_prost::ProstCodec::default();
    grpc.unary(
        tonic::Request::new(RawUpsertRequest {
            namespace: namespace.into(),
            schedule,
        }),
        PathAndQuery::from_static("/dueq.v1.QueueService/UpsertSchedule"),
        codec,
    )
    .await
    .map(tonic::Response::into_inner)
}

/// Two encodings of Schedule concatenated: protobuf merges them field by field.
fn both_on_the_wire(first: proto::Schedule, then: proto::Schedule) -> Vec<u8> {
    let mut bytes = first.encode_to_vec();
    bytes.extend(then.encode_to_vec());
    bytes
}

fn only_cron(expr: &str) -> proto::Schedule {
    proto::Schedule {
        timing: Some(proto::schedule::Timing::Cron(expr.into())),
        ..Default::default()
    }
}

fn only_every(seconds: i64) -> proto::Schedule {
    proto::Schedule {
        timing: Some(proto::schedule::Timing::Every(prost_types::Duration {
            seconds,
            nanos: 0,
        })),
        ..Default::default()
    }
}

/// `cron` and `every` are a proto3 oneof: a client cannot set both, and when both are
/// on the wire protobuf decodes the last one (there is no "both" left to refuse). Pins
/// that the server then stores exactly that one timing, and still validates it.
#[tokio::test]
async fn cron_and_every_both_on_the_wire_last_one_wins_and_is_validated() {
    let redis = Redis::start().await;
    let service = start(&redis).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;

    let got = upsert_raw(
        &service,
        "ns",
        both_on_the_wire(every("a", 60), only_cron("0 12 * * *")),
    )
    .await
    .expect("every then cron");
    let stored = got.schedule.expect("schedule");
    assert_eq!(
        stored.timing,
        Some(proto::schedule::Timing::Cron("0 12 * * *".into()))
    );
    assert_eq!(get(&mut c, "ns", "a").await.timing, stored.timing);

    let got = upsert_raw(
        &service,
        "ns",
        both_on_the_wire(cron("b", "0 12 * * *", ""), only_every(90)),
    )
    .await
    .expect("cron then every");
    let every_90 = Some(proto::schedule::Timing::Every(prost_types::Duration {
        seconds: 90,
        nanos: 0,
    }));
    assert_eq!(got.schedule.expect("schedule").timing, every_90);
    assert_eq!(get(&mut c, "ns", "b").await.timing, every_90);

    // The surviving timing is validated like any other: nothing is written.
    let before = snapshot(&mut conn).await;
    let mut failures = Vec::new();
    for (name, bytes, field) in [
        (
            "valid cron, then every 0",
            both_on_the_wire(cron("c", "0 12 * * *", ""), only_every(0)),
            "schedule.every",
        ),
        (
            "valid every, then cron minute 61",
            both_on_the_wire(every("c", 60), only_cron("61 * * * *")),
            "schedule.cron",
        ),
        (
            "every, then an empty cron",
            both_on_the_wire(every("a", 60), only_cron("")),
            "schedule.cron",
        ),
    ] {
        let got = upsert_raw(&service, "ns", bytes).await;
        failures.extend(rejection(name, got, Code::InvalidArgument, field, ""));
        failures.extend(unchanged(name, &mut conn, &before).await);
    }
    assert_no_failures("both cron and every on the wire", failures);
}

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
        // A long wait: the refusal must come at once, not after waiting.
        cases.push((
            name.to_string(),
            req(&namespace, wait(5_000)),
            "namespace",
            reason,
        ));
    }
    cases
}

async fn run_claims(c: &mut Client, conn: &mut MultiplexedConnection) -> Vec<String> {
    let before = snapshot(conn).await;
    let mut failures = Vec::new();
    for (name, request, field, reason) in bad_claims() {
        let started = std::time::Instant::now();
        let got = c.claim_due_schedule(request).await;
        let took = started.elapsed();
        failures.extend(rejection(&name, got, Code::InvalidArgument, field, reason));
        if took > std::time::Duration::from_secs(2) {
            failures.push(format!("{name}: refused only after {took:?}"));
        }
        failures.extend(unchanged(&name, conn, &before).await);
    }
    failures
}

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

fn preview_of(schedule: proto::Schedule) -> proto::PreviewScheduleRequest {
    preview(Some(proto::preview_schedule_request::Target::Schedule(
        schedule,
    )))
}

fn preview_id(namespace: &str, id: &str) -> proto::PreviewScheduleRequest {
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
            "cannot parse",
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

async fn run_previews(c: &mut Client, conn: &mut MultiplexedConnection) -> Vec<String> {
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

/// Get/Delete/Pause/Resume/List with a bad namespace, id, page or filter.
async fn run_other_rpcs(c: &mut Client, conn: &mut MultiplexedConnection) -> Vec<String> {
    let before = snapshot(conn).await;
    let mut failures = Vec::new();
    let mut bad_keys: Vec<(String, String, String, &str, &str)> = bad_namespaces()
        .into_iter()
        .map(|(name, ns, reason)| (name.to_string(), ns, "s1".to_string(), "namespace", reason))
        .collect();
    bad_keys.push((
        "empty id".into(),
        "ns".into(),
        String::new(),
        "id",
        "must not be empty",
    ));
    bad_keys.push((
        "id of 257 bytes".into(),
        "ns".into(),
        "i".repeat(257),
        "id",
        "at most 256 bytes",
    ));
    for (name, namespace, id, field, reason) in bad_keys {
        let (ns, i) = (namespace.clone(), id.clone());
        let got = c
            .get_schedule(proto::GetScheduleRequest {
                namespace: ns,
                id: i,
            })
            .await;
        failures.extend(rejection(
            &format!("Get: {name}"),
            got,
            Code::InvalidArgument,
            field,
            reason,
        ));
        let (ns, i) = (namespace.clone(), id.clone());
        let got = c
            .delete_schedule(proto::DeleteScheduleRequest {
                namespace: ns,
                id: i,
            })
            .await;
        failures.extend(rejection(
            &format!("Delete: {name}"),
            got,
            Code::InvalidArgument,
            field,
            reason,
        ));
        let (ns, i) = (namespace.clone(), id.clone());
        let got = c
            .pause_schedule(proto::PauseScheduleRequest {
                namespace: ns,
                id: i,
            })
            .await;
        failures.extend(rejection(
            &format!("Pause: {name}"),
            got,
            Code::InvalidArgument,
            field,
            reason,
        ));
        let got = c
            .resume_schedule(proto::ResumeScheduleRequest { namespace, id })
            .await;
        failures.extend(rejection(
            &format!("Resume: {name}"),
            got,
            Code::InvalidArgument,
            field,
            reason,
        ));
        failures.extend(unchanged(&name, conn, &before).await);
    }
    let list = |namespace: &str| proto::ListSchedulesRequest {
        namespace: namespace.into(),
        page_size: 10,
        page_token: String::new(),
        status: 0,
    };
    let mut lists: Vec<(String, proto::ListSchedulesRequest, &str, &str)> = bad_namespaces()
        .into_iter()
        .map(|(name, ns, reason)| (name.to_string(), list(&ns), "namespace", reason))
        .collect();
    lists.extend([
        (
            "page_size 1001".to_string(),
            proto::ListSchedulesRequest {
                page_size: 1001,
                ..list("ns")
            },
            "page_size",
            "at most 1000",
        ),
        (
            "page_token not hex".into(),
            proto::ListSchedulesRequest {
                page_token: "zz".into(),
                ..list("ns")
            },
            "page_token",
            "not a token",
        ),
        (
            "page_token of odd length".into(),
            proto::ListSchedulesRequest {
                page_token: "abc".into(),
                ..list("ns")
            },
            "page_token",
            "not a token",
        ),
        (
            "page_token not UTF-8".into(),
            proto::ListSchedulesRequest {
                page_token: "ff".into(),
                ..list("ns")
            },
            "page_token",
            "not a token",
        ),
        (
            "unknown status filter".into(),
            proto::ListSchedulesRequest {
                status: 99,
                ..list("ns")
            },
            "status",
            "unknown status 99",
        ),
    ]);
    for (name, request, field, reason) in lists {
        let name = format!("List: {name}");
        let got = c.list_schedules(request).await;
        failures.extend(rejection(&name, got, Code::InvalidArgument, field, reason));
        failures.extend(unchanged(&name, conn, &before).await);
    }
    failures
}

#[tokio::test]
async fn bad_namespace_or_id_is_rejected_by_every_rpc() {
    let redis = Redis::start().await;
    let service = start(&redis).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;

    assert_no_failures(
        "Get/Delete/Pause/Resume/List",
        run_other_rpcs(&mut c, &mut conn).await,
    );
    assert_eq!(dbsize(&mut conn).await, 0);
}

/// None when `got` is NOT_FOUND naming the id.
fn not_found<T>(case: &str, got: Result<T, Status>, id: &str) -> Option<String> {
    match got {
        Ok(_) => Some(format!("{case}: expected NotFound, got OK")),
        Err(s) if s.code() == Code::NotFound && s.message().contains(&format!("{id:?}")) => None,
        Err(s) => Some(format!("{case}: got {:?} {}", s.code(), shown(s.message()))),
    }
}

async fn run_not_found(c: &mut Client, conn: &mut MultiplexedConnection) -> Vec<String> {
    let before = snapshot(conn).await;
    let mut failures = Vec::new();
    // A namespace holding another schedule, and one holding nothing at all.
    for namespace in ["ns", "empty"] {
        for id in ["ghost", "{ns}", "s:ghost"] {
            let case = |rpc: &str| format!("{rpc} {namespace}/{id}");
            let (ns, i) = (namespace.to_string(), id.to_string());
            let got = c
                .get_schedule(proto::GetScheduleRequest {
                    namespace: ns,
                    id: i,
                })
                .await;
            failures.extend(not_found(&case("Get"), got, id));
            let (ns, i) = (namespace.to_string(), id.to_string());
            let got = c
                .delete_schedule(proto::DeleteScheduleRequest {
                    namespace: ns,
                    id: i,
                })
                .await;
            failures.extend(not_found(&case("Delete"), got, id));
            let (ns, i) = (namespace.to_string(), id.to_string());
            let got = c
                .pause_schedule(proto::PauseScheduleRequest {
                    namespace: ns,
                    id: i,
                })
                .await;
            failures.extend(not_found(&case("Pause"), got, id));
            let (ns, i) = (namespace.to_string(), id.to_string());
            let got = c
                .resume_schedule(proto::ResumeScheduleRequest {
                    namespace: ns,
                    id: i,
                })
                .await;
            failures.extend(not_found(&case("Resume"), got, id));
            let got = c.preview_schedule(preview_id(namespace, id)).await;
            failures.extend(not_found(&case("Preview"), got, id));
            failures.extend(unchanged(&case("any"), conn, &before).await);
        }
    }
    failures
}

#[tokio::test]
async fn unknown_ids_are_not_found_and_create_nothing() {
    let redis = Redis::start().await;
    let service = start(&redis).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;

    assert_no_failures(
        "unknown ids, empty database",
        run_not_found(&mut c, &mut conn).await,
    );
    assert_eq!(dbsize(&mut conn).await, 0);

    let real = upsert(&mut c, "ns", every("real", 60)).await.schedule;
    assert_no_failures(
        "unknown ids next to a schedule",
        run_not_found(&mut c, &mut conn).await,
    );
    assert_eq!(Some(get(&mut c, "ns", "real").await), real);
}

/// The limits themselves are accepted: the refusals above are not off by one.
#[tokio::test]
async fn values_at_the_limits_are_accepted() {
    let redis = Redis::start().await;
    let service = start(&redis).await;
    let mut c = service.client().await;

    let ns64 = "n".repeat(64);
    let all_chars = "AZaz09_.-";
    for ns in [ns64.as_str(), all_chars] {
        assert!(
            upsert(&mut c, ns, every("s", 60)).await.created,
            "namespace {ns:?}"
        );
        assert_eq!(get(&mut c, ns, "s").await.id, "s");
        assert!(claim(&mut c, ns, 0).await.is_none());
    }
    for id in ["i".repeat(256), "é".repeat(128)] {
        assert!(
            upsert(&mut c, "ns", every(&id, 60)).await.created,
            "id of {} bytes",
            id.len()
        );
        assert_eq!(get(&mut c, "ns", &id).await.id, id);
    }
    let at_limits = [
        ("every 1s", every("t", 1)),
        ("every 366 days", every("t", 366 * 86_400)),
        (
            "end_time 1 ms after start_time",
            proto::Schedule {
                start_time: Some(ts(2_000_000_000_000)),
                end_time: Some(ts(2_000_000_000_001)),
                ..every("t", 60)
            },
        ),
        (
            "start_time at the epoch, end_time at 9999-12-31T23:59:59.999999999Z",
            proto::Schedule {
                start_time: stamp(0, 0),
                end_time: stamp(253_402_300_799, 999_999_999),
                ..cron("t", "0 0 29 2 *", "Pacific/Kiritimati")
            },
        ),
        (
            "run_limit 2^53, 256-byte job_name, 64 headers at their size limits",
            proto::Schedule {
                run_limit: 1 << 53,
                job_name: "j".repeat(256),
                headers: (0..64)
                    .map(|i| (format!("{i:0>256}"), "v".repeat(8192)))
                    .collect(),
                payload: vec![0; PAYLOAD_LIMIT],
                ..every("t", 60)
            },
        ),
    ];
    for (name, schedule) in at_limits {
        let got = c
            .upsert_schedule(proto::UpsertScheduleRequest {
                namespace: "ns".into(),
                schedule: Some(schedule),
            })
            .await;
        assert!(got.is_ok(), "{name}: {:?}", got.err());
    }
    let every_60 = || preview_of(every("", 60));
    for count in [0, 1, 1000] {
        let fire_times = c
            .preview_schedule(proto::PreviewScheduleRequest {
                count,
                ..every_60()
            })
            .await
            .expect("preview")
            .into_inner()
            .fire_times;
        let expected = if count == 0 { 10 } else { count as usize };
        assert_eq!(fire_times.len(), expected, "preview count {count}");
    }
    for page_size in [0, 1000] {
        c.list_schedules(proto::ListSchedulesRequest {
            namespace: "ns".into(),
            page_size,
            page_token: String::new(),
            status: 0,
        })
        .await
        .expect("list at the page size limit");
    }
}

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
