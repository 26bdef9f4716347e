//! The CLI: `dueq jobs dead-groups` (a table, or JSON), and `dueq retry-dead` /
//! `dueq purge` of one group (`--fingerprint`).

use std::process::{Command, Output};

use serde_json::{json, Value};

use super::*;

/// `dueq <args> --addr <service>`, with no DUEQ_ variable of this process.
fn dueq(service: &Service, args: &[&str]) -> Output {
    tokio::task::block_in_place(|| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_dueq"));
        for (key, _) in std::env::vars() {
            if key.starts_with("DUEQ_") {
                command.env_remove(key);
            }
        }
        command.args(args).args(["--addr", &service.endpoint()]);
        command.output().expect("run dueq")
    })
}

fn json_of(out: &Output) -> Value {
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

/// Pins: `dueq jobs dead-groups` lists the groups largest first (JSON with stable
/// keys, or a table); `retry-dead --fingerprint` and `purge --state dead
/// --fingerprint` act on one group; a bad fingerprint exits non-zero naming the field.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dead_groups_retry_dead_and_purge_by_fingerprint() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut jobs = of_kind("q", 'A', 2);
    jobs.extend(of_kind("q", 'B', 1));
    kill(&mut c, jobs).await;

    let listed = json_of(&dueq(
        &service,
        &["jobs", "dead-groups", "-n", "ns", "-o", "json"],
    ));
    let groups = listed["groups"].as_array().expect("groups");
    assert_eq!(groups.len(), 2, "{listed}");
    assert_eq!(groups[0]["count"], json!(2));
    assert_eq!(groups[0]["sample_error"], json!(message('A', 1)));
    assert_eq!(listed["more"], json!(false));
    let fp_a = groups[0]["fingerprint"]
        .as_str()
        .expect("fingerprint")
        .to_owned();
    let fp_b = groups[1]["fingerprint"]
        .as_str()
        .expect("fingerprint")
        .to_owned();
    let table = dueq(
        &service,
        &["jobs", "dead-groups", "-n", "ns", "--queue", "q"],
    );
    let text = String::from_utf8_lossy(&table.stdout);
    assert!(
        text.contains("FINGERPRINT") && text.contains(&fp_a),
        "{text}"
    );

    let retried = json_of(&dueq(
        &service,
        &[
            "retry-dead",
            "-n",
            "ns",
            "q",
            "--fingerprint",
            &fp_a,
            "-o",
            "json",
        ],
    ));
    assert_eq!(
        retried,
        json!({"namespace": "ns", "queue": "q", "fingerprint": fp_a, "retried": 2, "more": false})
    );
    let purged = json_of(&dueq(
        &service,
        &[
            "purge",
            "-n",
            "ns",
            "q",
            "--state",
            "dead",
            "--fingerprint",
            &fp_b,
            "--yes",
            "-o",
            "json",
        ],
    ));
    assert_eq!(purged["purged"], json!(1));
    let none = json_of(&dueq(
        &service,
        &["jobs", "dead-groups", "-n", "ns", "-o", "json"],
    ));
    assert_eq!(none["groups"], json!([]));
    assert_eq!(listed_queue(&mut c, "q").await.pending, 2);

    let bad = dueq(
        &service,
        &["retry-dead", "-n", "ns", "q", "--fingerprint", "nope"],
    );
    assert!(!bad.status.success());
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(err.contains("error_fingerprint"), "{err}");
}
