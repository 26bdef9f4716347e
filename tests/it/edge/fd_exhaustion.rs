//! Out of file descriptors: with the open-files limit reached and clients still
//! connecting, the service backs off its accept loop and says so (rate-limited)
//! instead of retrying at once in silence, and serves again once clients leave.
//! The real binary under a real `ulimit -n`.

use std::{
    io::{BufRead, BufReader},
    net::TcpStream,
    process::{Child, Command, Stdio},
    time::Duration,
};

use tokio::sync::mpsc;
use tonic::transport::Channel;
use tonic_health::pb::{health_client::HealthClient, HealthCheckRequest};

use crate::common::*;

/// The open-files limit the service runs under, and the clients that overrun it.
const NOFILE: u32 = 64;
const CLIENTS: usize = 100;
const BACKOFF: &str = "backing off";

/// `dueq serve` under `ulimit -n NOFILE`, its JSON log read line by line; killed on
/// drop.
struct Limited {
    child: Child,
    lines: mpsc::UnboundedReceiver<String>,
    port: u16,
}

impl Drop for Limited {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Limited {
    fn spawn(redis_url: &str) -> Limited {
        let port = free_port();
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(format!("ulimit -n {NOFILE} && exec \"$0\" \"$@\""))
            .arg(env!("CARGO_BIN_EXE_dueq"))
            .args(["serve", "--listen", &format!("127.0.0.1:{port}")])
            .args(["--redis-url", redis_url, "--log-format", "json"])
            .env("DUEQ_LOG", "info")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start dueq under ulimit");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, lines) = mpsc::unbounded_channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        Limited { child, lines, port }
    }

    async fn serving(&self) -> bool {
        let Ok(channel) = Channel::from_shared(format!("http://127.0.0.1:{}", self.port))
            .expect("endpoint")
            .connect()
            .await
        else {
            return false;
        };
        let request = HealthCheckRequest {
            service: "dueq.v1.QueueService".into(),
        };
        HealthClient::new(channel)
            .check(request)
            .await
            .is_ok_and(|r| r.into_inner().status == 1)
    }

    async fn wait_serving(&mut self) {
        let patience = Patience::new("dueq under a low ulimit to serve");
        while !self.serving().await {
            assert!(
                self.child.try_wait().ok().flatten().is_none(),
                "dueq exited"
            );
            patience.wait().await;
        }
    }

    /// Every line logged so far, without waiting.
    fn logged(&mut self) -> Vec<String> {
        let mut out = Vec::new();
        while let Ok(line) = self.lines.try_recv() {
            out.push(line);
        }
        out
    }
}

#[tokio::test]
async fn out_of_file_descriptors_the_accept_loop_backs_off_and_warns() {
    let redis = Redis::start().await;
    let mut service = Limited::spawn(&redis.url());
    service.wait_serving().await;
    let _ = service.logged();

    // More idle connections than the service has descriptors: the kernel completes
    // them all, the service's accepts fail once its descriptors are gone.
    let clients: Vec<TcpStream> = (0..CLIENTS)
        .map(|_| TcpStream::connect(("127.0.0.1", service.port)).expect("connect"))
        .collect();
    let mut warnings = Vec::new();
    let patience = Patience::new("a warning that accepts back off");
    while warnings.is_empty() {
        patience.wait().await;
        warnings.extend(service.logged().into_iter().filter(|l| l.contains(BACKOFF)));
    }
    assert!(warnings[0].contains("WARN"), "{}", warnings[0]);
    // Still exhausted a while longer: the warning is rate-limited, not one per
    // failed accept (one per 10 s). Real time for accepts to keep failing, inside
    // the rate window.
    #[allow(clippy::disallowed_methods)]
    tokio::time::sleep(Duration::from_secs(2)).await;
    let more = service
        .logged()
        .into_iter()
        .filter(|l| l.contains(BACKOFF))
        .count();
    assert!(warnings.len() + more <= 2, "{warnings:?} and {more} more");

    drop(clients);
    let patience = Patience::new("dueq to serve again once the clients left");
    while !service.serving().await {
        patience.wait().await;
    }
}
