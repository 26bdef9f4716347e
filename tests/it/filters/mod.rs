//! Job filters and bulk actions (issue 33): ListJobs' filter (each part alone and
//! combined, paging under its budget, a time range narrowing the scan, bad input) and
//! RetryJobs / CancelJobs / DeleteJobs (by ids with skips and their reasons, by query
//! looped to completion, two callers racing, permission, bad input); the CLI's
//! `dueq jobs` filter flags and `dueq bulk`.

mod bulk;
mod cli;
mod listing;

use std::collections::HashMap;

use crate::common::*;

/// Enqueues `jobs` into "ns" through EnqueueBatch, 1000 a call; their ids, in order.
pub(super) async fn enqueue_many(c: &mut Client, jobs: Vec<proto::EnqueueRequest>) -> Vec<String> {
    let mut ids = Vec::new();
    for chunk in jobs.chunks(1000) {
        let answer = c
            .enqueue_batch(proto::EnqueueBatchRequest {
                namespace: "ns".into(),
                jobs: chunk.to_vec(),
            })
            .await
            .expect("EnqueueBatch")
            .into_inner();
        for result in answer.results {
            match result.result {
                Some(proto::enqueue_batch_result::Result::Ok(job)) => ids.push(job.job_id),
                other => panic!("enqueue: {other:?}"),
            }
        }
    }
    ids
}

/// Job `id` of `queue` named `name`, with `headers`.
pub(super) fn job_with(
    queue: &str,
    id: &str,
    name: &str,
    headers: &[(&str, &str)],
) -> proto::EnqueueRequest {
    let mut req = job(queue, name);
    req.job_id = id.into();
    req.headers = headers
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect::<HashMap<_, _>>();
    req
}

/// Redis's clock (the service's one clock), in ms.
pub(super) async fn redis_ms(redis: &Redis) -> i64 {
    let mut conn = redis.conn().await;
    let (secs, micros): (i64, i64) = query(&mut conn, &mut cmd("TIME")).await;
    secs * 1000 + micros / 1000
}

/// Waits until Redis's clock has passed `ms`, so what is created next is created later.
pub(super) async fn past(redis: &Redis, ms: i64) {
    let patience = Patience::new(format!("Redis time past {ms}"));
    while redis_ms(redis).await <= ms {
        patience.wait().await;
    }
}

/// A job's create time in epoch ms.
pub(super) fn created_ms(job: &proto::Job) -> i64 {
    let ts = job.create_time.as_ref().expect("create_time");
    ts.seconds * 1000 + i64::from(ts.nanos) / 1_000_000
}

pub(super) fn at_ms(ms: i64) -> prost_types::Timestamp {
    prost_types::Timestamp {
        seconds: ms.div_euclid(1000),
        nanos: (ms.rem_euclid(1000) * 1_000_000) as i32,
    }
}

/// `n` dead jobs of `queue` (ids `<prefix>-<i>`), each failed once with `error`; the
/// queue must hold no other claimable job.
pub(super) async fn dead_jobs(
    c: &mut Client,
    queue: &str,
    prefix: &str,
    n: usize,
    error: &str,
) -> Vec<String> {
    let jobs = (0..n)
        .map(|i| {
            let mut req = job_with(queue, &format!("{prefix}-{i}"), "dying", &[]);
            req.max_attempts = Some(1);
            req
        })
        .collect();
    let ids = enqueue_many(c, jobs).await;
    let mut failed = 0;
    while failed < n {
        let mut req = claim_req(&[queue], 0, Some(600_000));
        req.max_jobs = 100;
        let claimed = c.claim_job(req).await.expect("claim").into_inner().jobs;
        assert!(!claimed.is_empty(), "{} of {n} jobs claimed", failed);
        for job in claimed {
            assert!(
                job.job_id.starts_with(prefix),
                "claimed {} of another test",
                job.job_id
            );
            fail_job(c, &job.job_id, &job.lease_token, error)
                .await
                .expect("fail");
            failed += 1;
        }
    }
    ids
}

/// One ListJobs call on "ns" (BASIC view).
pub(super) async fn list_page(
    c: &mut Client,
    queue: &str,
    state: proto::JobState,
    filter: Option<proto::JobFilter>,
    page_token: String,
) -> Result<proto::ListJobsResponse, tonic::Status> {
    c.list_jobs(proto::ListJobsRequest {
        namespace: "ns".into(),
        queue: queue.into(),
        state: state as i32,
        page_size: 100,
        page_token,
        view: proto::JobView::Basic as i32,
        filter,
    })
    .await
    .map(|r| r.into_inner())
}

/// What paging a filtered listing to its end saw.
pub(super) struct Paged {
    pub(super) ids: Vec<String>,
    /// `scanned` of each call.
    pub(super) scanned: Vec<u64>,
}

/// Pages ListJobs with `filter` until the token is empty.
pub(super) async fn list_matching(
    c: &mut Client,
    queue: &str,
    state: proto::JobState,
    filter: proto::JobFilter,
) -> Paged {
    let mut paged = Paged {
        ids: Vec::new(),
        scanned: Vec::new(),
    };
    let mut token = String::new();
    loop {
        let page = list_page(c, queue, state, Some(filter.clone()), token)
            .await
            .expect("ListJobs");
        paged.ids.extend(page.jobs.into_iter().map(|j| j.job_id));
        paged.scanned.push(page.scanned);
        if page.next_page_token.is_empty() {
            return paged;
        }
        token = page.next_page_token;
    }
}

/// The ids of `queue`'s jobs in `state`.
pub(super) async fn ids_in(c: &mut Client, queue: &str, state: proto::JobState) -> Vec<String> {
    list_matching(c, queue, state, proto::JobFilter::default())
        .await
        .ids
}
