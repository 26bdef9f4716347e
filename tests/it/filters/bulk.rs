//! RetryJobs, CancelJobs and DeleteJobs (issue 33): by ids (applied, skipped with
//! reasons), by query looped to completion (every matching job changed, no other
//! touched), two callers racing over the same query, permission, bad input.

use std::path::Path;

use sha2::{Digest, Sha256};
use tonic::{Code, Request, Status};

use super::*;
use crate::common::*;

type Selection = proto::bulk_jobs_request::Selection;

fn ids(ids: &[&str]) -> Selection {
    Selection::JobIds(proto::JobIds {
        job_ids: ids.iter().map(|id| (*id).to_owned()).collect(),
    })
}

fn query(state: proto::JobState, filter: proto::JobFilter, page_token: String) -> Selection {
    Selection::Query(proto::JobQuery {
        state: state as i32,
        filter: Some(filter),
        page_token,
    })
}

fn request(queue: &str, selection: Selection) -> proto::BulkJobsRequest {
    proto::BulkJobsRequest {
        namespace: "ns".into(),
        queue: queue.into(),
        selection: Some(selection),
    }
}

#[derive(Clone, Copy, Debug)]
enum Action {
    Retry,
    Cancel,
    Delete,
}

async fn bulk(
    c: &mut Client,
    action: Action,
    req: proto::BulkJobsRequest,
) -> Result<proto::BulkJobsResponse, Status> {
    let answer = match action {
        Action::Retry => c.retry_jobs(req).await,
        Action::Cancel => c.cancel_jobs(req).await,
        Action::Delete => c.delete_jobs(req).await,
    };
    answer.map(|r| r.into_inner())
}

/// Totals of a query looped until its token is empty, and the calls it took.
#[derive(Debug, Default)]
struct Looped {
    applied: u64,
    skipped: u64,
    calls: usize,
}

async fn loop_query(
    c: &mut Client,
    action: Action,
    queue: &str,
    state: proto::JobState,
    filter: proto::JobFilter,
) -> Looped {
    let mut looped = Looped::default();
    let mut token = String::new();
    loop {
        let selection = query(state, filter.clone(), token);
        let answer = bulk(c, action, request(queue, selection))
            .await
            .expect("bulk");
        assert!(
            answer.scanned <= 500,
            "a call examines at most 500: {answer:?}"
        );
        assert!(
            answer.applied + answer.skipped <= 100,
            "a call takes at most 100: {answer:?}"
        );
        looped.applied += answer.applied;
        looped.skipped += answer.skipped;
        looped.calls += 1;
        if answer.next_page_token.is_empty() {
            return looped;
        }
        token = answer.next_page_token;
    }
}

fn skips(answer: &proto::BulkJobsResponse) -> Vec<(String, String)> {
    let mut skips: Vec<_> = answer
        .skips
        .iter()
        .map(|s| (s.job_id.clone(), s.reason.clone()))
        .collect();
    skips.sort();
    skips
}

fn skip(id: &str, reason: &str) -> (String, String) {
    (id.to_owned(), reason.to_owned())
}

/// Each job is taken as the single-job RPC takes it; what it would refuse is a skip
/// with its reason (unknown, another queue's, a state the action does not take).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn by_ids_each_job_is_applied_or_skipped_with_its_reason() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    dead_jobs(&mut c, "q", "dead", 1, "boom").await;
    enqueue(&mut c, job_with("q", "active", "x", &[])).await;
    let held = claim_job(&mut c, &["q"], 0, Some(600_000))
        .await
        .expect("claim");
    assert_eq!(held.job_id, "active");
    enqueue(&mut c, job_with("q", "pending", "x", &[])).await;
    enqueue(&mut c, job_with("other", "elsewhere", "x", &[])).await;

    let retried = bulk(
        &mut c,
        Action::Retry,
        request("q", ids(&["dead-0", "pending", "nope", "elsewhere"])),
    )
    .await
    .expect("RetryJobs");
    assert_eq!((retried.applied, retried.skipped), (1, 3), "{retried:?}");
    assert_eq!(
        skips(&retried),
        [
            skip("elsewhere", "not found"),
            skip("nope", "not found"),
            skip("pending", "state pending")
        ]
    );
    let job = get_job(&mut c, "dead-0").await;
    assert_eq!((state(&job), job.attempts), (proto::JobState::Pending, 0));
    assert_eq!(
        state(&get_job(&mut c, "elsewhere").await),
        proto::JobState::Pending
    );

    let cancelled = bulk(
        &mut c,
        Action::Cancel,
        request("q", ids(&["pending", "active", "dead-0"])),
    )
    .await
    .expect("CancelJobs");
    assert_eq!(
        (cancelled.applied, cancelled.skipped),
        (3, 0),
        "{cancelled:?}"
    );
    assert_eq!(
        state(&get_job(&mut c, "pending").await),
        proto::JobState::Cancelled
    );
    let active = get_job(&mut c, "active").await;
    assert_eq!(
        state(&active),
        proto::JobState::Active,
        "an active job is asked to stop"
    );
    assert!(active.cancel_requested);

    let deleted = bulk(
        &mut c,
        Action::Delete,
        request("q", ids(&["pending", "active"])),
    )
    .await
    .expect("DeleteJobs");
    assert_eq!((deleted.applied, deleted.skipped), (1, 1), "{deleted:?}");
    assert_eq!(skips(&deleted), [skip("active", "state active")]);
    let gone = c
        .get_job(proto::GetJobRequest {
            namespace: "ns".into(),
            job_id: "pending".into(),
        })
        .await
        .expect_err("deleted");
    assert_eq!(gone.code(), Code::NotFound);
}

/// A query looped to its end changes every matching job and no other; each call is
/// one bounded batch.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn by_query_looped_to_completion_takes_every_match_and_nothing_else() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    dead_jobs(&mut c, "q", "timeout", 30, "upstream TIMEOUT").await;
    dead_jobs(&mut c, "q", "refused", 20, "connection refused").await;
    let jobs = (0..1000)
        .map(|i| {
            let batch = if i % 4 == 0 { "7" } else { "8" };
            job_with("q", &format!("j{i}"), "x", &[("batch", batch)])
        })
        .collect();
    enqueue_many(&mut c, jobs).await;
    let seven = proto::JobFilter {
        header_key: "batch".into(),
        header_value: "7".into(),
        ..Default::default()
    };
    let cancelled = loop_query(
        &mut c,
        Action::Cancel,
        "q",
        proto::JobState::Pending,
        seven.clone(),
    )
    .await;
    assert_eq!(
        (cancelled.applied, cancelled.skipped),
        (250, 0),
        "{cancelled:?}"
    );
    assert!(
        cancelled.calls >= 3,
        "250 jobs at most 100 a call: {cancelled:?}"
    );
    let mut expected: Vec<String> = (0..1000).step_by(4).map(|i| format!("j{i}")).collect();
    expected.sort();
    let mut now_cancelled = ids_in(&mut c, "q", proto::JobState::Cancelled).await;
    now_cancelled.sort();
    assert_eq!(now_cancelled, expected);
    assert_eq!(
        ids_in(&mut c, "q", proto::JobState::Pending).await.len(),
        750
    );
    assert_eq!(listed_queue(&mut c, "q").await.pending, 750);

    let deleted = loop_query(
        &mut c,
        Action::Delete,
        "q",
        proto::JobState::Cancelled,
        Default::default(),
    )
    .await;
    assert_eq!(deleted.applied, 250, "{deleted:?}");
    // The 750 pending and the 50 dead jobs remain.
    assert!(ids_in(&mut c, "q", proto::JobState::Cancelled)
        .await
        .is_empty());
    assert_eq!(
        ids_in(&mut c, "q", proto::JobState::Unspecified)
            .await
            .len(),
        800
    );

    // Retry by error text: only the dead jobs whose errors hold it.
    let by_error = proto::JobFilter {
        error_contains: "timeout".into(),
        ..Default::default()
    };
    let retried = loop_query(&mut c, Action::Retry, "q", proto::JobState::Dead, by_error).await;
    assert_eq!(retried.applied, 30, "{retried:?}");
    let mut dead = ids_in(&mut c, "q", proto::JobState::Dead).await;
    dead.sort();
    let mut refused: Vec<String> = (0..20).map(|i| format!("refused-{i}")).collect();
    refused.sort();
    assert_eq!(dead, refused, "only the matching dead jobs were retried");
    assert_eq!(listed_queue(&mut c, "q").await.pending, 780);
}

/// Two callers retrying the same query at once: each dead job is retried once
/// (the script re-checks its state), so the two applied counts add up to the jobs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_callers_racing_over_one_query_never_double_apply() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    dead_jobs(&mut c, "q", "d", 300, "boom").await;
    let mut racers = Vec::new();
    for _ in 0..2 {
        let mut c = service.client().await;
        racers.push(tokio::spawn(async move {
            loop_query(
                &mut c,
                Action::Retry,
                "q",
                proto::JobState::Dead,
                Default::default(),
            )
            .await
        }));
    }
    let mut applied = 0;
    for racer in racers {
        applied += racer.await.expect("racer").applied;
    }
    assert_eq!(applied, 300, "each job retried exactly once");
    assert!(ids_in(&mut c, "q", proto::JobState::Dead).await.is_empty());
    let queue = listed_queue(&mut c, "q").await;
    assert_eq!((queue.pending, queue.dead), (300, 0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_bulk_requests_are_refused_naming_the_field() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let too_many: Vec<String> = (0..1001).map(|i| format!("j{i}")).collect();
    let bad_filter = proto::JobFilter {
        header_value: "v".into(),
        ..Default::default()
    };
    let cases = [
        (
            request("q", Selection::JobIds(proto::JobIds { job_ids: too_many })),
            "job_ids",
        ),
        (request("q", ids(&[])), "job_ids"),
        (request("q", ids(&[""])), "job_ids"),
        (
            proto::BulkJobsRequest {
                selection: None,
                ..request("q", ids(&["a"]))
            },
            "selection",
        ),
        (request("", ids(&["a"])), "queue"),
        (
            request(
                "q",
                query(proto::JobState::Unspecified, bad_filter, String::new()),
            ),
            "query.filter.header_key",
        ),
        (
            request(
                "q",
                query(
                    proto::JobState::Dead,
                    Default::default(),
                    "not-a-token".into(),
                ),
            ),
            "page_token",
        ),
    ];
    for (req, field) in cases {
        for action in [Action::Retry, Action::Cancel, Action::Delete] {
            let status = bulk(&mut c, action, req.clone())
                .await
                .expect_err("refused");
            assert_eq!(
                status.code(),
                Code::InvalidArgument,
                "{action:?} {field}: {status:?}"
            );
            assert!(
                status.message().contains(field),
                "{field}: {}",
                status.message()
            );
        }
    }
}

fn token_hash(token: &str) -> String {
    Sha256::digest(token.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A service whose principals are `reader`, `producer` and `admin` (on "ns"), each
/// with token `t-<name>`.
async fn service_with_roles(redis: &Redis, dir: &Path) -> Service {
    let mut text = String::new();
    for role in ["reader", "producer", "admin"] {
        text.push_str(&format!(
            "[[principal]]\nname = \"{role}\"\nroles = [\"{role}\"]\nnamespaces = [\"ns\"]\n\
             token_sha256 = \"{}\"\n\n",
            token_hash(&format!("t-{role}"))
        ));
    }
    let path = dir.join("auth.toml");
    std::fs::write(&path, text).expect("write auth file");
    let mut config = config(&redis.url());
    config.auth_file = Some(path);
    Service::start_with(config).await
}

async fn bulk_as(
    c: &mut Client,
    role: &str,
    action: Action,
) -> Result<proto::BulkJobsResponse, Status> {
    let mut req = Request::new(request("q", ids(&["unknown"])));
    let value = format!("Bearer t-{role}").parse().expect("header value");
    req.metadata_mut().insert("authorization", value);
    let answer = match action {
        Action::Retry => c.retry_jobs(req).await,
        Action::Cancel => c.cancel_jobs(req).await,
        Action::Delete => c.delete_jobs(req).await,
    };
    answer.map(|r| r.into_inner())
}

/// A reader may do none of them; a producer may cancel and delete (as CancelJob and
/// DeleteJob) but not retry (RetryJob is an admin's); an admin may do all three.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_bulk_action_needs_the_role_of_its_single_job_rpc() {
    let redis = Redis::start().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let service = service_with_roles(&redis, dir.path()).await;
    let mut c = service.client().await;
    for (role, action, allowed) in [
        ("reader", Action::Retry, false),
        ("reader", Action::Cancel, false),
        ("reader", Action::Delete, false),
        ("producer", Action::Retry, false),
        ("producer", Action::Cancel, true),
        ("producer", Action::Delete, true),
        ("admin", Action::Retry, true),
        ("admin", Action::Cancel, true),
        ("admin", Action::Delete, true),
    ] {
        let answer = bulk_as(&mut c, role, action).await;
        if allowed {
            let answer = answer.unwrap_or_else(|s| panic!("{role} {action:?}: {s:?}"));
            assert_eq!(answer.skipped, 1, "{role} {action:?}");
        } else {
            let status = answer.expect_err("denied");
            assert_eq!(
                status.code(),
                Code::PermissionDenied,
                "{role} {action:?}: {status:?}"
            );
        }
    }
}

/// Pins: the grpcurl example of docs/jobs.md ("Filtering and bulk actions") runs and
/// does what it says.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs grpcurl"]
async fn the_jobs_doc_filter_example_runs() {
    crate::common::tools::require("grpcurl");
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    for (id, tenant, error) in [
        ("m-1", "acme", "upstream timeout"),
        ("m-2", "globex", "mailbox full"),
    ] {
        let mut req = job_with("mail", id, "email.send", &[("tenant", tenant)]);
        req.namespace = "shop".into();
        req.max_attempts = Some(1);
        c.enqueue(req).await.expect("enqueue");
        let mut claim = claim_req(&["mail"], 0, Some(600_000));
        claim.namespace = "shop".into();
        let held = c.claim_job(claim).await.expect("claim").into_inner().jobs;
        let held = held.first().expect("a job");
        c.fail_job(proto::FailJobRequest {
            namespace: "shop".into(),
            job_id: held.job_id.clone(),
            lease_token: held.lease_token.clone(),
            error: error.into(),
            ..Default::default()
        })
        .await
        .expect("fail");
    }
    let text = crate::doc_examples::run_fenced("filters-example", &service);
    for shown in [
        "\"jobId\": \"m-1\"",
        "\"applied\": \"1\"",
        "\"jobId\": \"m-9\"",
        "\"reason\": \"not found\"",
    ] {
        assert!(text.contains(shown), "{shown} is not in:\n{text}");
    }
    assert!(!text.contains("\"jobId\": \"m-2\""), "{text}");
    let get = |id: &str| proto::GetJobRequest {
        namespace: "shop".into(),
        job_id: id.into(),
    };
    let gone = c.get_job(get("m-1")).await.expect_err("deleted");
    assert_eq!(gone.code(), Code::NotFound);
    let m2 = c
        .get_job(get("m-2"))
        .await
        .expect("m-2")
        .into_inner()
        .job
        .expect("job");
    assert_eq!(state(&m2), proto::JobState::Dead);
}

/// Pins: at maxmemory CancelJobs and DeleteJobs still run (as CancelJob and
/// DeleteJob do: `allow-oom`), while RetryJobs is refused, as RetryJob is.
#[tokio::test]
async fn at_maxmemory_cancel_and_delete_run_and_retry_is_refused() {
    let redis = Redis::start().await;
    let service = Service::start_with(config_without_background_work(&redis.url())).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;
    dead_jobs(&mut c, "q", "dead", 1, "boom").await;
    enqueue(&mut c, job_with("q", "waiting", "x", &[])).await;
    crate::edge::faults::full::fill_redis(&mut conn).await;
    let refused = bulk(&mut c, Action::Retry, request("q", ids(&["dead-0"])))
        .await
        .expect_err("a retry at maxmemory is refused");
    assert_eq!(refused.code(), Code::ResourceExhausted, "{refused:?}");
    let cancelled = bulk(&mut c, Action::Cancel, request("q", ids(&["waiting"])))
        .await
        .expect("CancelJobs at maxmemory");
    assert_eq!(cancelled.applied, 1);
    let deleted = bulk(
        &mut c,
        Action::Delete,
        request("q", ids(&["dead-0", "waiting"])),
    )
    .await
    .expect("DeleteJobs at maxmemory");
    assert_eq!(deleted.applied, 2);
}
