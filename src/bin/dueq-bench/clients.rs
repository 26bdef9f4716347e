//! The client libraries' workers (clients/python, clients/typescript, clients/rust)
//! beside BullMQ's Worker: each library's conformance driver in its `bench` mode (a
//! no-op handler, `--concurrency` in flight, one Work stream) drains the consume
//! family's pre-fill, then BullMQ's Worker drains the same pre-fill on the same
//! Redis right after, so each ratio compares two drains made side by side. Rows
//! `ts client worker`, `python client worker`, `rust client worker`; the Redis script
//! calls per job show that a library adds no round trip to the worker fast path.
//! A library that cannot run here (no python3 with grpcio, TypeScript not built) is a
//! note, never a failure.

use std::{
    path::{Path, PathBuf},
    process::Stdio,
    time::Duration,
};

use serde_json::{json, Value};
use tokio::process::Command;

use crate::{
    binaries::on_path,
    consume,
    env::Env,
    peers,
    plan::Plan,
    report::{Report, Row},
    Result,
};

const S: &str = "peers";

#[derive(Clone, Copy)]
enum Lang {
    TypeScript,
    Python,
    /// The Python Worker's `transport="stream"`: the Work stream.
    PythonStream,
    Rust,
}

impl Lang {
    fn row(self) -> &'static str {
        match self {
            Lang::TypeScript => "ts client worker",
            Lang::Python => "python client worker",
            Lang::PythonStream => "python client worker, transport=stream",
            Lang::Rust => "rust client worker",
        }
    }
}

fn repo(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(path)
}

/// The driver's command, or why it cannot run here.
async fn command(lang: Lang) -> Result<Command> {
    match lang {
        Lang::Python | Lang::PythonStream => {
            on_path("python3").ok_or("python3 not found on PATH")?;
            let mut c = Command::new("python3");
            c.arg(repo("clients/python/conformance_driver.py"))
                .env("PYTHONPATH", repo("clients/python/src"));
            Ok(c)
        }
        Lang::TypeScript => {
            on_path("node").ok_or("node not found on PATH")?;
            let driver = repo("clients/typescript/dist/conformance/driver.js");
            if !driver.exists() {
                return Err("not built: npm ci && npm run build in clients/typescript".into());
            }
            let mut c = Command::new("node");
            c.arg(driver);
            Ok(c)
        }
        Lang::Rust => Ok(Command::new(rust_driver().await?)),
    }
}

/// The Rust driver, built in the profile this bench was built in, beside it.
async fn rust_driver() -> Result<PathBuf> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut build = Command::new(cargo);
    build
        .args(["build", "--quiet", "--locked", "--workspace"])
        .args(["--example", "conformance_driver"])
        .current_dir(repo(""));
    if !cfg!(debug_assertions) {
        build.arg("--release");
    }
    let out = build.stdin(Stdio::null()).output().await?;
    if !out.status.success() {
        return Err(format!(
            "cargo build of the Rust driver failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )
        .into());
    }
    let exe = std::env::current_exe()?;
    let dir = exe.parent().ok_or("the bench's own directory")?;
    Ok(dir.join("examples/conformance_driver"))
}

/// Every library's row, each beside a BullMQ Worker drain (`dir`: the peers' npm
/// package, BullMQ installed).
pub(crate) async fn run(plan: &Plan, env: &Env, report: &mut Report, dir: &Path) -> Result<()> {
    if plan.prefill == 0 {
        return Ok(());
    }
    for lang in [
        Lang::TypeScript,
        Lang::Python,
        Lang::PythonStream,
        Lang::Rust,
    ] {
        match beside_bullmq(plan, env, dir, lang).await {
            Ok(row) => report.push(row),
            Err(e) => report.note(S, format!("{}: not measured: {e}", lang.row())),
        }
        env.reset().await?;
    }
    Ok(())
}

/// One library's drain, then BullMQ Worker's on the same pre-fill: the row.
async fn beside_bullmq(plan: &Plan, env: &Env, dir: &Path, lang: Lang) -> Result<Row> {
    let command = command(lang).await?;
    env.reset().await?;
    consume::prefill(env, plan.prefill).await?;
    let before = env.cpu().await?;
    let v = drain(plan, env, command, lang).await?;
    let number = |k: &str| v.get(k).and_then(Value::as_f64);
    let jobs = number("jobs").ok_or("the driver printed no jobs")?;
    let secs = number("seconds").ok_or("the driver printed no seconds")?;
    let cpu = before.per_op(&env.cpu().await?, jobs as u64);
    let client_us = number("cpu_seconds").map(|s| s * 1e6 / jobs.max(1.0));
    env.reset().await?;
    let (peer, peer_cpu) = peers::bullmq_worker(plan, env, dir).await?;
    let jobs_s = jobs / secs.max(1e-9);
    let ratio = jobs_s / peer;
    let mut row = Row::new(S, lang.row())
        .note(format!(
            "no-op handler, concurrency {}, drains {jobs:.0} pre-filled jobs: {ratio:.2}x the bullmq Worker drained right after ({peer:.0} jobs/s, Redis {peer_cpu:.0} us/job); CPU/job: Redis {:.0} us, service {:.0} us, client process {:.0} us; script calls/job {:.2}",
            plan.concurrency,
            cpu.redis_us,
            cpu.service_us,
            client_us.unwrap_or(f64::NAN),
            cpu.script_calls
        ))
        .with("bullmq_ratio", ratio)
        .with("bullmq_jobs_s", peer)
        .with("redis_cpu_us_per_job", cpu.redis_us)
        .with("service_cpu_us_per_job", cpu.service_us)
        .with("script_calls_per_job", cpu.script_calls)
        .with("drained", jobs);
    if let Some(us) = client_us {
        row = row.with("client_cpu_us_per_job", us);
    }
    row.ops_s = Some(jobs_s);
    Ok(row)
}

/// Runs the driver's bench mode against the bench's service; its `bench` event.
async fn drain(plan: &Plan, env: &Env, mut command: Command, lang: Lang) -> Result<Value> {
    let mut params = json!({"mode": "bench", "queues": [consume::QUEUE],
                        "concurrency": plan.concurrency, "jobs": plan.prefill});
    if matches!(lang, Lang::PythonStream) {
        params["transport"] = "stream".into();
    }
    command
        .arg(params.to_string())
        .env("DUEQ_ADDR", format!("http://{}", env.addr()))
        .env("DUEQ_NAMESPACE", consume::ns())
        .env_remove("DUEQ_TOKEN")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let out = tokio::time::timeout(Duration::from_secs(600), command.output())
        .await
        .map_err(|_| "the driver ran for 600 s")??;
    if !out.status.success() {
        return Err(format!(
            "the driver failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )
        .into());
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|v| v["event"] == "bench")
        .ok_or_else(|| format!("the driver printed no bench event: {stdout}").into())
}
