//! examples/rust: the `producer`, `worker` and `schedule_worker` cargo examples,
//! over the tonic client generated from proto/ (`dueq::proto`).

use std::path::PathBuf;

use tokio::process::Command;

use super::*;

/// Where cargo puts the example binaries: beside this test binary's deps/ folder.
/// `cargo test` builds them; a filtered `cargo test --test it` does not, so they
/// are built here when missing.
async fn examples_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    let dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("target dir")
        .join("examples");
    if ["producer", "worker", "schedule_worker"]
        .iter()
        .any(|name| !dir.join(name).exists())
    {
        run_ok(
            "cargo build --examples",
            Command::new(env!("CARGO"))
                .args(["build", "--quiet", "--locked", "--examples"])
                .current_dir(env!("CARGO_MANIFEST_DIR")),
        )
        .await;
    }
    dir
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rust_producer_worker_and_schedule_worker() {
    let dir = examples_dir().await;
    producer_worker_and_schedule_worker("rust", |name| Command::new(dir.join(name))).await;
}
