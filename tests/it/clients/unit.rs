//! Each client library's own unit tests, in its ecosystem's runner, as part of this
//! suite: the Python package's unittest suite (config from the environment,
//! validation naming the field, error mapping, the committed generated code against
//! a fresh generation, `pip install` into a scratch venv) and the TypeScript
//! package's `npm test` (node:test). The Rust crate's are `cargo test -p dueq-client`.

use tokio::process::Command;

use super::{driver::run_ok, repo};
use crate::common::tools;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs python grpcio"]
async fn the_python_clients_unit_tests_pass() {
    tools::require("python grpcio");
    run_ok(
        "python3 -m unittest discover -s clients/python/tests",
        Command::new("python3")
            .args(["-m", "unittest", "discover", "-s", "clients/python/tests"])
            .args(["-t", "clients/python"])
            .current_dir(repo("")),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs node"]
async fn the_typescript_clients_unit_tests_pass() {
    tools::require("node");
    super::driver::build_typescript().await;
    run_ok(
        "npm test in clients/typescript",
        Command::new("npm")
            .arg("test")
            .current_dir(repo("clients/typescript")),
    )
    .await;
}
