//! Schedule requests and the calls tests make most, plus time conversions.

use std::time::Duration;

use dueq::proto;
use tonic::Status;

use super::service::Client;

/// How far ahead a test puts a "soon" due time: the write that carries it (one RPC)
/// lands before it even on a loaded box, and the test still finishes quickly.
pub const SOON_MS: i64 = 1_000;

pub fn every(id: &str, secs: i64) -> proto::Schedule {
    proto::Schedule {
        id: id.into(),
        timing: Some(proto::schedule::Timing::Every(prost_types::Duration {
            seconds: secs,
            nanos: 0,
        })),
        job_name: "job".into(),
        ..Default::default()
    }
}

pub fn cron(id: &str, expr: &str, tz: &str) -> proto::Schedule {
    proto::Schedule {
        id: id.into(),
        timing: Some(proto::schedule::Timing::Cron(expr.into())),
        timezone: tz.into(),
        job_name: "job".into(),
        ..Default::default()
    }
}

/// An every-hour schedule whose one slot within the hour is `due_ms`.
pub fn every_hour_from(id: &str, due_ms: i64) -> proto::Schedule {
    proto::Schedule {
        start_time: Some(ts(due_ms)),
        ..every(id, 3600)
    }
}

pub fn ts(ms: i64) -> prost_types::Timestamp {
    prost_types::Timestamp {
        seconds: ms.div_euclid(1000),
        nanos: (ms.rem_euclid(1000) * 1_000_000) as i32,
    }
}

pub fn ms(ts: &Option<prost_types::Timestamp>) -> i64 {
    let ts = ts.as_ref().expect("timestamp set");
    ts.seconds * 1000 + i64::from(ts.nanos) / 1_000_000
}

pub fn dur(ms: u64) -> prost_types::Duration {
    prost_types::Duration {
        seconds: (ms / 1000) as i64,
        nanos: ((ms % 1000) * 1_000_000) as i32,
    }
}

pub fn wait(ms: u64) -> Option<prost_types::Duration> {
    Some(dur(ms))
}

/// `message` with a client deadline (sent as grpc-timeout, enforced by the client).
pub fn with_deadline<T>(message: T, deadline: Duration) -> tonic::Request<T> {
    let mut request = tonic::Request::new(message);
    request.set_timeout(deadline);
    request
}

pub fn claim_due_req(ns: &str, wait_ms: u64) -> proto::ClaimDueScheduleRequest {
    proto::ClaimDueScheduleRequest {
        namespace: ns.into(),
        worker_id: "test".into(),
        wait: wait(wait_ms),
        lease: None,
    }
}

pub async fn try_upsert(
    client: &mut Client,
    ns: &str,
    schedule: proto::Schedule,
) -> Result<proto::UpsertScheduleResponse, Status> {
    client
        .upsert_schedule(proto::UpsertScheduleRequest {
            namespace: ns.into(),
            schedule: Some(schedule),
        })
        .await
        .map(tonic::Response::into_inner)
}

pub async fn upsert(
    client: &mut Client,
    ns: &str,
    schedule: proto::Schedule,
) -> proto::UpsertScheduleResponse {
    try_upsert(client, ns, schedule).await.expect("upsert")
}

pub async fn try_claim(
    client: &mut Client,
    ns: &str,
    wait_ms: u64,
) -> Result<Option<proto::Occurrence>, Status> {
    client
        .claim_due_schedule(claim_due_req(ns, wait_ms))
        .await
        .map(|r| r.into_inner().occurrence)
}

pub async fn claim(client: &mut Client, ns: &str, wait_ms: u64) -> Option<proto::Occurrence> {
    try_claim(client, ns, wait_ms).await.expect("claim")
}

/// A leased ClaimDueSchedule (at-least-once): the occurrence, if one came due within
/// `wait_ms`, with a lease of `lease_ms` to ack within.
pub async fn leased_claim(
    client: &mut Client,
    ns: &str,
    wait_ms: u64,
    lease_ms: u64,
) -> Option<proto::Occurrence> {
    let request = proto::ClaimDueScheduleRequest {
        lease: Some(dur(lease_ms)),
        ..claim_due_req(ns, wait_ms)
    };
    client
        .claim_due_schedule(request)
        .await
        .expect("leased claim")
        .into_inner()
        .occurrence
}

/// AckOccurrence under the occurrence's own lease token.
pub async fn ack_occurrence(
    client: &mut Client,
    ns: &str,
    occurrence: &proto::Occurrence,
) -> Result<(), Status> {
    client
        .ack_occurrence(proto::AckOccurrenceRequest {
            namespace: ns.into(),
            occurrence_id: occurrence.occurrence_id.clone(),
            lease_token: occurrence.lease_token.clone(),
        })
        .await
        .map(|_| ())
}

pub async fn get(client: &mut Client, ns: &str, id: &str) -> proto::Schedule {
    client
        .get_schedule(proto::GetScheduleRequest {
            namespace: ns.into(),
            id: id.into(),
        })
        .await
        .expect("get")
        .into_inner()
        .schedule
        .expect("schedule")
}

/// Get, Pause, Resume and Delete of one id (Delete last), each call's outcome named.
pub async fn calls_by_id(
    client: &mut Client,
    ns: &str,
    id: &str,
) -> [(&'static str, Result<(), Status>); 4] {
    let (namespace, id) = (ns.to_owned(), id.to_owned());
    [
        (
            "Get",
            client
                .get_schedule(proto::GetScheduleRequest {
                    namespace: namespace.clone(),
                    id: id.clone(),
                })
                .await
                .map(|_| ()),
        ),
        (
            "Pause",
            client
                .pause_schedule(proto::PauseScheduleRequest {
                    namespace: namespace.clone(),
                    id: id.clone(),
                    note: String::new(),
                })
                .await
                .map(|_| ()),
        ),
        (
            "Resume",
            client
                .resume_schedule(proto::ResumeScheduleRequest {
                    namespace: namespace.clone(),
                    id: id.clone(),
                })
                .await
                .map(|_| ()),
        ),
        (
            "Delete",
            client
                .delete_schedule(proto::DeleteScheduleRequest { namespace, id })
                .await
                .map(|_| ()),
        ),
    ]
}
