//! examples/python: producer.py, worker.py and schedule_worker.py, with stubs
//! generated from proto/ by grpcio-tools at start-up; worker.py stops cleanly on
//! Ctrl-C.

use std::process::Stdio;

use tokio::{
    io::{AsyncBufReadExt, BufReader},
    process::Command,
};

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
    producer_worker_and_schedule_worker("python", &[], script).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs python grpcio"]
async fn python_worker_stops_cleanly_on_ctrl_c() {
    tools::require("python grpcio");
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut one = job("emails", "first");
    one.namespace = "shop".into();
    enqueue(&mut c, one).await;

    // No --count: it runs until interrupted.
    let mut worker = script("worker")
        .args(target(&service, "shop"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("start worker.py");
    // Once it has acked the job it is back in a ClaimJob long-poll.
    let mut lines = BufReader::new(worker.stdout.take().expect("stdout")).lines();
    let mut seen = Vec::new();
    loop {
        let line = within_patience("worker.py acks the job", lines.next_line())
            .await
            .expect("read stdout");
        let Some(line) = line else {
            panic!("worker.py ended early: {seen:?}");
        };
        let acked = line.starts_with("acked ");
        seen.push(line);
        if acked {
            break;
        }
    }
    let pid = worker.id().expect("pid").to_string();
    let sent = std::process::Command::new("kill")
        .args(["-INT", &pid])
        .status()
        .expect("kill -INT");
    assert!(sent.success());

    let out = within_patience("worker.py stops on SIGINT", worker.wait_with_output())
        .await
        .expect("wait");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{:?}: {stderr}", out.status);
    assert!(!stderr.contains("Traceback"), "{stderr}");
    assert!(stderr.contains("stopping"), "{stderr}");
}
