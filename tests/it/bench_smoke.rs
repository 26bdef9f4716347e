//! `dueq-bench --smoke` runs end to end (its own redis-server, `dueq serve` as a
//! child process) and its JSON report has every section. Needs redis-server on PATH.

use std::process::Command;

/// The sections every bench report has, in order.
const SECTIONS: [&str; 10] = [
    "ceiling",
    "grpc",
    "security",
    "cluster",
    "claim_scaling",
    "peers",
    "longpoll",
    "memory",
    "migrate",
    "metrics",
];

/// Runs `dueq-bench --smoke` with `args`; returns its table (stdout), its JSON report
/// and the report's text.
fn bench_smoke(args: &[&str]) -> (String, serde_json::Value, String) {
    let dir = tempfile::tempdir().expect("temp dir");
    let json = dir.path().join("bench.json");
    // The bench starts the service binary cargo built for these tests.
    let out = Command::new(env!("CARGO_BIN_EXE_dueq-bench"))
        .arg("--smoke")
        .args(args)
        .arg("--json")
        .arg(&json)
        .arg("--dueq-bin")
        .arg(env!("CARGO_BIN_EXE_dueq"))
        .output()
        .expect("run dueq-bench");
    assert!(
        out.status.success(),
        "dueq-bench --smoke {args:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&json).expect("json written");
    let report = serde_json::from_str(&text).expect("valid json");
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        report,
        text,
    )
}

#[test]
fn bench_smoke_writes_every_section() {
    let (table, report, text) = bench_smoke(&[]);
    for section in SECTIONS {
        assert!(
            report["sections"][section].is_object(),
            "section {section} missing from {text}"
        );
        assert!(
            table.contains(&format!("[{section}]")),
            "table lacks {section}"
        );
    }
    for section in [
        "ceiling",
        "grpc",
        "security",
        "cluster",
        "claim_scaling",
        "longpoll",
        "memory",
        "migrate",
        "metrics",
    ] {
        let rows = report["sections"][section]["rows"]
            .as_array()
            .expect("rows");
        assert!(!rows.is_empty(), "section {section} has no rows");
    }
    // The cluster family: each call on standalone, on the cluster (with its ratio to
    // standalone) and on the cluster with --redis-wait-replicas 1 (ratio to cluster).
    let cluster = report["sections"]["cluster"]["rows"]
        .as_array()
        .expect("rows");
    for call in ["Enqueue", "ClaimDueSchedule"] {
        let find = |name: String| {
            cluster
                .iter()
                .find(|r| r["name"] == name.as_str())
                .unwrap_or_else(|| panic!("no cluster row {name} in {text}"))
        };
        let standalone = find(format!("{call} standalone"));
        let on_cluster = find(format!("{call} cluster"));
        let wait = find(format!("{call} cluster+WAIT"));
        let ops = |row: &serde_json::Value| row["ops_per_s"].as_f64().unwrap_or(0.0);
        for row in [standalone, on_cluster, wait] {
            assert!(ops(row) > 0.0, "no ops: {row}");
        }
        let ratio = on_cluster["ratio_to_standalone"].as_f64().expect("a ratio");
        assert!((ratio - ops(on_cluster) / ops(standalone)).abs() < 1e-9);
        let ratio = wait["ratio_to_cluster"].as_f64().expect("a ratio");
        assert!((ratio - ops(wait) / ops(on_cluster)).abs() < 1e-9);
    }
    let grpc = report["sections"]["grpc"]["rows"].as_array().expect("rows");
    for name in [
        "Enqueue",
        "EnqueueBatch",
        "ClaimJob+AckJob",
        "UpsertSchedule",
        "ClaimDueSchedule",
    ] {
        let row = grpc
            .iter()
            .find(|r| r["name"] == name)
            .unwrap_or_else(|| panic!("no grpc row {name}"));
        assert!(
            row["ops_per_s"].as_f64().unwrap_or(0.0) > 0.0,
            "{name}: no ops"
        );
        assert!(row["p99_ms"].as_f64().is_some(), "{name}: no p99");
    }
    // TLS + auth against plaintext: both rows of each call ran, and the TLS+auth row
    // carries its ratio to the plaintext one.
    let security = report["sections"]["security"]["rows"]
        .as_array()
        .expect("rows");
    for call in ["Enqueue", "ClaimDueSchedule"] {
        let find = |name: String| {
            security
                .iter()
                .find(|r| r["name"] == name.as_str())
                .unwrap_or_else(|| panic!("no security row {name} in {text}"))
        };
        let plain = find(format!("{call} plaintext"));
        let tls = find(format!("{call} TLS+auth"));
        for row in [plain, tls] {
            assert!(
                row["ops_per_s"].as_f64().unwrap_or(0.0) > 0.0,
                "no ops: {row}"
            );
            assert!(row["p99_ms"].as_f64().is_some(), "no p99: {row}");
        }
        let ratio = tls["ratio_to_plaintext"].as_f64().expect("a ratio");
        let expected = tls["ops_per_s"].as_f64().unwrap() / plain["ops_per_s"].as_f64().unwrap();
        assert!(
            (ratio - expected).abs() < 1e-9,
            "{call}: {ratio} vs {expected}"
        );
        assert!(
            table.contains(&format!("{call} TLS+auth")),
            "table lacks {call} TLS+auth"
        );
    }
    let longpoll = report["sections"]["longpoll"]["rows"]
        .as_array()
        .expect("rows");
    let idle = longpoll
        .iter()
        .find(|r| r["name"] == "idle cost per namespace")
        .expect("an idle cost row");
    for field in [
        "idle_per_namespace_per_s",
        "long_polled_per_namespace_per_s",
    ] {
        assert!(idle[field].as_f64().is_some(), "{field} missing: {idle}");
    }
    // One scrape with 100 queues: its Redis commands are counted.
    let metrics = report["sections"]["metrics"]["rows"]
        .as_array()
        .expect("rows");
    let first = metrics
        .iter()
        .find(|r| r["name"] == "first scrape, 100 queues in 10 namespaces")
        .unwrap_or_else(|| panic!("no first scrape row in {text}"));
    assert!(first["redis_commands"].as_u64().is_some(), "{first}");
    assert!(first["response_bytes"].as_u64().unwrap_or(0) > 0, "{first}");
    assert!(report["targets"].as_array().is_some_and(|t| t.len() >= 10));
    assert!(report["meta"]["cores"].as_u64().is_some());
}

#[test]
fn only_runs_the_families_asked_for() {
    let (_, report, _) = bench_smoke(&["--only", "memory"]);
    let rows = |s: &str| {
        report["sections"][s]["rows"]
            .as_array()
            .map_or(0, |r| r.len())
    };
    assert!(rows("memory") > 0, "memory ran");
    for skipped in [
        "ceiling",
        "grpc",
        "security",
        "cluster",
        "claim_scaling",
        "longpoll",
        "migrate",
        "metrics",
    ] {
        assert_eq!(rows(skipped), 0, "{skipped} should not have run");
    }
}
