//! examples/rust: the `producer`, `worker` and `schedule_worker` examples of the
//! dueq-client crate (clients/rust), written on the client library.

use std::path::PathBuf;

use tokio::process::Command;

use super::*;

/// Where cargo puts the example binaries: beside this test binary's deps/ folder
/// (one target dir for the workspace). They are built (or found fresh) here: a
/// filtered `cargo test --test it` does not build another package's examples. With
/// `--workspace`, as `cargo test --workspace` built them, so no dependency is built
/// a second time with other features.
async fn examples_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    let dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("target dir")
        .join("examples");
    run_ok(
        "cargo build --workspace --examples",
        Command::new(env!("CARGO"))
            .args(["build", "--quiet", "--locked", "--workspace", "--examples"])
            .current_dir(env!("CARGO_MANIFEST_DIR")),
    )
    .await;
    dir
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rust_producer_worker_and_schedule_worker() {
    let dir = examples_dir().await;
    producer_worker_and_schedule_worker("rust", |name| Command::new(dir.join(name))).await;
}
