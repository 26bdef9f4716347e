//! A client library's conformance driver (clients/conformance/README.md): built once
//! per test process, run as a child process with its connection in `DUEQ_*`
//! variables and its parameters as one JSON argument; every JSON line it prints is an
//! event the case waits on or counts.

use std::{
    path::PathBuf,
    process::{ExitStatus, Stdio},
    sync::{Arc, Mutex},
};

use serde_json::Value;
use tokio::{
    io::{AsyncBufReadExt, AsyncReadExt, BufReader},
    process::{Child, Command},
    sync::{mpsc, OnceCell},
};

use crate::common::{tools, Patience, PATIENCE};

/// A client library.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lang {
    Python,
    /// The Python client's Worker with `transport="stream"` (the Work stream, instead
    /// of its default ClaimJob batches carrying acks): the same cases hold.
    PythonStream,
    TypeScript,
    Rust,
}

fn repo(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(path)
}

impl Lang {
    /// The driver's command, built first when it needs building (once per process).
    async fn command(self) -> Command {
        match self {
            Lang::Python | Lang::PythonStream => {
                tools::require("python grpcio");
                let mut c = Command::new("python3");
                c.arg(repo("clients/python/conformance_driver.py"))
                    .env("PYTHONPATH", repo("clients/python/src"))
                    .env("PYTHONUNBUFFERED", "1");
                c
            }
            Lang::TypeScript => {
                tools::require("node");
                build_typescript().await;
                let mut c = Command::new("node");
                c.arg(repo("clients/typescript/dist/conformance/driver.js"));
                c
            }
            Lang::Rust => {
                static BUILT: OnceCell<PathBuf> = OnceCell::const_new();
                Command::new(BUILT.get_or_init(build_rust).await)
            }
        }
    }
}

/// `npm ci` when the packages are missing, then `npm run build`, once per test
/// process: the driver is compiled from the library's sources as they are now.
pub(crate) async fn build_typescript() {
    static BUILT: OnceCell<()> = OnceCell::const_new();
    BUILT.get_or_init(build_typescript_now).await;
}

async fn build_typescript_now() {
    tools::require("npm");
    let dir = repo("clients/typescript");
    if !dir.join("node_modules").exists() {
        run_ok(
            "npm ci in clients/typescript",
            Command::new("npm")
                .args(["ci", "--no-audit", "--no-fund"])
                .current_dir(&dir),
        )
        .await;
    }
    run_ok(
        "npm run build in clients/typescript",
        Command::new("npm").args(["run", "build"]).current_dir(&dir),
    )
    .await;
}

/// `cargo build --workspace --example conformance_driver` (the workspace's features,
/// as `cargo test --workspace` built it: nothing is built twice) into the target
/// directory this test binary was built in; its path.
async fn build_rust() -> PathBuf {
    run_ok(
        "cargo build of the Rust conformance driver",
        Command::new(env!("CARGO"))
            .args(["build", "--quiet", "--locked", "--workspace"])
            .args(["--example", "conformance_driver"])
            .current_dir(env!("CARGO_MANIFEST_DIR")),
    )
    .await;
    let exe = std::env::current_exe().expect("test binary path");
    exe.parent()
        .and_then(|deps| deps.parent())
        .expect("target dir")
        .join("examples/conformance_driver")
}

/// Runs `command` to its end; fails the test on a non-zero exit, with its output.
pub(crate) async fn run_ok(what: &str, command: &mut Command) {
    let out = command
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output()
        .await
        .unwrap_or_else(|e| panic!("{what}: cannot start: {e}"));
    assert!(
        out.status.success(),
        "{what} failed ({}):\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A running driver and the events it printed.
pub struct Driver {
    what: String,
    child: Child,
    lines: mpsc::UnboundedReceiver<Value>,
    /// Every event so far, in order.
    pub events: Vec<Value>,
    stderr: Arc<Mutex<String>>,
}

impl Driver {
    /// Starts `lang`'s driver with `params`, reaching the service through `env`
    /// (every other `DUEQ_*` variable of this process removed).
    pub async fn spawn(lang: Lang, params: Value, env: &[(&str, String)]) -> Driver {
        let mut command = lang.command().await;
        let mut params = params;
        if lang == Lang::PythonStream && (params["mode"] == "work" || params["mode"] == "flow") {
            params["transport"] = "stream".into();
        }
        command.arg(params.to_string());
        Driver::start(&format!("{lang:?} driver"), command, env)
    }

    /// Starts `command` (labelled `what` in failures) with `env` as its only `DUEQ_*`
    /// variables; a line it prints that is not JSON is an event
    /// `{"event":"text","line":...}`.
    pub fn start(what: &str, mut command: Command, env: &[(&str, String)]) -> Driver {
        for (k, _) in std::env::vars() {
            if k.starts_with("DUEQ_") {
                command.env_remove(k);
            }
        }
        command
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = command
            .spawn()
            .unwrap_or_else(|e| panic!("{what}: cannot start: {e}"));
        let (tx, lines) = mpsc::unbounded_channel();
        let mut out = BufReader::new(child.stdout.take().expect("stdout")).lines();
        tokio::spawn(async move {
            while let Ok(Some(line)) = out.next_line().await {
                let event = serde_json::from_str(&line)
                    .unwrap_or_else(|_| serde_json::json!({"event": "text", "line": line}));
                if tx.send(event).is_err() {
                    break;
                }
            }
        });
        let stderr = Arc::new(Mutex::new(String::new()));
        let mut err = child.stderr.take().expect("stderr");
        let sink = stderr.clone();
        tokio::spawn(async move {
            let mut buf = [0u8; 4096];
            while let Ok(n) = err.read(&mut buf).await {
                if n == 0 {
                    break;
                }
                sink.lock()
                    .expect("stderr")
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
        Driver {
            what: what.to_owned(),
            child,
            lines,
            events: Vec::new(),
            stderr,
        }
    }

    /// What the driver wrote on stderr so far (for failure messages).
    pub fn stderr(&self) -> String {
        self.stderr.lock().expect("stderr").clone()
    }

    fn drain(&mut self) {
        while let Ok(event) = self.lines.try_recv() {
            self.events.push(event);
        }
    }

    /// The events named `name` so far.
    pub fn named(&mut self, name: &str) -> Vec<Value> {
        self.drain();
        self.events
            .iter()
            .filter(|e| e["event"] == name)
            .cloned()
            .collect()
    }

    /// The lines it printed that are not JSON.
    pub fn text(&mut self) -> Vec<String> {
        self.named("text")
            .iter()
            .map(|e| e["line"].as_str().unwrap_or("").to_owned())
            .collect()
    }

    /// Waits until `n` events named `name` were printed; fails if the driver exits
    /// first or PATIENCE runs out.
    pub async fn until(&mut self, name: &str, n: usize) -> Vec<Value> {
        let what = format!("{} to print {n} {name:?} events", self.what);
        let patience = Patience::new(what.clone());
        loop {
            let seen = self.named(name);
            if seen.len() >= n {
                return seen;
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                self.drain();
                panic!(
                    "waiting for {what}: it exited ({status}) after {:?}\nstderr:\n{}",
                    self.events,
                    self.stderr()
                );
            }
            patience.wait().await;
        }
    }

    /// Sends SIGTERM.
    pub fn terminate(&self) {
        let pid = self.child.id().expect("driver still running");
        let sent = std::process::Command::new("kill")
            .args(["-TERM", &pid.to_string()])
            .status()
            .expect("run kill");
        assert!(sent.success(), "kill -TERM {pid} failed");
    }

    /// Waits for the driver to exit (within PATIENCE); its status, with every event
    /// it printed now in `events`.
    pub async fn exit(&mut self) -> ExitStatus {
        let status = tokio::time::timeout(PATIENCE, self.child.wait())
            .await
            .unwrap_or_else(|_| {
                panic!(
                    "{} still running after {PATIENCE:?}; events {:?}\nstderr:\n{}",
                    self.what,
                    self.events,
                    self.stderr()
                )
            })
            .expect("wait for the driver");
        // The reader task ends with the pipe; take everything it read.
        while let Some(event) = self.lines.recv().await {
            self.events.push(event);
        }
        status
    }

    /// `exit`, asserting it is 0.
    pub async fn exit_ok(&mut self) {
        let status = self.exit().await;
        assert!(
            status.success(),
            "{} exited {status}; events {:?}\nstderr:\n{}",
            self.what,
            self.events,
            self.stderr()
        );
    }

    /// SIGTERM, then `exit_ok`.
    pub async fn terminate_ok(&mut self) {
        self.terminate();
        self.exit_ok().await;
    }
}
