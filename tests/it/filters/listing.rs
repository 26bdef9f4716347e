//! ListJobs' filter (issue 33): each part alone and combined, a budgeted search paged
//! with tokens, a time range that narrows the scan, bad input.

use tonic::Code;

use super::*;
use crate::common::*;

fn sorted(mut ids: Vec<String>) -> Vec<String> {
    ids.sort();
    ids
}

fn filter() -> proto::JobFilter {
    proto::JobFilter::default()
}

/// Queue "f": `boom` (name b, env=prod, dead after "Connection TIMEOUT after 30s"),
/// then, created later, `a1` (name a, env=prod, dedup d1), `a2` (name a, env=dev,
/// team=x) and `plain` (name c, no headers). Returns the create time of `a1`.
async fn four_jobs(c: &mut Client, redis: &Redis) -> i64 {
    let mut boom = job_with("f", "boom", "b", &[("env", "prod")]);
    boom.max_attempts = Some(1);
    enqueue(c, boom).await;
    let claimed = claim_job(c, &["f"], 0, Some(600_000)).await.expect("claim");
    fail_job(
        c,
        &claimed.job_id,
        &claimed.lease_token,
        "Connection TIMEOUT after 30s",
    )
    .await
    .expect("fail");
    let boom_created = created_ms(&get_job(c, "boom").await);
    past(redis, boom_created).await;
    let mut a1 = job_with("f", "a1", "a", &[("env", "prod")]);
    a1.dedup_key = "d1".into();
    a1.dedup_ttl = Some(dur(3_600_000));
    enqueue(c, a1).await;
    enqueue(
        c,
        job_with("f", "a2", "a", &[("env", "dev"), ("team", "x")]),
    )
    .await;
    enqueue(c, job_with("f", "plain", "c", &[])).await;
    created_ms(&get_job(c, "a1").await)
}

async fn matching(c: &mut Client, f: proto::JobFilter) -> Vec<String> {
    sorted(
        list_matching(c, "f", proto::JobState::Unspecified, f)
            .await
            .ids,
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_filter_alone_and_combined() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let a1_created = four_jobs(&mut c, &redis).await;
    let all = ["a1", "a2", "boom", "plain"];
    assert_eq!(
        matching(&mut c, filter()).await,
        all,
        "an empty filter matches every job"
    );

    let by_name = proto::JobFilter {
        name: "a".into(),
        ..filter()
    };
    assert_eq!(matching(&mut c, by_name).await, ["a1", "a2"]);
    let by_dedup = proto::JobFilter {
        dedup_key: "d1".into(),
        ..filter()
    };
    assert_eq!(matching(&mut c, by_dedup).await, ["a1"]);
    let header_present = proto::JobFilter {
        header_key: "env".into(),
        ..filter()
    };
    assert_eq!(matching(&mut c, header_present).await, ["a1", "a2", "boom"]);
    let header_value = proto::JobFilter {
        header_key: "env".into(),
        header_value: "prod".into(),
        ..filter()
    };
    assert_eq!(matching(&mut c, header_value).await, ["a1", "boom"]);
    let other_header = proto::JobFilter {
        header_key: "team".into(),
        ..filter()
    };
    assert_eq!(matching(&mut c, other_header).await, ["a2"]);
    for text in ["timeout", "TIMEOUT AFTER", "connection timeout after 30s"] {
        let by_error = proto::JobFilter {
            error_contains: text.into(),
            ..filter()
        };
        assert_eq!(matching(&mut c, by_error).await, ["boom"], "{text}");
    }
    let no_error = proto::JobFilter {
        error_contains: "refused".into(),
        ..filter()
    };
    assert!(matching(&mut c, no_error).await.is_empty());
    let since = proto::JobFilter {
        created_after: Some(at_ms(a1_created)),
        ..filter()
    };
    assert_eq!(matching(&mut c, since).await, ["a1", "a2", "plain"]);
    let until = proto::JobFilter {
        created_before: Some(at_ms(a1_created)),
        ..filter()
    };
    assert_eq!(matching(&mut c, until).await, ["boom"]);

    // Combined: every part must match.
    let name_and_header = proto::JobFilter {
        name: "a".into(),
        header_key: "env".into(),
        header_value: "prod".into(),
        ..filter()
    };
    assert_eq!(matching(&mut c, name_and_header).await, ["a1"]);
    let name_and_error = proto::JobFilter {
        name: "a".into(),
        error_contains: "timeout".into(),
        ..filter()
    };
    assert!(matching(&mut c, name_and_error).await.is_empty());
    let error_and_state = list_matching(
        &mut c,
        "f",
        proto::JobState::Dead,
        proto::JobFilter {
            name: "b".into(),
            error_contains: "timeout".into(),
            ..filter()
        },
    )
    .await;
    assert_eq!(error_and_state.ids, ["boom"]);
    let wrong_state = list_matching(
        &mut c,
        "f",
        proto::JobState::Pending,
        proto::JobFilter {
            error_contains: "timeout".into(),
            ..filter()
        },
    )
    .await;
    assert!(wrong_state.ids.is_empty());
}

/// 3 matching jobs among 5,000: every call examines at most the budget (500), pages
/// come back with a token (some empty), and paging to the end finds all three.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_search_pages_under_its_budget() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let needles = [100, 2500, 4900];
    let jobs = (0..5000)
        .map(|i| {
            let name = if needles.contains(&i) {
                "needle"
            } else {
                "hay"
            };
            job_with("big", &format!("j{i}"), name, &[])
        })
        .collect();
    enqueue_many(&mut c, jobs).await;
    let f = proto::JobFilter {
        name: "needle".into(),
        ..filter()
    };
    let paged = list_matching(&mut c, "big", proto::JobState::Unspecified, f).await;
    assert_eq!(paged.ids, ["j100", "j2500", "j4900"]);
    assert!(
        paged.scanned.iter().all(|&s| s <= 500),
        "{:?}",
        paged.scanned
    );
    assert!(
        paged.scanned.len() >= 10,
        "5,000 jobs at 500 a call: {:?}",
        paged.scanned
    );
    assert_eq!(
        paged.scanned.iter().sum::<u64>(),
        5000,
        "each job examined once"
    );

    let first = list_page(
        &mut c,
        "big",
        proto::JobState::Unspecified,
        Some(proto::JobFilter {
            name: "nothing-has-it".into(),
            ..filter()
        }),
        String::new(),
    )
    .await
    .expect("ListJobs");
    assert!(first.jobs.is_empty());
    assert!(
        !first.next_page_token.is_empty(),
        "an empty page can hold a token"
    );
    assert_eq!(first.scanned, 500);
}

/// A selective time range: the scan starts near the first job created in it (a
/// binary search over the listing) and ends at the first job created after it, so it
/// examines about the matches, not the queue.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_time_range_narrows_the_scan() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let before = (0..3000)
        .map(|i| job_with("t", &format!("old{i}"), "x", &[]))
        .collect();
    enqueue_many(&mut c, before).await;
    past(&redis, created_ms(&get_job(&mut c, "old2999").await)).await;
    let inside = (0..3)
        .map(|i| job_with("t", &format!("in{i}"), "x", &[]))
        .collect();
    enqueue_many(&mut c, inside).await;
    let from = created_ms(&get_job(&mut c, "in0").await);
    let to = created_ms(&get_job(&mut c, "in2").await) + 1;
    past(&redis, to).await;
    let after = (0..2000)
        .map(|i| job_with("t", &format!("new{i}"), "x", &[]))
        .collect();
    enqueue_many(&mut c, after).await;

    let range = proto::JobFilter {
        created_after: Some(at_ms(from)),
        created_before: Some(at_ms(to)),
        ..filter()
    };
    let paged = list_matching(&mut c, "t", proto::JobState::Unspecified, range).await;
    assert_eq!(paged.ids, ["in0", "in1", "in2"]);
    let scanned: u64 = paged.scanned.iter().sum();
    assert!(
        scanned <= 3 + 500,
        "a selective range examined {scanned} of 5,003 jobs"
    );
    assert_eq!(paged.scanned.len(), 1, "one call: {:?}", paged.scanned);

    // Only the start bound: the search skips the older jobs too.
    let since = proto::JobFilter {
        created_after: Some(at_ms(from)),
        name: "x".into(),
        ..filter()
    };
    let paged = list_matching(&mut c, "t", proto::JobState::Unspecified, since).await;
    assert_eq!(paged.ids.len(), 2003);
    let scanned: u64 = paged.scanned.iter().sum();
    assert!(scanned <= 2003 + 500, "examined {scanned}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_filter_is_refused_naming_its_field() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let cases = [
        (
            proto::JobFilter {
                header_value: "prod".into(),
                ..filter()
            },
            "filter.header_key",
        ),
        (
            proto::JobFilter {
                created_after: Some(at_ms(2_000_000)),
                created_before: Some(at_ms(1_000_000)),
                ..filter()
            },
            "filter.created_before",
        ),
        (
            proto::JobFilter {
                name: "n".repeat(257),
                ..filter()
            },
            "filter.name",
        ),
        (
            proto::JobFilter {
                dedup_key: "d".repeat(257),
                ..filter()
            },
            "filter.dedup_key",
        ),
        (
            proto::JobFilter {
                header_key: "k".repeat(257),
                ..filter()
            },
            "filter.header_key",
        ),
        (
            proto::JobFilter {
                header_key: "k".into(),
                header_value: "v".repeat(8193),
                ..filter()
            },
            "filter.header_value",
        ),
        (
            proto::JobFilter {
                error_contains: "e".repeat(257),
                ..filter()
            },
            "filter.error_contains",
        ),
        (
            proto::JobFilter {
                created_after: Some(prost_types::Timestamp {
                    seconds: -1,
                    nanos: 0,
                }),
                ..filter()
            },
            "filter.created_after",
        ),
    ];
    for (f, field) in cases {
        let status = list_page(
            &mut c,
            "q",
            proto::JobState::Unspecified,
            Some(f),
            String::new(),
        )
        .await
        .expect_err("refused");
        assert_eq!(status.code(), Code::InvalidArgument, "{field}: {status:?}");
        assert!(
            status.message().contains(field),
            "{field}: {}",
            status.message()
        );
    }
}
