//! The operator CLI (`dueq jobs`, `job`, `schedules`, `schedule`, `preview`,
//! `migrate`): the built binary against a live service. Each command's JSON against
//! state the test made through the API, a table smoke check, the errors and their
//! exit codes, and TLS with mTLS and a bearer token.

use std::process::{Command, Output};

use serde_json::{json, Value};

use crate::common::*;

/// Runs the dueq binary with `args` and `envs` (DUEQ_* from the test's own
/// environment removed, so a developer's settings do not leak in).
fn dueq_with(args: &[&str], envs: &[(&str, &str)]) -> Output {
    tokio::task::block_in_place(|| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_dueq"));
        for (key, _) in std::env::vars() {
            if key.starts_with("DUEQ_") {
                command.env_remove(key);
            }
        }
        command.args(args).envs(envs.iter().copied());
        command.output().expect("run dueq")
    })
}

/// `dueq <args> --addr <service>`.
fn dueq(service: &Service, args: &[&str]) -> Output {
    let mut all = args.to_vec();
    let addr = service.endpoint();
    all.extend(["--addr", addr.as_str()]);
    dueq_with(&all, &[])
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The one JSON document a successful command printed.
fn json_of(out: &Output) -> Value {
    assert!(
        out.status.success(),
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status.code(),
        stdout(out),
        stderr(out)
    );
    serde_json::from_str(&stdout(out))
        .unwrap_or_else(|e| panic!("not one JSON document ({e}):\n{}", stdout(out)))
}

/// The exit code, and the one line on stderr, of a command that failed.
fn failure(out: &Output) -> (i32, String) {
    let err = stderr(out);
    assert_eq!(err.trim().lines().count(), 1, "one line on stderr:\n{err}");
    assert!(
        stdout(out).is_empty(),
        "nothing on stdout:\n{}",
        stdout(out)
    );
    assert!(!err.contains("panicked"), "{err}");
    (out.status.code().expect("an exit code"), err)
}

fn keys(v: &Value) -> Vec<String> {
    let mut keys: Vec<String> = v.as_object().expect("an object").keys().cloned().collect();
    keys.sort();
    keys
}

fn ids(list: &Value, id: &str) -> Vec<String> {
    list.as_array()
        .expect("an array")
        .iter()
        .map(|item| item[id].as_str().expect("an id").to_string())
        .collect()
}

/// In namespace "ns", queue "emails": j1 dead (failed as non-retryable with
/// "boom"), j2 pending, j3 delayed an hour; in queue "other": o1 pending.
async fn three_jobs(client: &mut Client) {
    for (id, delay) in [("j1", None), ("j2", None), ("j3", Some(3_600_000))] {
        let mut req = job("emails", "email.send");
        req.job_id = id.into();
        req.when = delay.map(|ms| proto::enqueue_request::When::Delay(dur(ms)));
        enqueue(client, req).await;
    }
    let mut other = job("other", "other.job");
    other.job_id = "o1".into();
    enqueue(client, other).await;
    let claimed = claim_job(client, &["emails"], 0, None)
        .await
        .expect("j1 claimable");
    assert_eq!(claimed.job_id, "j1");
    client
        .fail_job(proto::FailJobRequest {
            namespace: "ns".into(),
            job_id: "j1".into(),
            lease_token: claimed.lease_token,
            error: "boom".into(),
            non_retryable: true,
            ..Default::default()
        })
        .await
        .expect("fail j1");
}

/// Pins: `dueq jobs --output json` lists a queue's jobs in enqueue order with their
/// states and errors, one document with stable keys; --state filters; --limit cuts
/// and says more follow.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jobs_json_lists_a_queue_by_state() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut client = service.client().await;
    three_jobs(&mut client).await;

    let all = json_of(&dueq(
        &service,
        &["jobs", "-n", "ns", "emails", "-o", "json"],
    ));
    assert_eq!(keys(&all), ["jobs", "more", "namespace", "queue", "state"]);
    assert_eq!(
        (&all["namespace"], &all["queue"]),
        (&json!("ns"), &json!("emails"))
    );
    assert_eq!(all["state"], Value::Null);
    assert_eq!(all["more"], json!(false));
    assert_eq!(ids(&all["jobs"], "job_id"), ["j1", "j2", "j3"]);
    let states: Vec<&Value> = all["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| &j["state"])
        .collect();
    assert_eq!(
        states,
        [&json!("dead"), &json!("pending"), &json!("delayed")]
    );
    let j1 = &all["jobs"][0];
    assert_eq!(
        keys(j1),
        [
            "attempts",
            "cancel_requested",
            "create_time",
            "dedup_key",
            "errors",
            "finish_time",
            "job_id",
            "lease_deadline",
            "lease_seconds",
            "max_attempts",
            "name",
            "priority",
            "progress",
            "queue",
            "result_bytes",
            "run_at",
            "state",
            "update_time",
            "worker_id",
        ]
    );
    assert_eq!(j1["attempts"], json!(1));
    assert_eq!(j1["max_attempts"], json!(3));
    assert_eq!(j1["worker_id"], json!("test-worker"));
    assert_eq!(j1["errors"][0]["message"], json!("boom"));
    assert_eq!(j1["errors"][0]["attempt"], json!(1));
    assert!(
        j1["finish_time"].as_str().is_some_and(|t| t.ends_with('Z')),
        "{j1}"
    );
    assert_eq!(all["jobs"][1]["finish_time"], Value::Null);

    let dead = json_of(&dueq(
        &service,
        &[
            "jobs", "-n", "ns", "emails", "--state", "dead", "-o", "json",
        ],
    ));
    assert_eq!(dead["state"], json!("dead"));
    assert_eq!(ids(&dead["jobs"], "job_id"), ["j1"]);
    let pending = json_of(&dueq(
        &service,
        &[
            "jobs", "-n", "ns", "emails", "--state", "pending", "-o", "json",
        ],
    ));
    assert_eq!(ids(&pending["jobs"], "job_id"), ["j2"]);

    let first = json_of(&dueq(
        &service,
        &["jobs", "-n", "ns", "emails", "--limit", "2", "-o", "json"],
    ));
    assert_eq!(ids(&first["jobs"], "job_id"), ["j1", "j2"]);
    assert_eq!(first["more"], json!(true));

    let other = json_of(&dueq(
        &service,
        &["jobs", "-n", "ns", "other", "-o", "json"],
    ));
    assert_eq!(ids(&other["jobs"], "job_id"), ["o1"]);
}

/// Pins: `dueq job --output json` shows the whole job: payload (base64), headers,
/// backoff, error history.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn job_json_shows_one_job_whole() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut client = service.client().await;
    let mut req = job("emails", "email.welcome");
    req.job_id = "welcome".into();
    req.payload = b"hello".to_vec();
    req.headers = [("tenant".to_string(), "acme".to_string())].into();
    req.priority = 5;
    enqueue(&mut client, req).await;

    let doc = json_of(&dueq(
        &service,
        &["job", "-n", "ns", "welcome", "-o", "json"],
    ));
    assert_eq!(keys(&doc), ["job", "namespace"]);
    let job = &doc["job"];
    assert_eq!(job["job_id"], json!("welcome"));
    assert_eq!(job["queue"], json!("emails"));
    assert_eq!(job["name"], json!("email.welcome"));
    assert_eq!(job["state"], json!("pending"));
    assert_eq!(job["priority"], json!(5));
    assert_eq!(job["payload_base64"], json!("aGVsbG8="));
    assert_eq!(job["headers"], json!({"tenant": "acme"}));
    // No flow keys (docs/flow.md), and the default cost.
    for key in ["fairness_key", "concurrency_key", "rate_key"] {
        assert_eq!(job[key], json!(""), "{key}");
    }
    assert_eq!(job["cost"], json!(1));
    assert_eq!(job["lease_seconds"], json!(30.0));
    assert_eq!(
        job["backoff"],
        json!({"kind": "exponential", "base_seconds": 1.0, "cap_seconds": 3600.0, "jitter": 0.0})
    );
    assert_eq!(job["errors"], json!([]));
}

/// Pins: `dueq schedules` shows where a schedule's slots go: the target queue of a
/// schedule that enqueues jobs (TARGET column, `target` in JSON), "-" otherwise.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schedules_show_the_target() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut client = service.client().await;
    let target = proto::EnqueueTarget {
        queue: "invoices".into(),
        priority: 5,
        ..Default::default()
    };
    let feeding = proto::Schedule {
        target: Some(proto::schedule::Target::Enqueue(target)),
        ..cron("nightly", "0 3 * * *", "Europe/Berlin")
    };
    upsert(&mut client, "ns", feeding).await;
    upsert(&mut client, "ns", every("worker", 60)).await;
    let text = stdout(&dueq(&service, &["schedules", "-n", "ns"]));
    assert!(text.contains("TARGET"), "{text}");
    let row = |id: &str| {
        text.lines()
            .find(|l| l.contains(id))
            .unwrap_or_else(|| panic!("{text}"))
            .to_owned()
    };
    assert!(row("nightly").contains("queue invoices"), "{text}");
    assert!(!row("worker").contains("queue "), "{text}");
    let doc = json_of(&dueq(&service, &["schedules", "-n", "ns", "-o", "json"]));
    let t = &doc["schedules"][0]["target"];
    assert_eq!(t["queue"], json!("invoices"));
    assert_eq!(t["priority"], json!(5));
    assert_eq!(t["max_attempts"], json!(3), "Enqueue's default, filled in");
    assert_eq!(doc["schedules"][1]["target"], Value::Null);
}

/// Pins: `dueq schedules --output json` lists schedules in id order (with
/// --status), and `dueq schedule pause|resume|show|delete` change and show one, as
/// the service then reports it (a second delete: NOT_FOUND, exit 1).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schedules_json_and_schedule_pause_resume() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut client = service.client().await;
    upsert(
        &mut client,
        "ns",
        cron("a-nightly", "0 7 * * *", "America/New_York"),
    )
    .await;
    upsert(&mut client, "ns", every("b-minutely", 60)).await;

    let all = json_of(&dueq(&service, &["schedules", "-n", "ns", "-o", "json"]));
    assert_eq!(
        keys(&all),
        [
            "more",
            "namespace",
            "order",
            "overdue_by_seconds",
            "schedules",
            "status"
        ]
    );
    assert_eq!(all["order"], json!("id"));
    assert_eq!(all["overdue_by_seconds"], Value::Null);
    assert_eq!(ids(&all["schedules"], "id"), ["a-nightly", "b-minutely"]);
    let a = &all["schedules"][0];
    assert_eq!(
        keys(a),
        [
            "create_time",
            "cron",
            "end_time",
            "every_seconds",
            "id",
            "job_name",
            "last_run_time",
            "next_run_time",
            "pause_note",
            "revision",
            "run_count",
            "run_limit",
            "start_time",
            "status",
            "target",
            "timezone",
            "update_time",
        ]
    );
    assert_eq!(a["cron"], json!("0 7 * * *"));
    assert_eq!(a["target"], Value::Null, "workers claim its occurrences");
    assert_eq!(a["every_seconds"], Value::Null);
    assert_eq!(a["timezone"], json!("America/New_York"));
    assert_eq!(a["status"], json!("active"));
    assert_eq!(all["schedules"][1]["every_seconds"], json!(60.0));

    let paused = json_of(&dueq(
        &service,
        &[
            "schedule",
            "pause",
            "-n",
            "ns",
            "a-nightly",
            "--note",
            "upstream down",
            "-o",
            "json",
        ],
    ));
    assert_eq!(paused["schedule"]["status"], json!("paused"));
    assert_eq!(paused["schedule"]["next_run_time"], Value::Null);
    assert_eq!(paused["schedule"]["pause_note"], json!("upstream down"));
    let stored = get(&mut client, "ns", "a-nightly").await;
    assert_eq!(stored.status, proto::ScheduleStatus::Paused as i32);
    assert_eq!(stored.pause_note, "upstream down");
    let only_paused = json_of(&dueq(
        &service,
        &["schedules", "-n", "ns", "--status", "paused", "-o", "json"],
    ));
    assert_eq!(ids(&only_paused["schedules"], "id"), ["a-nightly"]);

    let resumed = json_of(&dueq(
        &service,
        &["schedule", "resume", "-n", "ns", "a-nightly", "-o", "json"],
    ));
    assert_eq!(resumed["schedule"]["status"], json!("active"));
    let stored = get(&mut client, "ns", "a-nightly").await;
    assert_eq!(stored.status, proto::ScheduleStatus::Active as i32);
    let shown = json_of(&dueq(
        &service,
        &["schedule", "show", "-n", "ns", "a-nightly", "-o", "json"],
    ));
    assert_eq!(
        shown["schedule"]["next_run_time"].as_str(),
        rfc3339(&stored.next_run_time).as_deref()
    );
    assert_eq!(shown["schedule"]["payload_base64"], json!(""));

    let deleted = json_of(&dueq(
        &service,
        &["schedule", "delete", "-n", "ns", "a-nightly", "-o", "json"],
    ));
    assert_eq!(
        deleted,
        json!({ "namespace": "ns", "deleted": "a-nightly" })
    );
    let gone = client
        .get_schedule(proto::GetScheduleRequest {
            namespace: "ns".into(),
            id: "a-nightly".into(),
        })
        .await
        .expect_err("deleted");
    assert_eq!(gone.code(), tonic::Code::NotFound);
    let (code, err) = failure(&dueq(
        &service,
        &["schedule", "delete", "-n", "ns", "a-nightly"],
    ));
    assert_eq!(code, 1);
    assert!(
        err.starts_with("dueq schedule delete: NOT_FOUND: "),
        "{err}"
    );
}

/// A timestamp as the CLI prints it.
pub(crate) fn rfc3339(ts: &Option<prost_types::Timestamp>) -> Option<String> {
    let ts = ts.as_ref()?;
    chrono::DateTime::<chrono::Utc>::from_timestamp(ts.seconds, ts.nanos as u32)
        .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true))
}

/// Pins: `dueq preview --output json` lists a cron's fire times in its zone,
/// across a DST gap (2026-03-08 02:00 does not exist in New York: fires at 03:00
/// EDT), and an interval's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn preview_json_lists_fire_times_across_dst() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let doc = json_of(&dueq(
        &service,
        &[
            "preview",
            "0 2 * * *",
            "--tz",
            "America/New_York",
            "--count",
            "3",
            "--from",
            "2026-03-07T12:00:00Z",
            "-o",
            "json",
        ],
    ));
    assert_eq!(keys(&doc), ["fire_times", "timezone"]);
    assert_eq!(doc["timezone"], json!("America/New_York"));
    let times: Vec<&Value> = doc["fire_times"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| &f["time"])
        .collect();
    assert_eq!(
        times,
        [
            &json!("2026-03-08T07:00:00Z"),
            &json!("2026-03-09T06:00:00Z"),
            &json!("2026-03-10T06:00:00Z")
        ]
    );
    let gap = &doc["fire_times"][0];
    assert_eq!(gap["dst_adjusted"], json!(true));
    assert_eq!(gap["local_time"], json!("2026-03-08T03:00:00-04:00"));
    assert_eq!(gap["utc_offset_seconds"], json!(-14400));
    assert_eq!(doc["fire_times"][1]["dst_adjusted"], json!(false));

    let every = json_of(&dueq(
        &service,
        &[
            "preview",
            "--every",
            "90m",
            "--count",
            "2",
            "--from",
            "2026-01-01T00:00:00Z",
            "-o",
            "json",
        ],
    ));
    let times: Vec<&Value> = every["fire_times"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| &f["time"])
        .collect();
    assert_eq!(
        times,
        [
            &json!("2026-01-01T00:00:00Z"),
            &json!("2026-01-01T01:30:00Z")
        ]
    );
}

/// Pins: `dueq migrate --output json` follows Migrate's stream to its end and
/// prints each namespace's summary; --dry-run says so and writes nothing (the
/// namespace status is unchanged); --all covers every namespace.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migrate_json_prints_the_summary_of_each_namespace() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut client = service.client().await;
    upsert(&mut client, "ns", every("a", 60)).await;
    upsert(&mut client, "ns", every("b", 60)).await;
    upsert(&mut client, "other", every("c", 60)).await;

    let dry = json_of(&dueq(
        &service,
        &["migrate", "-n", "ns", "--dry-run", "-o", "json"],
    ));
    assert_eq!(keys(&dry), ["dry_run", "namespaces"]);
    assert_eq!(dry["dry_run"], json!(true));
    let ns = &dry["namespaces"][0];
    assert_eq!(
        keys(ns),
        [
            "already_present",
            "batches",
            "from_jobs_layout",
            "from_schema",
            "imported",
            "indexed",
            "jobs_converted",
            "longest_batch_seconds",
            "namespace",
            "problems",
            "removed",
            "repaired",
            "scanned",
            "schedules_converted",
            "to_jobs_layout",
            "to_schema",
        ]
    );
    assert_eq!(ns["namespace"], json!("ns"));
    assert_eq!(ns["scanned"], json!(2));
    assert_eq!(
        (&ns["from_schema"], &ns["to_schema"]),
        (&json!(3), &json!(3))
    );
    assert_eq!(ns["problems"], json!([]));

    let real = json_of(&dueq(
        &service,
        &["migrate", "-n", "ns", "--batch-size", "1", "-o", "json"],
    ));
    assert_eq!(real["dry_run"], json!(false));
    assert_eq!(real["namespaces"][0]["scanned"], json!(2));
    assert!(
        real["namespaces"][0]["batches"]
            .as_u64()
            .is_some_and(|b| b >= 2),
        "{real}"
    );

    let all = json_of(&dueq(&service, &["migrate", "--all", "-o", "json"]));
    let mut names = ids(&all["namespaces"], "namespace");
    names.sort();
    assert_eq!(names, ["ns", "other"]);
}

/// Pins: the default output is a table with a header and the rows asked for.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tables_by_default() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut client = service.client().await;
    three_jobs(&mut client).await;
    upsert(&mut client, "ns", cron("nightly", "0 7 * * *", "UTC")).await;

    let out = dueq(&service, &["jobs", "-n", "ns", "emails", "--state", "dead"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("JOB ID") && text.contains("STATE"), "{text}");
    let row = text
        .lines()
        .find(|l| l.contains("j1"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        row.contains("dead") && row.contains("boom") && row.contains("1/3"),
        "{row}"
    );
    assert!(!text.contains("j2"), "{text}");

    let out = dueq(&service, &["job", "-n", "ns", "j1"]);
    let text = stdout(&out);
    assert!(
        text.contains("FIELD") && text.contains("boom") && text.contains("ATTEMPT"),
        "{text}"
    );

    let out = dueq(&service, &["schedules", "-n", "ns"]);
    let text = stdout(&out);
    let row = text
        .lines()
        .find(|l| l.contains("nightly"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        row.contains("cron 0 7 * * * (UTC)") && row.contains("active"),
        "{row}"
    );

    let out = dueq(&service, &["preview", "0 7 * * *", "--count", "2"]);
    let text = stdout(&out);
    assert_eq!(text.matches("T07:00:00Z").count(), 2, "{text}");

    let out = dueq(&service, &["migrate", "-n", "ns"]);
    let text = stdout(&out);
    assert!(
        text.contains("NAMESPACE") && text.contains("3 -> 3"),
        "{text}"
    );
}

/// Pins: errors are one line on stderr with the gRPC code and the service's
/// message, and the documented exit codes: 1 a service error, 2 a bad command
/// line or file, 3 no service.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_say_the_code_and_exit_non_zero() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;

    let (code, err) = failure(&dueq(
        &service,
        &["job", "-n", "ns", "missing", "-o", "json"],
    ));
    assert_eq!(code, 1);
    assert!(
        err.starts_with("dueq job: NOT_FOUND: ") && err.contains("missing"),
        "{err}"
    );

    let (code, err) = failure(&dueq(&service, &["migrate", "-n", "nowhere"]));
    assert_eq!(code, 1);
    assert!(
        err.starts_with("dueq migrate: NOT_FOUND: ") && err.contains("nowhere"),
        "{err}"
    );

    let (code, err) = failure(&dueq(&service, &["jobs", "-n", "bad ns!", "emails"]));
    assert_eq!(code, 1);
    assert!(
        err.starts_with("dueq jobs: INVALID_ARGUMENT: ") && err.contains("namespace"),
        "{err}"
    );

    let (code, err) = failure(&dueq(&service, &["schedule", "pause", "-n", "ns", "nope"]));
    assert_eq!(code, 1);
    assert!(err.starts_with("dueq schedule pause: NOT_FOUND: "), "{err}");

    // Bad command lines: clap's message, exit 2, nothing sent.
    let out = dueq(
        &service,
        &["jobs", "-n", "ns", "emails", "--state", "sleeping"],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--state"), "{}", stderr(&out));
    let out = dueq(&service, &["jobs", "emails"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--namespace"), "{}", stderr(&out));
    let tls_addr = format!("https://{}", service.addr);
    let (code, err) = failure(&dueq_with(
        &[
            "jobs",
            "-n",
            "ns",
            "q",
            "--addr",
            &tls_addr,
            "--tls-ca",
            "/nonexistent/ca.pem",
        ],
        &[],
    ));
    assert_eq!(code, 2);
    assert!(
        err.contains("--tls-ca") && err.contains("/nonexistent/ca.pem"),
        "{err}"
    );

    // TLS flags with a plaintext address: exit 2, not a silent plaintext call.
    let (code, err) = failure(&dueq(
        &service,
        &["jobs", "-n", "ns", "q", "--tls-ca", "/x.pem"],
    ));
    assert_eq!(code, 2);
    assert!(err.contains("use https://"), "{err}");

    // Nothing listening: exit 3.
    let nowhere = format!("http://127.0.0.1:{}", free_port());
    let (code, err) = failure(&dueq_with(
        &["jobs", "-n", "ns", "q", "--addr", &nowhere],
        &[],
    ));
    assert_eq!(code, 3);
    assert!(
        err.contains("cannot connect") && err.contains(&nowhere),
        "{err}"
    );
}

pub(crate) fn sha256_hex(text: &str) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Pins: over TLS with a client certificate (mTLS) and an --auth-file, the CLI
/// presents the certificate and the DUEQ_TOKEN (or --token) bearer token; without
/// the token the call is refused UNAUTHENTICATED (exit 1); the token never shows in
/// the output; without --tls-ca the service's certificate is not trusted (exit 3);
/// DUEQ_ADDR, DUEQ_TOKEN and DUEQ_TLS_{CA,CLIENT_CERT,CLIENT_KEY,SERVER_NAME} (the
/// client libraries' variables) say the same as the flags.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_client_certificate_and_token() {
    let redis = Redis::start().await;
    let certs = Certs::generate();
    let dir = tempfile::tempdir().expect("temp dir");
    let auth = dir.path().join("auth.toml");
    let token = "s3cret-operator-token";
    std::fs::write(
        &auth,
        format!(
            "[[principal]]\nname = \"ops\"\nroles = [\"admin\"]\nnamespaces = [\"*\"]\n\
             token_sha256 = \"{}\"\n",
            sha256_hex(token)
        ),
    )
    .expect("write auth file");
    let mut config = config(&redis.url());
    config.tls_cert = Some(certs.server_cert.clone());
    config.tls_key = Some(certs.server_key.clone());
    config.tls_client_ca = Some(certs.ca.clone());
    config.auth_file = Some(auth);
    let service = Service::start_unready(config).await;
    let addr = format!("https://{}", service.addr);
    let ca = certs.ca.to_str().unwrap();
    let cert = certs.client_cert.to_str().unwrap();
    let key = certs.client_key.to_str().unwrap();
    let tls = [
        "--addr",
        &addr,
        "--tls-ca",
        ca,
        "--tls-cert",
        cert,
        "--tls-key",
        key,
    ];
    let with = |args: &[&str], envs: &[(&str, &str)]| {
        let mut all = args.to_vec();
        all.extend(tls);
        dueq_with(&all, envs)
    };

    // The service comes up in the background: wait until the CLI is answered.
    let patience = Patience::new("the TLS service to answer the CLI");
    let doc = loop {
        let out = with(
            &["schedules", "-n", "ns", "-o", "json"],
            &[("DUEQ_TOKEN", token)],
        );
        if out.status.success() {
            break json_of(&out);
        }
        patience.wait().await;
    };
    assert_eq!(doc["schedules"], json!([]));
    let out = with(
        &[
            "preview",
            "0 7 * * *",
            "--count",
            "1",
            "--token",
            token,
            "-o",
            "json",
        ],
        &[],
    );
    assert_eq!(
        json_of(&out)["fire_times"].as_array().map(Vec::len),
        Some(1)
    );

    let (code, err) = failure(&with(&["schedules", "-n", "ns"], &[]));
    assert_eq!(code, 1);
    assert!(err.contains("UNAUTHENTICATED"), "{err}");
    let (code, err) = failure(&with(&["job", "-n", "ns", "x"], &[("DUEQ_TOKEN", "wrong")]));
    assert_eq!(code, 1);
    assert!(
        err.contains("UNAUTHENTICATED") && !err.contains("wrong"),
        "{err}"
    );
    let out = with(&["job", "-n", "ns", "x"], &[("DUEQ_TOKEN", token)]);
    assert!(!stdout(&out).contains(token) && !stderr(&out).contains(token));
    assert!(stderr(&out).contains("NOT_FOUND"), "{}", stderr(&out));

    // A client that does not trust the CA (the system store does not hold it), or
    // shows no certificate: no call gets through.
    let (code, err) = failure(&dueq_with(
        &["schedules", "-n", "ns", "--addr", &addr],
        &[("DUEQ_TOKEN", token)],
    ));
    assert_eq!(code, 3, "{err}");
    let out = dueq_with(
        &["schedules", "-n", "ns", "--addr", &addr, "--tls-ca", ca],
        &[("DUEQ_TOKEN", token)],
    );
    assert!(
        !out.status.success(),
        "no client certificate, yet:\n{}",
        stdout(&out)
    );
    assert!(!stderr(&out).contains(token));
    // One sentence that says what is wrong, not a dump of the error's structure.
    let err = stderr(&out);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains("client certificate") && !err.contains("Custom {") && !err.contains("kind:"),
        "{err}"
    );
    // The same connection from the variables the client libraries read too.
    let out = dueq_with(
        &["schedules", "-n", "ns", "-o", "json"],
        &[
            ("DUEQ_ADDR", &addr),
            ("DUEQ_TOKEN", token),
            ("DUEQ_TLS_CA", ca),
            ("DUEQ_TLS_CLIENT_CERT", cert),
            ("DUEQ_TLS_CLIENT_KEY", key),
            ("DUEQ_TLS_SERVER_NAME", "localhost"),
        ],
    );
    assert_eq!(json_of(&out)["schedules"], json!([]), "{}", stderr(&out));
    // --help does not show the token's value even when it is set.
    let out = dueq_with(&["jobs", "--help"], &[("DUEQ_TOKEN", token)]);
    assert!(stdout(&out).contains("DUEQ_TOKEN") && !stdout(&out).contains(token));
}

/// The state of the README's grpcurl tour that docs/cli.md's examples read: in `shop`,
/// queue `emails`, digest-alice dead ("mailbox full") and welcome-alice pending, and
/// export-7 of queue `exports` held by a worker; in `billing`, the schedules
/// nightly-invoices and quarterly-report.
async fn readme_state(client: &mut Client) {
    let shop = |id: &str, name: &str| proto::EnqueueRequest {
        namespace: "shop".into(),
        queue: "emails".into(),
        name: name.into(),
        job_id: id.into(),
        ..Default::default()
    };
    enqueue(client, shop("digest-alice", "email.digest")).await;
    let mut claim = claim_req(&["emails"], 0, None);
    claim.namespace = "shop".into();
    claim.worker_id = "worker-1".into();
    let claimed = client
        .claim_job(claim)
        .await
        .expect("claim")
        .into_inner()
        .jobs
        .pop()
        .expect("digest-alice claimable");
    client
        .fail_job(proto::FailJobRequest {
            namespace: "shop".into(),
            job_id: claimed.job_id,
            lease_token: claimed.lease_token,
            error: "mailbox full".into(),
            non_retryable: true,
            ..Default::default()
        })
        .await
        .expect("fail digest-alice");
    enqueue(client, shop("welcome-alice", "email.welcome")).await;
    let mut later = shop("report-2", "report.daily");
    later.when = Some(proto::enqueue_request::When::Delay(dur(3_600_000)));
    enqueue(client, later).await;
    // Issue 36: an active job for `dueq job release`, in a queue of its own.
    let mut export = shop("export-7", "export.csv");
    export.queue = "exports".into();
    enqueue(client, export).await;
    let mut claim = claim_req(&["exports"], 0, Some(3_600_000));
    claim.namespace = "shop".into();
    claim.worker_id = "worker-3".into();
    let held = client.claim_job(claim).await.expect("claim").into_inner();
    assert_eq!(held.jobs.len(), 1, "export-7 is held");
    let mut nightly = cron("nightly-invoices", "0 3 * * *", "Europe/Berlin");
    nightly.job_name = "invoices.run".into();
    upsert(client, "billing", nightly).await;
    // For `dueq schedule delete`.
    upsert(
        client,
        "billing",
        cron("quarterly-report", "0 6 1 1,4,7,10 *", "UTC"),
    )
    .await;
}

/// Pins: every CLI example in docs/cli.md runs, in order, against a live service
/// (the `dueq` on PATH is this build; DUEQ_ADDR points at the service), and prints
/// what docs/cli.md says it does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_cli_doc_example_runs() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut client = service.client().await;
    readme_state(&mut client).await;
    let commands = crate::doc_examples::commands_between("cli-examples");
    assert_eq!(commands.len(), 31, "{commands:#?}");
    let bin = std::path::Path::new(env!("CARGO_BIN_EXE_dueq"))
        .parent()
        .expect("the binary's folder")
        .to_path_buf();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut outputs = Vec::new();
    for command in &commands {
        let out = tokio::task::block_in_place(|| {
            Command::new("bash")
                .arg("-c")
                .arg(command)
                .env("PATH", &path)
                .env("DUEQ_ADDR", service.endpoint())
                .env_remove("DUEQ_TOKEN")
                .env_remove("DUEQ_NAMESPACE")
                .output()
                .expect("bash")
        });
        assert!(
            out.status.success(),
            "docs/cli.md example failed:\n{command}\n{}{}",
            stdout(&out),
            stderr(&out)
        );
        outputs.push(stdout(&out));
    }
    // The table docs/cli.md shows is the one the first example prints.
    let dead = &outputs[0];
    assert!(
        dead.contains("digest-alice") && dead.contains("mailbox full"),
        "{dead}"
    );
    assert!(!dead.contains("welcome-alice"), "{dead}");
    let shown = crate::doc_examples::fenced("cli-dead-jobs-table");
    let columns = |text: &str| -> Vec<String> {
        text.lines()
            .find(|l| l.contains("digest-alice"))
            .map(|l| {
                l.split('┆')
                    .map(|c| c.trim().to_string())
                    .filter(|c| !c.contains('T') || !c.ends_with('Z'))
                    .collect()
            })
            .unwrap_or_default()
    };
    assert_eq!(
        columns(shown),
        columns(dead),
        "docs/cli.md:\n{shown}\nprinted:\n{dead}"
    );

    let job: Value = serde_json::from_str(&outputs[1]).expect("JSON");
    assert_eq!(job["job"]["state"], json!("dead"));
    assert_eq!(job["job"]["errors"][0]["message"], json!("mailbox full"));
    assert!(outputs[2].contains("nightly-invoices") && outputs[2].contains("Europe/Berlin"));
    assert!(outputs[3].contains("paused"), "{}", outputs[3]);
    assert!(outputs[4].contains("active"), "{}", outputs[4]);
    assert!(
        outputs[5].contains("triggered nightly-invoices (occurrence "),
        "{}",
        outputs[5]
    );
    assert!(
        outputs[6].contains("2026-03-08T07:00:00Z") && outputs[6].contains("03:00:00-04:00"),
        "{}",
        outputs[6]
    );
    assert!(
        outputs[7].contains("dry run: nothing was written"),
        "{}",
        outputs[7]
    );
    assert!(
        outputs[8].contains("billing") && outputs[8].contains("3 -> 3"),
        "{}",
        outputs[8]
    );
    assert_eq!(outputs[9].trim(), "digest-alice");
    assert!(
        outputs[10].contains("billing") && outputs[10].contains("shop"),
        "{}",
        outputs[10]
    );
    let row = outputs[11]
        .lines()
        .find(|l| l.contains("emails"))
        .unwrap_or_else(|| panic!("{}", outputs[11]));
    let cells: Vec<&str> = row
        .split('┆')
        .map(|c| c.trim_matches(|c: char| c == '│' || c.is_whitespace()))
        .collect();
    assert_eq!(&cells[..5], ["emails", "1", "1", "0", "1"], "{row}");
    assert_eq!(outputs[12].trim(), "queue emails paused");
    assert_eq!(outputs[13].trim(), "queue emails resumed");
    assert_eq!(
        outputs[14].trim(),
        "1 dead job(s) of emails made pending again"
    );
    assert_eq!(outputs[15].trim(), "1 delayed job(s) of emails deleted");
    assert!(
        outputs[16].contains("NEXT RUN") && !outputs[16].contains("nightly-invoices"),
        "{}",
        outputs[16]
    );
    assert_eq!(
        outputs[17].trim(),
        "deleted welcome-alice (pending in queue emails)"
    );
    assert_eq!(
        outputs[18].trim(),
        "released export-7: now pending, attempts 0/3"
    );
    let mut client = service.client().await;
    let gone = client
        .get_job(proto::GetJobRequest {
            namespace: "shop".into(),
            job_id: "welcome-alice".into(),
        })
        .await
        .expect_err("deleted");
    assert_eq!(gone.code(), tonic::Code::NotFound);
    let released = client
        .get_job(proto::GetJobRequest {
            namespace: "shop".into(),
            job_id: "export-7".into(),
        })
        .await
        .expect("export-7")
        .into_inner()
        .job
        .expect("a job");
    let reason = released.errors.last().map(|e| e.message.as_str());
    assert_eq!(reason, Some("worker on host-3 hung"));
    assert!(
        outputs[19].contains("nightly-invoices") && outputs[19].contains("2030-01-02T04:00:00"),
        "{}",
        outputs[19]
    );
    let moved = get(&mut client, "billing", "nightly-invoices").await;
    assert_eq!(
        ms(&moved.next_run_time),
        1_893_556_800_000,
        "2030-01-02T04:00:00Z"
    );
    // Issue 33: a filtered listing, a bulk action by query and one by ids.
    assert!(
        outputs[25].contains("digest-alice") && outputs[25].contains("mailbox full"),
        "{}",
        outputs[25]
    );
    assert!(
        outputs[26].starts_with("cancelled 1 job(s) of queue emails, skipped 0 ("),
        "{}",
        outputs[26]
    );
    assert!(
        outputs[27].starts_with("deleted 1 job(s) of queue emails, skipped 1 (")
            && outputs[27].contains("no-such-job")
            && outputs[27].contains("not found"),
        "{}",
        outputs[27]
    );
    assert!(
        outputs[28].contains("KIND") && outputs[28].contains("leases ending soonest"),
        "{}",
        outputs[28]
    );
    // Issue 33: the job commands above are in shop's audit log, with their outcome.
    let audit = &outputs[29];
    let released = audit
        .lines()
        .find(|l| l.contains("ReleaseJob"))
        .unwrap_or_else(|| panic!("{audit}"));
    assert!(
        released.contains("job:export-7") && released.contains("OK") && released.contains("grpc"),
        "{audit}"
    );
    assert!(
        audit.contains("PauseQueue") && audit.contains("queue:emails"),
        "{audit}"
    );
    assert_eq!(outputs[30].trim(), "deleted schedule quarterly-report");
    let gone = client
        .get_schedule(proto::GetScheduleRequest {
            namespace: "billing".into(),
            id: "quarterly-report".into(),
        })
        .await
        .expect_err("deleted");
    assert_eq!(gone.code(), tonic::Code::NotFound);
}

/// Pins: a Migrate that reports records it could not use still prints its summary
/// (the JSON lists them) and exits 4, with one line on stderr saying so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migrate_with_problems_exits_4() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut client = service.client().await;
    upsert(&mut client, "good", every("a", 60)).await;
    let mut conn = redis.conn().await;
    // A namespace-shaped meta key holding the wrong type: that namespace fails.
    let _: () = query(&mut conn, cmd("SET").arg("dueq:{broken}:meta").arg("x")).await;

    let out = dueq(&service, &["migrate", "--all", "-o", "json"]);
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    let err = stderr(&out);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.starts_with("dueq migrate: 1 record(s) could not be used"),
        "{err}"
    );
    let doc: Value = serde_json::from_str(&stdout(&out)).expect("one JSON document");
    let summaries = doc["namespaces"].as_array().expect("namespaces");
    let broken = summaries
        .iter()
        .find(|s| s["namespace"] == json!("broken"))
        .unwrap_or_else(|| panic!("{doc}"));
    assert_eq!(
        broken["problems"].as_array().map(Vec::len),
        Some(1),
        "{doc}"
    );
    let good = summaries
        .iter()
        .find(|s| s["namespace"] == json!("good"))
        .unwrap_or_else(|| panic!("{doc}"));
    assert_eq!(good["problems"], json!([]));
}

/// Pins: on a terminal (a pseudo-terminal from `script`), `dueq migrate` draws its
/// progress bar on stderr as the stream goes (the namespace, the phase and the
/// scanned count), then clears it and prints the summary; off a terminal (every
/// other test) nothing but the summary is printed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs script"]
async fn migrate_draws_a_progress_bar_on_a_terminal() {
    tools::require("script");
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut client = service.client().await;
    for i in 0..20 {
        upsert(&mut client, "ns", every(&format!("s{i:02}"), 60)).await;
    }
    let command = format!(
        "{} migrate -n ns --batch-size 1 --addr {}",
        env!("CARGO_BIN_EXE_dueq"),
        service.endpoint()
    );
    let out = tokio::task::block_in_place(|| {
        Command::new("script")
            .args(["-qec", &command, "/dev/null"])
            .env("TERM", "xterm")
            .output()
            .expect("script")
    });
    let text = stdout(&out);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("ns records") && text.contains("/20"),
        "no progress bar drawn:\n{text:?}"
    );
    assert!(text.contains("3 -> 3"), "{text}");

    let plain = dueq(&service, &["migrate", "-n", "ns", "--batch-size", "1"]);
    assert!(stderr(&plain).is_empty(), "{}", stderr(&plain));
    assert!(!stdout(&plain).contains("records"), "{}", stdout(&plain));
}

/// Pins: `dueq --help` names every operator command, and each command's help
/// documents the exit codes and the connection flags.
#[test]
fn help_names_the_operator_commands_and_their_exit_codes() {
    let out = Command::new(env!("CARGO_BIN_EXE_dueq"))
        .arg("--help")
        .output()
        .expect("run dueq");
    let help = stdout(&out);
    for command in [
        "namespaces",
        "queues",
        "queue",
        "retry-dead",
        "purge",
        "jobs",
        "job",
        "bulk",
        "schedules",
        "schedule",
        "preview",
        "migrate",
        "flow",
    ] {
        assert!(
            help.lines()
                .any(|l| l.trim_start().starts_with(&format!("{command} "))),
            "--help lacks {command}:\n{help}"
        );
    }
    for command in [
        &["jobs"][..],
        &["jobs", "dead-groups"],
        &["job"],
        &["schedules"],
        &["schedule", "pause"],
        &["preview"],
        &["migrate"],
        &["namespaces"],
        &["queues"],
        &["queue", "resume"],
        &["retry-dead"],
        &["purge"],
        &["flow", "enqueue"],
        &["flow", "get"],
        &["flow", "cancel"],
        &["flow", "retry"],
        &["bulk", "retry"],
        &["bulk", "cancel"],
        &["bulk", "delete"],
    ] {
        let mut args = command.to_vec();
        args.push("--help");
        let out = Command::new(env!("CARGO_BIN_EXE_dueq"))
            .args(&args)
            .output()
            .expect("run dueq");
        let help = stdout(&out);
        for needle in [
            "Exit codes: 0",
            "--addr",
            "DUEQ_ADDR",
            "--tls-ca",
            "--token",
            "DUEQ_TOKEN",
            "--output",
        ] {
            assert!(help.contains(needle), "{args:?} lacks {needle}:\n{help}");
        }
    }
}

/// Enqueues `id` in queue `queue` of "ns", claims it and fails it for good.
async fn dead_job(client: &mut Client, queue: &str, id: &str) {
    let mut req = job(queue, "doomed");
    req.job_id = id.into();
    enqueue(client, req).await;
    let claimed = claim_job(client, &[queue], 0, None)
        .await
        .expect("claimable");
    assert_eq!(claimed.job_id, id, "the only pending job of {queue}");
    client
        .fail_job(proto::FailJobRequest {
            namespace: "ns".into(),
            job_id: id.into(),
            lease_token: claimed.lease_token,
            error: "boom".into(),
            non_retryable: true,
            ..Default::default()
        })
        .await
        .expect("fail");
}

/// Pins: `dueq namespaces` lists the namespaces written to, and `dueq queues` each
/// queue's counts by state, oldest pending age and paused flag, as JSON with
/// stable keys; the table shows the same.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn namespaces_and_queues_json() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut client = service.client().await;
    // emails: e1 dead, e2 active, e3 pending, e4 delayed; other: o1 pending.
    dead_job(&mut client, "emails", "e1").await;
    for id in ["e2", "e3"] {
        let mut req = job("emails", "email.send");
        req.job_id = id.into();
        enqueue(&mut client, req).await;
    }
    let claimed = claim_job(&mut client, &["emails"], 0, None)
        .await
        .expect("e2");
    assert_eq!(claimed.job_id, "e2");
    let mut delayed = job("emails", "email.send");
    delayed.job_id = "e4".into();
    delayed.when = Some(proto::enqueue_request::When::Delay(dur(3_600_000)));
    enqueue(&mut client, delayed).await;
    enqueue(&mut client, job("other", "other.job")).await;
    upsert(&mut client, "beta", every("s", 60)).await;

    let doc = json_of(&dueq(&service, &["namespaces", "-o", "json"]));
    assert_eq!(doc, json!({"namespaces": ["beta", "ns"], "more": false}));
    let first = json_of(&dueq(
        &service,
        &["namespaces", "--limit", "1", "-o", "json"],
    ));
    assert_eq!(first, json!({"namespaces": ["beta"], "more": true}));

    let doc = json_of(&dueq(&service, &["queues", "-n", "ns", "-o", "json"]));
    assert_eq!(keys(&doc), ["more", "namespace", "queues", "read_time"]);
    assert!(
        doc["read_time"].as_str().is_some_and(|t| t.ends_with('Z')),
        "{doc}"
    );
    assert_eq!(ids(&doc["queues"], "queue"), ["emails", "other"]);
    let emails = &doc["queues"][0];
    let age = emails["oldest_pending_age_seconds"]
        .as_f64()
        .expect("an age: e3 pending");
    assert!(age >= 0.0, "{emails}");
    let mut emails = emails.clone();
    emails["oldest_pending_age_seconds"] = json!("checked");
    assert_eq!(
        emails,
        json!({
            "queue": "emails", "pending": 1, "delayed": 1, "active": 1, "dead": 1,
            "waiting": 0, "oldest_pending_age_seconds": "checked", "paused": false, "counted": true,
            "policy": null,
        })
    );
    assert_eq!(doc["queues"][1]["pending"], json!(1));
    assert_eq!(doc["queues"][1]["dead"], json!(0));

    let table = stdout(&dueq(&service, &["queues", "-n", "ns"]));
    let row = table
        .lines()
        .find(|l| l.contains("emails"))
        .unwrap_or_else(|| panic!("{table}"));
    let cells: Vec<&str> = row
        .split('┆')
        .map(|c| c.trim_matches(|c: char| c == '│' || c.is_whitespace()))
        .collect();
    assert_eq!(&cells[..6], ["emails", "1", "1", "1", "1", "0"], "{row}");
    assert_eq!(cells[7], "no", "{row}");
    assert_eq!(cells[8], "-", "no policy: {row}");
}

/// Pins: `dueq queue pause|resume` pause and resume a queue (claims skip it while
/// paused, as a real claim shows), saying whether anything changed; `dueq queues`
/// shows the flag.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queue_pause_and_resume() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut client = service.client().await;
    let mut req = job("emails", "email.send");
    req.job_id = "j".into();
    enqueue(&mut client, req).await;

    let paused = json_of(&dueq(
        &service,
        &["queue", "pause", "-n", "ns", "emails", "-o", "json"],
    ));
    assert_eq!(
        paused,
        json!({"namespace": "ns", "queue": "emails", "paused": true, "changed": true})
    );
    let again = json_of(&dueq(
        &service,
        &["queue", "pause", "-n", "ns", "emails", "-o", "json"],
    ));
    assert_eq!(again["changed"], json!(false));
    assert!(claim_job(&mut client, &["emails"], 0, None).await.is_none());
    let queues = json_of(&dueq(&service, &["queues", "-n", "ns", "-o", "json"]));
    assert_eq!(queues["queues"][0]["paused"], json!(true));
    let table = stdout(&dueq(&service, &["queue", "pause", "-n", "ns", "emails"]));
    assert!(table.contains("was paused already"), "{table}");

    let resumed = json_of(&dueq(
        &service,
        &["queue", "resume", "-n", "ns", "emails", "-o", "json"],
    ));
    assert_eq!(
        resumed,
        json!({"namespace": "ns", "queue": "emails", "paused": false, "changed": true})
    );
    let claimed = claim_job(&mut client, &["emails"], 0, None)
        .await
        .expect("claimable again");
    assert_eq!(claimed.job_id, "j");
}

/// Pins: `dueq retry-dead` retries dead jobs in batches up to --limit and says
/// whether more remain; `dueq purge` refuses without --yes (exit 2, nothing
/// deleted) and with it deletes the jobs in one state.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retry_dead_and_purge() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut client = service.client().await;
    for id in ["d1", "d2", "d3"] {
        dead_job(&mut client, "emails", id).await;
    }

    let two = json_of(&dueq(
        &service,
        &[
            "retry-dead",
            "-n",
            "ns",
            "emails",
            "--limit",
            "2",
            "-o",
            "json",
        ],
    ));
    assert_eq!(
        two,
        json!({"namespace": "ns", "queue": "emails", "retried": 2, "more": true})
    );
    let rest = json_of(&dueq(
        &service,
        &["retry-dead", "-n", "ns", "emails", "-o", "json"],
    ));
    assert_eq!(rest["retried"], json!(1));
    assert_eq!(rest["more"], json!(false));
    let jobs = json_of(&dueq(
        &service,
        &[
            "jobs", "-n", "ns", "emails", "--state", "pending", "-o", "json",
        ],
    ));
    assert_eq!(ids(&jobs["jobs"], "job_id"), ["d1", "d2", "d3"]);
    let none = stdout(&dueq(&service, &["retry-dead", "-n", "ns", "emails"]));
    assert!(
        none.contains("0 dead job(s) of emails made pending again"),
        "{none}"
    );

    let (code, err) = failure(&dueq(
        &service,
        &["purge", "-n", "ns", "emails", "--state", "pending"],
    ));
    assert_eq!(code, 2);
    assert!(
        err.contains("--yes") && err.contains("pending jobs of queue emails"),
        "{err}"
    );
    assert_eq!(
        list_all_pending(&mut client).await,
        3,
        "nothing deleted without --yes"
    );

    let one = json_of(&dueq(
        &service,
        &[
            "purge", "-n", "ns", "emails", "--state", "pending", "--limit", "1", "--yes", "-o",
            "json",
        ],
    ));
    assert_eq!(
        one,
        json!({"namespace": "ns", "queue": "emails", "state": "pending", "purged": 1, "more": true})
    );
    let rest = json_of(&dueq(
        &service,
        &[
            "purge", "-n", "ns", "emails", "--state", "pending", "--yes", "-o", "json",
        ],
    ));
    assert_eq!((&rest["purged"], &rest["more"]), (&json!(2), &json!(false)));
    assert_eq!(list_all_pending(&mut client).await, 0);

    // Active jobs cannot be purged: clap refuses the value.
    let out = dueq(
        &service,
        &["purge", "-n", "ns", "emails", "--state", "active", "--yes"],
    );
    assert_eq!(out.status.code(), Some(2));
    // A bad queue name: the service's INVALID_ARGUMENT, naming the field.
    let (code, err) = failure(&dueq(&service, &["retry-dead", "-n", "ns", ""]));
    assert_eq!(code, 1);
    assert!(
        err.contains("INVALID_ARGUMENT") && err.contains("queue"),
        "{err}"
    );
}

/// How many jobs of ns/emails are pending, through the API.
async fn list_all_pending(client: &mut Client) -> usize {
    client
        .list_jobs(proto::ListJobsRequest {
            namespace: "ns".into(),
            queue: "emails".into(),
            state: proto::JobState::Pending as i32,
            page_size: 1000,
            ..Default::default()
        })
        .await
        .expect("list jobs")
        .into_inner()
        .jobs
        .len()
}

/// Pins: `dueq schedules --overdue [AGE]` lists the active schedules due at least
/// AGE ago and not yet claimed, the most overdue first (paused and future ones
/// left out), and `--order next-run` lists active schedules soonest first; the
/// table shows the overdue ones.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schedules_overdue_and_by_next_run() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut client = service.client().await;
    let mut conn = redis.conn().await;
    let now = redis_now(&mut conn).await;
    for (id, due) in [
        ("late-hour", now - 3_600_000),
        ("late-2h", now - 7_200_000),
        ("late-second", now - 1_000),
        ("future", now + 3_600_000),
        ("paused", now - 9_000_000),
    ] {
        upsert(&mut client, "ns", every(id, 86_400)).await;
        force_due(&mut conn, "ns", id, due).await;
    }
    client
        .pause_schedule(proto::PauseScheduleRequest {
            namespace: "ns".into(),
            id: "paused".into(),
            ..Default::default()
        })
        .await
        .expect("pause");

    let all_late = json_of(&dueq(
        &service,
        &["schedules", "-n", "ns", "--overdue", "-o", "json"],
    ));
    assert_eq!(
        ids(&all_late["schedules"], "id"),
        ["late-2h", "late-hour", "late-second"]
    );
    assert_eq!(all_late["order"], json!("next_run"));
    assert_eq!(all_late["overdue_by_seconds"], json!(0.0));
    let a_minute = json_of(&dueq(
        &service,
        &["schedules", "-n", "ns", "--overdue", "1m", "-o", "json"],
    ));
    assert_eq!(ids(&a_minute["schedules"], "id"), ["late-2h", "late-hour"]);
    assert_eq!(a_minute["overdue_by_seconds"], json!(60.0));
    let by_next = json_of(&dueq(
        &service,
        &["schedules", "-n", "ns", "--order", "next-run", "-o", "json"],
    ));
    assert_eq!(
        ids(&by_next["schedules"], "id"),
        ["late-2h", "late-hour", "late-second", "future"]
    );

    let table = stdout(&dueq(
        &service,
        &["schedules", "-n", "ns", "--overdue", "30m"],
    ));
    assert!(
        table.contains("late-2h") && table.contains("late-hour"),
        "{table}"
    );
    assert!(
        !table.contains("late-second") && !table.contains("future"),
        "{table}"
    );
    // A bad age: clap's message, exit 2.
    let out = dueq(&service, &["schedules", "-n", "ns", "--overdue", "soon"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--overdue"), "{}", stderr(&out));
}

/// Pins: `dueq schedule trigger` triggers an occurrence (TriggerSchedule) and prints
/// the occurrence id the next claim hands out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schedule_trigger_prints_the_occurrence_id_the_claim_hands_out() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut client = service.client().await;
    upsert(&mut client, "ns", every("s", 3600)).await;
    let out = json_of(&dueq(
        &service,
        &["schedule", "trigger", "-n", "ns", "s", "-o", "json"],
    ));
    assert_eq!(keys(&out), ["due_time", "id", "namespace", "occurrence_id"]);
    let o = claim(&mut client, "ns", 0).await.expect("triggered");
    assert_eq!(out["occurrence_id"], json!(o.occurrence_id));
    assert_eq!(o.kind, proto::OccurrenceKind::Triggered as i32);
}

/// Pins (issue 36): `dueq job delete` prints the deleted job (JSON: `deleted`) and
/// refuses an active one (exit 1, FAILED_PRECONDITION naming ReleaseJob); `dueq job
/// release` prints the job pending again (--count-attempt keeps the attempt
/// counted) and refuses a job that is not active; `dueq job -n NS ID` still shows one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn job_delete_and_release() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut client = service.client().await;
    three_jobs(&mut client).await;
    let held = claim_job(&mut client, &["other"], 0, Some(3_600_000))
        .await
        .expect("o1 claimable");
    assert_eq!(held.job_id, "o1");

    let doc = json_of(&dueq(
        &service,
        &["job", "delete", "-n", "ns", "j1", "-o", "json"],
    ));
    assert_eq!(doc["namespace"], json!("ns"));
    assert_eq!(doc["deleted"]["job_id"], json!("j1"));
    assert_eq!(doc["deleted"]["state"], json!("dead"));
    let (code, err) = failure(&dueq(&service, &["job", "-n", "ns", "j1"]));
    assert_eq!(code, 1);
    assert!(err.starts_with("dueq job: NOT_FOUND: "), "{err}");

    let (code, err) = failure(&dueq(&service, &["job", "delete", "-n", "ns", "o1"]));
    assert_eq!(code, 1);
    assert!(
        err.starts_with("dueq job delete: FAILED_PRECONDITION: ") && err.contains("ReleaseJob"),
        "{err}"
    );
    let doc = json_of(&dueq(
        &service,
        &[
            "job",
            "release",
            "-n",
            "ns",
            "o1",
            "--count-attempt",
            "-o",
            "json",
        ],
    ));
    assert_eq!(doc["job"]["state"], json!("pending"));
    assert_eq!(doc["job"]["attempts"], json!(1));
    let (code, err) = failure(&dueq(&service, &["job", "release", "-n", "ns", "o1"]));
    assert_eq!(code, 1);
    assert!(
        err.starts_with("dueq job release: FAILED_PRECONDITION: ") && err.contains("pending"),
        "{err}"
    );
    let doc = json_of(&dueq(&service, &["job", "-n", "ns", "o1", "-o", "json"]));
    let errors = doc["job"]["errors"].as_array().expect("errors");
    assert_eq!(
        errors.last().map(|e| &e["message"]),
        Some(&json!("released by an operator"))
    );
}

/// Pins `dueq schedule next-run`: an RFC 3339 time with an offset moves the next run
/// (JSON shows it in UTC, the revision unchanged); a stale --expected-revision is
/// ABORTED, a time in the far past INVALID_ARGUMENT naming next_run_time, and a time
/// that is not RFC 3339 a usage error (exit 2, nothing sent).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schedule_next_run_moves_the_next_run_and_says_why_it_refuses() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut client = service.client().await;
    upsert(&mut client, "ns", every("s", 3600)).await;
    let out = json_of(&dueq(
        &service,
        &[
            "schedule",
            "next-run",
            "-n",
            "ns",
            "s",
            "2031-05-06T07:08:09.5+02:00",
            "-o",
            "json",
        ],
    ));
    assert_eq!(
        out["schedule"]["next_run_time"],
        json!("2031-05-06T05:08:09.500Z"),
        "{out}"
    );
    assert_eq!(out["schedule"]["revision"], json!(1), "{out}");

    let (code, err) = failure(&dueq(
        &service,
        &[
            "schedule",
            "next-run",
            "-n",
            "ns",
            "s",
            "2031-05-06T08:00:00Z",
            "--expected-revision",
            "7",
        ],
    ));
    assert_eq!(code, 1);
    assert!(
        err.starts_with("dueq schedule next-run: ABORTED: ") && err.contains("revision 1"),
        "{err}"
    );
    let (code, err) = failure(&dueq(
        &service,
        &[
            "schedule",
            "next-run",
            "-n",
            "ns",
            "s",
            "2001-01-01T00:00:00Z",
        ],
    ));
    assert_eq!(code, 1);
    assert!(
        err.starts_with("dueq schedule next-run: INVALID_ARGUMENT: ")
            && err.contains("next_run_time"),
        "{err}"
    );
    let out = dueq(
        &service,
        &["schedule", "next-run", "-n", "ns", "s", "tomorrow"],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("RFC 3339"), "{}", stderr(&out));
    let s = get(&mut client, "ns", "s").await;
    assert_eq!(
        rfc3339(&s.next_run_time).as_deref(),
        Some("2031-05-06T05:08:09.500Z")
    );
}

/// Writes `text` to FLOW.json in `dir`; its path.
fn flow_file(dir: &tempfile::TempDir, name: &str, text: &str) -> String {
    let path = dir.path().join(name);
    std::fs::write(&path, text).expect("write the flow file");
    path.to_string_lossy().into_owned()
}

/// The state of each node of a `dueq flow get -o json` document, by ref.
fn node_states(doc: &Value) -> std::collections::BTreeMap<String, String> {
    doc["nodes"]
        .as_array()
        .expect("nodes")
        .iter()
        .map(|n| {
            (
                n["ref"].as_str().expect("a ref").to_owned(),
                n["state"].as_str().expect("a state").to_owned(),
            )
        })
        .collect()
}

/// Pins (issue 34): `dueq flow enqueue --file` stores a flow from JSON (again: not
/// created twice), `dueq flow get` shows each node's state, dependencies and failed
/// dependency, `dueq queues` the WAITING count, `dueq jobs --state waiting` the
/// waiting nodes, `dueq job` the flow and ref; `dueq flow retry` re-arms what a
/// failure ended and `dueq flow cancel` ends what is unfinished.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flow_commands_enqueue_show_retry_and_cancel() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut client = service.client().await;
    let dir = tempfile::tempdir().expect("a temporary folder");
    let file = flow_file(
        &dir,
        "flow.json",
        r#"{"flow_id": "f1", "nodes": [
          {"ref": "a", "queue": "q", "name": "step.a", "payload": "hello", "job_id": "ja"},
          {"ref": "b", "queue": "q", "name": "step.b", "after": ["a"], "job_id": "jb",
           "headers": {"tenant": "acme"}},
          {"ref": "c", "queue": "w", "name": "step.c", "after": ["b"],
           "on_dependency_failure": "skip"},
          {"ref": "d", "queue": "w", "name": "step.d", "after": ["a"],
           "on_dependency_failure": "run"}
        ]}"#,
    );
    let enqueue = ["flow", "enqueue", "-n", "ns", "--file", &file, "-o", "json"];
    let doc = json_of(&dueq(&service, &enqueue));
    assert_eq!(keys(&doc), ["created", "flow_id", "job_ids", "namespace"]);
    assert_eq!(
        (&doc["flow_id"], &doc["created"]),
        (&json!("f1"), &json!(true))
    );
    assert_eq!(keys(&doc["job_ids"]), ["a", "b", "c", "d"]);
    assert_eq!(doc["job_ids"]["a"], json!("ja"));
    let again = json_of(&dueq(&service, &enqueue));
    assert_eq!(again["created"], json!(false));
    assert_eq!(again["job_ids"], doc["job_ids"]);

    let get = ["flow", "get", "-n", "ns", "f1", "-o", "json"];
    let flow = json_of(&dueq(&service, &get));
    assert_eq!(flow["state"], json!("running"));
    assert_eq!(flow["node_count"], json!(4));
    let states = node_states(&flow);
    assert_eq!(states["a"], "pending");
    assert_eq!(
        (states["b"].as_str(), states["c"].as_str()),
        ("waiting", "waiting")
    );
    let c = &flow["nodes"].as_array().expect("nodes")[2];
    assert_eq!(
        c["after"],
        json!(["b"]),
        "stored order: every node after its dependencies"
    );
    assert_eq!(c["on_dependency_failure"], json!("skip"));

    let queues = json_of(&dueq(&service, &["queues", "-n", "ns", "-o", "json"]));
    assert_eq!(queues["queues"][0]["waiting"], json!(1), "b waits in q");
    assert_eq!(
        queues["queues"][1]["waiting"],
        json!(2),
        "c and d wait in w"
    );
    let table = stdout(&dueq(&service, &["queues", "-n", "ns"]));
    assert!(table.contains("WAITING"), "{table}");
    let waiting = json_of(&dueq(
        &service,
        &["jobs", "-n", "ns", "q", "--state", "waiting", "-o", "json"],
    ));
    assert_eq!(ids(&waiting["jobs"], "job_id"), ["jb"]);
    let b = json_of(&dueq(&service, &["job", "-n", "ns", "jb", "-o", "json"]));
    assert_eq!(
        (&b["job"]["flow_id"], &b["job"]["flow_ref"]),
        (&json!("f1"), &json!("b"))
    );
    assert_eq!(b["job"]["headers"], json!({"tenant": "acme"}));
    let shown = stdout(&dueq(&service, &["job", "-n", "ns", "jb"]));
    assert!(
        shown
            .lines()
            .any(|l| l.contains("flow") && l.contains("f1")),
        "{shown}"
    );

    // a fails for good: b is cancelled (rule cancel), c skipped after it, d runs.
    let claimed = claim_job(&mut client, &["q"], 0, None).await.expect("a");
    assert_eq!(claimed.payload, b"hello");
    fail_job_for_good(&mut client, &claimed).await;
    let flow = json_of(&dueq(&service, &get));
    let states = node_states(&flow);
    assert_eq!(
        [&states["a"], &states["b"], &states["c"], &states["d"]],
        ["dead", "cancelled", "skipped", "pending"]
    );
    let table = stdout(&dueq(&service, &["flow", "get", "-n", "ns", "f1"]));
    for header in ["REF", "STATE", "QUEUE", "AFTER", "ATTEMPTS", "FAILED_DEP"] {
        assert!(table.contains(header), "{table}");
    }
    let row = table
        .lines()
        .find(|l| l.contains("cancelled") && l.contains('┆'));
    let row = row.unwrap_or_else(|| panic!("{table}"));
    let cells: Vec<&str> = row
        .split('┆')
        .map(|c| c.trim_matches(|c: char| c == '│' || c.is_whitespace()))
        .collect();
    assert_eq!(cells, ["b", "cancelled", "q", "a", "0", "a"], "{row}");

    let retried = json_of(&dueq(
        &service,
        &["flow", "retry", "-n", "ns", "f1", "-o", "json"],
    ));
    assert_eq!(retried["state"], json!("running"), "{retried}");
    let states = node_states(&json_of(&dueq(&service, &get)));
    assert_eq!(
        (states["a"].as_str(), states["b"].as_str()),
        ("pending", "waiting")
    );

    let cancelled = stdout(&dueq(&service, &["flow", "cancel", "-n", "ns", "f1"]));
    assert!(
        cancelled.starts_with("cancelled flow f1: now"),
        "{cancelled}"
    );
    let states = node_states(&json_of(&dueq(&service, &get)));
    // c's dependency b ended cancelled, so c ends by its rule: skipped.
    assert_eq!(
        [&states["a"], &states["b"], &states["c"], &states["d"]],
        ["cancelled", "cancelled", "skipped", "cancelled"]
    );
}

/// Claimed job `claimed` of "ns" fails with a non-retryable error.
async fn fail_job_for_good(client: &mut Client, claimed: &proto::ClaimedJob) {
    client
        .fail_job(proto::FailJobRequest {
            namespace: "ns".into(),
            job_id: claimed.job_id.clone(),
            lease_token: claimed.lease_token.clone(),
            error: "boom".into(),
            non_retryable: true,
            ..Default::default()
        })
        .await
        .expect("fail");
}

/// Pins: the flow commands' bad input: a file that cannot be read or is not a flow
/// (naming where) exits 2 sending nothing; a flow the service refuses (a cycle) or
/// an unknown flow exits 1 with the service's code.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flow_commands_refuse_bad_input() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let dir = tempfile::tempdir().expect("a temporary folder");
    let enqueue = |file: &str| dueq(&service, &["flow", "enqueue", "-n", "ns", "--file", file]);

    let missing = dir.path().join("missing.json");
    let (code, err) = failure(&enqueue(&missing.to_string_lossy()));
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("cannot read"), "{err}");
    let rule = flow_file(
        &dir,
        "rule.json",
        r#"{"nodes": [{"ref": "a", "queue": "q", "name": "n", "on_dependency_failure": "maybe"}]}"#,
    );
    let (code, err) = failure(&enqueue(&rule));
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("nodes[0].on_dependency_failure"), "{err}");
    let unknown = flow_file(&dir, "unknown.json", r#"{"nodes": [], "flows": 1}"#);
    let (code, err) = failure(&enqueue(&unknown));
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("flows"), "{err}");
    let cycle = flow_file(
        &dir,
        "cycle.json",
        r#"{"nodes": [
          {"ref": "a", "queue": "q", "name": "n", "after": ["b"]},
          {"ref": "b", "queue": "q", "name": "n", "after": ["a"]}
        ]}"#,
    );
    let (code, err) = failure(&enqueue(&cycle));
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("INVALID_ARGUMENT"), "{err}");
    let (code, err) = failure(&dueq(&service, &["flow", "get", "-n", "ns", "nope"]));
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("NOT_FOUND"), "{err}");
    let (code, err) = failure(&dueq(&service, &["flow", "cancel", "-n", "ns", "nope"]));
    assert_eq!((code, err.contains("NOT_FOUND")), (1, true), "{err}");
    // Nothing was stored by the refused calls.
    let queues = json_of(&dueq(&service, &["queues", "-n", "ns", "-o", "json"]));
    assert_eq!(queues["queues"], json!([]), "{queues}");
}
