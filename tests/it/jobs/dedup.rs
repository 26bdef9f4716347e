//! Idempotent job ids and dedup keys, including under concurrency, and EnqueueBatch.

use std::collections::HashSet;

use tonic::Code;

use crate::common::*;

fn dedup(queue: &str, key: &str, mode: proto::DedupMode, ttl_ms: u64) -> proto::EnqueueRequest {
    let mut req = job(queue, "dedup");
    req.dedup_key = key.into();
    req.dedup_ttl = Some(dur(ttl_ms));
    req.dedup_mode = mode as i32;
    req
}

/// Sends 50 enqueues at once, alternating between two instances on one Redis;
/// returns the answers, and a client of the first instance (alive while `services`).
async fn fifty_at_once(
    redis: &Redis,
    request: impl Fn(usize) -> proto::EnqueueRequest,
) -> (Vec<proto::EnqueueResponse>, Client, [Service; 2]) {
    let services = [
        Service::start(&redis.url()).await,
        Service::start(&redis.url()).await,
    ];
    let clients = [services[0].client().await, services[1].client().await];
    let tasks: Vec<_> = (0..50)
        .map(|i| {
            let mut c = clients[i % 2].clone();
            let req = request(i);
            tokio::spawn(async move { enqueue(&mut c, req).await })
        })
        .collect();
    let mut answers = Vec::new();
    for t in tasks {
        answers.push(t.await.expect("task"));
    }
    let [first, _] = clients;
    (answers, first, services)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fifty_concurrent_enqueues_with_one_dedup_key_create_one_job() {
    let redis = Redis::start().await;
    let (answers, mut c, _services) = fifty_at_once(&redis, |_| {
        dedup("q", "order-42", proto::DedupMode::Skip, 60_000)
    })
    .await;
    let mut created = 0;
    let mut ids = HashSet::new();
    for r in answers {
        if r.outcome == proto::EnqueueOutcome::Created as i32 {
            created += 1;
        } else {
            assert_eq!(r.outcome, proto::EnqueueOutcome::Duplicate as i32);
        }
        ids.insert(r.job_id);
    }
    assert_eq!(created, 1);
    assert_eq!(ids.len(), 1, "every caller is told the one job's id");
    assert!(claim_job(&mut c, &["q"], 0, None).await.is_some());
    assert!(
        claim_job(&mut c, &["q"], 0, None).await.is_none(),
        "exactly one job"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fifty_concurrent_enqueues_with_one_job_id_create_one_job() {
    let redis = Redis::start().await;
    let (answers, mut c, _services) = fifty_at_once(&redis, |i| {
        let mut req = job("q", "idem");
        req.job_id = "invoice:2026-07:{acme}".into();
        req.payload = format!("attempt {i}").into_bytes();
        req
    })
    .await;
    let mut created = 0;
    for r in answers {
        assert_eq!(r.job_id, "invoice:2026-07:{acme}");
        if r.outcome == proto::EnqueueOutcome::Created as i32 {
            created += 1;
        }
    }
    assert_eq!(created, 1);
    let j = claim_job(&mut c, &["q"], 0, None).await.expect("one");
    assert_eq!(j.job_id, "invoice:2026-07:{acme}");
    assert!(claim_job(&mut c, &["q"], 0, None).await.is_none());
    // The id stays taken after completion (until pruned): still a duplicate.
    ack_job(&mut c, &j.job_id, &j.lease_token)
        .await
        .expect("ack");
    let mut req = job("other-queue", "idem");
    req.job_id = j.job_id.clone();
    let again = enqueue(&mut c, req).await;
    assert_eq!(again.outcome, proto::EnqueueOutcome::Duplicate as i32);
    assert_eq!(again.state, proto::JobState::Completed as i32);
}

#[tokio::test]
async fn replace_touches_only_pending_or_delayed_jobs() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;

    let mut first = dedup("q", "k", proto::DedupMode::Replace, 60_000);
    first.payload = b"v1".to_vec();
    let e = enqueue(&mut c, first).await;
    let mut second = dedup("q", "k", proto::DedupMode::Replace, 60_000);
    second.payload = b"v2".to_vec();
    second.headers.insert("h".into(), "2".into());
    let r = enqueue(&mut c, second).await;
    assert_eq!(r.outcome, proto::EnqueueOutcome::Replaced as i32);
    assert_eq!(r.job_id, e.job_id);
    let j = get_job(&mut c, &e.job_id).await;
    assert_eq!(j.payload, b"v2");
    assert_eq!(j.headers.get("h").map(String::as_str), Some("2"));

    // Once claimed, REPLACE does not change what the worker has: DUPLICATE.
    let claimed = claim_job(&mut c, &["q"], 0, None).await.expect("claim");
    assert_eq!(claimed.payload, b"v2");
    let mut third = dedup("q", "k", proto::DedupMode::Replace, 60_000);
    third.payload = b"v3".to_vec();
    let r = enqueue(&mut c, third).await;
    assert_eq!(r.outcome, proto::EnqueueOutcome::Duplicate as i32);
    assert_eq!(get_job(&mut c, &e.job_id).await.payload, b"v2");
}

/// Pins: EXTEND restarts a live dedup key's ttl and returns the existing job; once a
/// key has expired, the same key creates a new job.
#[tokio::test]
async fn extend_restarts_the_ttl_and_an_expired_key_allows_a_new_job() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;

    let e = enqueue(&mut c, dedup("q", "k", proto::DedupMode::Skip, 30_000)).await;
    let r = enqueue(&mut c, dedup("q", "k", proto::DedupMode::Extend, 60_000)).await;
    assert_eq!(r.outcome, proto::EnqueueOutcome::Extended as i32);
    assert_eq!(r.job_id, e.job_id);
    let ttl: i64 = cmd("PTTL")
        .arg("dueq:{ns}:dd:k")
        .query_async(&mut conn)
        .await
        .expect("PTTL");
    assert!(ttl > 50_000, "extended to 60 s: {ttl}");

    let short = enqueue(&mut c, dedup("q", "short", proto::DedupMode::Skip, 200)).await;
    let patience = Patience::new("the 200 ms dedup key to expire");
    while exists(&mut conn, "dueq:{ns}:dd:short").await {
        patience.wait().await;
    }
    let after = enqueue(&mut c, dedup("q", "short", proto::DedupMode::Skip, 200)).await;
    assert_eq!(after.outcome, proto::EnqueueOutcome::Created as i32);
    assert_ne!(after.job_id, short.job_id);
}

#[tokio::test]
async fn a_batch_is_stored_in_bounded_script_calls_with_a_result_per_item() {
    let redis = Redis::start().await;
    let service = Service::start_with(config_without_background_work(&redis.url())).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;

    let mut jobs: Vec<proto::EnqueueRequest> =
        (0..1000).map(|i| job("bulk", &format!("b{i}"))).collect();
    jobs[3].payload = vec![0; 2 * 1024 * 1024]; // over the 1 MiB default
    jobs[7].queue = String::new();
    jobs[9].dedup_key = "same".into();
    jobs[9].dedup_ttl = Some(dur(60_000));
    jobs[10] = jobs[9].clone();
    jobs[10].name = "b10".into();

    reset_stats(&mut conn).await;
    let mut big = c.clone().max_encoding_message_size(64 << 20);
    let mut request = tonic::Request::new(proto::EnqueueBatchRequest {
        namespace: "ns".into(),
        jobs,
    });
    request.set_timeout(std::time::Duration::from_secs(30));
    // 2 MiB fits the service's 4 MiB message cap but not its 1 MiB payload cap.
    let results = big
        .enqueue_batch(request)
        .await
        .expect("batch")
        .into_inner()
        .results;
    assert_eq!(
        script_calls(&mut conn).await,
        997_u64.div_ceil(32),
        "the 997 valid jobs go 32 to a script call, so no one script holds Redis long"
    );
    assert_eq!(results.len(), 1000);
    for (i, r) in results.iter().enumerate() {
        assert_eq!(r.index as usize, i);
    }
    let err = |i: usize| match &results[i].result {
        Some(proto::enqueue_batch_result::Result::Error(e)) => e.clone(),
        other => panic!("item {i}: {other:?}"),
    };
    let ok = |i: usize| match &results[i].result {
        Some(proto::enqueue_batch_result::Result::Ok(o)) => o.clone(),
        other => panic!("item {i}: {other:?}"),
    };
    assert_eq!(err(3).code, Code::ResourceExhausted as i32);
    assert!(
        err(3).message.starts_with("jobs[3].payload"),
        "{}",
        err(3).message
    );
    assert_eq!(err(7).code, Code::InvalidArgument as i32);
    assert!(
        err(7).message.starts_with("jobs[7].queue"),
        "{}",
        err(7).message
    );
    assert_eq!(ok(9).outcome, proto::EnqueueOutcome::Created as i32);
    assert_eq!(ok(10).outcome, proto::EnqueueOutcome::Duplicate as i32);
    assert_eq!(ok(10).job_id, ok(9).job_id);
    let created = results
        .iter()
        .filter(|r| {
            matches!(&r.result, Some(proto::enqueue_batch_result::Result::Ok(o))
                if o.outcome == proto::EnqueueOutcome::Created as i32)
        })
        .count();
    assert_eq!(created, 997);

    // FIFO in batch order.
    let mut req = claim_req(&["bulk"], 0, None);
    req.max_jobs = 5;
    let names: Vec<_> = c
        .claim_job(req)
        .await
        .expect("claim")
        .into_inner()
        .jobs
        .into_iter()
        .map(|j| j.name)
        .collect();
    assert_eq!(names, ["b0", "b1", "b2", "b4", "b5"]);
}

#[tokio::test]
async fn a_batch_over_the_limit_is_refused_whole_and_writes_nothing() {
    let redis = Redis::start().await;
    let mut config = config(&redis.url());
    config.max_batch = 10;
    let service = Service::start_with(config).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;
    let before = snapshot(&mut conn).await;
    let status = c
        .enqueue_batch(proto::EnqueueBatchRequest {
            namespace: "ns".into(),
            jobs: (0..11).map(|i| job("q", &format!("{i}"))).collect(),
        })
        .await
        .expect_err("over the limit");
    assert_eq!(status.code(), Code::InvalidArgument);
    assert!(
        status.message().starts_with("jobs:"),
        "{}",
        status.message()
    );
    assert_eq!(snapshot(&mut conn).await, before);

    // An item naming another namespace fails alone.
    let mut other = job("q", "x");
    other.namespace = "elsewhere".into();
    let results = c
        .enqueue_batch(proto::EnqueueBatchRequest {
            namespace: "ns".into(),
            jobs: vec![job("q", "fine"), other],
        })
        .await
        .expect("batch")
        .into_inner()
        .results;
    assert!(matches!(
        results[0].result,
        Some(proto::enqueue_batch_result::Result::Ok(_))
    ));
    match &results[1].result {
        Some(proto::enqueue_batch_result::Result::Error(e)) => {
            assert!(e.message.starts_with("jobs[1].namespace"), "{}", e.message)
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_single_enqueues_share_script_calls_and_each_gets_its_own_answer() {
    let redis = Redis::start().await;
    let service = Service::start_with(config_without_background_work(&redis.url())).await;
    let client = service.client().await;
    let mut conn = redis.conn().await;
    reset_stats(&mut conn).await;

    // 400 callers at once: distinct ids, plus pairs that collide on a job id or a
    // dedup key, which must resolve exactly as separate calls would.
    let tasks: Vec<_> = (0..400)
        .map(|i| {
            let mut c = client.clone();
            tokio::spawn(async move {
                let mut req = job("grouped", &format!("g{i}"));
                req.job_id = match i {
                    0 | 1 => "shared-id".to_owned(),
                    _ => format!("job-{i}"),
                };
                if i == 2 || i == 3 {
                    req.dedup_key = "shared-key".into();
                    req.dedup_ttl = Some(dur(60_000));
                }
                (i, enqueue(&mut c, req).await)
            })
        })
        .collect();
    let mut created = 0;
    let mut dedup_ids = HashSet::new();
    for t in tasks {
        let (i, r) = t.await.expect("task");
        match i {
            0 | 1 => assert_eq!(r.job_id, "shared-id"),
            2 | 3 => {
                dedup_ids.insert(r.job_id.clone());
            }
            _ => {
                assert_eq!(r.job_id, format!("job-{i}"), "each caller gets its own job");
                assert_eq!(r.outcome, proto::EnqueueOutcome::Created as i32);
            }
        }
        if r.outcome == proto::EnqueueOutcome::Created as i32 {
            created += 1;
        }
    }
    assert_eq!(
        created, 398,
        "one job per colliding pair, the rest all created"
    );
    assert_eq!(
        dedup_ids.len(),
        1,
        "both dedup callers are told the one job"
    );
    let calls = script_calls(&mut conn).await;
    assert!(
        calls < 300,
        "400 concurrent Enqueues should share script calls, made {calls}"
    );
    let listed = listed_job_ids(&mut conn, "ns", "grouped").await;
    assert_eq!(listed.len(), 398);
}

/// The enqueue_jobs calls SLOWLOG logged (every command is, at threshold 0), oldest
/// first: the job count (ARGV[10]) and the first job's id (ARGV[11]) of each.
async fn enqueue_calls(
    conn: &mut deadpool_redis::redis::aio::MultiplexedConnection,
) -> Vec<(usize, String)> {
    use deadpool_redis::redis::Value;
    let entries: Vec<Value> = query(conn, cmd("SLOWLOG").arg("GET").arg(10_000)).await;
    let text = |v: &Value| match v {
        Value::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
        other => format!("{other:?}"),
    };
    let calls: Vec<(usize, String)> = entries
        .iter()
        .rev()
        .filter_map(|entry| {
            let Value::Array(parts) = entry else {
                return None;
            };
            let Some(Value::Array(args)) = parts.get(3) else {
                return None;
            };
            let args: Vec<String> = args.iter().map(text).collect();
            // FCALL function 2 meta jdone <8 prefixes> schema n quota id...: the
            // enqueue_jobs shape.
            let is_enqueue = args
                .first()
                .is_some_and(|c| c.eq_ignore_ascii_case("fcall"))
                && args.get(2).map(String::as_str) == Some("2")
                && args.get(3).map(String::as_str) == Some("dueq:{ns}:meta")
                && args.get(16).is_some_and(|id| id.starts_with("item-"));
            is_enqueue.then(|| (args[14].parse().unwrap_or(0), args[16].clone()))
        })
        .collect();
    calls
}

async fn log_every_command(conn: &mut deadpool_redis::redis::aio::MultiplexedConnection) {
    let _: () = query(
        conn,
        cmd("CONFIG")
            .arg("SET")
            .arg("slowlog-log-slower-than")
            .arg(0),
    )
    .await;
    let _: () = query(
        conn,
        cmd("CONFIG").arg("SET").arg("slowlog-max-len").arg(10_000),
    )
    .await;
    let _: () = query(conn, cmd("SLOWLOG").arg("RESET")).await;
}

/// A batch bigger than one script call: bounded calls by count and by bytes, in
/// order, a result per item, and a retry with the same ids reports duplicates.
#[tokio::test]
async fn a_large_batch_is_split_by_count_and_bytes_and_stays_idempotent() {
    let redis = Redis::start().await;
    let service = Service::start_with(config_without_background_work(&redis.url())).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;
    let batch = |n: usize, payload: usize| proto::EnqueueBatchRequest {
        namespace: "ns".into(),
        jobs: (0..n)
            .map(|i| proto::EnqueueRequest {
                job_id: format!("item-{payload}-{i}"),
                payload: vec![b'x'; payload],
                ..job("bulk", &format!("b{i}"))
            })
            .collect(),
    };
    let outcomes = |results: Vec<proto::EnqueueBatchResult>| -> Vec<(u32, i32, String)> {
        results
            .into_iter()
            .map(|r| match r.result {
                Some(proto::enqueue_batch_result::Result::Ok(o)) => (r.index, o.outcome, o.job_id),
                other => panic!("item {}: {other:?}", r.index),
            })
            .collect()
    };

    log_every_command(&mut conn).await;
    let first = outcomes(
        c.enqueue_batch(batch(70, 1))
            .await
            .expect("batch")
            .into_inner()
            .results,
    );
    let calls = enqueue_calls(&mut conn).await;
    assert_eq!(
        calls,
        [
            (32, "item-1-0".to_owned()),
            (32, "item-1-32".to_owned()),
            (6, "item-1-64".to_owned())
        ],
        "70 jobs: 32 per script call, in order"
    );
    for (i, (index, outcome, id)) in first.iter().enumerate() {
        assert_eq!(
            (*index as usize, *outcome),
            (i, proto::EnqueueOutcome::Created as i32)
        );
        assert_eq!(id, &format!("item-1-{i}"));
    }

    // The same ids again: every item a duplicate of itself, nothing new stored.
    let again = outcomes(
        c.enqueue_batch(batch(70, 1))
            .await
            .expect("retry")
            .into_inner()
            .results,
    );
    for (i, (index, outcome, id)) in again.iter().enumerate() {
        assert_eq!(
            (*index as usize, *outcome),
            (i, proto::EnqueueOutcome::Duplicate as i32)
        );
        assert_eq!(id, &format!("item-1-{i}"));
    }
    assert_eq!(list_all_jobs(&mut c, "ns", "bulk", 1000).await.len(), 70);

    // Three payloads of 600 KiB: no call carries more than about 1 MiB.
    log_every_command(&mut conn).await;
    let big = outcomes(
        c.enqueue_batch(batch(3, 600 * 1024))
            .await
            .expect("big")
            .into_inner()
            .results,
    );
    assert_eq!(big.len(), 3);
    let calls = enqueue_calls(&mut conn).await;
    let counts: Vec<usize> = calls.iter().map(|(n, _)| *n).collect();
    assert_eq!(counts, [1, 1, 1], "{calls:?}");
}

/// A batch is stored one bounded call after another, so its time grows with its size:
/// the flag is capped, and a larger one is refused at startup, naming the cap.
#[tokio::test]
async fn a_max_batch_over_the_cap_is_refused_at_startup() {
    /// Killed on drop, should the binary start serving instead of exiting.
    struct Running(std::process::Child);
    impl Drop for Running {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let mut child = Running(
        std::process::Command::new(env!("CARGO_BIN_EXE_dueq"))
            .args(["serve", "--max-batch", "10001", "--listen", "127.0.0.1:0"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("run dueq"),
    );
    let patience = Patience::new("dueq to refuse --max-batch 10001 and exit");
    let status = loop {
        if let Some(status) = child.0.try_wait().expect("try_wait") {
            break status;
        }
        patience.wait().await;
    };
    assert!(!status.success());
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.0.stderr.take().expect("stderr"), &mut stderr)
        .expect("stderr");
    assert!(
        stderr.contains("--max-batch") && stderr.contains("1..=10000"),
        "{stderr}"
    );
}
