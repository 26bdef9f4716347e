//! Prometheus metrics on --metrics-listen: exact counter deltas and gauge values
//! after known operations, the cardinality bound, the formats, and the flags.

use std::time::Duration;

use dueq::config::ServeConfig;
use tonic::Code;

use crate::common::*;

/// A service with metrics on a free port; the metrics address.
async fn start(redis: &Redis, tweak: impl FnOnce(&mut ServeConfig)) -> (Service, String) {
    let addr = format!("127.0.0.1:{}", free_port());
    let mut config = config_without_background_work(&redis.url());
    config.metrics_listen = Some(addr.clone());
    tweak(&mut config);
    (Service::start_with(config).await, addr)
}

const ENQUEUE: &str = "grpc_service=\"dueq.v1.QueueService\",grpc_method=\"Enqueue\"";
const CLAIM: &str = "grpc_service=\"dueq.v1.QueueService\",grpc_method=\"ClaimJob\"";

#[tokio::test]
async fn jobs_and_rpcs_are_counted_exactly() {
    let redis = Redis::start().await;
    let (service, metrics) = start(&redis, |_| {}).await;
    let mut c = service.client().await;

    for name in ["a", "b", "c"] {
        enqueue(&mut c, job("q", name)).await;
    }
    // A duplicate is not a new job.
    let mut again = job("q", "d");
    again.job_id = "fixed".into();
    enqueue(&mut c, again.clone()).await;
    enqueue(&mut c, again).await;
    // Refused: counted by the RPC metrics only.
    let refused = c.enqueue(job("", "no queue")).await.expect_err("no queue");
    assert_eq!(refused.code(), Code::InvalidArgument);
    let claimed = claim_job(&mut c, &["q"], 0, Some(60_000))
        .await
        .expect("claimable");
    ack_job(&mut c, &claimed.job_id, &claimed.lease_token)
        .await
        .expect("ack");
    let mut later = job("later", "in an hour");
    later.when = Some(proto::enqueue_request::When::Delay(dur(3_600_000)));
    enqueue(&mut c, later).await;
    let leased = job("leased", "held");
    enqueue(&mut c, leased).await;
    claim_job(&mut c, &["leased"], 0, Some(60_000))
        .await
        .expect("claimable");

    let s = scrape(&metrics).await;
    let q = "namespace=\"ns\",queue=\"q\"";
    // The queue gauges, read from Redis.
    let gauge = |queue: &str, state: &str| {
        s.value(&format!(
            "dueq_queue_jobs{{namespace=\"ns\",queue=\"{queue}\",state=\"{state}\"}}"
        ))
    };
    assert_eq!(gauge("q", "pending"), 3.0);
    assert_eq!(gauge("q", "active"), 0.0);
    assert_eq!(gauge("later", "delayed"), 1.0);
    assert_eq!(gauge("later", "pending"), 0.0);
    assert_eq!(gauge("leased", "active"), 1.0);
    assert_eq!(
        s.series_of("dueq_queue_jobs").len(),
        15,
        "3 queues x 5 states"
    );
    assert!(s.samples.contains_key(&format!("dueq_queue_paused{{{q}}}")));
    assert_eq!(s.value(&format!("dueq_queue_paused{{{q}}}")), 0.0);
    assert!(s
        .samples
        .contains_key(&format!("dueq_queue_oldest_pending_age_seconds{{{q}}}")));
    assert_eq!(
        s.value("dueq_queue_oldest_pending_age_seconds{namespace=\"ns\",queue=\"later\"}"),
        0.0,
        "no pending job"
    );
    assert_eq!(s.value(&format!("dueq_jobs_enqueued_total{{{q}}}")), 4.0);
    assert_eq!(s.value(&format!("dueq_jobs_claimed_total{{{q}}}")), 1.0);
    assert_eq!(s.value(&format!("dueq_jobs_completed_total{{{q}}}")), 1.0);
    assert_eq!(s.value(&format!("dueq_job_wait_seconds_count{{{q}}}")), 1.0);
    assert_eq!(
        s.value(&format!("grpc_server_started_total{{{ENQUEUE}}}")),
        8.0
    );
    assert_eq!(
        s.value(&format!(
            "grpc_server_handled_total{{{ENQUEUE},grpc_code=\"OK\"}}"
        )),
        7.0
    );
    assert_eq!(
        s.value(&format!(
            "grpc_server_handled_total{{{ENQUEUE},grpc_code=\"InvalidArgument\"}}"
        )),
        1.0
    );
    assert_eq!(
        s.value(&format!("grpc_server_handling_seconds_count{{{ENQUEUE}}}")),
        8.0
    );
    // The long-poll is counted, but kept out of the histogram.
    assert_eq!(
        s.value(&format!(
            "grpc_server_handled_total{{{CLAIM},grpc_code=\"OK\"}}"
        )),
        2.0
    );
    assert!(s
        .series_of("grpc_server_handling_seconds_count")
        .iter()
        .all(|(series, _)| !series.contains("ClaimJob")));
    assert_eq!(s.value("dueq_redis_up"), 1.0);
    assert!(s.value("dueq_redis_command_duration_seconds_count") >= 7.0);
    assert_eq!(
        s.value(&format!(
            "dueq_build_info{{version=\"{}\"}}",
            env!("CARGO_PKG_VERSION")
        )),
        1.0
    );
    assert!(s.content_type.starts_with("text/plain; version=0.0.4"));
}

#[tokio::test]
async fn failures_count_retry_then_dead_and_expired_leases() {
    let redis = Redis::start().await;
    let (service, metrics) = start(&redis, |_| {}).await;
    let mut c = service.client().await;

    let mut req = job("q", "flaky");
    req.max_attempts = Some(2);
    req.backoff = Some(proto::Backoff {
        kind: proto::BackoffKind::Fixed as i32,
        base: Some(dur(0)),
        ..Default::default()
    });
    let id = enqueue(&mut c, req).await.job_id;
    let first = claim_job(&mut c, &["q"], LONG_POLL_MS, Some(60_000))
        .await
        .expect("first attempt");
    fail_job(&mut c, &id, &first.lease_token, "boom")
        .await
        .expect("fail");
    let second = claim_job(&mut c, &["q"], LONG_POLL_MS, Some(60_000))
        .await
        .expect("retried");
    fail_job(&mut c, &id, &second.lease_token, "boom")
        .await
        .expect("fail");
    assert_eq!(state(&get_job(&mut c, &id).await), proto::JobState::Dead);

    // A lease that expires: the next claim finds it and hands the job out again.
    enqueue(&mut c, job("lease", "slow")).await;
    claim_job(&mut c, &["lease"], 0, Some(50))
        .await
        .expect("claimable");
    let again = claim_job(&mut c, &["lease"], LONG_POLL_MS, Some(60_000)).await;
    assert!(again.is_some(), "the expired lease is claimable again");

    let s = scrape(&metrics).await;
    let q = "namespace=\"ns\",queue=\"q\"";
    assert_eq!(
        s.value(&format!("dueq_jobs_failed_total{{{q},outcome=\"retry\"}}")),
        1.0
    );
    assert_eq!(
        s.value(&format!("dueq_jobs_failed_total{{{q},outcome=\"dead\"}}")),
        1.0
    );
    assert_eq!(s.value(&format!("dueq_jobs_claimed_total{{{q}}}")), 2.0);
    assert_eq!(
        s.value(&format!("dueq_queue_jobs{{{q},state=\"dead\"}}")),
        1.0
    );
    let lease = "namespace=\"ns\",queue=\"lease\"";
    assert_eq!(
        s.value(&format!("dueq_jobs_lease_expired_total{{{lease}}}")),
        1.0
    );
    assert_eq!(s.value(&format!("dueq_jobs_claimed_total{{{lease}}}")), 2.0);
}

#[tokio::test]
async fn an_overdue_schedule_shows_then_its_claim_is_counted_with_its_lateness() {
    let redis = Redis::start().await;
    let (service, metrics) = start(&redis, |config| {
        config.overdue_after = Duration::from_millis(200);
    })
    .await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;

    let now = redis_now(&mut conn).await;
    upsert(&mut c, "ns", every_hour_from("late", now + 300)).await;
    upsert(&mut c, "ns", every_hour_from("later", now + 3_600_000 - 1)).await;
    c.pause_schedule(proto::PauseScheduleRequest {
        namespace: "ns".into(),
        id: "later".into(),
        ..Default::default()
    })
    .await
    .expect("pause");
    // Due at +300 ms, overdue from +500 ms: shown once past that, unclaimed.
    let patience = Patience::new("the schedule to show as overdue");
    let s = loop {
        let s = scrape(&metrics).await;
        if s.value("dueq_schedules_overdue{namespace=\"ns\"}") >= 1.0 {
            break s;
        }
        patience.wait().await;
    };
    assert_eq!(s.value("dueq_schedules_overdue{namespace=\"ns\"}"), 1.0);
    assert_eq!(
        s.value("dueq_schedules{namespace=\"ns\",status=\"active\"}"),
        1.0
    );
    assert_eq!(
        s.value("dueq_schedules{namespace=\"ns\",status=\"inactive\"}"),
        1.0
    );

    let occurrence = claim(&mut c, "ns", 0).await.expect("due");
    assert_eq!(occurrence.schedule.expect("schedule").id, "late");
    let s = scrape(&metrics).await;
    assert_eq!(
        s.value("dueq_schedule_occurrences_total{namespace=\"ns\"}"),
        1.0
    );
    assert_eq!(
        s.value("dueq_schedule_lateness_seconds_count{namespace=\"ns\"}"),
        1.0
    );
    // Claimed at least 600 ms after it was due.
    assert!(s.value("dueq_schedule_lateness_seconds_sum{namespace=\"ns\"}") >= 0.6);
}

#[tokio::test]
async fn waiting_long_polls_are_counted_while_they_wait() {
    let redis = Redis::start().await;
    let (service, metrics) = start(&redis, |_| {}).await;
    let mut c = service.client().await;
    let waiter =
        tokio::spawn(async move { claim_job(&mut c, &["idle"], LONG_POLL_MS, None).await });
    let line = "dueq_longpoll_waiters{kind=\"jobs\"}";
    let patience = Patience::new("the waiting claim to be counted");
    while scrape(&metrics).await.value(line) != 1.0 {
        patience.wait().await;
    }
    let mut c = service.client().await;
    enqueue(&mut c, job("idle", "wake")).await;
    assert!(waiter.await.expect("claim task").is_some());
    assert_eq!(scrape(&metrics).await.value(line), 0.0);
}

#[tokio::test]
async fn ten_thousand_queues_fold_into_other_beyond_the_bound() {
    let redis = Redis::start().await;
    let (service, metrics) = start(&redis, |config| config.metrics_max_series = 50).await;
    let mut c = service.client().await;
    for batch in 0..10 {
        let jobs = (0..1000)
            .map(|i| job(&format!("q{}", batch * 1000 + i), "flood"))
            .collect();
        c.enqueue_batch(proto::EnqueueBatchRequest {
            namespace: "ns".into(),
            jobs,
        })
        .await
        .expect("batch");
    }
    let s = scrape(&metrics).await;
    let series = s.series_of("dueq_jobs_enqueued_total");
    assert_eq!(series.len(), 51, "50 queues and _other");
    let total: f64 = series.iter().map(|(_, v)| v).sum();
    assert_eq!(total, 10_000.0);
    assert_eq!(
        s.value("dueq_jobs_enqueued_total{namespace=\"ns\",queue=\"_other\"}"),
        9_950.0
    );
    // The queue gauges read at most --metrics-max-series queues, and only those
    // with label values of their own.
    let gauges = s.series_of("dueq_queue_jobs");
    assert!(
        !gauges.is_empty() && gauges.len() <= 4 * 50,
        "{}",
        gauges.len()
    );
    assert!(gauges.iter().all(|(series, _)| !series.contains("_other")));
}

#[tokio::test]
async fn openmetrics_on_request_and_nothing_but_metrics() {
    let redis = Redis::start().await;
    let (_service, metrics) = start(&redis, |_| {}).await;
    let open = http_get(
        &metrics,
        "/metrics",
        "application/openmetrics-text;version=1.0.0",
    )
    .await;
    assert_eq!(open.status, 200);
    assert!(
        open.content_type
            .starts_with("application/openmetrics-text"),
        "{}",
        open.content_type
    );
    assert!(open.body.ends_with("# EOF\n"), "{}", open.body);
    assert!(open.body.contains("# TYPE grpc_server_started counter"));
    let plain = scrape(&metrics).await;
    assert!(plain
        .body
        .contains("# TYPE grpc_server_started_total counter"));
    assert!(!plain.body.contains("# EOF"));
    assert_eq!(http_get(&metrics, "/other", "").await.status, 404);
}

/// The TCP sockets process `pid` listens on (its socket fds that /proc/net lists
/// in state LISTEN).
fn listening_sockets(pid: u32) -> usize {
    let inodes: Vec<String> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .expect("fds")
        .filter_map(|fd| std::fs::read_link(fd.ok()?.path()).ok())
        .filter_map(|target| {
            let target = target.to_string_lossy().into_owned();
            let inode = target.strip_prefix("socket:[")?.strip_suffix(']')?;
            Some(inode.to_owned())
        })
        .collect();
    ["/proc/net/tcp", "/proc/net/tcp6"]
        .iter()
        .filter_map(|path| std::fs::read_to_string(path).ok())
        .flat_map(|table| {
            table
                .lines()
                .skip(1)
                .filter_map(|line| {
                    let fields: Vec<&str> = line.split_whitespace().collect();
                    // st is the 4th field, the inode the 10th.
                    (fields.get(3) == Some(&"0A")).then(|| fields.get(9).map(|i| i.to_string()))
                })
                .flatten()
                .collect::<Vec<_>>()
        })
        .filter(|inode| inodes.contains(inode))
        .count()
}

#[tokio::test]
async fn metrics_are_off_by_default() {
    let config = ServeConfig::for_redis("redis://127.0.0.1:1");
    assert_eq!(config.metrics_listen, None);
    assert_eq!(config.metrics_max_series, 1000);
    assert_eq!(config.overdue_after, Duration::from_secs(60));

    // The binary with its defaults listens on its gRPC address alone; with the flag,
    // on the metrics address too.
    let redis = Redis::start().await;
    let listen = format!("127.0.0.1:{}", free_port());
    let mut plain = super::binary::Binary::spawn_with(&listen, &redis.url(), "info", &[]);
    plain.line_with(&["dueq listening"]).await;
    assert_eq!(listening_sockets(plain.pid()), 1);
    drop(plain);
    let metrics = format!("127.0.0.1:{}", free_port());
    let listen = format!("127.0.0.1:{}", free_port());
    let mut on = super::binary::Binary::spawn_with(
        &listen,
        &redis.url(),
        "info",
        &["--metrics-listen", &metrics],
    );
    on.line_with(&["serving metrics", &metrics]).await;
    on.line_with(&["dueq listening"]).await;
    assert_eq!(listening_sockets(on.pid()), 2);
    assert_eq!(scrape(&metrics).await.status, 200);
}

#[tokio::test]
async fn a_bad_metrics_listen_is_refused_at_startup() {
    let redis = Redis::start().await;
    for bad in ["not an address", "127.0.0.1:99999"] {
        let mut config = config(&redis.url());
        config.metrics_listen = Some(bad.into());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let error = within_patience(
            "startup with a bad --metrics-listen",
            dueq::server::run(config, listener, std::future::pending()),
        )
        .await
        .expect_err("refused");
        let message = error.to_string();
        assert!(message.contains("--metrics-listen"), "{message}");
        assert!(message.contains(bad), "{message}");
    }
}

/// Every metric the Grafana dashboard queries is one the metric table of docs/operations.md (the
/// contract the other tests here check the service against) lists.
#[test]
fn the_dashboard_queries_only_documented_metrics() {
    let documented: Vec<&str> = crate::doc_examples::between("metrics-table")
        .lines()
        .filter_map(|line| line.strip_prefix("| `"))
        .filter_map(|line| line.split('`').next())
        .collect();
    assert!(documented.len() >= 21, "{documented:?}");
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/deploy/grafana/dueq.json");
    let dashboard: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).expect("dashboard")).expect("json");
    let mut queried = 0;
    for panel in dashboard["panels"].as_array().expect("panels") {
        for target in panel["targets"].as_array().expect("targets") {
            let expr = target["expr"].as_str().expect("expr");
            for family in families_in(expr) {
                assert!(
                    documented.contains(&family),
                    "the dashboard queries {family}, which docs/operations.md does not list"
                );
                queried += 1;
            }
        }
    }
    assert!(queried >= 16, "{queried}");
}

/// The metric names in `text`'s expressions (dueq's, the RPC families', process_*),
/// each without its histogram suffix.
fn families_in(expr: &str) -> Vec<&str> {
    expr.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| {
            ["dueq_", "grpc_server_", "process_"]
                .iter()
                .any(|p| w.starts_with(p))
        })
        .map(|w| {
            ["_bucket", "_sum", "_count"]
                .iter()
                .find_map(|suffix| w.strip_suffix(suffix))
                .unwrap_or(w)
        })
        .collect()
}

/// Every metric the shipped alert rules (deploy/prometheus/alerts.yml) query is one
/// docs/operations.md's metric table lists, and each of the five alerts is there.
#[test]
fn the_alert_rules_query_only_documented_metrics() {
    let documented: Vec<&str> = crate::doc_examples::between("metrics-table")
        .lines()
        .filter_map(|line| line.strip_prefix("| `"))
        .filter_map(|line| line.split('`').next())
        .collect();
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/deploy/prometheus/alerts.yml");
    let rules = std::fs::read_to_string(path).expect("alerts.yml");
    let mut queried = 0;
    for family in families_in(&rules) {
        assert!(
            documented.contains(&family),
            "alerts.yml queries {family}, which docs/operations.md does not list"
        );
        queried += 1;
    }
    assert!(queried >= 7, "{queried}");
    for alert in [
        "DueqQueueBackingUp",
        "DueqOldestPendingTooOld",
        "DueqScheduleOverdue",
        "DueqDeadJobsRising",
        "DueqRedisDown",
    ] {
        assert!(
            rules.contains(&format!("alert: {alert}\n")),
            "{alert} missing"
        );
    }
}

/// Pins, with Prometheus's own checker: the rules load (`promtool check rules`), and
/// each alert fires on the series that should raise it and stays quiet on healthy
/// ones (`promtool test rules deploy/prometheus/alerts.test.yml`).
#[test]
#[ignore = "needs promtool"]
fn promtool_checks_and_tests_the_alert_rules() {
    tools::require("promtool");
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/deploy/prometheus");
    for args in [
        ["check", "rules", "alerts.yml"],
        ["test", "rules", "alerts.test.yml"],
    ] {
        let out = std::process::Command::new("promtool")
            .args(args)
            .current_dir(dir)
            .output()
            .expect("run promtool");
        assert!(
            out.status.success(),
            "promtool {}:\n{}{}",
            args.join(" "),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// A replica that never served a namespace still reports its queue and schedule
/// gauges: it finds the namespace in the registry in Redis.
#[tokio::test]
async fn a_replica_reports_gauges_of_namespaces_another_one_served() {
    let redis = Redis::start().await;
    let writer = Service::start_with(config_without_background_work(&redis.url())).await;
    let mut c = writer.client().await;
    let mut req = job("q", "elsewhere");
    req.namespace = "other".into();
    enqueue(&mut c, req).await;
    upsert(&mut c, "other", every("s", 3600)).await;

    let (_reader, metrics) = start(&redis, |_| {}).await;
    let s = scrape(&metrics).await;
    assert_eq!(
        s.value("dueq_queue_jobs{namespace=\"other\",queue=\"q\",state=\"pending\"}"),
        1.0
    );
    assert_eq!(
        s.value("dueq_schedules{namespace=\"other\",status=\"active\"}"),
        1.0
    );
    // Its counters are the writer's: none here.
    assert!(s.series_of("dueq_jobs_enqueued_total").is_empty());
}

/// A paused queue shows in dueq_queue_paused.
#[tokio::test]
async fn a_paused_queue_shows_as_paused() {
    let redis = Redis::start().await;
    let (service, metrics) = start(&redis, |_| {}).await;
    let mut c = service.client().await;
    enqueue(&mut c, job("held", "waits")).await;
    enqueue(&mut c, job("open", "waits")).await;
    c.pause_queue(proto::PauseQueueRequest {
        namespace: "ns".into(),
        queue: "held".into(),
    })
    .await
    .expect("pause");
    let s = scrape(&metrics).await;
    assert_eq!(
        s.value("dueq_queue_paused{namespace=\"ns\",queue=\"held\"}"),
        1.0
    );
    assert!(s
        .samples
        .contains_key("dueq_queue_paused{namespace=\"ns\",queue=\"open\"}"));
    assert_eq!(
        s.value("dueq_queue_paused{namespace=\"ns\",queue=\"open\"}"),
        0.0
    );
}

/// Jobs removed by their own retention rule (issue 36) show per queue in
/// dueq_queue_jobs_removed, read from Redis like ListQueues `removed`.
#[tokio::test]
async fn removed_jobs_show_per_queue() {
    let redis = Redis::start().await;
    let (service, metrics) = start(&redis, |_| {}).await;
    let mut c = service.client().await;
    let remove = proto::RetentionRule {
        rule: Some(proto::retention_rule::Rule::Remove(true)),
    };
    for _ in 0..2 {
        let id = enqueue(
            &mut c,
            proto::EnqueueRequest {
                retention: Some(proto::JobRetention {
                    on_complete: Some(remove),
                    on_fail: None,
                }),
                ..job("gone", "x")
            },
        )
        .await
        .job_id;
        let j = claim_job(&mut c, &["gone"], 0, None).await.expect("claim");
        ack_job(&mut c, &id, &j.lease_token).await.expect("ack");
    }
    enqueue(&mut c, job("kept", "waits")).await;
    let s = scrape(&metrics).await;
    assert_eq!(
        s.value("dueq_queue_jobs_removed{namespace=\"ns\",queue=\"gone\"}"),
        2.0
    );
    assert_eq!(
        s.value("dueq_queue_jobs_removed{namespace=\"ns\",queue=\"kept\"}"),
        0.0
    );
}

/// Pins: the queue-state gauge family has the WAITING state (issue 34): a flow's
/// nodes waiting for their dependencies, per queue, then 0 once they are ready; a
/// stored flow counts in dueq_flows_enqueued_total (once: the same flow id again is
/// not a new flow) and its nodes in dueq_jobs_enqueued_total.
#[tokio::test]
async fn waiting_flow_nodes_are_a_queue_state_gauge() {
    let redis = Redis::start().await;
    let (service, metrics) = start(&redis, |_| {}).await;
    let mut c = service.client().await;
    let nodes = vec![
        crate::deps::node("a", "q", &[]),
        crate::deps::node("b", "w", &["a"]),
        crate::deps::node("c", "w", &["a"]),
    ];
    for _ in 0..2 {
        crate::deps::enqueue_flow(&mut c, "f", nodes.clone())
            .await
            .expect("EnqueueFlow");
    }
    let waiting = "dueq_queue_jobs{namespace=\"ns\",queue=\"w\",state=\"waiting\"}";
    let s = scrape(&metrics).await;
    assert_eq!(s.value(waiting), 2.0);
    assert_eq!(s.value("dueq_flows_enqueued_total{namespace=\"ns\"}"), 1.0);
    assert_eq!(
        s.value("dueq_jobs_enqueued_total{namespace=\"ns\",queue=\"w\"}"),
        2.0
    );
    assert_eq!(
        s.value("dueq_queue_jobs{namespace=\"ns\",queue=\"q\",state=\"waiting\"}"),
        0.0
    );
    let claimed = claim_job(&mut c, &["q"], 0, Some(60_000)).await.expect("a");
    ack_job(&mut c, &claimed.job_id, &claimed.lease_token)
        .await
        .expect("ack");
    // A fresh replica reads the gauges now (the first one's serve scrapes for a while).
    let (_replica, fresh) = start(&redis, |_| {}).await;
    let s = scrape(&fresh).await;
    assert_eq!(s.value(waiting), 0.0);
    assert_eq!(
        s.value("dueq_queue_jobs{namespace=\"ns\",queue=\"w\",state=\"pending\"}"),
        2.0
    );
}

/// Pins: a fresh service's first scrape already holds every RPC's families at zero
/// (started, handled by each code, handling seconds: go-grpc-prometheus's
/// pre-registration), the long-poll waiters of both kinds and the Work streams at
/// zero, and the process_* metrics of a Prometheus client; every HELP line ends in
/// one period.
#[tokio::test]
async fn the_first_scrape_has_zeroed_families_process_metrics_and_clean_help() {
    let redis = Redis::start().await;
    let (_service, metrics) = start(&redis, |_| {}).await;
    let first = scrape(&metrics).await;
    let has = |series: &str| first.samples.contains_key(series);
    for series in [
        format!("grpc_server_started_total{{{ENQUEUE}}}"),
        format!("grpc_server_handled_total{{{ENQUEUE},grpc_code=\"Unavailable\"}}"),
        format!("grpc_server_handled_total{{{CLAIM},grpc_code=\"OK\"}}"),
        format!("grpc_server_handling_seconds_count{{{ENQUEUE}}}"),
        "dueq_longpoll_waiters{kind=\"jobs\"}".to_owned(),
        "dueq_longpoll_waiters{kind=\"schedules\"}".to_owned(),
        "dueq_work_streams".to_owned(),
    ] {
        assert!(has(&series), "{series} missing from\n{}", first.body);
        if !series.starts_with("grpc_server_started") {
            assert_eq!(first.value(&series), 0.0, "{series}");
        }
    }
    // Long calls are not timed: no histogram for ClaimJob.
    assert!(!has(&format!(
        "grpc_server_handling_seconds_count{{{CLAIM}}}"
    )));
    assert!(first.value("process_resident_memory_bytes") > 0.0);
    assert!(first.value("process_open_fds") >= 3.0);
    assert!(first.value("process_max_fds") >= first.value("process_open_fds"));
    assert!(first.value("process_start_time_seconds") > 1.5e9);
    assert!(has("process_cpu_seconds_total") && has("process_virtual_memory_bytes"));
    let help: Vec<&str> = first
        .body
        .lines()
        .filter(|l| l.starts_with("# HELP "))
        .collect();
    assert!(help.len() >= 15, "{help:?}");
    for line in help {
        assert!(
            line.ends_with('.') && !line.ends_with(".."),
            "a HELP line ends in one period: {line}"
        );
    }
}

/// Pins: dueq_work_streams counts a Work stream while it is open.
#[tokio::test]
async fn an_open_work_stream_is_counted_until_it_closes() {
    let redis = Redis::start().await;
    let (service, metrics) = start(&redis, |_| {}).await;
    let mut client = service.client().await;
    let (tx, stream) = open_work(&mut client, "emails").await;
    let patience = Patience::new("the Work stream to be counted");
    while scrape(&metrics).await.value("dueq_work_streams") != 1.0 {
        patience.wait().await;
    }
    drop(tx);
    drop(stream);
    let patience = Patience::new("the closed Work stream to be uncounted");
    while scrape(&metrics).await.value("dueq_work_streams") != 0.0 {
        patience.wait().await;
    }
}
