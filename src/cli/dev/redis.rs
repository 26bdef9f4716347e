//! The private redis-server of `dueq dev`: a child process on a free loopback port,
//! with AOF on and its data in the dev folder.

use std::{
    path::{Path, PathBuf},
    process::{ExitStatus, Stdio},
    time::Duration,
};

use deadpool_redis::redis;
use tokio::{
    process::{Child, Command},
    sync::{oneshot, watch},
};

use super::orphan;

/// How to get redis-server, for the one line printed when it is missing.
pub(super) const INSTALL_HINT: &str = "install it (Debian/Ubuntu: apt-get install redis-server; \
     Fedora: dnf install redis; macOS: brew install redis) or put it on PATH";

/// How long a starting redis-server may take to answer (an AOF of a few GB loads in
/// seconds; far beyond that something is wrong and waiting longer helps nobody).
const START_PATIENCE: Duration = Duration::from_secs(120);

/// How long SHUTDOWN may take (an fsync of the AOF) before the child is killed.
const STOP_PATIENCE: Duration = Duration::from_secs(30);

/// The log file redis-server writes in the data folder (its output would bury dueq's).
pub(super) const LOG_FILE: &str = "redis.log";

/// redis-server on PATH, if there is one.
pub(super) fn find_on_path() -> Option<PathBuf> {
    let paths = std::env::var_os("PATH")?;
    std::env::split_paths(&paths)
        .map(|dir| dir.join("redis-server"))
        .find(|candidate| candidate.is_file())
}

/// A running redis-server child. Stop it with `shutdown`; if dueq dies first, the
/// kernel stops it (`orphan.rs`).
pub(super) struct DevRedis {
    pub(super) port: u16,
    pub(super) pid: u32,
    /// Set once the child has exited (and been reaped).
    exited: watch::Receiver<Option<ExitStatus>>,
    /// Kills the child (SIGKILL) when SHUTDOWN did not stop it.
    kill: Option<oneshot::Sender<()>>,
}

#[derive(Debug, thiserror::Error)]
pub(super) enum StartError {
    #[error("cannot start {binary}: {error}")]
    Spawn {
        binary: String,
        error: std::io::Error,
    },
    #[error("redis-server exited at start ({status}); its log: {log}")]
    Exited { status: String, log: String },
    #[error("redis-server did not answer within {START_PATIENCE:?}; its log: {log}")]
    Silent { log: String },
    #[error("no free port on 127.0.0.1: {0}")]
    Port(std::io::Error),
}

impl DevRedis {
    /// Starts `binary` with its data in `dir` and waits until it answers (its AOF
    /// loaded). A port taken between probing it and redis-server binding it is
    /// retried on another.
    pub(super) async fn start(binary: &Path, dir: &Path) -> Result<DevRedis, StartError> {
        let mut attempts = 3;
        loop {
            match DevRedis::start_once(binary, dir).await {
                Err(StartError::Exited { .. }) if attempts > 1 && log_says_port_taken(dir) => {
                    attempts -= 1;
                }
                result => return result,
            }
        }
    }

    async fn start_once(binary: &Path, dir: &Path) -> Result<DevRedis, StartError> {
        let port = free_port().map_err(StartError::Port)?;
        let mut command = Command::new(binary);
        command
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            // Every acknowledged write survives a crash of redis-server, and all but
            // about the last second of them a crash of the machine. No RDB snapshots
            // beside: the AOF is the data.
            .args([
                "--appendonly",
                "yes",
                "--appendfsync",
                "everysec",
                "--save",
                "",
            ])
            // A full Redis refuses writes rather than dropping stored jobs.
            .args(["--maxmemory-policy", "noeviction"])
            .args(["--daemonize", "no", "--logfile", LOG_FILE])
            .arg("--dir")
            .arg(dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            // Its own process group: Ctrl-C in a terminal signals the foreground group,
            // and redis-server must not stop before dueq has drained; dueq stops it after.
            .process_group(0);
        orphan::terminate_with_parent(&mut command);
        let child = command.spawn().map_err(|error| StartError::Spawn {
            binary: binary.display().to_string(),
            error,
        })?;
        let pid = child.id().unwrap_or_default();
        let (exited, kill) = reap(child);
        let redis = DevRedis {
            port,
            pid,
            exited,
            kill: Some(kill),
        };
        if let Err(error) = redis.wait_ready(dir).await {
            // One that never answered must not keep the data folder until dueq exits.
            if let Some(kill) = redis.kill {
                let _ = kill.send(());
            }
            return Err(error);
        }
        Ok(redis)
    }

    pub(super) fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// Waits until our child answers PING (which it refuses while loading its AOF).
    async fn wait_ready(&self, dir: &Path) -> Result<(), StartError> {
        let log = dir.join(LOG_FILE).display().to_string();
        let give_up = tokio::time::Instant::now() + START_PATIENCE;
        let mut exited = self.exited.clone();
        loop {
            if let Some(status) = *exited.borrow() {
                return Err(StartError::Exited {
                    status: status.to_string(),
                    log,
                });
            }
            if self.answers().await {
                return Ok(());
            }
            if tokio::time::Instant::now() >= give_up {
                return Err(StartError::Silent { log });
            }
            // Polls PING until START_PATIENCE (or the child's exit, which wakes it).
            #[allow(clippy::disallowed_methods)]
            let pause = tokio::time::sleep(Duration::from_millis(50));
            tokio::select! {
                _ = pause => {}
                _ = exited.changed() => {}
            }
        }
    }

    /// Whether the redis-server on our port is our child (not another process that
    /// took the port) and has loaded its data.
    // Supervises its redis-server child (PING, and INFO's process_id to know it is
    // ours): the process, not the store's data.
    #[allow(clippy::disallowed_methods)]
    async fn answers(&self) -> bool {
        let Ok(client) = redis::Client::open(self.url()) else {
            return false;
        };
        let Ok(mut conn) = client.get_multiplexed_async_connection().await else {
            return false;
        };
        let pong: redis::RedisResult<String> = redis::cmd("PING").query_async(&mut conn).await;
        if pong.is_err() {
            return false;
        }
        let info: redis::RedisResult<String> = redis::cmd("INFO")
            .arg("server")
            .query_async(&mut conn)
            .await;
        info.ok()
            .and_then(|info| {
                info.lines()
                    .find_map(|l| l.strip_prefix("process_id:"))
                    .and_then(|pid| pid.trim().parse::<u32>().ok())
            })
            .is_some_and(|pid| pid == self.pid)
    }

    /// Resolves when the child exits, with its status.
    pub(super) async fn exited(&self) -> ExitStatus {
        wait_exit(self.exited.clone()).await
    }

    /// `exited` as a future that borrows nothing, for the service's shutdown signal.
    pub(super) fn exit_signal(&self) -> impl std::future::Future<Output = ()> + Send + 'static {
        let exited = self.exited.clone();
        async move {
            wait_exit(exited).await;
        }
    }

    /// The child's exit status, if it has exited.
    pub(super) fn status(&self) -> Option<ExitStatus> {
        *self.exited.borrow()
    }

    /// SHUTDOWN, so the AOF is fsynced and complete, then waits for the child to exit;
    /// kills it if it does not within STOP_PATIENCE.
    pub(super) async fn shutdown(mut self) -> Result<ExitStatus, String> {
        if let Some(status) = self.status() {
            return Ok(status);
        }
        if let Err(error) = self.send_shutdown().await {
            tracing::warn!(%error, "SHUTDOWN of redis-server failed; waiting for it to exit");
        }
        match tokio::time::timeout(STOP_PATIENCE, self.exited()).await {
            Ok(status) => Ok(status),
            Err(_) => {
                if let Some(kill) = self.kill.take() {
                    let _ = kill.send(());
                }
                let status = self.exited().await;
                Err(format!(
                    "redis-server did not stop within {STOP_PATIENCE:?} of SHUTDOWN; killed ({status})"
                ))
            }
        }
    }

    // SHUTDOWN stops the redis-server child `dueq dev` started: the process, not the
    // store's data.
    #[allow(clippy::disallowed_methods)]
    async fn send_shutdown(&self) -> redis::RedisResult<()> {
        let client = redis::Client::open(self.url())?;
        let mut conn = client.get_multiplexed_async_connection().await?;
        // A successful SHUTDOWN answers nothing: the connection just closes.
        match redis::cmd("SHUTDOWN").query_async::<()>(&mut conn).await {
            Ok(()) => Ok(()),
            Err(error) if error.is_connection_dropped() || error.is_unrecoverable_error() => Ok(()),
            Err(error) => Err(error),
        }
    }
}

async fn wait_exit(mut exited: watch::Receiver<Option<ExitStatus>>) -> ExitStatus {
    loop {
        if let Some(status) = *exited.borrow_and_update() {
            return status;
        }
        if exited.changed().await.is_err() {
            // The reaper ended without a status: nothing more will come.
            return std::future::pending().await;
        }
    }
}

/// Waits for the child in a task of its own (so its status is collected the moment
/// it exits) and kills it on request.
fn reap(mut child: Child) -> (watch::Receiver<Option<ExitStatus>>, oneshot::Sender<()>) {
    let (status_tx, status_rx) = watch::channel(None);
    let (kill_tx, kill_rx) = oneshot::channel::<()>();
    tokio::spawn(async move {
        let status = tokio::select! {
            status = child.wait() => status,
            Ok(()) = kill_rx => {
                let _ = child.start_kill();
                child.wait().await
            }
        };
        match status {
            Ok(status) => {
                let _ = status_tx.send(Some(status));
            }
            Err(error) => tracing::error!(%error, "cannot wait for redis-server"),
        }
    });
    (status_rx, kill_tx)
}

/// A loopback port nothing listens on right now.
fn free_port() -> std::io::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

/// Whether redis-server's last words were that its port was taken (the log is kept
/// across runs, so only its end speaks of this one).
fn log_says_port_taken(dir: &Path) -> bool {
    std::fs::read_to_string(dir.join(LOG_FILE)).is_ok_and(|log| {
        log.lines()
            .rev()
            .take(3)
            .any(|l| l.contains("Address already in use"))
    })
}
