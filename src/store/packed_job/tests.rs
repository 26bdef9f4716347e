use std::collections::BTreeMap;

use rmpv::Value;

use super::{packed_job, pos, FIELDS, REQUIRED, STATES};
use crate::{
    domain::{
        limits::PageShape, Backoff, BackoffKind, Dedup, DedupMode, Failure, JobRecord, JobSpec,
        JobState, RunAt,
    },
    store::{
        ops::{
            claim_jobs::ClaimJobs, enqueue_jobs::EnqueueJobs, fail_job::FailJob, get_job::GetJob,
            list_jobs::ListJobs,
        },
        Store, StoreError,
    },
    testing::TestRedis,
};

const JOB_LUA: &str = include_str!("../../../lua/lib/job.lua");

/// `local A, B = 1, 2` lines of a Lua source whose names all start with `prefix`, as
/// (name, value) pairs; a line whose names and values do not pair up fails.
fn lua_locals<'a>(source: &'a str, prefix: &str) -> Vec<(&'a str, &'a str)> {
    let mut pairs = Vec::new();
    for line in source.lines() {
        let Some((names, values)) = line
            .strip_prefix("local ")
            .and_then(|rest| rest.split_once(" = "))
        else {
            continue;
        };
        let names: Vec<&str> = names.split(',').map(str::trim).collect();
        if !names.iter().all(|name| name.starts_with(prefix)) {
            continue;
        }
        let values: Vec<&str> = values.split(',').map(str::trim).collect();
        assert_eq!(names.len(), values.len(), "job.lua: {line}");
        pairs.extend(names.into_iter().zip(values));
    }
    pairs
}

/// Every `P_<NAME>` of job.lua is `pos::<NAME>` here with the same number, and every
/// position here is named there; the bounds and state codes agree too.
#[test]
fn positions_are_named_as_job_lua_names_them() {
    let lua: BTreeMap<String, usize> = lua_locals(JOB_LUA, "P_")
        .into_iter()
        .map(|(name, value)| {
            let n = value.parse().unwrap_or_else(|_| panic!("{name} = {value}"));
            (name["P_".len()..].to_owned(), n)
        })
        .collect();
    let rust: BTreeMap<String, usize> = pos::ALL
        .iter()
        .map(|(name, n)| ((*name).to_owned(), *n))
        .collect();
    assert_eq!(lua, rust, "job.lua P_* against packed_job.rs pos");
    let numbers: Vec<usize> = pos::ALL.iter().map(|(_, n)| *n).collect();
    assert_eq!(
        numbers,
        (1..=FIELDS).collect::<Vec<_>>(),
        "every position, once"
    );
    assert!(JOB_LUA.contains(&format!("local REQUIRED, FIELDS = {REQUIRED}, {FIELDS}\n")));
    let names: Vec<String> = STATES.iter().map(|s| format!("'{}'", s.as_str())).collect();
    assert!(
        JOB_LUA.contains(&format!("local STATE_NAME = {{ {} }}\n", names.join(", "))),
        "STATE_NAME lists the state codes in STATES' order"
    );
}

/// A sound record's 17 required positions, with `changes` (past the end: filled with
/// empty positions up to it).
fn record(changes: &[(usize, Value)]) -> Vec<u8> {
    let mut items: Vec<Value> = vec![
        "q".into(),
        "n".into(),
        "".into(),
        0.into(),
        1.into(),
        1.into(),
        1.into(),
        0.into(),
        3.into(),
        0.into(),
        (-1).into(),
        (-3600).into(),
        0.into(),
        (-30).into(),
        1_000.into(),
        0.into(),
        0.into(),
    ];
    for (position, value) in changes {
        while items.len() < *position {
            items.push("".into());
        }
        items[position - 1] = value.clone();
    }
    let mut bytes = Vec::new();
    rmpv::encode::write_value(&mut bytes, &Value::Array(items)).unwrap_or_else(|e| panic!("{e}"));
    bytes
}

#[test]
fn a_sound_record_decodes() {
    let job = packed_job("j".into(), &record(&[]), Vec::new()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(job.backoff.kind, BackoffKind::Exponential);
    assert_eq!(
        (job.backoff.base_ms, job.backoff.cap_ms),
        (1_000, 3_600_000)
    );
    assert_eq!((job.create_ms, job.run_at_ms), (1_000, Some(1_000)));
    assert_eq!(job.state, JobState::Pending);
    assert!(job.errors.is_empty() && job.headers.is_empty());
}

/// Corrupt data is reported as corrupt, naming the position, not turned into a default.
#[test]
fn corrupt_positions_are_errors_not_defaults() {
    for (position, value) in [
        (pos::BACKOFF, Value::from(2)),
        (pos::JITTER, Value::from("lots")),
        (pos::JITTER, Value::from(1_500)),
        (pos::PRIORITY, Value::from(4_294_967_296_i64)),
        (pos::ATTEMPTS, Value::from(-1)),
        (pos::STATE, Value::from(9)),
        (pos::ERRORS, Value::from("not json")),
        (pos::HEADERS, Value::from("[1]")),
        (pos::CREATED, Value::from("")),
        (pos::QUEUE, Value::from(5)),
    ] {
        match packed_job(
            "j".into(),
            &record(&[(position, value.clone())]),
            Vec::new(),
        ) {
            Err(StoreError::Corrupt { what, detail }) => {
                assert_eq!(what, "job j");
                assert!(
                    detail.starts_with(&format!("position {position}:")),
                    "{detail}"
                );
            }
            other => panic!("position {position} = {value}: {other:?}"),
        }
    }
}

#[test]
fn bytes_that_are_not_a_record_are_corrupt_naming_the_job() {
    let not_msgpack = packed_job("j".into(), &[0xc1], Vec::new());
    let a_map = packed_job("j".into(), &[0x80], Vec::new());
    let short = packed_job("j".into(), &[0x91, 0x01], Vec::new());
    for (case, result) in [
        ("not msgpack", not_msgpack),
        ("a map", a_map),
        ("one position", short),
    ] {
        match result {
            Err(StoreError::Corrupt { what, .. }) => assert_eq!(what, "job j", "{case}"),
            other => panic!("{case}: {other:?}"),
        }
    }
}

fn spec(id: &str) -> JobSpec {
    JobSpec {
        id: id.into(),
        queue: "q".into(),
        name: "n".into(),
        payload: b"{}".to_vec(),
        headers: BTreeMap::new(),
        priority: 0,
        run_at: RunAt::Now,
        max_attempts: 3,
        backoff: Backoff {
            kind: BackoffKind::Exponential,
            base_ms: 1_000,
            cap_ms: 60_000,
            jitter: 0.0,
        },
        lease_ms: 30_000,
        dedup: None,
        retention: Default::default(),
        flow: Default::default(),
    }
}

/// Jobs holding every kind of value a record keeps: a plain one; binary payload,
/// headers, negative priority, fixed backoff with a jitter kept as text, dedup; and a
/// payload kept in a key of its own.
fn specs() -> Vec<JobSpec> {
    let mut headers = BTreeMap::new();
    headers.insert("trace".to_owned(), "t-1 \u{e9}".to_owned());
    vec![
        spec("plain"),
        JobSpec {
            payload: vec![0, 159, 146, 150, 255],
            headers,
            priority: -7,
            max_attempts: 9,
            backoff: Backoff {
                kind: BackoffKind::Fixed,
                base_ms: 1_500,
                cap_ms: 1_500,
                jitter: 0.3333,
            },
            lease_ms: 12_345,
            dedup: Some(Dedup {
                key: "d-1".into(),
                ttl_ms: 60_000,
                mode: DedupMode::Skip,
            }),
            ..spec("binary, headers, fixed backoff, dedup")
        },
        JobSpec {
            payload: vec![b'x'; 5_000],
            backoff: Backoff {
                jitter: 0.25,
                ..spec("").backoff
            },
            ..spec("payload in its own key")
        },
    ]
}

/// A claimed job holds what its spec asked for, leased to `worker-1`.
fn assert_claimed_as_specified(job: &JobRecord, spec: &JobSpec) {
    assert_eq!(job.id, spec.id);
    let what = &spec.id;
    assert_eq!((&job.queue, &job.name), (&spec.queue, &spec.name), "{what}");
    assert_eq!(job.payload, spec.payload, "{what}");
    assert_eq!(job.headers, spec.headers, "{what}");
    assert_eq!(job.priority, spec.priority, "{what}");
    assert_eq!(job.max_attempts, spec.max_attempts, "{what}");
    assert_eq!(job.backoff, spec.backoff, "{what}");
    assert_eq!(job.lease_ms, spec.lease_ms, "{what}");
    let dedup = spec.dedup.as_ref().map(|d| d.key.as_str()).unwrap_or("");
    assert_eq!(job.dedup_key, dedup, "{what}");
    assert_eq!((job.state, job.attempts), (JobState::Active, 1), "{what}");
    assert_eq!(job.worker, "worker-1", "{what}");
    assert!(
        !job.lease_token.is_empty() && job.lease_until_ms.is_some(),
        "{what}"
    );
}

fn claim<'a>(queues: &'a [String], token_base: &'static str) -> ClaimJobs<'a> {
    ClaimJobs {
        queues,
        worker: "worker-1",
        lease_ms: None,
        max_jobs: 10,
        token_base,
        max_bytes: 1 << 20,
        acks: &[],
        results: &[],
        receipt: false,
        group: &[],
    }
}

/// Every job of queue "q", as ListJobs shows it in the full or basic view.
async fn listed(store: &Store, full: bool) -> Vec<JobRecord> {
    let page = PageShape {
        size: 10,
        full,
        max_bytes: 1 << 20,
    };
    let none = crate::domain::JobFilter::default();
    let list = ListJobs {
        queue: "q",
        after: None,
        page,
        state: None,
        filter: &none,
    };
    let listed = store
        .run("ns", &list)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    listed.jobs
}

/// Every kind of value survives Lua's packing and the one decoder: a claim returns
/// the jobs as enqueued, one fails and is claimed again with its error history, and
/// GetJob and ListJobs read each the same (ListJobs' basic view without payload and
/// headers).
#[tokio::test]
async fn every_kind_of_value_reads_back_as_it_was_written() {
    let redis = TestRedis::start().await;
    let store = redis.store();
    let specs = specs();
    let enqueue = EnqueueJobs {
        namespace: "ns",
        jobs: &specs,
        max_jobs: 0,
    };
    let enqueued = store
        .run("ns", &enqueue)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(enqueued.iter().all(Result::is_ok), "{enqueued:?}");
    let queues = ["q".to_owned()];
    let first = store
        .run("ns", &claim(&queues, "a"))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(first.jobs.len(), 3);
    for spec in &specs {
        let job = first.jobs.iter().find(|job| job.id == spec.id);
        assert_claimed_as_specified(job.unwrap_or_else(|| panic!("{} unclaimed", spec.id)), spec);
    }
    let failure = Failure {
        error: "boom \"quoted\"".into(),
        retry_after_ms: Some(0),
        non_retryable: false,
    };
    let plain = first.jobs.iter().find(|job| job.id == "plain");
    let plain = plain.unwrap_or_else(|| panic!("plain unclaimed"));
    let fail = FailJob {
        id: &plain.id,
        token: &plain.lease_token,
        failure: &failure,
        random: 0.5,
    };
    store
        .run("ns", &fail)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let again = store
        .run("ns", &claim(&queues, "b"))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(again.jobs.len(), 1, "the failed job is claimable again");
    assert_eq!(again.jobs[0].attempts, 2);
    let errors: Vec<&str> = again.jobs[0]
        .errors
        .iter()
        .map(|e| e.message.as_str())
        .collect();
    assert_eq!(errors, [failure.error.as_str()]);
    let others = first.jobs.iter().filter(|job| job.id != "plain");
    let claimed: Vec<&JobRecord> = again.jobs.iter().chain(others).collect();
    for job in &claimed {
        let read = store.run("ns", &GetJob { id: &job.id }).await;
        let read = read.unwrap_or_else(|e| panic!("get: {e}"));
        assert_eq!(read.as_ref(), Some(*job));
    }
    let mut full = listed(&store, true).await;
    full.sort_by_key(|job| job.seq);
    let mut by_seq = claimed.clone();
    by_seq.sort_by_key(|job| job.seq);
    assert_eq!(full.iter().collect::<Vec<_>>(), by_seq);
    for (basic, job) in listed(&store, false).await.iter().zip(&full) {
        let bare = JobRecord {
            payload: Vec::new(),
            headers: BTreeMap::new(),
            ..(*job).clone()
        };
        assert_eq!(basic, &bare);
    }
}
