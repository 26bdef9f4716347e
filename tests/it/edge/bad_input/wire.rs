//! Requests a generated client cannot build, sent as raw protobuf.

use prost::Message as _;
use tonic::codegen::http::uri::PathAndQuery;

use super::*;

/// UpsertScheduleRequest with `schedule` as raw bytes, so a test can put both `cron`
/// and `every` on the wire (the generated oneof cannot hold both).
#[derive(Clone, PartialEq, prost::Message)]
struct RawUpsertRequest {
    #[prost(string, tag = "1")]
    namespace: String,
    #[prost(bytes = "vec", tag = "2")]
    schedule: Vec<u8>,
}

pub(super) async fn upsert_raw(
    service: &Service,
    namespace: &str,
    schedule: Vec<u8>,
) -> Result<proto::UpsertScheduleResponse, Status> {
    let mut grpc = super::raw_grpc(service).await;
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
pub(super) fn both_on_the_wire(first: proto::Schedule, then: proto::Schedule) -> Vec<u8> {
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

pub(super) fn only_every(seconds: i64) -> proto::Schedule {
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
