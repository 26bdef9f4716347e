//! The audit log (issue 33): every call of an audited RPC, allowed or refused, is
//! recorded once answered with its principal, method, target and outcome, in its
//! namespace's capped stream, which readers page through with ListAuditEvents.

use tonic::{Code, Request};

use crate::{
    common::*,
    security::auth::{start as start_with_auth, with_token},
};

/// The namespace's audit log, newest first, once it holds at least `n` records (they
/// are written after the answer, off the call's path).
async fn events(client: &mut Client, ns: &str, n: usize) -> Vec<proto::AuditEvent> {
    let patience = Patience::new(format!("{n} audit records in {ns}"));
    loop {
        let page = client
            .list_audit_events(proto::ListAuditEventsRequest {
                namespace: ns.into(),
                page_size: 1000,
                page_token: String::new(),
            })
            .await
            .expect("ListAuditEvents")
            .into_inner();
        if page.events.len() >= n {
            return page.events;
        }
        patience.wait().await;
    }
}

fn pause(ns: &str, queue: &str) -> proto::PauseQueueRequest {
    proto::PauseQueueRequest {
        namespace: ns.into(),
        queue: queue.into(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_audited_call_is_recorded_with_its_target_and_outcome() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut client = service.client().await;
    let id = enqueue(&mut client, job("emails", "send")).await.job_id;
    client
        .cancel_job(proto::CancelJobRequest {
            namespace: "ns".into(),
            job_id: id.clone(),
        })
        .await
        .expect("cancel");
    let missing = client
        .cancel_job(proto::CancelJobRequest {
            namespace: "ns".into(),
            job_id: "nope".into(),
        })
        .await
        .expect_err("no such job");
    assert_eq!(missing.code(), Code::NotFound);
    // Quiet RPCs (Enqueue, ListAuditEvents itself) are not recorded.
    let events = events(&mut client, "ns", 2).await;
    assert_eq!(events.len(), 2, "{events:?}");
    // Newest first.
    let (failed, done) = (&events[0], &events[1]);
    assert_eq!(
        (
            done.principal.as_str(),
            done.method.as_str(),
            done.target.clone(),
            done.outcome.as_str(),
            done.via.as_str()
        ),
        (
            "(no auth file)",
            "CancelJob",
            format!("job:{id}"),
            "OK",
            "grpc"
        )
    );
    assert!(done.time.is_some());
    assert_eq!(
        (
            failed.method.as_str(),
            failed.target.as_str(),
            failed.outcome.as_str()
        ),
        ("CancelJob", "job:nope", "NOT_FOUND")
    );
    assert!(ms(&failed.time) >= ms(&done.time));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn via_console_comes_from_the_header_and_any_other_value_is_grpc() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut client = service.client().await;
    for (queue, via) in [("a", Some("console")), ("b", Some("evil")), ("c", None)] {
        let mut request = Request::new(pause("ns", queue));
        if let Some(via) = via {
            request
                .metadata_mut()
                .insert("x-dueq-via", via.parse().expect("header"));
        }
        client.pause_queue(request).await.expect("pause");
    }
    let events = events(&mut client, "ns", 3).await;
    let vias: Vec<(&str, &str)> = events
        .iter()
        .map(|e| (e.target.as_str(), e.via.as_str()))
        .collect();
    assert_eq!(
        vias,
        [
            ("queue:c", "grpc"),
            ("queue:b", "grpc"),
            ("queue:a", "console")
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_log_is_capped() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut client = service.client().await;
    let mut conn = connect(&redis.url()).await;
    let key = "dueq:{ns}:meta:audit";
    // Twice the cap, written by hand; the next audited call's append trims it.
    let mut fill = pipe();
    for i in 0..20_000 {
        fill.cmd("XADD")
            .arg(key)
            .arg("*")
            .arg("m")
            .arg(format!("old-{i}"))
            .ignore();
    }
    let () = fill.query_async(&mut conn).await.expect("fill");
    client.pause_queue(pause("ns", "q")).await.expect("pause");
    let patience = Patience::new("the audit log trimmed to its cap");
    loop {
        let len: u64 = cmd("XLEN")
            .arg(key)
            .query_async(&mut conn)
            .await
            .expect("XLEN");
        // MAXLEN ~ trims whole nodes (100 entries each by default), never below the cap.
        if (10_000..=10_200).contains(&len) {
            break;
        }
        patience.wait().await;
    }
    let newest = events(&mut client, "ns", 1).await;
    assert_eq!(newest[0].method, "PauseQueue");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_go_back_in_time_and_bad_pages_are_refused() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut client = service.client().await;
    for queue in ["a", "b", "c"] {
        client.pause_queue(pause("ns", queue)).await.expect("pause");
    }
    events(&mut client, "ns", 3).await;
    let mut token = String::new();
    let mut seen = Vec::new();
    loop {
        let page = client
            .list_audit_events(proto::ListAuditEventsRequest {
                namespace: "ns".into(),
                page_size: 2,
                page_token: token,
            })
            .await
            .expect("page")
            .into_inner();
        seen.extend(page.events.into_iter().map(|e| e.target));
        if page.next_page_token.is_empty() {
            break;
        }
        token = page.next_page_token;
    }
    assert_eq!(seen, ["queue:c", "queue:b", "queue:a"]);
    for (request, field) in [
        (
            proto::ListAuditEventsRequest {
                namespace: "ns".into(),
                page_token: "not-a-token".into(),
                ..Default::default()
            },
            "page_token",
        ),
        (
            proto::ListAuditEventsRequest {
                namespace: "ns".into(),
                page_size: 1001,
                ..Default::default()
            },
            "page_size",
        ),
        (
            proto::ListAuditEventsRequest {
                namespace: "bad ns".into(),
                ..Default::default()
            },
            "namespace",
        ),
    ] {
        let status = client
            .list_audit_events(request)
            .await
            .expect_err("refused");
        assert_eq!(status.code(), Code::InvalidArgument, "{status:?}");
        assert!(status.message().contains(field), "{status:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readers_list_their_namespace_and_refusals_are_recorded_too() {
    let redis = Redis::start().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let service = start_with_auth(&redis, dir.path(), false).await;
    let mut client = service.client().await;
    client
        .pause_queue(with_token(pause("shop-a", "q"), Some("t-admin")))
        .await
        .expect("admin pauses");
    // billing is a producer on `billing` only: refused, and recorded in shop-a.
    let refused = client
        .pause_queue(with_token(pause("shop-a", "q"), Some("t-billing")))
        .await
        .expect_err("billing may not");
    assert_eq!(refused.code(), Code::PermissionDenied);
    let list = |token: &str| {
        with_token(
            proto::ListAuditEventsRequest {
                namespace: "shop-a".into(),
                ..Default::default()
            },
            Some(token),
        )
    };
    let patience = Patience::new("both records");
    let events = loop {
        let events = client
            .list_audit_events(list("t-reader"))
            .await
            .expect("a reader of shop-* lists shop-a")
            .into_inner()
            .events;
        if events.len() >= 2 {
            break events;
        }
        patience.wait().await;
    };
    let seen: Vec<(&str, &str)> = events
        .iter()
        .map(|e| (e.principal.as_str(), e.outcome.as_str()))
        .collect();
    assert_eq!(seen, [("billing", "PERMISSION_DENIED"), ("admin", "OK")]);
    let denied = client
        .list_audit_events(list("t-billing"))
        .await
        .expect_err("billing reads no shop-* namespace");
    assert_eq!(denied.code(), Code::PermissionDenied);
}

/// Pins: an audit record that cannot be written (a full Redis refuses the append)
/// never fails the call it records: the call is answered, and the loss is counted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_record_redis_refuses_is_counted_and_the_call_still_answers() {
    let redis = Redis::start().await;
    let metrics = format!("127.0.0.1:{}", free_port());
    let mut config = config_without_background_work(&redis.url());
    config.metrics_listen = Some(metrics.clone());
    let service = Service::start_with(config).await;
    let mut client = service.client().await;
    let mut conn = redis.conn().await;
    crate::edge::faults::full::fill_redis(&mut conn).await;
    // PauseQueue runs at maxmemory (allow-oom); the append after it does not.
    client
        .pause_queue(pause("ns", "q"))
        .await
        .expect("answered in a full Redis");
    let patience = Patience::new("the lost record counted");
    while scrape(&metrics).await.value("dueq_audit_dropped_total") < 1.0 {
        patience.wait().await;
    }
}
