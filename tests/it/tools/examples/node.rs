//! examples/node: producer.ts, worker.ts and schedule_worker.ts over @grpc/grpc-js,
//! with TypeScript types generated from proto/ (proto-loader-gen-types) and compiled
//! by tsc (`npm run build`).

use tokio::process::Command;

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs node"]
async fn node_producer_worker_and_schedule_worker() {
    tools::require("node");
    tools::require("npm");
    let dir = repo("examples/node");
    // .ci/run installs the locked packages; a developer's first run does it here.
    if !dir.join("node_modules").exists() {
        run_ok("npm ci", Command::new("npm").arg("ci").current_dir(&dir)).await;
    }
    // Generates the types from proto/ and type-checks the examples against them.
    run_ok(
        "npm run build",
        Command::new("npm")
            .args(["run", "--silent", "build"])
            .current_dir(&dir),
    )
    .await;
    // The Node producer sends its jobs in one EnqueueBatch.
    producer_worker_and_schedule_worker("node", |name| {
        let mut command = Command::new("node");
        command.arg(dir.join(format!("dist/{name}.js")));
        command
    })
    .await;
}
