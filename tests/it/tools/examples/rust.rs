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

/// Pins: the two examples docs/clients/rust.md shows besides the hello worlds run as
/// it says: producer_tour's calls are stored as printed (the job cancelled, the
/// schedule paused, a NotFound told apart by kind), and the export worker completes
/// a job with its result and makes a job without `rows` dead at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rust_producer_tour_and_export_run_as_the_docs_show() {
    let dir = examples_dir().await;
    let server = Server::start(Setup::PLAIN).await;
    let mut c = server.client().await;
    let mut env = server.env();
    env.push(("DUEQ_NAMESPACE", "tour".into()));
    let mut tour = Driver::start(
        "producer_tour",
        Command::new(dir.join("producer_tour")),
        &env,
    );
    tour.exit_ok().await;
    let printed = tour.text().join("\n");
    for line in [
        "report-2026-12",
        "duplicate: false",
        "created: true",
        "not found: ",
    ] {
        assert!(printed.contains(line), "{line:?} not in:\n{printed}");
    }
    let report = get_in(&mut c, "tour", "report-2026-12").await;
    assert_eq!(state(&report), proto::JobState::Cancelled, "{report:?}");
    let nightly = c
        .get_schedule(proto::GetScheduleRequest {
            namespace: "tour".into(),
            id: "nightly-report".into(),
        })
        .await
        .expect("the schedule")
        .into_inner()
        .schedule
        .expect("schedule");
    assert!(nightly.paused, "{nightly:?}");

    let put = |payload: serde_json::Value| proto::EnqueueRequest {
        namespace: "reports".into(),
        queue: "exports".into(),
        name: "export".into(),
        payload: payload.to_string().into_bytes(),
        ..Default::default()
    };
    let good = c
        .enqueue(put(json!({"rows": 1000})))
        .await
        .expect("enqueue")
        .into_inner()
        .job_id;
    let bad = c
        .enqueue(put(json!({"no": 1})))
        .await
        .expect("enqueue")
        .into_inner()
        .job_id;
    let mut worker = Driver::start("export", Command::new(dir.join("export")), &server.env());
    let patience = Patience::new("the export worker to finish both jobs");
    loop {
        let (g, b) = (
            get_in(&mut c, "reports", &good).await,
            get_in(&mut c, "reports", &bad).await,
        );
        if state(&g) == proto::JobState::Completed && state(&b) == proto::JobState::Dead {
            let result: serde_json::Value = serde_json::from_slice(&g.result).expect("JSON");
            assert_eq!(result, json!({"rows": 1000}));
            assert_eq!(b.attempts, 1, "dead at once: {b:?}");
            break;
        }
        patience.wait().await;
    }
    worker.terminate_ok().await;
}
