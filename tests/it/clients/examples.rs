//! The flow example of each client library (docs/clients/*.md, "Flows", shows each
//! file as it is): run against a real `dueq serve`, it enqueues the pipeline
//! resize -> (thumb-small, thumb-large) -> notify, works it, and prints what notify
//! saw of its dependencies' results and the flow's final state.

use std::path::PathBuf;

use tokio::process::Command;

use super::{
    driver::{build_typescript, run_ok, Driver},
    repo,
    server::{Server, Setup},
};
use crate::common::{proto, tools};

/// Runs `command` against a fresh service to its end; checks what it printed and
/// what the service stored.
async fn pipeline_runs(what: &str, command: Command) {
    let server = Server::start(Setup::PLAIN).await;
    let mut env = server.env();
    env.push(("DUEQ_NAMESPACE", "examples".into()));
    let mut run = Driver::start(what, command, &env);
    run.exit_ok().await;
    let lines = run.text();
    assert_eq!(lines.len(), 3, "{what} printed {lines:?}\n{}", run.stderr());
    let flow_id = lines[0]
        .strip_prefix("enqueued flow ")
        .and_then(|rest| rest.strip_suffix(": 4 jobs"))
        .unwrap_or_else(|| panic!("{what}: {lines:?}"));
    assert_eq!(
        lines[1], "notify: cat-1024.png@256px, cat-1024.png@64px",
        "{what}"
    );
    assert_eq!(
        lines[2].to_lowercase(),
        format!("flow {flow_id}: completed").to_lowercase(),
        "{what}"
    );
    let mut c = server.client().await;
    let flow = c
        .get_flow(proto::GetFlowRequest {
            namespace: "examples".into(),
            flow_id: flow_id.into(),
            ..Default::default()
        })
        .await
        .expect("get flow")
        .into_inner();
    assert_eq!(flow.state(), proto::FlowState::Completed, "{flow:?}");
    assert_eq!(flow.node_count, 4, "{flow:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs python grpcio"]
async fn the_python_pipeline_example_runs() {
    tools::require("python grpcio");
    let mut command = Command::new("python3");
    command
        .arg(repo("clients/python/examples/pipeline.py"))
        .env("PYTHONPATH", repo("clients/python/src"))
        .env("PYTHONUNBUFFERED", "1");
    pipeline_runs("clients/python/examples/pipeline.py", command).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs node"]
async fn the_typescript_pipeline_example_runs() {
    tools::require("node");
    build_typescript().await;
    let mut command = Command::new("node");
    command.arg(repo("clients/typescript/dist/examples/pipeline.js"));
    pipeline_runs("clients/typescript/src/examples/pipeline.ts", command).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_rust_pipeline_example_runs() {
    run_ok(
        "cargo build of the Rust pipeline example",
        Command::new(env!("CARGO"))
            .args(["build", "--quiet", "--locked", "--workspace"])
            .args(["--example", "pipeline"])
            .current_dir(env!("CARGO_MANIFEST_DIR")),
    )
    .await;
    let exe: PathBuf = std::env::current_exe()
        .expect("test binary path")
        .parent()
        .and_then(|deps| deps.parent())
        .expect("target dir")
        .join("examples/pipeline");
    pipeline_runs("clients/rust/examples/pipeline.rs", Command::new(exe)).await;
}
