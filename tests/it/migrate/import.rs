//! Import from @boringnode/queue: its schedules, written by the library itself under
//! node, come over with their timing and state, idempotently, the source untouched
//! unless asked.

use std::collections::{BTreeSet, HashMap};

use super::checks::*;
use crate::common::*;

/// A temporary folder with the npm fixture installed; panics if node or npm is
/// missing or the install fails.
fn boringnode_fixture() -> tempfile::TempDir {
    tools::require("node");
    tools::require("npm");
    let dir = tempfile::tempdir().expect("temp dir");
    let fixtures =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/boringnode");
    for file in [
        "package.json",
        "make-schedules.mjs",
        "node20-shim.mjs",
        "node20-shim-hooks.mjs",
        "node20-fs-promises.mjs",
    ] {
        std::fs::copy(fixtures.join(file), dir.path().join(file)).expect("copy fixture");
    }
    let out = std::process::Command::new("npm")
        .args([
            "install",
            "--no-audit",
            "--no-fund",
            "@boringnode/queue@0.6.0",
            "ioredis",
        ])
        .current_dir(dir.path())
        .output()
        .expect("run npm");
    assert!(
        out.status.success(),
        "npm install of the @boringnode/queue fixture failed ({}): {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    dir
}

const BN: &str = "boringnode::queue::schedules::";

#[tokio::test]
#[ignore = "needs node"]
async fn import_from_boringnode_queue() {
    let dir = tokio::task::spawn_blocking(boringnode_fixture)
        .await
        .expect("fixture");
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut a = admin(&service).await;
    let mut conn = redis.conn().await;

    let url = redis.url();
    let path = dir.path().to_owned();
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new("node")
            .args(["--import", "./node20-shim.mjs", "make-schedules.mjs"])
            .env("REDIS_URL", url)
            .current_dir(path)
            .output()
            .expect("run node")
    })
    .await
    .expect("node");
    assert!(
        out.status.success(),
        "node make-schedules.mjs failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("boringnode says:\n{}", String::from_utf8_lossy(&out.stdout));

    let ids = [
        "nightly-report",
        "HeartbeatJob",
        "weekly-newsletter",
        "tick-every-second",
        "tick-once",
    ];
    let members: BTreeSet<String> =
        query(&mut conn, cmd("SMEMBERS").arg(format!("{BN}index"))).await;
    assert_eq!(
        members,
        ids.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>()
    );
    let source = contents(&mut conn, "boringnode::*").await;
    let src = |id: &str| -> HashMap<String, Vec<u8>> {
        match &source[format!("{BN}{id}").as_bytes()] {
            Val::Hash(h) => h
                .iter()
                .map(|(k, v)| (String::from_utf8_lossy(k).into_owned(), v.clone()))
                .collect(),
            other => panic!("{id}: {other:?}"),
        }
    };
    let num = |h: &HashMap<String, Vec<u8>>, f: &str| -> i64 {
        String::from_utf8_lossy(&h[f])
            .parse()
            .unwrap_or_else(|_| panic!("{f}"))
    };
    assert_eq!(num(&src("tick-every-second"), "run_count"), 1);
    assert_eq!(src("tick-once")["next_run_at"], b"");

    let import = proto::MigrateRequest {
        namespace: "imported".into(),
        source: proto::MigrateSource::BoringnodeQueue as i32,
        ..Default::default()
    };
    let done = migrate_done(&mut a, import.clone()).await;
    assert_eq!(done.imported, ids.len() as u64, "{done:?}");
    assert_eq!(done.already_present, 0);
    assert!(done.problems.is_empty(), "{:?}", done.problems);

    for id in ids {
        let s = get(&mut c, "imported", id).await;
        let h = src(id);
        assert_eq!(s.job_name.as_bytes(), h["name"].as_slice(), "{id}");
        assert_eq!(s.payload, h["payload"], "{id}: payload is the JSON text");
        assert_eq!(s.run_count as i64, num(&h, "run_count"), "{id}");
        let expected = match (h["status"].as_slice(), id) {
            (_, "tick-once") => proto::ScheduleStatus::Completed,
            (b"paused", _) => proto::ScheduleStatus::Paused,
            _ => proto::ScheduleStatus::Active,
        };
        assert_eq!(s.status, expected as i32, "{id}");
        if expected == proto::ScheduleStatus::Active {
            assert_eq!(ms(&s.next_run_time), num(&h, "next_run_at"), "{id}");
        }
    }
    let nightly = get(&mut c, "imported", "nightly-report").await;
    assert_eq!(
        nightly.timing,
        Some(proto::schedule::Timing::Cron("0 3 * * *".into()))
    );
    assert_eq!(nightly.timezone, "Europe/Berlin");
    let heartbeat = get(&mut c, "imported", "HeartbeatJob").await;
    assert_eq!(
        heartbeat.timing,
        Some(proto::schedule::Timing::Every(prost_types::Duration {
            seconds: 60,
            nanos: 0
        }))
    );
    assert_eq!(get(&mut c, "imported", "tick-once").await.run_limit, 1);
    assert_eq!(
        contents(&mut conn, "boringnode::*").await,
        source,
        "the source is untouched"
    );

    // Twice: already present, nothing changes.
    let dueq_before = contents(&mut conn, &ns_pattern("imported")).await;
    let again = migrate_done(&mut a, import.clone()).await;
    assert_eq!(
        (again.imported, again.already_present),
        (0, ids.len() as u64),
        "{again:?}"
    );
    assert_eq!(
        contents(&mut conn, &ns_pattern("imported")).await,
        dueq_before
    );
    assert_eq!(contents(&mut conn, "boringnode::*").await, source);

    // Served.
    let now = redis_now(&mut conn).await;
    force_due(&mut conn, "imported", "HeartbeatJob", now - 5).await;
    let occ = try_claim(&mut c, "imported", 0)
        .await
        .expect("claim")
        .expect("due");
    let claimed = occ.schedule.expect("s");
    assert!(ids.contains(&claimed.id.as_str()), "{}", claimed.id);
    let st = status(&mut a, "imported").await;
    assert!(!st.needs_migrate && !st.index_damaged, "{st:?}");

    // delete_source: the source records and index are gone.
    let gone = migrate_done(
        &mut a,
        proto::MigrateRequest {
            delete_source: true,
            ..import
        },
    )
    .await;
    assert_eq!(gone.already_present, ids.len() as u64);
    let left = contents(&mut conn, &format!("{BN}*")).await;
    assert!(
        left.is_empty(),
        "source schedules left: {:?}",
        left.keys()
            .map(|k| String::from_utf8_lossy(k).into_owned())
            .collect::<Vec<_>>()
    );
    assert_eq!(
        get(&mut c, "imported", "nightly-report").await.job_name,
        "NightlyReportJob"
    );
}
