//! Faults: Redis unreachable, restarted, full or paused, its script cache flushed;
//! instances crashing or shutting down under workers. Nothing may panic, hang, leak
//! the Redis password or stall a schedule; the service recovers by itself.

pub(crate) mod full;
mod hung;
mod instances;
mod lost_meta;
mod redis_down;
mod writes;

use std::time::Duration;

use dueq::config::ServeConfig;
use tonic::{Code, Status};
use tonic_health::pb::health_check_response::ServingStatus;

use crate::common::*;

const SERVING: i32 = ServingStatus::Serving as i32;
const NOT_SERVING: i32 = ServingStatus::NotServing as i32;

/// Every call carries this client deadline, far beyond the service's Redis timeout:
/// any answer came from the service before the client gave up, and a call that hung
/// gets DEADLINE_EXCEEDED, which no assertion here accepts.
const CLIENT_DEADLINE: Duration = PATIENCE;

/// The service's bound on one Redis command in these tests.
const REDIS_TIMEOUT: Duration = Duration::from_secs(2);

/// A long-poll wait longer than the client's deadline: a service that sat it out
/// would answer empty at the deadline instead of failing at once.
const WAIT_PAST_DEADLINE_MS: u64 = 60_000;

/// The service's defaults, with a short Redis timeout, so that calls against a dead
/// or stuck Redis fail fast.
fn failing_fast(redis_url: &str) -> ServeConfig {
    let mut config = config(redis_url);
    config.redis_timeout = REDIS_TIMEOUT;
    config
}

async fn upsert_with_deadline(
    c: &mut Client,
    ns: &str,
    schedule: proto::Schedule,
) -> Result<proto::UpsertScheduleResponse, Status> {
    let req = proto::UpsertScheduleRequest {
        namespace: ns.into(),
        schedule: Some(schedule),
    };
    c.upsert_schedule(with_deadline(req, CLIENT_DEADLINE))
        .await
        .map(tonic::Response::into_inner)
}

async fn claim_with_deadline(
    c: &mut Client,
    ns: &str,
    wait_ms: u64,
    deadline: Duration,
) -> Result<Option<proto::Occurrence>, Status> {
    c.claim_due_schedule(with_deadline(claim_due_req(ns, wait_ms), deadline))
        .await
        .map(|r| r.into_inner().occurrence)
}

async fn get_with_deadline(c: &mut Client, ns: &str, id: &str) -> Result<proto::Schedule, Status> {
    let req = proto::GetScheduleRequest {
        namespace: ns.into(),
        id: id.into(),
    };
    c.get_schedule(with_deadline(req, CLIENT_DEADLINE))
        .await
        .map(|r| r.into_inner().schedule.expect("schedule"))
}

/// Asserts UNAVAILABLE naming the Redis address, without leaking a password.
fn assert_unavailable<T: std::fmt::Debug>(what: &str, result: Result<T, Status>, addr: &str) {
    let status = match result {
        Err(status) => status,
        Ok(ok) => panic!("{what}: expected UNAVAILABLE, got {ok:?}"),
    };
    assert_eq!(status.code(), Code::Unavailable, "{what}: {status:?}");
    assert!(
        status.message().contains(addr),
        "{what}: message {:?} does not name {addr}",
        status.message()
    );
    assert!(
        !status.message().contains("secret"),
        "{what}: message {:?} leaks the password",
        status.message()
    );
}

/// Polls both health names until they report `want`.
async fn wait_health(service: &Service, want: i32) {
    let patience = Patience::new(format!("health to become {want}"));
    loop {
        let (named, all) = (service.health().await, service.health_of("").await);
        if named == want && all == want {
            return;
        }
        patience.wait().await;
    }
}
