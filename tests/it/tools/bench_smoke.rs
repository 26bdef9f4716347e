//! `dueq-bench --smoke` runs end to end (its own redis-server, `dueq serve` as a
//! child process) and its JSON report has every section. Needs redis-server on PATH.

use std::process::Command;

/// The sections every bench report has, in order.
const SECTIONS: [&str; 14] = [
    "ceiling",
    "grpc",
    "consume",
    "security",
    "cluster",
    "claim_scaling",
    "peers",
    "longpoll",
    "memory",
    "migrate",
    "metrics",
    "dispatch",
    "flow",
    "tenants",
];

/// Runs `dueq-bench --smoke` with `args`; returns its table (stdout), its JSON report
/// and the report's text.
fn bench_smoke(args: &[&str]) -> (String, serde_json::Value, String) {
    bench_smoke_with(args, &[])
}

/// As `bench_smoke`, with `envs` set for the bench (and the npm it runs).
fn bench_smoke_with(args: &[&str], envs: &[(&str, &str)]) -> (String, serde_json::Value, String) {
    let dir = tempfile::tempdir().expect("temp dir");
    let json = dir.path().join("bench.json");
    // The bench starts the service binary cargo built for these tests.
    let out = Command::new(env!("CARGO_BIN_EXE_dueq-bench"))
        .envs(envs.iter().copied())
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
        "consume",
        "security",
        "cluster",
        "claim_scaling",
        "longpoll",
        "memory",
        "migrate",
        "metrics",
        "dispatch",
        "flow",
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
    consume_rows(&report, &text);
    flow_rows(&report, &text);
    assert!(report["targets"].as_array().is_some_and(|t| t.len() >= 10));
    assert!(report["meta"]["cores"].as_u64().is_some());
}

/// The consume section: the pre-filled queue drained three ways (ClaimJob+AckJob,
/// ClaimJob carrying the previous ack, Work streams), each with its Redis CPU per
/// job and the claim latency under it, one row per job script; and the consume
/// targets, each against the BullMQ Worker row (n/a when the peer did not run).
fn consume_rows(report: &serde_json::Value, text: &str) {
    let rows = report["sections"]["consume"]["rows"]
        .as_array()
        .expect("consume rows");
    let find = |name: &str| {
        rows.iter()
            .find(|r| r["name"] == name)
            .unwrap_or_else(|| panic!("no consume row {name} in {text}"))
    };
    for name in ["ClaimJob+AckJob", "ClaimJob+acks", "worker fast path"] {
        let drain = find(name);
        assert!(drain["ops_per_s"].as_f64().unwrap_or(0.0) > 0.0, "{drain}");
        assert!(drain["redis_cpu_us_per_job"].as_f64().is_some(), "{drain}");
        assert!(drain["script_calls_per_job"].as_f64().is_some(), "{drain}");
        // --smoke pre-fills 200 jobs and the workers drain every one.
        assert_eq!(drain["prefill"], 200, "{drain}");
        assert_eq!(drain["drained"], 200, "{drain}");
    }
    for name in ["ClaimJob+acks", "worker fast path"] {
        let drain = find(name);
        assert!(drain["claim_p99_ms"].as_f64().is_some(), "{drain}");
        assert!(drain["claim_samples"].as_u64().unwrap_or(0) > 0, "{drain}");
    }
    assert_eq!(report["meta"]["prefill"], 200);
    for name in ["claim latency", "claim latency, worker fast path"] {
        let latency = find(name);
        assert!(latency["samples"].as_u64().unwrap_or(0) > 0, "{latency}");
        assert!(latency["p99_ms"].as_f64().is_some(), "{latency}");
    }
    script_rows(&find);
    let targets = report["targets"].as_array().expect("targets");
    let target = |what: &str| {
        targets
            .iter()
            .find(|t| t["target"] == what)
            .unwrap_or_else(|| panic!("no target {what} in {text}"))
    };
    let peer_ran = report["sections"]["peers"]["rows"]
        .as_array()
        .is_some_and(|rows| rows.iter().any(|r| r["name"] == "bullmq Worker"));
    for against_peer in [
        "worker fast path >= 2x BullMQ Worker",
        "worker fast path Redis CPU/job <= 0.4x BullMQ Worker",
        "ClaimJob+acks >= 0.75x BullMQ Worker",
        "ClaimJob+acks Redis CPU/job <= 1x BullMQ Worker",
    ] {
        let t = target(against_peer);
        if peer_ran {
            assert!(t["met"].is_boolean(), "{t}");
            assert!(t["detail"].as_str().unwrap_or("").contains('x'), "{t}");
        } else {
            assert!(t["met"].is_null(), "{t}");
        }
    }
    // Issue 35 retired the two-RPC path's target; its row stays.
    assert!(
        !text.contains("ClaimJob+AckJob >= 1x BullMQ Worker"),
        "{text}"
    );
    // Measured in the consume family itself, so met or missed in every run.
    for own in [
        "empty RPC service CPU <= 1.25x bare tonic",
        "enqueue_jobs Redis CPU/call <= 2x floor",
        "claim_jobs Redis CPU/call <= 2x floor",
        "ack_job Redis CPU/call <= 2x floor",
        "claim_due Redis CPU/call <= 2x floor",
    ] {
        let t = target(own);
        assert!(t["met"].is_boolean(), "{t}");
        assert!(
            t["detail"].as_str().unwrap_or("").contains("us/call"),
            "{t}"
        );
    }
    for latency in [
        "claim latency p99 <= 10 ms (under ClaimJob+AckJob load)",
        "claim latency p99 <= 10 ms (under worker fast path load)",
    ] {
        assert!(target(latency)["met"].is_boolean(), "{latency}");
    }
}

/// Issue 35's per-script rows: each script at one item per call and at 32 (its
/// Redis CPU per call and per item, its script time), the floor of each
/// single-item script (the same commands raw), and the empty RPC beside a bare
/// tonic health service given the same calls.
fn script_rows<'a>(find: &impl Fn(&str) -> &'a serde_json::Value) {
    for (name, items) in [
        ("enqueue_jobs, 1 item", 1),
        ("enqueue_jobs, 32 items", 32),
        ("claim_jobs, 1 item", 1),
        ("claim_jobs, 32 items", 32),
        ("ack_job, 1 item", 1),
        ("ack_jobs, 32 items", 32),
        ("claim_due, 1 due", 1),
        ("claim_due, 32 due", 1),
        ("extend_lease, 1 item", 1),
        ("fail_job, 1 item", 1),
    ] {
        let row = find(name);
        assert_eq!(row["items_per_call"], items, "{row}");
        assert!(row["redis_cpu_us_per_call"].as_f64().is_some(), "{row}");
        assert!(row["redis_cpu_us_per_item"].as_f64().is_some(), "{row}");
        assert!(row["script_us_per_call"].as_f64().is_some(), "{row}");
        assert!(row["script_us_per_item"].as_f64().is_some(), "{row}");
        // Each RPC of the phase ran its script (once, or a few times at most).
        let per_rpc = row["script_calls_per_rpc"].as_f64().unwrap_or(0.0);
        assert!(per_rpc >= 1.0, "{name}: {row}");
    }
    for (script, commands) in [
        ("enqueue_jobs", 11),
        ("claim_jobs", 14),
        ("ack_job", 9),
        ("claim_due", 11),
    ] {
        let row = find(&format!("{script} floor"));
        assert_eq!(row["commands_per_call"], commands, "{row}");
        assert!(
            row["redis_cpu_us_per_call"].as_f64().unwrap_or(0.0) > 0.0,
            "{row}"
        );
    }
    let (empty, bare) = (find("empty RPC"), find("bare tonic health"));
    assert_eq!(empty["items"], bare["items"], "{empty} {bare}");
    assert!(bare["service_cpu_us_per_call"].as_f64().is_some(), "{bare}");
}

/// The flow section (issue 32): the four paired drains with their ratios, the
/// slot-freed dispatch samples and the fast path's script calls, Jain's index and
/// the weighted shares, memory per active key and what idle keys leave; each flow
/// target met or missed (never n/a: the family measured them all).
fn flow_rows(report: &serde_json::Value, text: &str) {
    let rows = report["sections"]["flow"]["rows"]
        .as_array()
        .expect("flow rows");
    let find = |name: &str| {
        rows.iter()
            .find(|r| r["name"] == name)
            .unwrap_or_else(|| panic!("no flow row {name} in {text}"))
    };
    let ops = |row: &serde_json::Value| row["ops_per_s"].as_f64().unwrap_or(0.0);
    let plain = find("keyless jobs, no policy");
    for (name, baseline) in [
        ("keyed jobs, limits not binding", "keyed jobs, no policy"),
        ("keyed jobs, no policy", "keyless jobs, no policy"),
        (
            "keyless jobs, queue limits not binding",
            "keyless jobs, no policy",
        ),
    ] {
        let row = find(name);
        let ratio = row["ratio_to_ceiling"].as_f64().expect("a ratio");
        assert!(
            (ratio - ops(row) / ops(find(baseline))).abs() < 1e-9,
            "{row}"
        );
        assert_eq!(row["ratio_to"], baseline, "{row}");
        assert_eq!(
            row["jobs_s_rounds"].as_array().map(Vec::len),
            Some(2),
            "{row}"
        );
    }
    assert!(ops(plain) > 0.0, "{plain}");
    let slot = find("slot freed -> dispatch, another worker waiting");
    assert!(slot["samples"].as_u64().unwrap_or(0) > 0, "{slot}");
    assert!(slot["p99_ms"].as_f64().is_some(), "{slot}");
    let fast = find("keys at their limit, Work stream fast path");
    assert!(fast["script_calls_per_job"].as_f64().is_some(), "{fast}");
    assert!(fast["stalled"].is_boolean(), "{fast}");
    let jain = find("round-robin, one huge backlog")["jain"]
        .as_f64()
        .expect("jain");
    assert!(jain > 0.0 && jain <= 1.0 + 1e-9, "{jain}");
    let weighted = find("weighted shares");
    assert_eq!(weighted["claims"], 1000, "{weighted}");
    assert!(weighted["worst_relative_deviation"].as_f64().is_some());
    let active = find("per active key");
    assert_eq!(active["keys"], 10_000, "{active}");
    assert!(active["bytes"].as_f64().is_some(), "{active}");
    assert!(find("idle keys after drain")["flow_keys"]
        .as_u64()
        .is_some());
    let targets = report["targets"].as_array().expect("targets");
    for what in [
        "flow limits not binding >= 0.9x unlimited",
        "flow slot freed -> dispatch p99 <= 5 ms",
        "flow fairness Jain >= 0.99",
        "flow active key <= 200 B",
        "flow idle keys 0 bytes",
    ] {
        let t = targets
            .iter()
            .find(|t| t["target"] == what)
            .unwrap_or_else(|| panic!("no target {what} in {text}"));
        assert!(t["met"].is_boolean(), "{t}");
    }
}

/// What CI runs (`--smoke --peers`) with npm unable to install anything: the peers
/// are a note, the run succeeds, the consume rows are there and the targets that
/// need the BullMQ Worker row are neither met nor missed.
#[test]
fn peers_offline_are_a_note_and_consume_still_reports() {
    let cache = tempfile::tempdir().expect("temp dir");
    let cache = cache.path().to_str().expect("utf-8 path").to_owned();
    let (table, report, text) = bench_smoke_with(
        &["--peers", "--only", "consume,peers"],
        &[
            ("npm_config_offline", "true"),
            ("npm_config_cache", &cache),
            ("npm_config_registry", "http://127.0.0.1:9/"),
        ],
    );
    consume_rows(&report, &text);
    let notes = report["sections"]["peers"]["notes"]
        .as_array()
        .expect("peer notes");
    assert!(
        notes.iter().any(|n| {
            let n = n.as_str().unwrap_or("");
            n.starts_with("peers failed") || n.starts_with("skipped")
        }),
        "{text}"
    );
    for what in [
        "ClaimJob+acks >= 0.75x BullMQ Worker",
        "ClaimJob+acks Redis CPU/job <= 1x BullMQ Worker",
        "worker fast path >= 2x BullMQ Worker",
        "worker fast path Redis CPU/job <= 0.4x BullMQ Worker",
    ] {
        let t = report["targets"]
            .as_array()
            .expect("targets")
            .iter()
            .find(|t| t["target"] == what)
            .unwrap_or_else(|| panic!("no target {what}"));
        assert!(t["met"].is_null(), "{t}");
        assert!(
            table.contains(&format!("n/a    {what}")),
            "{what} not n/a in {table}"
        );
    }
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
        "consume",
        "security",
        "cluster",
        "claim_scaling",
        "longpoll",
        "migrate",
        "metrics",
        "flow",
    ] {
        assert_eq!(rows(skipped), 0, "{skipped} should not have run");
    }
}

/// The console family (issue 33) at its smoke scale: every page timed, with its p95;
/// the longest script of the page runs; one tab's and ten tabs' Redis commands/s;
/// and its three targets, met or missed (measured), each naming the smaller scale.
#[test]
fn console_family_times_every_page_and_counts_tabs_commands() {
    let (table, report, text) = bench_smoke(&["--only", "console"]);
    let rows = report["sections"]["console"]["rows"]
        .as_array()
        .expect("console rows");
    let find = |name: &str| {
        rows.iter()
            .find(|r| r["name"] == name)
            .unwrap_or_else(|| panic!("no console row {name} in {text}"))
    };
    for page in [
        "page: overview",
        "page: namespace queues",
        "page: jobs list (a queue, pending)",
        "page: job detail",
        "page: schedules list",
        "page: schedule detail",
    ] {
        let row = find(page);
        assert!(row["p95_ms"].as_f64().unwrap_or(0.0) > 0.0, "{row}");
        assert_eq!(row["calls"], 20, "{row}");
    }
    assert!(
        find("longest script during the page runs")["longest_script_us"]
            .as_u64()
            .is_some()
    );
    let one = find("Redis commands/s, 1 live tab");
    let ten = find("Redis commands/s, 10 live tabs");
    for row in [one, ten] {
        assert!(row["ops_per_s"].as_f64().unwrap_or(0.0) > 0.0, "{row}");
        assert!(row["per_sample"].as_f64().unwrap_or(0.0) > 0.0, "{row}");
    }
    assert!(ten["net_ratio_to_one_tab"].as_f64().is_some(), "{ten}");
    assert_eq!(report["meta"]["console_jobs"], 2000);
    let targets = report["targets"].as_array().expect("targets");
    for what in [
        "console page p95 <= 50 ms",
        "console tabs Redis cmds/s <= 1.1x one tab",
        "console Redis script <= 5 ms",
    ] {
        let what = format!("{what} (at 2,000 jobs, 1,000 queues, 20 schedules)");
        let t = targets
            .iter()
            .find(|t| t["target"] == what.as_str())
            .unwrap_or_else(|| panic!("no target {what} in {text}"));
        assert!(t["met"].is_boolean(), "{t}");
        assert!(table.contains(&what), "{what} not in the table");
    }
}

/// The tenants family (issue 29 item 4) at its smoke scale: tenant B's GetJob alone
/// and while tenant A pages full-view ListJobs, each with its p99; the second row's
/// ratio to the first and what A read meanwhile; and the isolation target, met or
/// missed (measured, never n/a).
#[test]
fn tenants_family_times_b_alone_and_while_a_pages() {
    let (table, report, text) = bench_smoke(&["--only", "tenants"]);
    let rows = report["sections"]["tenants"]["rows"]
        .as_array()
        .expect("tenants rows");
    let find = |name: &str| {
        rows.iter()
            .find(|r| r["name"] == name)
            .unwrap_or_else(|| panic!("no tenants row {name} in {text}"))
    };
    let alone = find("tenant B GetJob p99 alone");
    let loaded = find("tenant B GetJob p99 while A pages 1 MiB jobs");
    let p99 = |row: &serde_json::Value| row["p99_ms"].as_f64().expect("a p99");
    let ratio = loaded["ratio_to_alone"].as_f64().expect("a ratio");
    assert!((ratio - p99(loaded) / p99(alone)).abs() < 1e-9, "{loaded}");
    assert!(loaded["a_pages"].as_u64().unwrap_or(0) > 0, "{loaded}");
    assert!(loaded["a_refused"].as_u64().is_some(), "{loaded}");
    let targets = report["targets"].as_array().expect("targets");
    let what = "tenant isolation p99 <= 2x alone";
    let t = targets
        .iter()
        .find(|t| t["target"] == what)
        .unwrap_or_else(|| panic!("no target {what} in {text}"));
    assert!(t["met"].is_boolean(), "{t}");
    assert!(table.contains(what), "table lacks {what}");
}
