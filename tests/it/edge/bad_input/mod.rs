//! Bad input gets INVALID_ARGUMENT naming the field, and nothing is written.
//!
//! Every table case is sent through real gRPC to the real service on a real Redis. A
//! case fails when the code is wrong, when the status message does not start with
//! `<field>: `, or when Redis holds different data afterwards. All cases of a table
//! run before the test fails, and the failure lists every case that went wrong.

mod by_id;
mod claims;
mod far_times;
mod limits;
mod previews;
mod serving;
mod undecodable;
mod upsert_cases;
mod upserts;
mod wire;

use deadpool_redis::redis::aio::MultiplexedConnection;
use tonic::{Code, Status};

use crate::common::*;

/// The `max_payload_size` of the services in this module.
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
    let changed: Vec<&String> = after
        .iter()
        .filter(|(key, dump)| before.get(*key) != Some(dump))
        .map(|(key, _)| key)
        .collect();
    Some(format!(
        "{case}: Redis changed: keys before {:?}, after {:?}, new or changed {changed:?}",
        before.keys().collect::<Vec<_>>(),
        after.keys().collect::<Vec<_>>()
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

/// A raw gRPC client of `service`, ready: for requests no generated client sends.
pub(super) async fn raw_grpc(service: &Service) -> tonic::client::Grpc<tonic::transport::Channel> {
    let channel = tonic::transport::Channel::from_shared(service.endpoint())
        .expect("endpoint")
        .connect()
        .await
        .expect("connect");
    let mut grpc = tonic::client::Grpc::new(channel);
    grpc.ready().await.expect("ready");
    grpc
}
