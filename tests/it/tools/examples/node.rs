//! examples/node: producer.ts, worker.ts and schedule_worker.ts on the client
//! library in clients/typescript (`@dueq/client`, a `file:` dependency), compiled by
//! tsc (`npm run build`).

use tokio::process::Command;

use super::*;

/// `npm ci` when `dir` has no link to the library yet (.ci/run installs it; a
/// checkout from before the library has node_modules without it), then `npm run
/// build`.
async fn install_and_build(dir: &std::path::Path) {
    let name = dir.display();
    if !dir.join("node_modules/@dueq/client").exists() {
        run_ok(
            &format!("npm ci in {name}"),
            Command::new("npm")
                .args(["ci", "--no-audit", "--no-fund"])
                .current_dir(dir),
        )
        .await;
    }
    run_ok(
        &format!("npm run build in {name}"),
        Command::new("npm")
            .args(["run", "--silent", "build"])
            .current_dir(dir),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs node"]
async fn node_producer_worker_and_schedule_worker() {
    tools::require("node");
    tools::require("npm");
    // The library first (built once per test process, shared with the conformance
    // suite): the examples link to it and run its dist/.
    crate::clients::driver::build_typescript().await;
    let dir = repo("examples/node");
    install_and_build(&dir).await;
    producer_worker_and_schedule_worker("node", |name| {
        let mut command = Command::new("node");
        command.arg(dir.join(format!("dist/{name}.js")));
        command
    })
    .await;
}
