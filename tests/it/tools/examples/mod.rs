//! The client examples (examples/{python,node,rust}) really work: each language's
//! producer, job worker and schedule worker run to completion against the real
//! service, through code generated from proto/ by that language's tools.
//!
//! Python needs python3 with grpcio and grpcio-tools, Node needs node and npm: those
//! tests are ignored unless asked for (`-- --include-ignored`), and then fail if
//! what they need is missing (`common::tools`).

mod node;
mod python;
mod rust;

use std::{path::PathBuf, process::Output, time::Duration};

use tokio::process::Command;

use crate::common::*;

/// How long one example may take before the test gives up on it: a bound against a
/// hang, far beyond what it needs (each runs in seconds).
const BOUND: Duration = Duration::from_secs(120);

pub(super) fn repo(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(path)
}

/// Runs `command` to its end; fails the test on a non-zero exit, with its output.
pub(super) async fn run_ok(what: &str, command: &mut Command) -> String {
    let out = run(what, command).await;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{what} failed ({}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

pub(super) async fn run(what: &str, command: &mut Command) -> Output {
    let child = command.kill_on_drop(true).output();
    tokio::time::timeout(BOUND, child)
        .await
        .unwrap_or_else(|_| panic!("{what}: still running after {BOUND:?}"))
        .unwrap_or_else(|e| panic!("{what}: cannot start: {e}"))
}

/// The arguments every example takes.
pub(super) fn target(service: &Service, namespace: &str) -> [String; 4] {
    [
        "--target".into(),
        service.addr.to_string(),
        "--namespace".into(),
        namespace.into(),
    ]
}

/// One example language's whole run: `producer --count 3` (with `producer_args`)
/// and one job from Rust, `worker --count 4` acks all four, `schedule_worker
/// --count 2` acks two occurrences of its schedule. `example(name)` builds the
/// command for a script.
pub(super) async fn producer_worker_and_schedule_worker(
    lang: &str,
    producer_args: &[&str],
    mut example: impl FnMut(&str) -> Command,
) {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let ns = format!("{lang}-jobs");
    // One job from Rust, so the worker handles a job its own producer did not write.
    let mut from_rust = job("emails", "from.rust");
    from_rust.namespace = ns.clone();
    let rust_id = enqueue(&mut c, from_rust).await.job_id;

    let produced = run_ok(
        &format!("{lang} producer"),
        example("producer")
            .args(target(&service, &ns))
            .args(["--queue", "emails", "--count", "3"])
            .args(producer_args),
    )
    .await;
    assert_eq!(
        produced.matches("ENQUEUE_OUTCOME_CREATED").count(),
        3,
        "{produced}"
    );
    let worked = run_ok(
        &format!("{lang} worker"),
        example("worker")
            .args(target(&service, &ns))
            .args(["--queue", "emails", "--count", "4"])
            .args(["--worker-id", lang]),
    )
    .await;
    assert_eq!(worked.matches("acked ").count(), 4, "{worked}");
    let jobs = c
        .list_jobs(proto::ListJobsRequest {
            namespace: ns.clone(),
            queue: "emails".into(),
            ..Default::default()
        })
        .await
        .expect("list")
        .into_inner()
        .jobs;
    assert_eq!(jobs.len(), 4, "{jobs:?}");
    for j in &jobs {
        assert_eq!(state(j), proto::JobState::Completed, "{j:?}");
        assert_eq!(j.worker_id, lang, "{j:?}");
    }
    assert!(jobs.iter().any(|j| j.job_id == rust_id));
    assert_eq!(jobs.iter().filter(|j| j.name == "demo.greet").count(), 3);

    let sns = format!("{lang}-schedules");
    let scheduled = run_ok(
        &format!("{lang} schedule worker"),
        example("schedule_worker")
            .args(target(&service, &sns))
            .args(["--count", "2"]),
    )
    .await;
    assert!(scheduled.contains("(created: "), "{scheduled}");
    assert_eq!(scheduled.matches("acked ").count(), 2, "{scheduled}");
    let listed = c
        .list_schedules(proto::ListSchedulesRequest {
            namespace: sns.clone(),
            ..Default::default()
        })
        .await
        .expect("list schedules")
        .into_inner()
        .schedules;
    assert_eq!(
        listed.len(),
        1,
        "the worker upserted one schedule: {listed:?}"
    );
    assert!(listed[0].run_count >= 2, "{:?}", listed[0]);
}
