//! The CLI side of issue 33: `dueq jobs` with filter flags and `dueq bulk
//! retry|cancel|delete`, looping over a query's batches, with a progress bar on a
//! terminal.

use std::process::{Command, Output};

use serde_json::Value;

use super::*;
use crate::common::*;

/// `dueq <args> --addr <service>`, without any DUEQ_ variable of the environment.
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
    assert!(
        out.status.success(),
        "exit {:?}\n{}{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("one JSON document")
}

/// 150 pending jobs of tenant acme and 50 of globex in queue "q".
async fn tenants(c: &mut Client) {
    let jobs = (0..200)
        .map(|i| {
            let tenant = if i < 150 { "acme" } else { "globex" };
            job_with("q", &format!("j{i}"), "x", &[("tenant", tenant)])
        })
        .collect();
    enqueue_many(c, jobs).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_filters_a_listing_and_loops_a_bulk_action_to_its_end() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    tenants(&mut c).await;
    let listed = json_of(&dueq(
        &service,
        &[
            "jobs",
            "-n",
            "ns",
            "q",
            "--header",
            "tenant=acme",
            "--limit",
            "1000",
            "-o",
            "json",
        ],
    ));
    assert_eq!(
        listed["jobs"].as_array().map(Vec::len),
        Some(150),
        "{listed}"
    );
    let globex = json_of(&dueq(
        &service,
        &[
            "jobs",
            "-n",
            "ns",
            "q",
            "--header",
            "tenant=globex",
            "-o",
            "json",
        ],
    ));
    assert_eq!(globex["jobs"].as_array().map(Vec::len), Some(50));

    let cancelled = json_of(&dueq(
        &service,
        &[
            "bulk",
            "cancel",
            "-n",
            "ns",
            "q",
            "--all-matching",
            "--state",
            "pending",
            "--header",
            "tenant=acme",
            "--no-progress",
            "-o",
            "json",
        ],
    ));
    assert_eq!(cancelled["applied"], 150, "{cancelled}");
    assert!(
        cancelled["calls"].as_u64() >= Some(2),
        "100 a call: {cancelled}"
    );
    assert_eq!(
        ids_in(&mut c, "q", proto::JobState::Pending).await.len(),
        50
    );

    // A delete needs --yes: without it nothing is sent and the command exits 2.
    let refused = dueq(
        &service,
        &["bulk", "delete", "-n", "ns", "q", "--all-matching"],
    );
    assert_eq!(refused.status.code(), Some(2));
    assert_eq!(
        ids_in(&mut c, "q", proto::JobState::Cancelled).await.len(),
        150
    );
    // The filter flags select with --all-matching only.
    let mixed = dueq(
        &service,
        &[
            "bulk", "retry", "-n", "ns", "q", "--id", "j1", "--name", "x",
        ],
    );
    assert_eq!(mixed.status.code(), Some(2));

    let deleted = json_of(&dueq(
        &service,
        &[
            "bulk", "delete", "-n", "ns", "q", "--id", "j0,j1", "--id", "j199", "--id", "nope",
            "--yes", "-o", "json",
        ],
    ));
    assert_eq!(
        (deleted["applied"].as_u64(), deleted["skipped"].as_u64()),
        (Some(3), Some(1))
    );
    assert_eq!(deleted["skips"][0]["job_id"], "nope", "{deleted}");
    assert_eq!(deleted["skips"][0]["reason"], "not found", "{deleted}");
}

/// On a terminal (a pseudo-terminal from `script`), `dueq bulk ... --all-matching`
/// draws its progress on stderr as the batches go, then clears it and prints the
/// totals.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs script"]
async fn a_bulk_query_draws_its_progress_on_a_terminal() {
    tools::require("script");
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    tenants(&mut c).await;
    let command = format!(
        "{} bulk cancel -n ns q --all-matching --header tenant --addr {}",
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
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("ns/q examined"),
        "no progress drawn:\n{text:?}"
    );
    assert!(text.contains("cancelled 200 job(s) of queue q"), "{text}");
}
