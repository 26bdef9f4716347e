//! A due index that loses entries under a running service (deleted by hand, evicted)
//! is noticed within the check interval and logged — by the real binary, in JSON —
//! and reported by GetNamespaceStatus; Migrate then restores claiming.

mod common;

use std::{
    io::{BufRead, BufReader},
    process::{Command, Stdio},
    sync::mpsc,
    time::{Duration, Instant},
};

use common::*;
use deadpool_redis::redis;
use dueq::proto::admin_service_client::AdminServiceClient;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_index_is_logged_reported_and_repaired_by_migrate() {
    let redis = Redis::start().await;
    let port = Redis::free_port();
    let (mut child, lines) = spawn_logged(&redis.url(), port, &["--check-interval", "200ms"]);
    let endpoint = format!("http://127.0.0.1:{port}");
    let mut client = None;
    for _ in 0..100 {
        if let Ok(c) =
            dueq::proto::queue_service_client::QueueServiceClient::connect(endpoint.clone()).await
        {
            client = Some(c);
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mut c = client.expect("dueq binary answers");
    let mut admin = AdminServiceClient::connect(endpoint).await.expect("admin");
    // Wait until SERVING: the first upsert may race the script load.
    let mut ok = false;
    for _ in 0..100 {
        let r = c
            .upsert_schedule(proto::UpsertScheduleRequest {
                namespace: "ns".into(),
                schedule: Some(every("a", 3600)),
            })
            .await;
        if r.is_ok() {
            ok = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(ok, "upsert through the binary");
    upsert(&mut c, "ns", every("b", 3600)).await;

    let mut conn = redis.conn().await;
    let _: () = redis::cmd("DEL")
        .arg("dueq:{ns}:due")
        .query_async(&mut conn)
        .await
        .expect("DEL");

    // Reported on demand, O(1).
    let status = admin
        .get_namespace_status(proto::GetNamespaceStatusRequest {
            namespace: "ns".into(),
        })
        .await
        .expect("status")
        .into_inner();
    assert!(status.index_damaged, "{status:?}");
    assert_eq!(status.expected_index_size, 2);
    assert_eq!(status.index_size, 0);
    assert!(status.message.contains("Migrate"), "{}", status.message);

    // Logged within a few check intervals.
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut seen = None;
    while Instant::now() < deadline {
        if let Ok(line) = lines.recv_timeout(Duration::from_millis(100)) {
            if line.contains("due index is missing entries") {
                seen = Some(line);
                break;
            }
        }
    }
    let line = seen.expect("the damage is logged");
    assert!(line.contains("\"missing_entries\":2"), "{line}");
    assert!(line.contains("\"namespace\":\"ns\""), "{line}");

    // Migrate repairs it and claiming works again.
    let mut stream = admin
        .migrate(proto::MigrateRequest {
            namespace: "ns".into(),
            ..Default::default()
        })
        .await
        .expect("migrate")
        .into_inner();
    let mut last = None;
    while let Some(p) = stream.message().await.expect("progress") {
        last = Some(p);
    }
    let done = last.expect("a summary");
    assert_eq!(done.phase, proto::MigratePhase::Done as i32);
    assert_eq!(done.indexed, 2, "{done:?}");
    let now = redis_now(&mut conn).await;
    force_due(&mut conn, "ns", "a", now - 10).await;
    let occ = claim(&mut c, "ns", 0).await.expect("claims work again");
    assert_eq!(occ.schedule.expect("s").id, "a");

    // And the repair is logged too.
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut healthy = false;
    while Instant::now() < deadline && !healthy {
        if let Ok(line) = lines.recv_timeout(Duration::from_millis(100)) {
            healthy = line.contains("healthy again");
        }
    }
    assert!(healthy, "the repair is logged");
    let _ = child.kill();
    let _ = child.wait();
}

/// The real binary on `port` with JSON logs on stdout, read line by line on a
/// thread.
fn spawn_logged(
    redis_url: &str,
    port: u16,
    extra_args: &[&str],
) -> (std::process::Child, mpsc::Receiver<String>) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_dueq"))
        .args(["serve", "--listen", &format!("127.0.0.1:{port}")])
        .args(["--redis-url", redis_url, "--log-format", "json"])
        .args(extra_args)
        .env("DUEQ_LOG", "info")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start dueq");
    let stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    (child, rx)
}

/// Log lines up to and including the first one containing `until`, and for
/// `linger` after it (a warning logged right after SERVING is caught too).
fn lines_until(rx: &mpsc::Receiver<String>, until: &str, linger: Duration) -> Vec<String> {
    let mut seen = Vec::new();
    let give_up = Instant::now() + Duration::from_secs(15);
    let mut stop_at: Option<Instant> = None;
    loop {
        let now = Instant::now();
        let limit = stop_at.unwrap_or(give_up).min(give_up);
        if now >= limit {
            return seen;
        }
        match rx.recv_timeout(limit - now) {
            Ok(line) => {
                if stop_at.is_none() && line.contains(until) {
                    stop_at = Some(Instant::now() + linger);
                }
                seen.push(line);
            }
            Err(_) => return seen,
        }
    }
}

async fn config_set(conn: &mut redis::aio::MultiplexedConnection, name: &str, value: &str) {
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg(name)
        .arg(value)
        .query_async(conn)
        .await
        .expect("CONFIG SET");
}

/// The log of a fresh service up to SERVING and half a second after, then stopped.
fn startup_log(redis_url: &str) -> Vec<String> {
    let (mut child, rx) = spawn_logged(redis_url, Redis::free_port(), &[]);
    let lines = lines_until(&rx, "SERVING", Duration::from_millis(500));
    let _ = child.kill();
    let _ = child.wait();
    lines
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn risky_redis_settings_are_warned_about_at_startup() {
    let redis = Redis::start().await;
    let mut conn = redis.conn().await;
    config_set(&mut conn, "maxmemory-policy", "allkeys-lru").await;
    let lines = startup_log(&redis.url());
    let warned = |needle: &str| {
        lines
            .iter()
            .any(|l| l.contains("\"WARN\"") && l.contains(needle))
    };
    assert!(
        warned("maxmemory_policy") && warned("allkeys-lru"),
        "eviction policy warning expected in {lines:#?}"
    );
    // Records are packed strings: Redis's default hash-max-listpack-value (64) is
    // no reason to warn any more.
    assert!(
        !warned("hash_max_listpack_value"),
        "no listpack warning expected in {lines:#?}"
    );

    // With the advised settings there is nothing to warn about.
    config_set(&mut conn, "maxmemory-policy", "noeviction").await;
    let lines = startup_log(&redis.url());
    assert!(
        lines.iter().any(|l| l.contains("SERVING")),
        "the service came up: {lines:#?}"
    );
    assert!(
        !lines.iter().any(|l| l.contains("\"WARN\"")),
        "no warnings expected with noeviction: {lines:#?}"
    );
}
