//! The client examples (examples/{python,node,rust}) really work: each language's
//! producer, job worker and schedule worker, written on that language's client
//! library, run against a real `dueq serve`: once in plaintext, once as
//! docker-compose.yml's secured service (TLS and a bearer token, from the compose
//! file's own environment, auth file and certificate recipe), reaching it only
//! through the `DUEQ_*` variables.
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
        server::{Runner, Server, Setup, ADMIN_TOKEN},
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

/// The secured service docker-compose.yml runs (TLS and a token, from the compose
/// file and its deploy/ files: `Server::start_compose`); the image's HEALTHCHECK,
/// `dueq health` with the compose file's environment alone, finds it SERVING.
async fn compose_service() -> Server {
    let server = Server::start_compose().await;
    let env = server.compose_env().expect("started from the compose file");
    let mut health = Command::new(env!("CARGO_BIN_EXE_dueq"));
    health
        .arg("health")
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k, v)));
    run_ok("dueq health with the compose environment", &mut health).await;
    server
}

/// Pins (issue 29 item 18): the compose recipe of docs/operations.md runs as shown:
/// its `dueq certs`, its variables, then (for `docker compose up -d`) the compose
/// file's service from those files and that token, then the CLI and grpcurl with the
/// variables it exports.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs grpcurl"]
async fn the_compose_recipe_runs() {
    tools::require("grpcurl");
    let script = crate::doc_examples::fenced("compose-recipe");
    let (before, after) = script
        .split_once("docker compose up -d\n")
        .expect("the recipe starts the service with `docker compose up -d`");
    let dir = tempfile::tempdir().expect("temp dir");
    let bin = std::path::Path::new(env!("CARGO_BIN_EXE_dueq"))
        .parent()
        .expect("the binary's folder")
        .to_path_buf();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let bash = |script: String| {
        let mut command = Command::new("bash");
        command
            .args(["-euo", "pipefail", "-c", &script])
            .current_dir(dir.path())
            .env("PATH", &path);
        command
    };
    let token = run_ok(
        "the recipe up to `up`",
        &mut bash(format!("{before}\nprintf %s \"$DUEQ_TOKEN\"")),
    )
    .await;
    let token = token.lines().last().expect("the token").to_owned();
    assert_eq!(token.len(), 64, "{token}");
    let dir_path = dir.path().to_path_buf();
    let certs = Certs::written_by_dueq_certs(dir, "deploy/tls");
    let server = Server::start_compose_with(certs, &token).await;
    let after = after.replace("127.0.0.1:50051", &format!("127.0.0.1:{}", server.port));
    let mut rest = Command::new("bash");
    rest.args(["-euo", "pipefail", "-c", &after])
        .current_dir(&dir_path)
        .env("PATH", &path)
        .env("DUEQ_TOKEN", &token);
    let out = run_ok("the recipe after `up`", &mut rest).await;
    assert!(out.contains("dueq.v1.QueueService"), "{out}");
}

/// One example language's whole run, in plaintext and then against the secured
/// service of docker-compose.yml (TLS and a token, `compose_service`):
/// `example(name)` builds the command of `producer`, `worker` or `schedule_worker`.
pub(super) async fn producer_worker_and_schedule_worker(
    lang: &str,
    mut example: impl FnMut(&str) -> Command,
) {
    for compose in [false, true] {
        let server = match compose {
            false => Server::start(Setup::PLAIN).await,
            true => compose_service().await,
        };
        let setup = server.setup;
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
