//! Migrate's job phase: jobs stored by an earlier dueq in job layout 1 (a hash per
//! job, sorted-set ready and listing indexes) are refused until Migrate converts them
//! to layout 2, and come out with their state, leases, history, order and dedup keys
//! intact. The layout-1 data is written by layout 1's own scripts
//! (tests/fixtures/jobs_layout1), against a real redis-server and the real service.

use std::{collections::HashMap, time::Duration};

use deadpool_redis::redis::{self, aio::MultiplexedConnection};
use tonic::Code;

use crate::common::*;

/// A layout-1 script from tests/fixtures/jobs_layout1.
macro_rules! layout_1 {
    ($file:literal) => {
        include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/jobs_layout1/",
            $file
        ))
    };
}

const L1_ENQUEUE: &str = layout_1!("enqueue_jobs.lua");
const L1_CLAIM: &str = layout_1!("claim_jobs.lua");
const L1_ACK: &str = layout_1!("ack_job.lua");
const L1_FAIL: &str = layout_1!("fail_job.lua");

const PREFIXES: [&str; 6] = [
    "dueq:{ns}:j:",
    "dueq:{ns}:qr:",
    "dueq:{ns}:qd:",
    "dueq:{ns}:ql:",
    "dueq:{ns}:qj:",
    "dueq:{ns}:dd:",
];

/// A job as layout 1's enqueue script takes it.
struct L1Job<'a> {
    id: &'a str,
    queue: &'a str,
    priority: i32,
    payload: &'a [u8],
    delay_ms: Option<u64>,
    max_attempts: u32,
    dedup: &'a str,
}

impl<'a> L1Job<'a> {
    fn new(id: &'a str, queue: &'a str, priority: i32) -> Self {
        L1Job {
            id,
            queue,
            priority,
            payload: b"",
            delay_ms: None,
            max_attempts: 3,
            dedup: "",
        }
    }
}

async fn l1_enqueue(conn: &mut MultiplexedConnection, job: &L1Job<'_>) {
    let script = lua_script(L1_ENQUEUE);
    let mut call = script.prepare_invoke();
    call.key("dueq:{ns}:meta");
    for p in PREFIXES {
        call.arg(p);
    }
    let (when, when_ms) = match job.delay_ms {
        Some(ms) => ("delay", ms.to_string()),
        None => ("", String::new()),
    };
    call.arg("2")
        .arg(1)
        .arg(job.id)
        .arg(job.queue)
        .arg("layout-1 job");
    call.arg(job.payload)
        .arg(r#"{"trace":"t-1"}"#)
        .arg(job.priority);
    call.arg(when).arg(when_ms).arg(job.max_attempts);
    call.arg("exp").arg(1000).arg(60_000).arg("0").arg(30_000);
    let (ttl, mode) = if job.dedup.is_empty() {
        ("", "")
    } else {
        ("3600000", "skip")
    };
    call.arg(job.dedup).arg(ttl).arg(mode);
    let _: redis::Value = call.invoke_async(conn).await.expect("layout-1 enqueue");
}

/// Claims the next job of `queue` with layout 1's script; returns its lease token.
async fn l1_claim(conn: &mut MultiplexedConnection, queue: &str, token_base: &str) -> String {
    let script = lua_script(L1_CLAIM);
    let mut call = script.prepare_invoke();
    call.key("dueq:{ns}:jdone");
    for p in PREFIXES {
        call.arg(p);
    }
    call.arg(token_base)
        .arg(3_600_000)
        .arg(1)
        .arg("old-worker")
        .arg(64)
        .arg(queue);
    let reply: Vec<redis::Value> = call.invoke_async(conn).await.expect("layout-1 claim");
    assert_eq!(reply.get(3), Some(&redis::Value::Int(1)), "one job claimed");
    format!("{token_base}.1")
}

async fn l1_lease_call(conn: &mut MultiplexedConnection, src: &str, id: &str, extra: &[&str]) {
    let script = lua_script(src);
    let mut call = script.prepare_invoke();
    call.key("dueq:{ns}:jdone");
    for p in PREFIXES {
        call.arg(p);
    }
    call.arg(id);
    for e in extra {
        call.arg(*e);
    }
    let reply: Vec<redis::Value> = call.invoke_async(conn).await.expect("layout-1 call");
    assert_eq!(
        reply.first(),
        Some(&redis::Value::BulkString(b"ok".to_vec())),
        "layout-1 call on {id}"
    );
}

async fn hash(conn: &mut MultiplexedConnection, key: &str) -> HashMap<String, Vec<u8>> {
    cmd("HGETALL")
        .arg(key)
        .query_async(conn)
        .await
        .expect("HGETALL")
}

fn dry_run(dry_run: bool) -> proto::MigrateRequest {
    proto::MigrateRequest {
        dry_run,
        ..migrate_req("ns")
    }
}

/// Every job id ListJobs shows for `queue`, paging 7 at a time.
async fn list_all(client: &mut Client, queue: &str) -> Vec<String> {
    let jobs = list_all_jobs(client, "ns", queue, 7).await;
    jobs.into_iter().map(|j| j.job_id).collect()
}

/// Claims every claimable job of `queue` (one per call) and returns the ids in order.
async fn drain(client: &mut Client, queue: &str) -> Vec<String> {
    // Leases no test outlasts: however slow the draining, no job comes round twice.
    const HOUR_MS: u64 = 3_600_000;
    let mut ids = Vec::new();
    while let Some(claimed) = claim_job(client, &[queue], 0, Some(HOUR_MS)).await {
        ids.push(claimed.job_id);
    }
    ids
}

#[tokio::test]
async fn layout_1_jobs_are_refused_then_converted_with_everything_kept() {
    let redis = Redis::start().await;
    let mut conn = redis.conn().await;

    // Queue "q": pending jobs of three priorities, a delayed one, one with a dedup
    // key. Queue "work": one active (leased for an hour), one completed, one dead.
    let pending = [
        ("p1", 0),
        ("p2", 5),
        ("p3", 0),
        ("p4", 5),
        ("p5", 0),
        ("p6", -1),
    ];
    for (id, priority) in pending {
        let mut job = L1Job::new(id, "q", priority);
        job.payload = b"\x00\xffbinary";
        l1_enqueue(&mut conn, &job).await;
    }
    let mut delayed = L1Job::new("d1", "q", 0);
    delayed.delay_ms = Some(3_600_000);
    l1_enqueue(&mut conn, &delayed).await;
    let mut deduped = L1Job::new("k1", "q", -5);
    deduped.dedup = "order-7";
    l1_enqueue(&mut conn, &deduped).await;

    l1_enqueue(&mut conn, &L1Job::new("a1", "work", 0)).await;
    let active_token = l1_claim(&mut conn, "work", "lease-a").await;
    l1_enqueue(&mut conn, &L1Job::new("c1", "work", 0)).await;
    let done_token = l1_claim(&mut conn, "work", "lease-c").await;
    l1_lease_call(&mut conn, L1_ACK, "c1", &[&done_token]).await;
    let mut doomed = L1Job::new("x1", "work", 0);
    doomed.max_attempts = 1;
    l1_enqueue(&mut conn, &doomed).await;
    let dead_token = l1_claim(&mut conn, "work", "lease-x").await;
    l1_lease_call(
        &mut conn,
        L1_FAIL,
        "x1",
        &[&dead_token, "boom", "", "0", "0.5"],
    )
    .await;
    // A payload over 1 KiB moves out of its record as it is converted.
    let big = vec![7u8; 5000];
    let mut bulky = L1Job::new("big1", "bulk", 0);
    bulky.payload = &big;
    l1_enqueue(&mut conn, &bulky).await;
    // A record layout 1 could not have written: reported, left alone.
    let _: () = cmd("HSET")
        .arg("dueq:{ns}:j:broken")
        .arg("state")
        .arg("weird")
        .query_async(&mut conn)
        .await
        .expect("HSET");
    let before_a1 = hash(&mut conn, "dueq:{ns}:j:a1").await;
    let before_x1 = hash(&mut conn, "dueq:{ns}:j:x1").await;

    let service = Service::start(&redis.url()).await;
    let mut client = service.client().await;
    let mut admin = admin(&service).await;

    // Refused, with the fix, and nothing written.
    let before = snapshot(&mut conn).await;
    let refused = client
        .enqueue(job("q", "new"))
        .await
        .expect_err("enqueue is refused");
    assert_eq!(refused.code(), Code::FailedPrecondition);
    assert!(
        refused.message().contains("job layout 1")
            && refused.message().contains("QueueService/Migrate"),
        "{}",
        refused.message()
    );
    // Every job call is refused the same way, the fix included (ClaimJob once
    // answered without it): the code, the layout found and the Migrate command.
    let command = format!(
        "Run: grpcurl -plaintext -d '{{\"namespace\": \"ns\"}}' {} dueq.v1.QueueService/Migrate",
        service.addr
    );
    for (call, result) in job_calls(&mut client, "ns", "p1").await {
        let refusal = result.expect_err(call);
        assert_eq!(refusal.code(), Code::FailedPrecondition, "{call}");
        let message = refusal.message();
        assert!(
            message.contains("job layout 1") && message.ends_with(&command),
            "{call}: {message}"
        );
    }
    let st = status(&mut admin, "ns").await;
    assert!(st.jobs_need_migrate, "{st:?}");
    assert_eq!((st.jobs_layout, st.current_jobs_layout), (1, 2));
    assert!(st.message.contains("job layout 1"), "{}", st.message);
    assert_eq!(
        snapshot(&mut conn).await,
        before,
        "refused calls wrote nothing"
    );

    // A dry run counts and writes nothing.
    let dry = migrate(&mut admin, dry_run(true)).await.expect("migrate");
    let dry_done = dry.last().expect("DONE");
    assert_eq!(dry_done.phase, proto::MigratePhase::Done as i32);
    assert_eq!(dry_done.jobs_converted, 12, "{dry_done:?}");
    assert_eq!(
        snapshot(&mut conn).await,
        before,
        "a dry run writes nothing"
    );

    // The real run.
    let msgs = migrate(&mut admin, dry_run(false)).await.expect("migrate");
    assert!(
        msgs.iter()
            .any(|m| m.phase == proto::MigratePhase::Jobs as i32),
        "a job phase was reported"
    );
    let done = msgs.last().expect("DONE");
    assert_eq!(done.phase, proto::MigratePhase::Done as i32);
    assert_eq!(done.jobs_converted, 12);
    assert_eq!((done.from_jobs_layout, done.to_jobs_layout), (1, 2));
    assert_eq!(done.problems.len(), 1, "{:?}", done.problems);
    assert_eq!(done.problems[0].id, "broken");
    assert_eq!(
        hash(&mut conn, "dueq:{ns}:j:broken").await.get("state"),
        Some(&b"weird".to_vec()),
        "the unusable record is left as it was"
    );
    let st = status(&mut admin, "ns").await;
    assert!(!st.jobs_need_migrate, "{st:?}");
    assert_eq!(st.jobs_layout, 2);
    for gone in ["dueq:{ns}:qr:q", "dueq:{ns}:qj:q", "dueq:{ns}:qj:work"] {
        assert!(!exists(&mut conn, gone).await, "{gone} is removed");
    }

    // Records kept: the active job's lease, worker and attempts; the dead job's error
    // history; payload and headers; times.
    let a1 = get_job(&mut client, "a1").await;
    assert_eq!(state(&a1), proto::JobState::Active);
    assert_eq!(a1.attempts, 1);
    assert_eq!(a1.worker_id, "old-worker");
    let lease_until: i64 = String::from_utf8_lossy(&before_a1["lease_until"])
        .parse()
        .expect("lease_until");
    assert_eq!(ms(&a1.lease_deadline), lease_until);
    let created: i64 = String::from_utf8_lossy(&before_a1["created_ms"])
        .parse()
        .expect("created_ms");
    assert_eq!(ms(&a1.create_time), created);
    let x1 = get_job(&mut client, "x1").await;
    assert_eq!(state(&x1), proto::JobState::Dead);
    assert_eq!(x1.errors.len(), 1);
    assert_eq!(x1.errors[0].message, "boom");
    let finished: i64 = String::from_utf8_lossy(&before_x1["finished_ms"])
        .parse()
        .expect("finished_ms");
    assert_eq!(ms(&x1.finish_time), finished);
    let p1 = get_job(&mut client, "p1").await;
    assert_eq!(p1.payload, b"\x00\xffbinary");
    assert_eq!(p1.headers.get("trace").map(String::as_str), Some("t-1"));
    assert_eq!(
        state(&get_job(&mut client, "c1").await),
        proto::JobState::Completed
    );
    assert_eq!(
        state(&get_job(&mut client, "d1").await),
        proto::JobState::Delayed
    );

    // The old lease token still completes the active job.
    ack_job(&mut client, "a1", &active_token)
        .await
        .expect("the layout-1 lease token acks after the upgrade");

    // The dedup key still holds.
    let mut again = job("q", "again");
    again.dedup_key = "order-7".into();
    again.dedup_ttl = Some(dur(60_000));
    let dup = enqueue(&mut client, again).await;
    assert_eq!(dup.outcome, proto::EnqueueOutcome::Duplicate as i32);
    assert_eq!(dup.job_id, "k1");

    // Listing keeps enqueue order, and a new job lists after the converted ones.
    let new = enqueue(&mut client, job("q", "new")).await;
    assert_eq!(
        list_all(&mut client, "q").await,
        [
            "p1",
            "p2",
            "p3",
            "p4",
            "p5",
            "p6",
            "d1",
            "k1",
            new.job_id.as_str()
        ]
    );

    // Claim order: priority, then FIFO, as layout 1 would have handed them out.
    assert_eq!(
        drain(&mut client, "q").await,
        [
            "p2",
            "p4",
            "p1",
            "p3",
            "p5",
            new.job_id.as_str(),
            "p6",
            "k1"
        ]
    );

    // A second Migrate finds no jobs to convert.
    let again = migrate(&mut admin, dry_run(false)).await.expect("migrate");
    let last = again.last().expect("DONE");
    assert_eq!(last.jobs_converted, 0);
    assert_eq!((last.from_jobs_layout, last.to_jobs_layout), (2, 2));
}

/// Pins: a Migrate abandoned in its job phase releases its lock itself and leaves
/// jobs refused; the next Migrate finishes with layout 1's claim order.
#[tokio::test]
async fn a_migrate_interrupted_in_the_job_phase_leaves_jobs_refused_and_the_next_finishes() {
    let redis = Redis::start().await;
    let mut conn = redis.conn().await;
    // 3000 pending jobs, alternating two priorities: 60 ready-set batches of 50, so
    // the Migrate is still converting when the client's disconnect reaches it.
    let ids: Vec<String> = (0..3000).map(|i| format!("j{i:04}")).collect();
    for (i, id) in ids.iter().enumerate() {
        l1_enqueue(&mut conn, &L1Job::new(id, "q", (i % 2) as i32)).await;
    }
    // A lock ttl no test outlasts: the lock comes free because the abandoned Migrate
    // releases it, not because it expired.
    let mut config = config(&redis.url());
    config.migrate_lock_ttl = Duration::from_secs(3600);
    let service = Service::start_with(config).await;
    let mut client = service.client().await;
    let mut admin = admin(&service).await;

    // Walk away after the first job batch.
    let mut stream = admin
        .migrate(dry_run(false))
        .await
        .expect("migrate")
        .into_inner();
    loop {
        let msg = stream
            .message()
            .await
            .expect("stream")
            .expect("the migrate reaches the job phase");
        if msg.phase == proto::MigratePhase::Jobs as i32 && msg.jobs_converted > 0 {
            assert!(msg.jobs_converted < 3000, "stopped part-way: {msg:?}");
            break;
        }
    }
    drop(stream);

    // Still refused (some jobs converted, the layout not yet recorded).
    let patience = Patience::new("the abandoned Migrate to release its lock");
    let st = loop {
        let st = status(&mut admin, "ns").await;
        if !st.migration_running {
            break st;
        }
        patience.wait().await;
    };
    assert!(st.jobs_need_migrate, "{st:?}");
    let err = client
        .claim_job(claim_req(&["q"], 0, None))
        .await
        .expect_err("claims stay refused");
    assert_eq!(err.code(), Code::FailedPrecondition);

    // The next Migrate completes it, and claim order is exactly layout 1's.
    let msgs = migrate(&mut admin, dry_run(false)).await.expect("migrate");
    let done = msgs.last().expect("DONE");
    assert_eq!(done.to_jobs_layout, 2);
    assert!(done.problems.is_empty(), "{:?}", done.problems);
    let odd = ids.iter().skip(1).step_by(2);
    let even = ids.iter().step_by(2);
    let expected: Vec<String> = odd.chain(even).cloned().collect();
    assert_eq!(drain(&mut client, "q").await, expected);
    assert_eq!(list_all(&mut client, "q").await.len(), 3000);
}

#[tokio::test]
async fn all_namespaces_finds_a_namespace_that_holds_only_jobs() {
    let redis = Redis::start().await;
    let mut conn = redis.conn().await;
    l1_enqueue(&mut conn, &L1Job::new("only-job", "q", 0)).await;
    assert!(
        !exists(&mut conn, "dueq:{ns}:ids").await,
        "no schedule listing"
    );
    let service = Service::start(&redis.url()).await;
    let mut client = service.client().await;
    let mut admin = admin(&service).await;
    let msgs = migrate(
        &mut admin,
        proto::MigrateRequest {
            all_namespaces: true,
            ..Default::default()
        },
    )
    .await
    .expect("migrate");
    let done: Vec<_> = msgs
        .iter()
        .filter(|m| m.phase == proto::MigratePhase::Done as i32)
        .collect();
    assert_eq!(done.len(), 1, "{msgs:?}");
    assert_eq!(done[0].namespace, "ns");
    assert_eq!((done[0].jobs_converted, done[0].to_jobs_layout), (1, 2));
    assert_eq!(drain(&mut client, "q").await, ["only-job"]);
}

#[tokio::test]
async fn a_newer_job_layout_is_refused_and_never_converted_back() {
    let redis = Redis::start().await;
    let mut conn = redis.conn().await;
    let _: () = cmd("HSET")
        .arg("dueq:{ns}:meta")
        .arg("schema")
        .arg("2")
        .arg("jobs")
        .arg("3")
        .query_async(&mut conn)
        .await
        .expect("HSET");
    let service = Service::start(&redis.url()).await;
    let mut client = service.client().await;
    let mut admin = admin(&service).await;
    let before = snapshot(&mut conn).await;
    let refused = client
        .enqueue(job("q", "new"))
        .await
        .expect_err("a newer layout is not written to");
    assert_eq!(refused.code(), Code::FailedPrecondition);
    let err = admin
        .migrate(dry_run(false))
        .await
        .expect("stream")
        .into_inner()
        .message()
        .await
        .expect_err("Migrate refuses to convert back");
    assert_eq!(err.code(), Code::FailedPrecondition);
    assert!(err.message().contains("upgrade dueq"), "{}", err.message());
    assert_eq!(snapshot(&mut conn).await, before, "nothing was written");
}

fn ok<T>(result: Result<tonic::Response<T>, tonic::Status>) -> Result<(), tonic::Status> {
    result.map(drop)
}

/// Every job RPC on `ns` about job `id` (with a made-up lease token where one is
/// needed), each as `Ok(())` or its status.
async fn job_calls(
    c: &mut Client,
    ns: &str,
    id: &str,
) -> Vec<(&'static str, Result<(), tonic::Status>)> {
    let ns = ns.to_owned();
    let id = id.to_owned();
    let token = "t".to_owned();
    let mut claim = claim_req(&["q"], 0, None);
    claim.namespace = ns.clone();
    vec![
        ("ClaimJob", ok(c.claim_job(claim).await)),
        (
            "GetJob",
            ok(c.get_job(proto::GetJobRequest {
                namespace: ns.clone(),
                job_id: id.clone(),
            })
            .await),
        ),
        (
            "ListJobs",
            ok(c.list_jobs(proto::ListJobsRequest {
                namespace: ns.clone(),
                queue: "q".into(),
                ..Default::default()
            })
            .await),
        ),
        (
            "AckJob",
            ok(c.ack_job(proto::AckJobRequest {
                result: Vec::new(),
                namespace: ns.clone(),
                job_id: id.clone(),
                lease_token: token.clone(),
            })
            .await),
        ),
        (
            "FailJob",
            ok(c.fail_job(proto::FailJobRequest {
                namespace: ns.clone(),
                job_id: id.clone(),
                lease_token: token.clone(),
                error: "e".into(),
                ..Default::default()
            })
            .await),
        ),
        (
            "ExtendLease",
            ok(c.extend_lease(proto::ExtendLeaseRequest {
                progress: None,
                namespace: ns.clone(),
                job_id: id.clone(),
                lease_token: token,
                lease: Some(dur(1000)),
            })
            .await),
        ),
        (
            "CancelJob",
            ok(c.cancel_job(proto::CancelJobRequest {
                namespace: ns.clone(),
                job_id: id.clone(),
            })
            .await),
        ),
        (
            "RetryJob",
            ok(c.retry_job(proto::RetryJobRequest {
                namespace: ns.clone(),
                job_id: id.clone(),
            })
            .await),
        ),
        (
            "ReleaseJob",
            ok(c.release_job(proto::ReleaseJobRequest {
                namespace: ns.clone(),
                job_id: id.clone(),
                ..Default::default()
            })
            .await),
        ),
        (
            "DeleteJob",
            ok(c.delete_job(proto::DeleteJobRequest {
                namespace: ns.clone(),
                job_id: id,
            })
            .await),
        ),
        (
            "EnqueueBatch",
            ok(c.enqueue_batch(proto::EnqueueBatchRequest {
                namespace: ns,
                jobs: vec![job("q", "batched")],
            })
            .await),
        ),
    ]
}
