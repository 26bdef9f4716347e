//! The `dueq` binary as an operator meets it: what it logs when Redis cannot be used
//! at startup, how its logs look off a terminal, what `DUEQ_LOG` turns on, and a
//! listen address given as a host name.

use std::{
    io::{BufRead, BufReader, Read},
    process::{Child, Command, Stdio},
};

use tokio::sync::mpsc;
use tonic::transport::Channel;
use tonic_health::pb::{
    health_check_response::ServingStatus, health_client::HealthClient, HealthCheckRequest,
};

use crate::common::*;

/// `dueq serve` as a child process; every line it writes on stdout or stderr is read
/// on a thread. Killed on drop.
pub(crate) struct Binary {
    child: Child,
    lines: mpsc::UnboundedReceiver<String>,
    seen: Vec<String>,
}

impl Binary {
    fn spawn(listen: &str, redis_url: &str, log: &str) -> Binary {
        Binary::spawn_with(listen, redis_url, log, &[])
    }

    /// `spawn`, with `extra` flags.
    pub(crate) fn spawn_with(listen: &str, redis_url: &str, log: &str, extra: &[&str]) -> Binary {
        let mut child = Command::new(env!("CARGO_BIN_EXE_dueq"))
            .args(["serve", "--listen", listen, "--redis-url", redis_url])
            .args(["--health-interval", "200ms", "--redis-timeout", "1s"])
            .args(extra)
            .env("DUEQ_LOG", log)
            .env_remove("NO_COLOR")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start dueq");
        let (tx, lines) = mpsc::unbounded_channel();
        let stdout = child.stdout.take().expect("stdout");
        let stderr = child.stderr.take().expect("stderr");
        read_lines(stdout, tx.clone());
        read_lines(stderr, tx);
        Binary {
            child,
            lines,
            seen: Vec::new(),
        }
    }

    /// The process id.
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends SIGHUP to the process.
    pub(crate) fn hangup(&self) {
        let sent = Command::new("kill")
            .args(["-HUP", &self.child.id().to_string()])
            .status()
            .expect("run kill");
        assert!(sent.success(), "kill -HUP failed");
    }

    /// The first line (from the start) containing every one of `needles`.
    pub(crate) async fn line_with(&mut self, needles: &[&str]) -> String {
        let matches = |line: &String| needles.iter().all(|n| line.contains(n));
        if let Some(line) = self.seen.iter().find(|l| matches(l)) {
            return line.clone();
        }
        let wanted = async {
            while let Some(line) = self.lines.recv().await {
                self.seen.push(line.clone());
                if matches(&line) {
                    return line;
                }
            }
            panic!(
                "dueq's output ended without {needles:?}:\n{}",
                self.seen.join("\n")
            );
        };
        within_patience(&format!("a line of dueq's output with {needles:?}"), wanted).await
    }

    /// Stops the process; every line it wrote.
    async fn stop(mut self) -> Vec<String> {
        let _ = self.child.kill();
        let _ = self.child.wait();
        // The reader threads end at the end of the output, closing the channel.
        while let Some(line) = self.lines.recv().await {
            self.seen.push(line);
        }
        std::mem::take(&mut self.seen)
    }
}

impl Drop for Binary {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Lines, as raw bytes made text, so an escape code is kept as it was written.
fn read_lines(stream: impl Read + Send + 'static, tx: mpsc::UnboundedSender<String>) {
    std::thread::spawn(move || {
        for line in BufReader::new(stream).split(b'\n').map_while(Result::ok) {
            if tx
                .send(String::from_utf8_lossy(&line).into_owned())
                .is_err()
            {
                return;
            }
        }
    });
}

async fn health(endpoint: &str) -> Option<i32> {
    let channel = Channel::from_shared(endpoint.to_owned())
        .expect("endpoint")
        .connect()
        .await
        .ok()?;
    let request = HealthCheckRequest {
        service: "dueq.v1.QueueService".into(),
    };
    let response = HealthClient::new(channel).check(request).await.ok()?;
    Some(response.into_inner().status)
}

/// Pins: Redis that cannot be used at startup is an ERROR at once, naming Redis's
/// reason (refused port, wrong password, database out of range) and never the
/// password; the service keeps answering NOT_SERVING meanwhile.
#[tokio::test]
async fn startup_names_why_redis_cannot_be_used() {
    const PASSWORD: &str = "not-the-password-7f3a";
    let redis = Redis::start().await;
    let _: () = cmd("CONFIG")
        .arg("SET")
        .arg("requirepass")
        .arg("right-password")
        .query_async(&mut redis.conn().await)
        .await
        .expect("CONFIG SET requirepass");
    let closed = format!("redis://:{PASSWORD}@127.0.0.1:{}", free_port());
    let wrong_password = format!("redis://:{PASSWORD}@127.0.0.1:{}", redis.port);
    let bad_database = format!("redis://:right-password@127.0.0.1:{}/99", redis.port);
    for (case, url, reason) in [
        ("closed port", closed, "refused"),
        ("wrong password", wrong_password, "authentication failed"),
        (
            "database out of range",
            bad_database,
            "DB index is out of range",
        ),
    ] {
        let port = free_port();
        let mut dueq = Binary::spawn(&format!("127.0.0.1:{port}"), &url, "info");
        let line = dueq.line_with(&["ERROR", "redis", reason]).await;
        assert!(line.contains("unavailable"), "{case}: {line}");
        // Still up, saying it is not ready, so it recovers by itself.
        let endpoint = format!("http://127.0.0.1:{port}");
        let patience = Patience::new(format!("{case}: NOT_SERVING from the health service"));
        while health(&endpoint).await != Some(ServingStatus::NotServing as i32) {
            patience.wait().await;
        }
        let lines = dueq.stop().await;
        assert!(
            lines.iter().all(|l| !l.contains(PASSWORD)),
            "{case}: the password was logged:\n{}",
            lines.join("\n")
        );
    }
}

/// Pins: `--listen localhost:<port>` resolves and serves; off a terminal the logs
/// carry no colour codes; `DUEQ_LOG=debug` turns on dueq's debug lines, not those of
/// h2, hyper, tonic or tower.
#[tokio::test]
async fn a_host_name_listens_and_logs_are_plain_and_about_dueq() {
    let redis = Redis::start().await;
    let port = free_port();
    let mut dueq = Binary::spawn(&format!("localhost:{port}"), &redis.url(), "debug");
    let endpoint = format!("http://localhost:{port}");
    let patience = Patience::new("dueq on localhost to report SERVING");
    while health(&endpoint).await != Some(ServingStatus::Serving as i32) {
        patience.wait().await;
    }
    let channel = Channel::from_shared(endpoint).expect("endpoint");
    let mut client = dueq::proto::queue_service_client::QueueServiceClient::new(
        channel.connect().await.expect("connect"),
    );
    upsert(&mut client, "ns", every("e", 60)).await;
    dueq.line_with(&["DEBUG", "rpc finished"]).await;
    let lines = dueq.stop().await;
    let all = lines.join("\n");
    assert!(
        !all.contains("\x1b["),
        "ANSI escape codes off a terminal:\n{all}"
    );
    for dependency in ["h2::", "hyper", "tonic::", "tower::"] {
        assert!(
            !lines.iter().any(|l| l.contains(dependency)),
            "DUEQ_LOG=debug logged {dependency} lines:\n{all}"
        );
    }
}

/// Pins: a payload limit that cannot fit in one message (with a job's headers and
/// fields) is refused at startup, in one line naming both flags and the largest
/// payload limit that fits.
#[test]
fn a_payload_limit_larger_than_a_message_is_refused_at_startup() {
    let out = Command::new(env!("CARGO_BIN_EXE_dueq"))
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--max-payload-size",
            "4000000",
        ])
        .env("DUEQ_LOG", "info")
        .output()
        .expect("run dueq");
    assert!(!out.status.success());
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let line = text
        .lines()
        .find(|l| l.contains("--max-payload-size 4000000 does not fit in one message"))
        .unwrap_or_else(|| panic!("no refusal line:\n{text}"));
    assert!(line.contains("ERROR"), "{line}");
    assert!(line.contains("--max-message-size 4194304"), "{line}");
    assert!(line.contains("can be at most 3521536"), "{line}");
    assert!(!text.contains("listening"), "{text}");
}

/// Pins: the Redis password is never shown, for every URL form (`redis://`,
/// `rediss://`, `unix://…?pass=`, and one that does not parse): not by `--help` (the
/// env value is hidden), not in any line dueq writes (startup, health, fatal), not in
/// the status a call gets while Redis is unreachable.
#[tokio::test]
async fn the_redis_password_is_never_shown() {
    const SECRET: &str = "s3cret-4b8e-pw";
    let dead = free_port();
    let socket_dir = tempfile::tempdir().expect("temp dir");
    let socket = socket_dir.path().join("none.sock");
    let forms = [
        format!("redis://worker:{SECRET}@127.0.0.1:{dead}"),
        format!("rediss://worker:{SECRET}@127.0.0.1:{dead}/0"),
        format!("unix://{}?user=worker&pass={SECRET}", socket.display()),
        format!("redis://worker:{SECRET}@127.0.0.1:notaport"),
    ];
    for url in forms {
        let help = Command::new(env!("CARGO_BIN_EXE_dueq"))
            .args(["serve", "--help"])
            .env("REDIS_URL", &url)
            .output()
            .expect("dueq serve --help");
        let help = format!(
            "{}{}",
            String::from_utf8_lossy(&help.stdout),
            String::from_utf8_lossy(&help.stderr)
        );
        assert!(help.contains("[env: REDIS_URL]"), "{help}");
        assert!(!help.contains(SECRET), "--help showed {url}:\n{help}");

        let port = free_port();
        let mut dueq = Binary::spawn(&format!("127.0.0.1:{port}"), &url, "debug");
        let mut shown = Vec::new();
        if url.contains("notaport") {
            let fatal = dueq.line_with(&["ERROR", "dueq failed"]).await;
            assert!(fatal.contains("invalid Redis URL"), "{fatal}");
        } else {
            dueq.line_with(&["ERROR", "unavailable"]).await;
            let channel = Channel::from_shared(format!("http://127.0.0.1:{port}"))
                .expect("endpoint")
                .connect()
                .await
                .expect("connect to dueq");
            let status = dueq::proto::queue_service_client::QueueServiceClient::new(channel)
                .enqueue(job("q", "a"))
                .await
                .expect_err("Enqueue with Redis unreachable");
            assert_eq!(status.code(), tonic::Code::Unavailable, "{status:?}");
            assert!(status.message().contains("worker"), "{status:?}");
            shown.push(format!("{status:?}"));
        }
        shown.extend(dueq.stop().await);
        let all = shown.join("\n");
        assert!(!all.contains(SECRET), "{url} was shown:\n{all}");
    }
}
