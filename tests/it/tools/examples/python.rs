//! examples/python: producer.py, worker.py and schedule_worker.py on the `dueq`
//! package (clients/python/src on PYTHONPATH, as a checkout runs them without
//! installing it); worker.py stops cleanly on Ctrl-C, acking what it handled.

use std::{path::PathBuf, process::Stdio};

use tokio::{
    io::{AsyncBufReadExt, BufReader},
    process::Command,
};

use super::*;

fn in_repo(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(path)
}

/// `python3 examples/python/<name>.py`, importing `dueq` from clients/python/src.
fn script(name: &str) -> Command {
    let mut command = Command::new("python3");
    command
        .arg(in_repo(&format!("examples/python/{name}.py")))
        .env("PYTHONPATH", in_repo("clients/python/src"))
        .env("PYTHONUNBUFFERED", "1");
    command
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs python grpcio"]
async fn python_producer_worker_and_schedule_worker() {
    tools::require("python grpcio");
    producer_worker_and_schedule_worker("python", script).await;
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
    let id = enqueue(&mut c, one).await.job_id;

    // It runs until interrupted.
    let mut worker = script("worker")
        .env("DUEQ_ADDR", format!("http://{}", service.addr))
        .env("DUEQ_NAMESPACE", "shop")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("start worker.py");
    let mut lines = BufReader::new(worker.stdout.take().expect("stdout")).lines();
    let line = within_patience("worker.py handles the job", lines.next_line())
        .await
        .expect("read stdout");
    assert_eq!(line.as_deref(), Some(format!("handled {id}").as_str()));
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
    // What it handled was acked before it exited.
    let stored = c
        .get_job(proto::GetJobRequest {
            namespace: "shop".into(),
            job_id: id.clone(),
        })
        .await
        .expect("get job")
        .into_inner()
        .job
        .expect("job");
    assert_eq!(state(&stored), proto::JobState::Completed, "{stored:?}");
}
