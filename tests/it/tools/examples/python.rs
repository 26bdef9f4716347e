//! examples/python: producer.py, worker.py and schedule_worker.py, with stubs
//! generated from proto/ by grpcio-tools at start-up; worker.py stops cleanly on
//! Ctrl-C.

use tokio::process::Command;

use super::*;

fn script(name: &str) -> Command {
    let mut command = Command::new("python3");
    command.arg(repo(&format!("examples/python/{name}.py")));
    command
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs python grpcio"]
async fn python_producer_worker_and_schedule_worker() {
    tools::require("python grpcio");
    producer_worker_and_schedule_worker("python", script).await;
}
