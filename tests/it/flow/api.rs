//! The flow-control API (issue 32; docs/flow.md): SetQueuePolicy, GetQueuePolicy,
//! SetKeyLimit, ThrottleKey and ListFlowKeys round trips; every bad input refused
//! naming the field with nothing written; a job's keys and cost on GetJob; the policy
//! on ListQueues; what an override and a throttle change in what a claim admits; a
//! freed slot waking a parked long-poll.

use tonic::Code;

use crate::common::*;

fn rate(limit: u32, period_ms: u64, burst: u32) -> proto::RateLimit {
    proto::RateLimit {
        limit,
        period: Some(dur(period_ms)),
        burst,
    }
}

async fn set_policy(
    c: &mut Client,
    queue: &str,
    policy: Option<proto::QueuePolicy>,
) -> Result<proto::SetQueuePolicyResponse, tonic::Status> {
    c.set_queue_policy(proto::SetQueuePolicyRequest {
        namespace: "ns".into(),
        queue: queue.into(),
        policy,
    })
    .await
    .map(|r| r.into_inner())
}

async fn get_policy(c: &mut Client, queue: &str) -> proto::GetQueuePolicyResponse {
    c.get_queue_policy(proto::GetQueuePolicyRequest {
        namespace: "ns".into(),
        queue: queue.into(),
    })
    .await
    .expect("get queue policy")
    .into_inner()
}

async fn set_key_limit(
    c: &mut Client,
    key: &str,
    max_running: Option<u32>,
    rate: Option<proto::RateLimit>,
) -> Result<bool, tonic::Status> {
    c.set_key_limit(proto::SetKeyLimitRequest {
        namespace: "ns".into(),
        queue: "q".into(),
        key: key.into(),
        max_running,
        rate,
    })
    .await
    .map(|r| r.into_inner().changed)
}

async fn throttle(
    c: &mut Client,
    key: &str,
    for_ms: u64,
) -> Result<Option<prost_types::Timestamp>, tonic::Status> {
    c.throttle_key(proto::ThrottleKeyRequest {
        namespace: "ns".into(),
        queue: "q".into(),
        key: key.into(),
        r#for: Some(dur(for_ms)),
    })
    .await
    .map(|r| r.into_inner().until)
}

async fn list_keys(
    c: &mut Client,
    order: proto::FlowKeyOrder,
    page_size: u32,
    page_token: &str,
) -> proto::ListFlowKeysResponse {
    c.list_flow_keys(proto::ListFlowKeysRequest {
        namespace: "ns".into(),
        queue: "q".into(),
        order_by: order as i32,
        page_size,
        page_token: page_token.into(),
    })
    .await
    .expect("list flow keys")
    .into_inner()
}

fn keyed(name: &str, concurrency: &str) -> proto::EnqueueRequest {
    proto::EnqueueRequest {
        concurrency_key: concurrency.into(),
        ..job("q", name)
    }
}

/// Claims up to `max` jobs of "q" without waiting; their names' job ids.
async fn claim_ids(c: &mut Client, max: u32) -> Vec<proto::ClaimedJob> {
    c.claim_job(proto::ClaimJobRequest {
        max_jobs: max,
        ..claim_req(&["q"], 0, None)
    })
    .await
    .expect("claim")
    .into_inner()
    .jobs
}

fn refused<T: std::fmt::Debug>(result: Result<T, tonic::Status>, field: &str) {
    let status = result.expect_err("must be refused");
    assert_eq!(status.code(), Code::InvalidArgument, "{field}: {status:?}");
    assert!(
        status.message().starts_with(field),
        "the message names {field}: {}",
        status.message()
    );
}

fn full_policy() -> proto::QueuePolicy {
    proto::QueuePolicy {
        max_running: 10,
        rate: Some(rate(100, 1000, 5)),
        per_key_max_running: 2,
        per_key_rate: Some(rate(3, 60_000, 0)),
        fairness: proto::Fairness::Weighted as i32,
        weights: [("gold".to_owned(), 5), ("silver".to_owned(), 2)]
            .into_iter()
            .collect(),
        default_weight: 1,
    }
}

/// A policy is stored as given (default_weight 0 reads as 1), read back by
/// GetQueuePolicy and ListQueues (a queue given a policy before its first job is
/// listed), replaced whole, and removed by an empty one.
#[tokio::test]
async fn a_policy_round_trips_and_listqueues_shows_it() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    assert_eq!(get_policy(&mut c, "q").await.policy, None);

    let stored = set_policy(&mut c, "q", Some(full_policy()))
        .await
        .expect("set");
    assert_eq!(stored.policy, Some(full_policy()));
    assert_eq!(get_policy(&mut c, "q").await.policy, Some(full_policy()));
    assert_eq!(listed_queue(&mut c, "q").await.policy, Some(full_policy()));

    let round_robin = proto::QueuePolicy {
        per_key_max_running: 1,
        fairness: proto::Fairness::RoundRobin as i32,
        ..Default::default()
    };
    set_policy(&mut c, "q", Some(round_robin.clone()))
        .await
        .expect("replace");
    assert_eq!(
        get_policy(&mut c, "q").await.policy,
        Some(round_robin.clone())
    );
    assert_eq!(listed_queue(&mut c, "q").await.policy, Some(round_robin));

    let weighted = proto::QueuePolicy {
        fairness: proto::Fairness::Weighted as i32,
        default_weight: 0,
        ..Default::default()
    };
    let stored = set_policy(&mut c, "q", Some(weighted.clone()))
        .await
        .expect("weighted");
    let as_stored = proto::QueuePolicy {
        default_weight: 1,
        ..weighted
    };
    assert_eq!(stored.policy, Some(as_stored.clone()));
    assert_eq!(get_policy(&mut c, "q").await.policy, Some(as_stored));

    let cleared = set_policy(&mut c, "q", Some(proto::QueuePolicy::default()))
        .await
        .expect("clear");
    assert_eq!(cleared.policy, None);
    assert_eq!(get_policy(&mut c, "q").await.policy, None);
    assert_eq!(listed_queue(&mut c, "q").await.policy, None);
}

/// Every bad part of a policy is INVALID_ARGUMENT naming the field, and Redis is
/// left exactly as it was.
#[tokio::test]
async fn bad_policies_name_the_field_and_write_nothing() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;
    set_policy(&mut c, "q", Some(full_policy()))
        .await
        .expect("set");
    let before = snapshot(&mut conn).await;

    let with = |change: &dyn Fn(&mut proto::QueuePolicy)| {
        let mut p = full_policy();
        change(&mut p);
        p
    };
    let many: std::collections::HashMap<String, u32> =
        (0..1001).map(|i| (format!("k{i}"), 1)).collect();
    let cases: Vec<(proto::QueuePolicy, &str)> = vec![
        (
            with(&|p| p.rate = Some(rate(0, 1000, 0))),
            "policy.rate.limit",
        ),
        (
            with(&|p| p.rate = Some(rate(1_000_001, 1000, 0))),
            "policy.rate.limit",
        ),
        (
            with(&|p| p.rate = Some(rate(1, 0, 0))),
            "policy.rate.period",
        ),
        (
            with(&|p| p.rate = Some(rate(1, 86_400_001, 0))),
            "policy.rate.period",
        ),
        (
            with(&|p| {
                p.rate = Some(proto::RateLimit {
                    period: None,
                    ..rate(1, 1, 0)
                })
            }),
            "policy.rate.period",
        ),
        (
            with(&|p| p.rate = Some(rate(1, 1000, 1_000_001))),
            "policy.rate.burst",
        ),
        (
            with(&|p| p.per_key_rate = Some(rate(0, 1000, 0))),
            "policy.per_key_rate.limit",
        ),
        (
            with(&|p| {
                p.weights.insert("gold".into(), 0);
            }),
            "policy.weights[\"gold\"]",
        ),
        (
            with(&|p| {
                p.weights.insert("gold".into(), 10_001);
            }),
            "policy.weights[\"gold\"]",
        ),
        (
            with(&|p| {
                p.weights.insert("k".repeat(129), 1);
            }),
            "policy.weights[",
        ),
        (with(&|p| p.weights = many.clone()), "policy.weights"),
        (
            with(&|p| p.default_weight = 10_001),
            "policy.default_weight",
        ),
        (
            with(&|p| p.fairness = proto::Fairness::RoundRobin as i32),
            "policy.weights",
        ),
        (with(&|p| p.fairness = 9), "policy.fairness"),
    ];
    for (policy, field) in cases {
        refused(set_policy(&mut c, "q", Some(policy)).await, field);
    }
    refused(set_policy(&mut c, "", Some(full_policy())).await, "queue");
    refused(
        set_key_limit(&mut c, &"k".repeat(129), Some(1), None).await,
        "key",
    );
    refused(set_key_limit(&mut c, "", Some(1), None).await, "key");
    refused(
        set_key_limit(&mut c, "k", None, Some(rate(0, 1000, 0))).await,
        "rate.limit",
    );
    refused(throttle(&mut c, &"k".repeat(129), 1000).await, "key");
    refused(throttle(&mut c, "k", 86_400_001).await, "for");
    let negative = c
        .throttle_key(proto::ThrottleKeyRequest {
            namespace: "ns".into(),
            queue: "q".into(),
            key: "k".into(),
            r#for: Some(prost_types::Duration {
                seconds: -1,
                nanos: 0,
            }),
        })
        .await;
    refused(negative, "for");
    let unset = c
        .throttle_key(proto::ThrottleKeyRequest {
            namespace: "ns".into(),
            queue: "q".into(),
            key: "k".into(),
            r#for: None,
        })
        .await;
    refused(unset, "for");
    let bad_token = c
        .list_flow_keys(proto::ListFlowKeysRequest {
            namespace: "ns".into(),
            queue: "q".into(),
            page_token: "x".into(),
            ..Default::default()
        })
        .await;
    refused(bad_token, "page_token");
    let bad_order = c
        .list_flow_keys(proto::ListFlowKeysRequest {
            namespace: "ns".into(),
            queue: "q".into(),
            order_by: 9,
            ..Default::default()
        })
        .await;
    refused(bad_order, "order_by");

    assert_eq!(snapshot(&mut conn).await, before, "nothing was written");
    assert_eq!(get_policy(&mut c, "q").await.policy, Some(full_policy()));
}

/// A key over 128 bytes or a negative cost refuses the enqueue, naming the field, and
/// no job is stored; a job's keys and cost read back on GetJob (cost 1 when unset).
#[tokio::test]
async fn enqueue_flow_fields_are_checked_and_read_back() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;
    enqueue(&mut c, job("q", "existing")).await;
    let before = snapshot(&mut conn).await;
    let long = "k".repeat(129);
    let bad = |change: &dyn Fn(&mut proto::EnqueueRequest)| {
        let mut r = proto::EnqueueRequest {
            job_id: "bad".into(),
            ..job("q", "n")
        };
        change(&mut r);
        r
    };
    let cases = [
        (bad(&|r| r.fairness_key = long.clone()), "fairness_key"),
        (
            bad(&|r| r.concurrency_key = long.clone()),
            "concurrency_key",
        ),
        (bad(&|r| r.rate_key = long.clone()), "rate_key"),
        (bad(&|r| r.cost = Some(-1)), "cost"),
        (bad(&|r| r.cost = Some(1_000_001)), "cost"),
    ];
    for (request, field) in cases {
        refused(c.enqueue(request).await, field);
    }
    assert_eq!(snapshot(&mut conn).await, before, "nothing was written");
    let missing = c
        .get_job(proto::GetJobRequest {
            namespace: "ns".into(),
            job_id: "bad".into(),
        })
        .await
        .expect_err("no job");
    assert_eq!(missing.code(), Code::NotFound);

    let id = enqueue(
        &mut c,
        proto::EnqueueRequest {
            fairness_key: "tenant-1".into(),
            concurrency_key: "account-7".into(),
            rate_key: "merchant-3".into(),
            cost: Some(4),
            ..job("q", "keyed")
        },
    )
    .await
    .job_id;
    let got = get_job(&mut c, &id).await;
    assert_eq!(
        (
            got.fairness_key.as_str(),
            got.concurrency_key.as_str(),
            got.rate_key.as_str(),
            got.cost
        ),
        ("tenant-1", "account-7", "merchant-3", 4)
    );
    let zero = enqueue(
        &mut c,
        proto::EnqueueRequest {
            cost: Some(0),
            ..job("q", "free")
        },
    )
    .await
    .job_id;
    assert_eq!(get_job(&mut c, &zero).await.cost, 0);
    let plain = enqueue(&mut c, job("q", "plain")).await.job_id;
    let plain = get_job(&mut c, &plain).await;
    assert_eq!((plain.concurrency_key.as_str(), plain.cost), ("", 1));
}

/// per_key_max_running 1 admits one job of a key; a SetKeyLimit of 2 for one key
/// admits two of it, the other key still one; removing the override brings the
/// policy's limit back. SetKeyLimit says whether anything changed.
#[tokio::test]
async fn a_key_limit_overrides_what_a_claim_admits() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let per_key = proto::QueuePolicy {
        per_key_max_running: 1,
        ..Default::default()
    };
    set_policy(&mut c, "q", Some(per_key)).await.expect("set");
    assert!(set_key_limit(&mut c, "big", Some(2), None)
        .await
        .expect("set"));
    assert!(!set_key_limit(&mut c, "big", Some(2), None)
        .await
        .expect("again"));
    assert_eq!(get_policy(&mut c, "q").await.key_limits, 1);
    for i in 0..3 {
        enqueue(&mut c, keyed(&format!("big{i}"), "big")).await;
        enqueue(&mut c, keyed(&format!("small{i}"), "small")).await;
    }
    let claimed = claim_ids(&mut c, 10).await;
    let mut keys: Vec<(String, &proto::ClaimedJob)> = Vec::new();
    for j in &claimed {
        keys.push((get_job(&mut c, &j.job_id).await.concurrency_key, j));
    }
    keys.sort_by(|a, b| a.0.cmp(&b.0));
    let names: Vec<&str> = keys.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(names, ["big", "big", "small"]);
    assert!(
        claim_ids(&mut c, 10).await.is_empty(),
        "every key is at its limit"
    );

    // Without the override, "big" is back to 1: acking one of its two leaves the
    // other holding the key's one slot.
    assert!(set_key_limit(&mut c, "big", None, None)
        .await
        .expect("remove"));
    assert!(!set_key_limit(&mut c, "big", None, None)
        .await
        .expect("none left"));
    assert_eq!(get_policy(&mut c, "q").await.key_limits, 0);
    let (_, one_big) = keys[0];
    ack_job(&mut c, &one_big.job_id, &one_big.lease_token)
        .await
        .expect("ack");
    assert!(
        claim_ids(&mut c, 10).await.is_empty(),
        "big still has one leased, at the policy's limit of 1"
    );
}

/// A throttled key's jobs are passed over (another key's job is claimed instead),
/// ListFlowKeys shows the throttle, and a throttle of 0 lifts it at once.
#[tokio::test]
async fn a_throttle_stops_a_key_and_zero_lifts_it() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let held = enqueue(&mut c, keyed("held", "busy")).await.job_id;
    let free = enqueue(&mut c, keyed("free", "calm")).await.job_id;
    let until = throttle(&mut c, "busy", 3_600_000)
        .await
        .expect("throttle")
        .expect("an end");
    let claimed = claim_ids(&mut c, 10).await;
    let ids: Vec<&str> = claimed.iter().map(|j| j.job_id.as_str()).collect();
    assert_eq!(
        ids,
        [free.as_str()],
        "the throttled key's job is passed over"
    );
    let page = list_keys(&mut c, proto::FlowKeyOrder::Throttled, 0, "").await;
    assert_eq!(page.keys.len(), 1);
    assert_eq!(page.keys[0].key, "busy");
    assert_eq!(page.keys[0].throttled_until, Some(until));

    let lifted = throttle(&mut c, "busy", 0).await.expect("lift");
    assert_eq!(lifted, None);
    let claimed = claim_ids(&mut c, 10).await;
    let ids: Vec<&str> = claimed.iter().map(|j| j.job_id.as_str()).collect();
    assert_eq!(ids, [held.as_str()], "lifted, the key's job starts");
    let page = list_keys(&mut c, proto::FlowKeyOrder::Throttled, 0, "").await;
    assert!(page.keys.is_empty(), "{page:?}");
}

/// Keys page by backlog, running and throttle end, most first, each with its other
/// counts and its own limits; a page token continues where a page ended.
#[tokio::test]
async fn list_flow_keys_pages_in_each_order() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    // Claimed first (FIFO): k3's job, then k2's two; k1's three stay ready.
    enqueue(&mut c, keyed("a", "k3")).await;
    enqueue(&mut c, keyed("b", "k2")).await;
    enqueue(&mut c, keyed("c", "k2")).await;
    for name in ["d", "e", "f"] {
        enqueue(&mut c, keyed(name, "k1")).await;
    }
    let page = list_keys(&mut c, proto::FlowKeyOrder::Backlog, 2, "").await;
    let names: Vec<(&str, u64)> = page
        .keys
        .iter()
        .map(|k| (k.key.as_str(), k.backlog))
        .collect();
    assert_eq!(names, [("k1", 3), ("k2", 2)]);
    assert!(page.read_time.is_some());
    let rest = list_keys(
        &mut c,
        proto::FlowKeyOrder::Backlog,
        2,
        &page.next_page_token,
    )
    .await;
    let names: Vec<(&str, u64)> = rest
        .keys
        .iter()
        .map(|k| (k.key.as_str(), k.backlog))
        .collect();
    assert_eq!(names, [("k3", 1)]);
    assert_eq!(rest.next_page_token, "");

    assert_eq!(claim_ids(&mut c, 3).await.len(), 3);
    set_key_limit(&mut c, "k2", Some(5), Some(rate(10, 1000, 2)))
        .await
        .expect("limit");
    let running = list_keys(&mut c, proto::FlowKeyOrder::Running, 0, "").await;
    let got: Vec<(&str, u64, u64)> = running
        .keys
        .iter()
        .map(|k| (k.key.as_str(), k.running, k.backlog))
        .collect();
    assert_eq!(got, [("k2", 2, 0), ("k3", 1, 0)]);
    assert_eq!(running.keys[0].max_running, Some(5));
    assert_eq!(running.keys[0].rate, Some(rate(10, 1000, 2)));
    assert_eq!(running.keys[1].max_running, None);

    let k1_until = throttle(&mut c, "k1", 60_000)
        .await
        .expect("t")
        .expect("end");
    let k2_until = throttle(&mut c, "k2", 120_000)
        .await
        .expect("t")
        .expect("end");
    let first = list_keys(&mut c, proto::FlowKeyOrder::Throttled, 1, "").await;
    assert_eq!(first.keys.len(), 1);
    assert_eq!(first.keys[0].key, "k2");
    assert_eq!(first.keys[0].throttled_until, Some(k2_until));
    assert_eq!(first.keys[0].running, 2);
    let second = list_keys(
        &mut c,
        proto::FlowKeyOrder::Throttled,
        1,
        &first.next_page_token,
    )
    .await;
    assert_eq!(second.keys.len(), 1);
    assert_eq!(second.keys[0].key, "k1");
    assert_eq!(second.keys[0].throttled_until, Some(k1_until));
    assert_eq!(second.keys[0].backlog, 3);
    assert_eq!(second.next_page_token, "");
}

/// A service whose long-polls re-check Redis only hourly: a waiter gets work only
/// through a wake-up.
async fn service_without_recheck(redis: &Redis) -> Service {
    let mut config = config(&redis.url());
    config.recheck_interval = std::time::Duration::from_secs(3600);
    Service::start_with(config).await
}

/// Two jobs of one concurrency key under per_key_max_running 1: the second waits
/// parked on the key's slot; finishing the first (`finish`) frees the slot and
/// wakes the long-poll waiting on the queue, which gets the second.
async fn a_freed_slot_wakes_a_waiting_claim(finish: &str) {
    let redis = Redis::start().await;
    let service = service_without_recheck(&redis).await;
    let mut c = service.client().await;
    let per_key = proto::QueuePolicy {
        per_key_max_running: 1,
        ..Default::default()
    };
    set_policy(&mut c, "q", Some(per_key)).await.expect("set");
    // One attempt: a failed first job is dead, not back at the head of the lane.
    let first = proto::EnqueueRequest {
        max_attempts: Some(1),
        ..keyed("first", "acct")
    };
    let first = enqueue(&mut c, first).await.job_id;
    let second = enqueue(&mut c, keyed("second", "acct")).await.job_id;
    let claimed = claim_ids(&mut c, 10).await;
    assert_eq!(claimed.len(), 1, "one slot");
    assert_eq!(claimed[0].job_id, first);

    let mut conn = redis.conn().await;
    let mut waiter = service.client().await;
    let before = script_calls(&mut conn).await;
    let waiting =
        tokio::spawn(async move { claim_job(&mut waiter, &["q"], LONG_POLL_MS, None).await });
    wait_parked(&mut conn, before, 1).await;
    match finish {
        "ack" => {
            ack_job(&mut c, &first, &claimed[0].lease_token)
                .await
                .expect("ack");
        }
        _ => {
            fail_job(&mut c, &first, &claimed[0].lease_token, "boom")
                .await
                .expect("fail");
        }
    }
    let got = waiting.await.expect("join").expect("the second job");
    assert_eq!(got.job_id, second);
}

#[tokio::test]
async fn an_ack_that_frees_a_slot_wakes_a_waiting_claim() {
    a_freed_slot_wakes_a_waiting_claim("ack").await;
}

#[tokio::test]
async fn a_fail_that_frees_a_slot_wakes_a_waiting_claim() {
    a_freed_slot_wakes_a_waiting_claim("fail").await;
}

/// docs/flow.md's example: with per_key_max_running 1, a claim of up to 10 jobs
/// gets one of the two jobs of a key, and ListFlowKeys shows the key with one leased
/// and one ready.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs grpcurl"]
async fn the_flow_doc_example_runs() {
    crate::common::tools::require("grpcurl");
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let text = crate::doc_examples::run_fenced("flow-example", &service);
    assert!(text.contains("\"sync-1\""), "{text}");
    assert_eq!(
        text.matches("\"leaseToken\"").count(),
        1,
        "one job claimed:\n{text}"
    );
    for shown in [
        "\"key\": \"account-42\"",
        "\"backlog\": \"1\"",
        "\"running\": \"1\"",
    ] {
        assert!(text.contains(shown), "{shown} is not in:\n{text}");
    }
    let mut c = service.client().await;
    let second = c
        .get_job(proto::GetJobRequest {
            namespace: "shop".into(),
            job_id: "sync-2".into(),
        })
        .await
        .expect("sync-2")
        .into_inner()
        .job
        .expect("a job");
    assert_eq!(second.state, proto::JobState::Pending as i32);
}

/// A claim that parks a lane on its key's concurrency counts it in
/// dueq_flow_throttled_total; the top keys of a queue with a policy show their
/// leased and ready jobs in dueq_flow_key_running and dueq_flow_key_backlog, a
/// queue without a policy none.
#[tokio::test]
async fn flow_metrics_count_limits_met_and_show_the_top_keys() {
    let redis = Redis::start().await;
    let addr = format!("127.0.0.1:{}", free_port());
    let mut config = config_without_background_work(&redis.url());
    config.metrics_listen = Some(addr.clone());
    let service = Service::start_with(config).await;
    let mut c = service.client().await;
    let per_key = proto::QueuePolicy {
        per_key_max_running: 1,
        ..Default::default()
    };
    set_policy(&mut c, "q", Some(per_key)).await.expect("set");
    for name in ["a1", "a2", "a3"] {
        enqueue(&mut c, keyed(name, "a")).await;
    }
    enqueue(&mut c, keyed("b1", "b")).await;
    enqueue(
        &mut c,
        proto::EnqueueRequest {
            concurrency_key: "p".into(),
            ..job("plain", "p1")
        },
    )
    .await;
    // a1 and b1 are leased; a2 parks the "a" lane on its key, once.
    assert_eq!(claim_ids(&mut c, 10).await.len(), 2);

    let s = scrape(&addr).await;
    let series = |name: &str, labels: &str| format!("{name}{{namespace=\"ns\",{labels}}}");
    assert_eq!(
        s.value(&series(
            "dueq_flow_throttled_total",
            "queue=\"q\",reason=\"concurrency\""
        )),
        1.0
    );
    let running = s.series_of("dueq_flow_key_running");
    assert_eq!(
        running,
        [
            (
                series("dueq_flow_key_running", "queue=\"q\",key=\"a\"").as_str(),
                1.0
            ),
            (
                series("dueq_flow_key_running", "queue=\"q\",key=\"b\"").as_str(),
                1.0
            ),
        ]
    );
    let backlog = s.series_of("dueq_flow_key_backlog");
    assert_eq!(
        backlog,
        [(
            series("dueq_flow_key_backlog", "queue=\"q\",key=\"a\"").as_str(),
            2.0
        )]
    );
}
