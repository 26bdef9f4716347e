//! Bad input: a clear status naming the field, and nothing written.

use tonic::Code;

use crate::common::*;

fn check(result: Result<(), tonic::Status>, code: Code, field: &str) {
    let status = result.expect_err("must be refused");
    assert_eq!(status.code(), code, "{field}: {status:?}");
    assert!(
        status.message().starts_with(field),
        "message should name {field}: {}",
        status.message()
    );
}

#[tokio::test]
async fn bad_enqueues_name_the_field_and_write_nothing() {
    let redis = Redis::start().await;
    let mut config = config(&redis.url());
    config.max_lease = std::time::Duration::from_secs(60);
    let service = Service::start_with(config).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;
    // Some state to compare against.
    enqueue(&mut c, job("q", "existing")).await;
    let before = snapshot(&mut conn).await;
    let size = dbsize(&mut conn).await;

    let cases: Vec<(proto::EnqueueRequest, Code, &str)> = vec![
        (job("", "n"), Code::InvalidArgument, "queue"),
        (job(&"q".repeat(257), "n"), Code::InvalidArgument, "queue"),
        (job("q", ""), Code::InvalidArgument, "name"),
        (job("q", &"n".repeat(257)), Code::InvalidArgument, "name"),
        (
            {
                let mut r = job("q", "n");
                r.when = Some(proto::enqueue_request::When::Delay(prost_types::Duration {
                    seconds: -1,
                    nanos: 0,
                }));
                r
            },
            Code::InvalidArgument,
            "delay",
        ),
        (
            {
                let mut r = job("q", "n");
                r.max_attempts = Some(0);
                r
            },
            Code::InvalidArgument,
            "max_attempts",
        ),
        (
            {
                let mut r = job("q", "n");
                r.backoff = Some(proto::Backoff {
                    kind: 7,
                    base: Some(dur(1_000)),
                    ..Default::default()
                });
                r
            },
            Code::InvalidArgument,
            "backoff.kind",
        ),
        (
            {
                let mut r = job("q", "n");
                r.backoff = Some(proto::Backoff {
                    kind: proto::BackoffKind::Exponential as i32,
                    base: Some(dur(1_000)),
                    cap: None,
                    jitter: 1.5,
                });
                r
            },
            Code::InvalidArgument,
            "backoff.jitter",
        ),
        (
            {
                let mut r = job("q", "n");
                r.lease = Some(dur(0));
                r
            },
            Code::InvalidArgument,
            "lease",
        ),
        (
            {
                let mut r = job("q", "n");
                r.lease = Some(dur(61_000));
                r
            },
            Code::InvalidArgument,
            "lease",
        ),
        (
            {
                let mut r = job("q", "n");
                r.payload = vec![0; 1024 * 1024 + 1];
                r
            },
            Code::ResourceExhausted,
            "payload",
        ),
        (
            {
                let mut r = job("q", "n");
                r.dedup_key = "k".into();
                r
            },
            Code::InvalidArgument,
            "dedup_ttl",
        ),
        (
            {
                let mut r = job("q", "n");
                r.dedup_key = "k".into();
                r.dedup_ttl = Some(dur(1_000));
                r.dedup_mode = 9;
                r
            },
            Code::InvalidArgument,
            "dedup_mode",
        ),
        (
            {
                let mut r = job("q", "n");
                r.job_id = "x".repeat(257);
                r
            },
            Code::InvalidArgument,
            "job_id",
        ),
        (
            {
                let mut r = job("q", "n");
                r.namespace = "a{b}".into();
                r
            },
            Code::InvalidArgument,
            "namespace",
        ),
    ];
    for (req, code, field) in cases {
        check(c.enqueue(req).await.map(|_| ()), code, field);
    }
    assert_eq!(dbsize(&mut conn).await, size);
    assert_eq!(snapshot(&mut conn).await, before, "nothing written");
}

#[tokio::test]
async fn bad_claims_and_lease_calls_name_the_field_and_write_nothing() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;
    let id = enqueue(&mut c, job("q", "n")).await.job_id;
    let before = snapshot(&mut conn).await;

    let mut no_queues = claim_req(&[], 0, None);
    no_queues.queues.clear();
    check(
        c.claim_job(no_queues).await.map(|_| ()),
        Code::InvalidArgument,
        "queues",
    );
    check(
        c.claim_job(claim_req(&["q", ""], 0, None))
            .await
            .map(|_| ()),
        Code::InvalidArgument,
        "queues[1]",
    );
    check(
        c.claim_job(claim_req(&["q"], 0, Some(0))).await.map(|_| ()),
        Code::InvalidArgument,
        "lease",
    );
    check(
        c.claim_job(claim_req(&["q"], 0, Some(24 * 3_600_000)))
            .await
            .map(|_| ()),
        Code::InvalidArgument,
        "lease",
    );
    let mut too_many = claim_req(&["q"], 0, None);
    too_many.max_jobs = 101;
    check(
        c.claim_job(too_many).await.map(|_| ()),
        Code::InvalidArgument,
        "max_jobs",
    );
    let mut negative = claim_req(&["q"], 0, None);
    negative.wait = Some(prost_types::Duration {
        seconds: -1,
        nanos: 0,
    });
    check(
        c.claim_job(negative).await.map(|_| ()),
        Code::InvalidArgument,
        "wait",
    );
    check(
        ack_job(&mut c, "", "t").await.map(|_| ()),
        Code::InvalidArgument,
        "job_id",
    );
    check(
        ack_job(&mut c, &id, "").await.map(|_| ()),
        Code::InvalidArgument,
        "lease_token",
    );
    check(
        c.extend_lease(proto::ExtendLeaseRequest {
            progress: None,
            namespace: "ns".into(),
            job_id: id.clone(),
            lease_token: "t".into(),
            lease: None,
        })
        .await
        .map(|_| ()),
        Code::InvalidArgument,
        "lease",
    );
    check(
        fail_job(&mut c, &id, "t", &"e".repeat(5000))
            .await
            .map(|_| ()),
        Code::InvalidArgument,
        "error",
    );
    check(
        c.list_jobs(proto::ListJobsRequest {
            namespace: "ns".into(),
            queue: String::new(),
            ..Default::default()
        })
        .await
        .map(|_| ()),
        Code::InvalidArgument,
        "queue",
    );
    check(
        c.list_jobs(proto::ListJobsRequest {
            namespace: "ns".into(),
            queue: "q".into(),
            state: 42,
            ..Default::default()
        })
        .await
        .map(|_| ()),
        Code::InvalidArgument,
        "state",
    );
    assert_eq!(snapshot(&mut conn).await, before, "nothing written");
}
