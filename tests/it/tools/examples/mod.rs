//! The client examples (examples/{python,node,rust}) really work: each language's
//! producer, job worker and schedule worker, written on that language's client
//! library, run against a real `dueq serve`: once in plaintext, once over TLS with a
//! bearer token, reaching it only through the `DUEQ_*` variables.
//!
//! Python needs python3 with grpcio, Node needs node and npm: those tests are ignored
//! unless asked for (`-- --include-ignored`), and then fail if what they need is
//! missing (`common::tools`).

mod node;
mod python;
mod rust;

use std::{collections::BTreeSet, path::PathBuf, process::Output, time::Duration};

use serde_json::json;
use tokio::process::Command;

use crate::{
    clients::{
        cases::get_in,
        driver::Driver,
        server::{Runner, Server, Setup, Transport, ADMIN_TOKEN},
    },
    common::*,
};

/// How long a build step may take before the test gives up on it: a bound against a
/// hang, far beyond what it needs.
const BOUND: Duration = Duration::from_secs(300);

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

/// One example language's whole run, in plaintext and then over TLS with a token:
/// `example(name)` builds the command of `producer`, `worker` or `schedule_worker`.
pub(super) async fn producer_worker_and_schedule_worker(
    lang: &str,
    mut example: impl FnMut(&str) -> Command,
) {
    let setups = [
        Setup::PLAIN,
        Setup {
            transport: Transport::Tls,
            auth: true,
        },
    ];
    for setup in setups {
        let server = Server::start(setup).await;
        let mut env = server.env();
        env.push(("DUEQ_NAMESPACE", format!("{lang}-examples")));
        if setup.auth {
            env.push(("DUEQ_TOKEN", ADMIN_TOKEN.into()));
        }
        let what = format!("{lang} examples ({setup:?})");
        let mut c = server.client().await;
        let ns = format!("{lang}-examples");
        jobs(&what, &mut c, &ns, &env, &mut example).await;
        schedules(&what, &mut c, &ns, &env, &mut example).await;
    }
}

/// The producer enqueues three jobs, the worker handles them and one enqueued from
/// Rust, and stops cleanly on SIGTERM.
async fn jobs(
    what: &str,
    c: &mut Runner,
    ns: &str,
    env: &[(&'static str, String)],
    example: &mut impl FnMut(&str) -> Command,
) {
    let from_rust = c
        .enqueue(proto::EnqueueRequest {
            namespace: ns.into(),
            queue: "emails".into(),
            name: "from.rust".into(),
            payload: json!({"to": "rust"}).to_string().into_bytes(),
            ..Default::default()
        })
        .await
        .expect("enqueue")
        .into_inner()
        .job_id;
    let mut producer = Driver::start(&format!("{what}: producer"), example("producer"), env);
    producer.exit_ok().await;
    let mut ids: BTreeSet<String> = producer
        .text()
        .iter()
        .filter_map(|l| l.strip_prefix("enqueued ").map(|id| id.trim().to_owned()))
        .collect();
    assert_eq!(
        ids.len(),
        3,
        "{what}: the producer printed {:?}",
        producer.events
    );
    for id in &ids {
        let job = get_in(c, ns, id).await;
        assert_eq!(
            (job.queue.as_str(), job.name.as_str()),
            ("emails", "welcome"),
            "{job:?}"
        );
    }
    ids.insert(from_rust);
    let mut worker = Driver::start(&format!("{what}: worker"), example("worker"), env);
    let patience = Patience::new(format!("{what}: the worker to handle {ids:?}"));
    loop {
        let handled: BTreeSet<String> = worker
            .text()
            .iter()
            .filter_map(|l| l.strip_prefix("handled ").map(|id| id.trim().to_owned()))
            .collect();
        if handled == ids {
            break;
        }
        patience.wait().await;
    }
    worker.terminate_ok().await;
    for id in &ids {
        let job = get_in(c, ns, id).await;
        assert_eq!(state(&job), proto::JobState::Completed, "{what}: {job:?}");
    }
}

/// The schedule worker handles a triggered occurrence and stops cleanly on SIGTERM.
async fn schedules(
    what: &str,
    c: &mut Runner,
    ns: &str,
    env: &[(&'static str, String)],
    example: &mut impl FnMut(&str) -> Command,
) {
    c.upsert_schedule(proto::UpsertScheduleRequest {
        namespace: ns.into(),
        schedule: Some(every("hello", 3600)),
    })
    .await
    .expect("upsert");
    let occurrence = c
        .trigger_schedule(proto::TriggerScheduleRequest {
            namespace: ns.into(),
            id: "hello".into(),
            ignore_overlap: true,
        })
        .await
        .expect("trigger")
        .into_inner()
        .occurrence_id;
    let command = example("schedule_worker");
    let mut worker = Driver::start(&format!("{what}: schedule worker"), command, env);
    let want = format!("occurrence {occurrence}");
    let patience = Patience::new(format!("{what}: the schedule worker to print {want}"));
    while !worker.text().iter().any(|l| l.trim() == want) {
        patience.wait().await;
    }
    worker.terminate_ok().await;
}
