//! `dueq health`, the container's HEALTHCHECK: exit 0 only when the service answers
//! SERVING; otherwise one line saying why, and a non-zero exit.

use std::process::{Command, Output};

use crate::common::*;

fn health(addr: &str) -> Output {
    tokio::task::block_in_place(|| {
        Command::new(env!("CARGO_BIN_EXE_dueq"))
            .args(["health", "--addr", addr])
            .output()
            .expect("run dueq health")
    })
}

fn one_line(out: &Output) -> String {
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(err.trim().lines().count(), 1, "one line:\n{err}");
    err
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_exits_zero_when_the_service_is_serving() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let out = health(&service.endpoint());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_exits_non_zero_when_the_service_has_no_redis() {
    let nowhere = format!("redis://127.0.0.1:{}", free_port());
    let service = Service::start_unready(config(&nowhere)).await;
    let out = health(&service.endpoint());
    assert!(!out.status.success());
    assert!(one_line(&out).contains("NOT_SERVING"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_exits_non_zero_when_nothing_listens() {
    let addr = format!("http://127.0.0.1:{}", free_port());
    let out = health(&addr);
    assert!(!out.status.success());
    let err = one_line(&out);
    assert!(
        err.contains("cannot connect") && err.contains(&addr),
        "{err}"
    );
}
