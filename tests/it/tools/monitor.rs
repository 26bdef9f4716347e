//! The real binary watches what it serves: a due index that loses entries (deleted by
//! hand, evicted) is logged — in JSON — and reported by GetNamespaceStatus, and
//! Migrate restores claiming; risky Redis settings are warned about at startup.

use std::{
    io::{BufRead, BufReader},
    process::{Child, Command, Stdio},
};

use deadpool_redis::redis::aio::MultiplexedConnection;
use tokio::sync::mpsc;
use tonic::transport::Channel;
use tonic_health::pb::{
    health_check_response::ServingStatus, health_client::HealthClient, HealthCheckRequest,
};

use crate::common::*;

/// `dueq serve` as a child process on a port of its own, with JSON logs on stdout
/// read line by line on a thread; killed on drop.
struct LoggedBinary {
    child: Child,
    lines: mpsc::UnboundedReceiver<String>,
    endpoint: String,
}

impl LoggedBinary {
    /// Starts the binary against `redis_url` and waits until it reports SERVING.
    async fn start(redis_url: &str, extra_args: &[&str]) -> LoggedBinary {
        // The free port may be taken before the binary binds it: then try another.
        for _ in 0..5 {
            let mut binary = LoggedBinary::spawn(redis_url, free_port(), extra_args);
            if binary.wait_serving().await {
                return binary;
            }
        }
        panic!("dueq serve could not listen on any of 5 free ports");
    }

    fn spawn(redis_url: &str, port: u16, extra_args: &[&str]) -> LoggedBinary {
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
        let (tx, lines) = mpsc::unbounded_channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        LoggedBinary {
            child,
            lines,
            endpoint: format!("http://127.0.0.1:{port}"),
        }
    }

    /// Waits until the binary's health says SERVING (by then its startup checks have
    /// logged what they found); false if it exited instead.
    async fn wait_serving(&mut self) -> bool {
        let patience = Patience::new("dueq serve to report SERVING");
        loop {
            if self.health().await == Some(ServingStatus::Serving as i32) {
                return true;
            }
            if self.child.try_wait().ok().flatten().is_some() {
                return false;
            }
            patience.wait().await;
        }
    }

    async fn health(&self) -> Option<i32> {
        let channel = Channel::from_shared(self.endpoint.clone())
            .expect("endpoint")
            .connect()
            .await
            .ok()?;
        let mut health = HealthClient::new(channel);
        let request = HealthCheckRequest {
            service: "dueq.v1.QueueService".into(),
        };
        Some(health.check(request).await.ok()?.into_inner().status)
    }

    /// The next log line containing `needle`.
    async fn line_containing(&mut self, needle: &str) -> String {
        let wanted = async {
            while let Some(line) = self.lines.recv().await {
                if line.contains(needle) {
                    return line;
                }
            }
            panic!("dueq's log ended without {needle:?}");
        };
        within_patience(&format!("a log line with {needle:?}"), wanted).await
    }

    /// A line containing `needle` among those logged so far, without waiting.
    fn logged(&mut self, needle: &str) -> Option<String> {
        while let Ok(line) = self.lines.try_recv() {
            if line.contains(needle) {
                return Some(line);
            }
        }
        None
    }

    /// Stops the binary; returns every line it logged and had not been read.
    async fn stop(mut self) -> Vec<String> {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let mut rest = Vec::new();
        // The reader thread ends at the end of the output, closing the channel.
        while let Some(line) = self.lines.recv().await {
            rest.push(line);
        }
        rest
    }
}

impl Drop for LoggedBinary {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Pins: a deleted due index is reported at once, logged by the next checks, repaired
/// by Migrate (claims work again), and the repair is logged too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_index_is_logged_reported_and_repaired_by_migrate() {
    let redis = Redis::start().await;
    let mut binary = LoggedBinary::start(&redis.url(), &["--check-interval", "200ms"]).await;
    let mut c = proto::queue_service_client::QueueServiceClient::connect(binary.endpoint.clone())
        .await
        .expect("dueq binary answers");
    let mut admin = admin_at(binary.endpoint.clone()).await;
    upsert(&mut c, "ns", every("a", 3600)).await;
    upsert(&mut c, "ns", every("b", 3600)).await;

    let mut conn = redis.conn().await;
    let _: () = query(&mut conn, cmd("DEL").arg("dueq:{ns}:due")).await;

    // Reported on demand, O(1).
    let status = status(&mut admin, "ns").await;
    assert!(status.index_damaged, "{status:?}");
    assert_eq!(status.expected_index_size, 2);
    assert_eq!(status.index_size, 0);
    assert!(status.message.contains("Migrate"), "{}", status.message);

    // Logged by the periodic check.
    let line = binary.line_containing("due index is missing entries").await;
    assert!(line.contains("\"missing_entries\":2"), "{line}");
    assert!(line.contains("\"namespace\":\"ns\""), "{line}");

    // Migrate repairs it and claiming works again.
    let done = migrate_done(&mut admin, migrate_req("ns")).await;
    assert_eq!(done.indexed, 2, "{done:?}");
    let now = redis_now(&mut conn).await;
    force_due(&mut conn, "ns", "a", now - 10).await;
    let occ = claim(&mut c, "ns", 0).await.expect("claims work again");
    assert_eq!(occ.schedule.expect("s").id, "a");

    // And the repair is logged too.
    binary.line_containing("healthy again").await;
}

async fn config_set(conn: &mut MultiplexedConnection, name: &str, value: &str) {
    let _: () = query(conn, cmd("CONFIG").arg("SET").arg(name).arg(value)).await;
}

/// The log of a fresh binary up to SERVING (its startup checks included), then
/// stopped.
async fn startup_log(redis_url: &str) -> Vec<String> {
    LoggedBinary::start(redis_url, &[]).await.stop().await
}

/// Pins: an evicting maxmemory-policy and AOF off (issue 12 item 8) are warned about
/// at startup (the listpack setting no longer is), and the advised settings start
/// without a warning.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn risky_redis_settings_are_warned_about_at_startup() {
    let redis = Redis::start().await;
    let mut conn = redis.conn().await;
    config_set(&mut conn, "maxmemory-policy", "allkeys-lru").await;
    let lines = startup_log(&redis.url()).await;
    let warned = |needle: &str| {
        lines
            .iter()
            .any(|l| l.contains("\"WARN\"") && l.contains(needle))
    };
    assert!(
        warned("maxmemory_policy") && warned("allkeys-lru"),
        "eviction policy warning expected in {lines:#?}"
    );
    // The harness's Redis runs with appendonly no.
    assert!(
        warned("AOF off") && warned("\"appendonly\":\"no\""),
        "AOF warning expected in {lines:#?}"
    );
    // Records are packed strings: Redis's default hash-max-listpack-value (64) is
    // no reason to warn any more.
    assert!(
        !warned("hash_max_listpack_value"),
        "no listpack warning expected in {lines:#?}"
    );

    // With the advised settings there is nothing to warn about.
    config_set(&mut conn, "maxmemory-policy", "noeviction").await;
    config_set(&mut conn, "appendonly", "yes").await;
    let lines = startup_log(&redis.url()).await;
    assert!(
        lines.iter().any(|l| l.contains("SERVING")),
        "the service came up: {lines:#?}"
    );
    assert!(
        !lines.iter().any(|l| l.contains("\"WARN\"")),
        "no warnings expected with noeviction and AOF on: {lines:#?}"
    );
}

/// Pins issue 12 item 7: FLUSHALL under a running service is logged as an ERROR
/// (the store's instance key is gone), and a namespace whose counters go back (its
/// meta restored from a copy taken earlier) is logged as an ERROR too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_flushed_or_rolled_back_under_the_service_is_logged() {
    let redis = Redis::start().await;
    let mut binary = LoggedBinary::start(
        &redis.url(),
        &["--check-interval", "100ms", "--health-interval", "100ms"],
    )
    .await;
    let mut c = proto::queue_service_client::QueueServiceClient::connect(binary.endpoint.clone())
        .await
        .expect("dueq binary answers");
    let mut conn = redis.conn().await;
    for i in 0..3 {
        let mut req = job("q", "j");
        req.job_id = format!("before-{i}");
        enqueue(&mut c, req).await;
    }

    let _: () = query(&mut conn, &mut cmd("FLUSHALL")).await;
    let line = binary.line_containing("flushed or replaced").await;
    assert!(line.contains("\"ERROR\""), "{line}");

    // Another namespace (the flush may have been logged for "ns" as well): a backup
    // of its meta; then more jobs, then the backup restored. Repeated until the
    // monitor has seen the later sequence before the restore (it checks every
    // 100 ms; the box may be slow).
    let rb = |name: &str| proto::EnqueueRequest {
        namespace: "rb".into(),
        ..job("q", name)
    };
    enqueue(&mut c, rb("j")).await;
    let backup: Vec<u8> = query(&mut conn, cmd("DUMP").arg("dueq:{rb}:meta")).await;
    let patience = Patience::new("the rollback to be logged");
    let line = 'seen: loop {
        for _ in 0..3 {
            match c.enqueue(rb("j")).await {
                Ok(_) => {}
                // The monitor saw the last round's rollback and refused the namespace
                // before its line was read here.
                Err(status) if status.code() == tonic::Code::FailedPrecondition => {
                    break 'seen binary.line_containing("went backwards").await;
                }
                Err(status) => panic!("Enqueue: {status:?}"),
            }
        }
        a_few_monitor_checks().await;
        let _: () = query(
            &mut conn,
            cmd("RESTORE")
                .arg("dueq:{rb}:meta")
                .arg(0)
                .arg(&backup)
                .arg("REPLACE"),
        )
        .await;
        a_few_monitor_checks().await;
        if let Some(line) = binary
            .logged("went backwards")
            .filter(|l| l.contains("\"rb\""))
        {
            break line;
        }
        patience.wait().await;
    };
    assert!(line.contains("\"ERROR\""), "{line}");
    assert!(line.contains("\"namespace\":\"rb\""), "{line}");
    assert!(line.contains("Migrate"), "the line names the fix: {line}");

    // Issue 29 item 13: the finding refuses too. Until Migrate runs, the namespace's
    // job calls are refused and GetNamespaceStatus says so; Migrate rebuilds the
    // counters from the records, and every stored job is served again.
    let mut admin = admin_at(binary.endpoint.clone()).await;
    let patience = Patience::new("the rolled-back namespace to need Migrate");
    while !status(&mut admin, "rb").await.jobs_need_migrate {
        patience.wait().await;
    }
    let refused = c.enqueue(rb("refused")).await.expect_err("refused");
    assert_eq!(
        refused.code(),
        tonic::Code::FailedPrecondition,
        "{refused:?}"
    );
    assert!(
        refused.message().contains("QueueService/Migrate"),
        "{refused:?}"
    );
    migrate_done(&mut admin, migrate_req("rb")).await;
    assert!(!status(&mut admin, "rb").await.jobs_need_migrate);
    let stored = list_all_jobs(&mut c, "rb", "q", 100).await.len();
    assert!(stored > 1, "the jobs stored before are listed again");
    let after = enqueue(&mut c, rb("after")).await;
    assert_eq!(after.outcome, proto::EnqueueOutcome::Created as i32);
    assert_eq!(
        list_all_jobs(&mut c, "rb", "q", 100).await.len(),
        stored + 1,
        "every stored job is listed, and the new one"
    );
}

/// Real time for the monitor to check (every 100 ms) a few times: a change it did
/// not see shows as no log line, and the caller tries again.
#[allow(clippy::disallowed_methods)]
async fn a_few_monitor_checks() {
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
}

/// Pins issue 12 item 4's log: a full Redis refusing every claim is logged as one
/// ERROR, not one per refused call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_redis_is_logged_once_however_many_claims_it_refuses() {
    let redis = Redis::start().await;
    let binary = LoggedBinary::start(&redis.url(), &[]).await;
    let mut c = proto::queue_service_client::QueueServiceClient::connect(binary.endpoint.clone())
        .await
        .expect("dueq binary answers");
    enqueue(&mut c, job("q", "j")).await;
    let mut conn = redis.conn().await;
    crate::edge::faults::full::fill_redis(&mut conn).await;
    for _ in 0..5 {
        let status = c
            .claim_job(claim_req(&["q"], 0, None))
            .await
            .expect_err("refused");
        assert_eq!(status.code(), tonic::Code::ResourceExhausted, "{status:?}");
    }
    let lines = binary.stop().await;
    let full: Vec<&String> = lines
        .iter()
        .filter(|l| l.contains("redis is full"))
        .collect();
    assert_eq!(full.len(), 1, "one line for five refusals: {lines:#?}");
    assert!(full[0].contains("\"ERROR\""), "{}", full[0]);
}
