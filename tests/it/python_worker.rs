//! The README's Python worker (examples/python/worker.py) really works: it enqueues
//! jobs through its generated stubs, claims and acks them against the real service.
//!
//! Needs python3 with grpcio and grpcio-tools. Without them this test says so and
//! passes, unless DUEQ_REQUIRE_PYTHON is set (CI sets it).

use std::process::Command;

use crate::common::*;

fn python_available() -> bool {
    let ok = Command::new("python3")
        .args(["-c", "import grpc, grpc_tools"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !ok {
        assert!(
            std::env::var_os("DUEQ_REQUIRE_PYTHON").is_none(),
            "python3 with grpcio and grpcio-tools is required: python3 -m pip install grpcio grpcio-tools"
        );
        eprintln!("skipping: python3 with grpcio/grpcio-tools not found");
    }
    ok
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_worker_claims_and_acks_jobs() {
    if !python_available() {
        return;
    }
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    // One job from Rust too, so the worker handles jobs it did not enqueue itself.
    let mut from_rust = job("emails", "from.rust");
    from_rust.namespace = "shop".into();
    let rust_id = enqueue(&mut c, from_rust).await.job_id;

    let addr = service.addr.to_string();
    let out = tokio::task::block_in_place(|| {
        Command::new("python3")
            .arg(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/examples/python/worker.py"
            ))
            .args([
                "--target",
                &addr,
                "--namespace",
                "shop",
                "--queue",
                "emails",
            ])
            .args([
                "--worker-id",
                "py-test",
                "--enqueue",
                "3",
                "--stop-after",
                "4",
            ])
            .output()
            .expect("run python3")
    });
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "worker failed:\n{stdout}\n{stderr}");
    assert_eq!(stdout.matches("enqueued ").count(), 3, "{stdout}");
    assert_eq!(stdout.matches("acked ").count(), 4, "{stdout}");

    let jobs = c
        .list_jobs(proto::ListJobsRequest {
            namespace: "shop".into(),
            queue: "emails".into(),
            ..Default::default()
        })
        .await
        .expect("list")
        .into_inner()
        .jobs;
    assert_eq!(jobs.len(), 4);
    for j in &jobs {
        assert_eq!(state(j), proto::JobState::Completed, "{j:?}");
        assert_eq!(j.worker_id, "py-test");
    }
    assert!(jobs.iter().any(|j| j.job_id == rust_id));
    assert!(jobs.iter().filter(|j| j.name == "demo.greet").count() == 3);
}
