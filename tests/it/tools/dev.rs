//! `dueq dev` from the built binary: its private redis-server answers the README's
//! first examples, keeps what was written across a restart, and never outlives dueq —
//! neither a clean stop (SIGINT, SIGTERM: SHUTDOWN, the AOF complete) nor a SIGKILL
//! (the kernel's parent-death signal, src/cli/dev/orphan.rs).

use std::{
    io::{BufRead, BufReader},
    path::Path,
    process::{Child, Command, ExitStatus, Stdio},
};

use tokio::sync::mpsc;
use tonic::transport::Channel;
use tonic_health::pb::{
    health_check_response::ServingStatus, health_client::HealthClient, HealthCheckRequest,
};

use crate::{
    common::*,
    doc_examples::{grpcurl_commands, run},
};

/// `dueq dev` as a child process with its stdout read line by line on a thread;
/// SIGKILLed on drop (its redis-server then follows it).
struct Dev {
    child: Child,
    addr: String,
    redis_pid: u32,
    /// The banner's "try:" line, the first command it suggests.
    first_command: String,
    /// The banner, up to its "try:" line.
    banner: Vec<String>,
    /// The variables of the banner's "env:" line (`--tls`).
    env: Vec<(String, String)>,
}

impl Dev {
    /// Starts `dueq dev` on `data_dir` and waits until it reports SERVING.
    async fn start(data_dir: &Path) -> Dev {
        Dev::start_with(data_dir, &[]).await
    }

    /// Starts `dueq dev` with `args` besides --listen and --data-dir (its console on
    /// a free port unless `args` say otherwise).
    async fn start_with(data_dir: &Path, args: &[&str]) -> Dev {
        // The free port may be taken before the binary binds it: then try another.
        for _ in 0..5 {
            if let Some(dev) = Dev::try_start(data_dir, free_port(), args).await {
                return dev;
            }
        }
        panic!("dueq dev could not listen on any of 5 free ports");
    }

    async fn try_start(data_dir: &Path, port: u16, args: &[&str]) -> Option<Dev> {
        let addr = format!("127.0.0.1:{port}");
        let mut console = Vec::new();
        if !args.iter().any(|a| a.contains("console")) {
            console = vec![
                "--console-listen".to_owned(),
                format!("127.0.0.1:{}", free_port()),
            ];
        }
        let mut child = Command::new(env!("CARGO_BIN_EXE_dueq"))
            .args(["dev", "--listen", &addr, "--data-dir"])
            .arg(data_dir)
            .args(&console)
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start dueq dev");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, mut lines) = mpsc::unbounded_channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        // Owned from here, so a failed start is killed and reaped on drop.
        let mut dev = Dev {
            child,
            addr,
            redis_pid: 0,
            first_command: String::new(),
            banner: Vec::new(),
            env: Vec::new(),
        };
        loop {
            // None: dueq exited (the port was taken) before its banner was complete.
            let line = within_patience("the dueq dev banner", lines.recv()).await?;
            dev.banner.push(line.clone());
            if let Some(rest) = line.split("redis-server pid ").nth(1) {
                let pid = rest.split_whitespace().next().and_then(|p| p.parse().ok());
                dev.redis_pid = pid.expect("the banner names the redis-server pid");
            }
            if let Some(exports) = line.trim().strip_prefix("env:") {
                let exports = exports.trim().strip_prefix("export ").expect("export …");
                dev.env = exports
                    .split_whitespace()
                    .filter_map(|kv| kv.split_once('='))
                    .map(|(k, v)| (k.to_owned(), v.to_owned()))
                    .collect();
            }
            if let Some(command) = line.trim().strip_prefix("try:") {
                dev.first_command = command.trim().to_string();
                break;
            }
        }
        assert_ne!(dev.redis_pid, 0, "the banner names the redis-server pid");
        // Keep draining the logs so the pipe never fills.
        tokio::spawn(async move { while lines.recv().await.is_some() {} });
        let patience = Patience::new("dueq dev to report SERVING");
        while dev.health().await != Some(ServingStatus::Serving as i32) {
            patience.wait().await;
        }
        Some(dev)
    }

    /// A connection: over TLS trusting DUEQ_TLS_CA when the banner printed one.
    async fn channel(&self) -> Option<Channel> {
        let ca = self.env.iter().find(|(k, _)| k == "DUEQ_TLS_CA");
        let Some((_, ca)) = ca else {
            let endpoint = Channel::from_shared(format!("http://{}", self.addr));
            return endpoint.expect("endpoint").connect().await.ok();
        };
        let pem = std::fs::read_to_string(ca).expect("read the CA");
        let tls = tonic::transport::ClientTlsConfig::new()
            .ca_certificate(tonic::transport::Certificate::from_pem(pem));
        Channel::from_shared(format!("https://{}", self.addr))
            .expect("endpoint")
            .tls_config(tls)
            .expect("TLS config")
            .connect()
            .await
            .ok()
    }

    async fn health(&self) -> Option<i32> {
        let channel = self.channel().await?;
        let request = HealthCheckRequest {
            service: "dueq.v1.QueueService".into(),
        };
        let answer = HealthClient::new(channel).check(request).await.ok()?;
        Some(answer.into_inner().status)
    }

    async fn client(&self) -> Client {
        let channel = Channel::from_shared(format!("http://{}", self.addr))
            .expect("endpoint")
            .connect()
            .await
            .expect("connect to dueq dev");
        Client::new(channel)
    }

    /// Sends `signal` (e.g. "TERM") and waits for dueq to exit.
    async fn stop_with(mut self, signal: &str) -> (ExitStatus, u32) {
        let sent = Command::new("kill")
            .args([&format!("-{signal}"), &self.child.id().to_string()])
            .status()
            .expect("run kill");
        assert!(sent.success(), "kill -{signal}");
        let patience = Patience::new(format!("dueq dev to exit on SIG{signal}"));
        loop {
            if let Some(status) = self.child.try_wait().expect("wait for dueq dev") {
                return (status, self.redis_pid);
            }
            patience.wait().await;
        }
    }
}

impl Drop for Dev {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Whether process `pid` has ended. A zombie counts as ended: once dueq is gone its
/// child belongs to pid 1, which need not reap it, and a zombie runs nothing.
fn process_gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        // The state follows the command name in parentheses (which may hold spaces).
        Ok(stat) => stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z')),
    }
}

async fn wait_gone(pid: u32) {
    let patience = Patience::new(format!("redis-server (pid {pid}) to end"));
    while !process_gone(pid) {
        patience.wait().await;
    }
}

/// The redis-server's append-only files in `dir` (Redis 7 keeps them in a folder;
/// older versions as one file).
fn aof_bytes(dir: &Path) -> Vec<u8> {
    let mut bytes = std::fs::read(dir.join("appendonly.aof")).unwrap_or_default();
    if let Ok(entries) = std::fs::read_dir(dir.join("appendonlydir")) {
        for entry in entries.map_while(Result::ok) {
            bytes.extend(std::fs::read(entry.path()).unwrap_or_default());
        }
    }
    bytes
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w == needle.as_bytes())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs grpcurl"]
async fn dev_answers_the_readme_examples_and_keeps_schedules_across_a_restart() {
    tools::require("grpcurl");
    let data = tempfile::tempdir().expect("temp dir");
    let dev = Dev::start(data.path()).await;
    // The command the banner suggests runs as printed.
    let first = dev.first_command.clone();
    let (ok, text) = tokio::task::block_in_place(|| run(&first, &dev.addr));
    assert!(
        ok && text.contains("dueq.v1.QueueService"),
        "{first}:\n{text}"
    );
    // The README's examples up to the first GetSchedule: list, health, preview, two
    // upserts, get.
    let commands = grpcurl_commands();
    let last = commands
        .iter()
        .position(|c| c.contains("QueueService/GetSchedule"))
        .expect("a GetSchedule example");
    for command in &commands[..=last] {
        let (ok, text) = tokio::task::block_in_place(|| run(command, &dev.addr));
        assert!(
            ok,
            "README example failed against dueq dev:\n{command}\n{text}"
        );
    }
    // Ctrl-C: dueq stops cleanly and takes its redis-server with it.
    let (status, redis_pid) = dev.stop_with("INT").await;
    assert!(status.success(), "dueq dev exited with {status}");
    wait_gone(redis_pid).await;

    // The next run on the same folder finds the schedule.
    let dev = Dev::start(data.path()).await;
    let get = &commands[last];
    let (ok, text) = tokio::task::block_in_place(|| run(get, &dev.addr));
    assert!(
        ok && text.contains("\"jobName\": \"invoices.run\""),
        "the schedule survives a restart:\n{text}"
    );
    let (status, _) = dev.stop_with("TERM").await;
    assert!(status.success(), "dueq dev exited with {status}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_drains_dueq_then_shuts_redis_down_with_its_aof_on_disk() {
    let data = tempfile::tempdir().expect("temp dir");
    let dev = Dev::start(data.path()).await;
    let mut client = dev.client().await;
    upsert(&mut client, "devns", every("sigterm-kept", 3600)).await;
    let (status, redis_pid) = dev.stop_with("TERM").await;
    assert!(status.success(), "dueq dev exited with {status}");
    // dueq waited for its child, so it is gone (not even a zombie) by now.
    assert!(process_gone(redis_pid), "redis-server outlived dueq dev");
    assert!(
        contains(&aof_bytes(data.path()), "sigterm-kept"),
        "the AOF holds the schedule"
    );
    // Stopped by dueq's SHUTDOWN, not by the signal that follows dueq's death.
    let log = std::fs::read_to_string(data.path().join("redis.log")).expect("redis.log");
    assert!(log.contains("User requested shutdown"), "{log}");
    assert!(!log.contains("Received SIGTERM"), "{log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_of_dueq_takes_its_redis_down_and_keeps_the_data() {
    let data = tempfile::tempdir().expect("temp dir");
    let dev = Dev::start(data.path()).await;
    let mut client = dev.client().await;
    upsert(&mut client, "devns", every("sigkill-kept", 3600)).await;
    drop(client);
    let (status, redis_pid) = dev.stop_with("KILL").await;
    assert!(!status.success());
    wait_gone(redis_pid).await;
    // redis-server ended by SIGTERM (a clean shutdown), so the next run has the data.
    let log = std::fs::read_to_string(data.path().join("redis.log")).expect("redis.log");
    assert!(log.contains("Received SIGTERM"), "{log}");
    let dev = Dev::start(data.path()).await;
    let mut client = dev.client().await;
    assert_eq!(
        get(&mut client, "devns", "sigkill-kept").await.id,
        "sigkill-kept"
    );
}

#[test]
fn without_redis_server_on_path_dev_says_how_to_install_it() {
    let empty = tempfile::tempdir().expect("temp dir");
    let data = empty.path().join("data");
    let out = Command::new(env!("CARGO_BIN_EXE_dueq"))
        .args(["dev", "--data-dir"])
        .arg(&data)
        .env("PATH", empty.path())
        .output()
        .expect("run dueq dev");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim().lines().count(), 1, "one line:\n{err}");
    assert!(err.contains("redis-server not found on PATH"), "{err}");
    assert!(err.contains("apt-get install redis-server"), "{err}");
    assert!(err.contains("brew install redis"), "{err}");
    assert!(out.stdout.is_empty());
    assert!(
        !data.exists(),
        "nothing is created before redis-server is found"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dev_stops_with_an_error_when_its_redis_dies_under_it() {
    let data = tempfile::tempdir().expect("temp dir");
    let mut dev = Dev::start(data.path()).await;
    let killed = Command::new("kill")
        .args(["-KILL", &dev.redis_pid.to_string()])
        .status()
        .expect("run kill");
    assert!(killed.success());
    let patience = Patience::new("dueq dev to stop after its redis-server died");
    let status = loop {
        if let Some(status) = dev.child.try_wait().expect("wait for dueq dev") {
            break status;
        }
        patience.wait().await;
    };
    assert!(
        !status.success(),
        "a dev service without its Redis is a failure"
    );
}

/// Pins: `dueq dev` takes `dueq serve`'s flags and says what it serves: with
/// --metrics-listen its banner prints the metrics URL and /metrics answers there;
/// with --auth-file a call without a token is UNAUTHENTICATED and one with the
/// file's token goes through; the console's URL is printed; --no-console serves none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dev_takes_the_serve_flags_and_prints_what_it_serves() {
    let data = tempfile::tempdir().expect("temp dir");
    let auth = data.path().join("auth.toml");
    let hash = crate::tools::cli::sha256_hex("dev-token");
    std::fs::write(
        &auth,
        format!(
            "[[principal]]\nname = \"me\"\nroles = [\"admin\"]\nnamespaces = [\"*\"]\ntoken_sha256 = \"{hash}\"\n"
        ),
    )
    .expect("write the auth file");
    let metrics = format!("127.0.0.1:{}", free_port());
    let console = format!("127.0.0.1:{}", free_port());
    let auth_path = auth.to_str().expect("a UTF-8 path");
    let dev = Dev::start_with(
        &data.path().join("redis"),
        &[
            "--metrics-listen",
            &metrics,
            "--auth-file",
            auth_path,
            "--console-listen",
            &console,
        ],
    )
    .await;
    let banner = dev.banner.join("\n");
    assert!(
        banner.contains(&format!("metrics: http://{metrics}/metrics")),
        "{banner}"
    );
    assert!(
        banner.contains(&format!("console: http://{console}/")),
        "{banner}"
    );
    assert!(banner.contains(auth_path), "{banner}");
    assert_eq!(scrape(&metrics).await.status, 200);

    let mut client = dev.client().await;
    let refused = client
        .list_namespaces(proto::ListNamespacesRequest::default())
        .await
        .expect_err("no token");
    assert_eq!(refused.code(), tonic::Code::Unauthenticated, "{refused:?}");
    let mut request = tonic::Request::new(proto::ListNamespacesRequest::default());
    request.metadata_mut().insert(
        "authorization",
        "Bearer dev-token".parse().expect("a header value"),
    );
    client
        .list_namespaces(request)
        .await
        .expect("with the token");
    drop(dev);

    let plain = tempfile::tempdir().expect("temp dir");
    let dev = Dev::start_with(plain.path(), &["--no-console"]).await;
    let banner = dev.banner.join("\n");
    assert!(
        !banner.contains("console:") && !banner.contains("metrics:"),
        "{banner}"
    );
}

/// Pins (issue 29 item 17): `dueq dev --tls` serves TLS with certificates it makes in
/// the data folder (the banner's env: line trusts its CA: health over TLS, the CLI
/// with only those variables), and the next run reuses them (the same CA).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dev_tls_makes_certificates_in_the_data_folder_and_reuses_them() {
    let data = tempfile::tempdir().expect("temp dir");
    let dev = Dev::start_with(data.path(), &["--tls", "--no-console"]).await;
    let ca_path = data.path().join("tls/ca.pem");
    let ca = std::fs::read(&ca_path).expect("the CA in the data folder");
    let env = dev.env.clone();
    assert!(
        env.iter()
            .any(|(k, v)| k == "DUEQ_ADDR" && v.starts_with("https://")),
        "{env:?}"
    );
    let listed = tokio::task::block_in_place(|| {
        Command::new(env!("CARGO_BIN_EXE_dueq"))
            .arg("namespaces")
            .env_clear()
            .envs(env.iter().map(|(k, v)| (k, v)))
            .output()
            .expect("run dueq namespaces")
    });
    assert!(
        listed.status.success(),
        "{}",
        String::from_utf8_lossy(&listed.stderr)
    );
    let (status, redis_pid) = dev.stop_with("TERM").await;
    assert!(status.success(), "dueq dev exited with {status}");
    wait_gone(redis_pid).await;

    let dev = Dev::start_with(data.path(), &["--tls", "--no-console"]).await;
    assert_eq!(std::fs::read(&ca_path).expect("the CA"), ca, "a new CA");
    drop(dev);
}

/// Pins issue 29 item 14: a second `dueq dev` on a data folder in use refuses to start
/// (no second redis-server on the first one's AOF), naming the process that holds the
/// folder, and the first run serves on undisturbed. Once the first run is gone, the
/// folder is free again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_dev_on_one_data_folder_refuses_naming_the_holder() {
    let data = tempfile::tempdir().expect("temp dir");
    let dev = Dev::start(data.path()).await;
    let mut client = dev.client().await;
    upsert(&mut client, "devns", every("first-run", 3600)).await;

    // Killed on drop: on a build without the lock it would serve on and on.
    let second = tokio::process::Command::new(env!("CARGO_BIN_EXE_dueq"))
        .args([
            "dev",
            "--listen",
            &format!("127.0.0.1:{}", free_port()),
            "--data-dir",
        ])
        .arg(data.path())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("start a second dueq dev");
    let out = within_patience(
        "the second dueq dev to refuse and exit",
        second.wait_with_output(),
    )
    .await
    .expect("wait for the second dueq dev");
    let (status, err) = (out.status, String::from_utf8_lossy(&out.stderr));
    assert!(!status.success(), "{err}");
    assert!(err.contains("in use"), "{err}");
    assert!(
        err.contains(&format!("process {}", dev.child.id())),
        "the refusal names the first run's pid: {err}"
    );
    assert!(
        err.contains("--data-dir"),
        "and says how to run a second: {err}"
    );
    let log = std::fs::read_to_string(data.path().join("redis.log")).expect("redis.log");
    assert_eq!(
        log.matches("Ready to accept connections").count(),
        1,
        "no second redis-server started on the folder: {log}"
    );
    assert_eq!(
        get(&mut client, "devns", "first-run").await.id,
        "first-run",
        "the first run still serves"
    );

    drop(client);
    let (status, redis_pid) = dev.stop_with("TERM").await;
    assert!(status.success(), "{status}");
    assert!(process_gone(redis_pid));
    let dev = Dev::start(data.path()).await;
    let mut client = dev.client().await;
    assert_eq!(get(&mut client, "devns", "first-run").await.id, "first-run");
}
