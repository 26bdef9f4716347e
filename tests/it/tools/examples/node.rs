//! examples/node: producer.ts, worker.ts and schedule_worker.ts over @grpc/grpc-js,
//! with TypeScript types generated from proto/ (proto-loader-gen-types) and compiled
//! by tsc (`npm run build`).

use tokio::process::Command;

use super::*;

fn have(program: &str) -> bool {
    std::process::Command::new(program)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_producer_worker_and_schedule_worker() {
    if !have("node") || !have("npm") {
        required("node", "DUEQ_REQUIRE_NODE", "node or npm is not on PATH");
        return;
    }
    let dir = repo("examples/node");
    // .ci/run installs the locked packages; a developer's first run does it here.
    if !dir.join("node_modules").exists() {
        let out = run("npm ci", Command::new("npm").arg("ci").current_dir(&dir)).await;
        if !out.status.success() {
            required(
                "node",
                "DUEQ_REQUIRE_NODE",
                &format!("npm ci failed: {}", String::from_utf8_lossy(&out.stderr)),
            );
            return;
        }
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
    producer_worker_and_schedule_worker("node", &["--batch"], |name| {
        let mut command = Command::new("node");
        command.arg(dir.join(format!("dist/{name}.js")));
        command
    })
    .await;
}
