//! Dead letters grouped by error (issue 33): ListDeadGroups, RetryDeadJobs and
//! PurgeJobs of one group (`error_fingerprint`), the counts against the jobs
//! themselves across every way out of dead, bounded batches, bad input,
//! authorisation, and Migrate indexing dead jobs stored before the groups.

mod api;
mod bulk;
mod cli;

use std::collections::{BTreeMap, HashMap};

use crate::common::*;

/// One message per kind of error; `i` varies the numbers, ids and quoted strings
/// the fingerprint leaves out. The kind is the message's first word.
fn message(kind: char, i: usize) -> String {
    match kind {
        'A' => format!("Timeout after {}s on job {:08x}", i % 90 + 1, i * 7919 + 11),
        'B' => format!("connection refused by 10.0.{}.1:{}", i % 250, 5000 + i),
        'C' => format!("quota 'tenant-{i}' exceeded"),
        'D' => format!("schema version {} unsupported", i + 2),
        other => panic!("no kind {other}"),
    }
}

/// The kind of a message `message` wrote.
fn kind_of(message: &str) -> String {
    message
        .split_whitespace()
        .next()
        .unwrap_or_default()
        .to_lowercase()
}

fn one_attempt(queue: &str, name: &str) -> proto::EnqueueRequest {
    proto::EnqueueRequest {
        max_attempts: Some(1),
        ..job(queue, name)
    }
}

/// Enqueues `jobs` (one attempt each), claims them and fails each with its message:
/// all dead. Their ids, in order.
async fn kill(c: &mut Client, jobs: Vec<(proto::EnqueueRequest, String)>) -> Vec<String> {
    let mut ids = Vec::new();
    let mut errors = HashMap::new();
    let mut queues = Vec::new();
    for chunk in jobs.chunks(1000) {
        let items = c
            .enqueue_batch(proto::EnqueueBatchRequest {
                namespace: "ns".into(),
                jobs: chunk.iter().map(|(req, _)| req.clone()).collect(),
            })
            .await
            .expect("enqueue batch")
            .into_inner()
            .results;
        for (item, (req, message)) in items.into_iter().zip(chunk) {
            let id = match item.result {
                Some(proto::enqueue_batch_result::Result::Ok(ok)) => ok.job_id,
                other => panic!("enqueued: {other:?}"),
            };
            errors.insert(id.clone(), message.clone());
            ids.push(id);
            if !queues.contains(&req.queue) {
                queues.push(req.queue.clone());
            }
        }
    }
    fail_all(c, &queues, &errors).await;
    ids
}

/// Claims from `queues` and fails every job `errors` names with its message, until
/// all of them failed.
async fn fail_all(c: &mut Client, queues: &[String], errors: &HashMap<String, String>) {
    let queues: Vec<&str> = queues.iter().map(String::as_str).collect();
    let mut left = errors.len();
    while left > 0 {
        let claimed = c
            .claim_job(proto::ClaimJobRequest {
                max_jobs: 100,
                ..claim_req(&queues, 0, None)
            })
            .await
            .expect("claim")
            .into_inner()
            .jobs;
        assert!(!claimed.is_empty(), "{left} jobs left to fail");
        for j in claimed {
            let message = errors.get(&j.job_id).expect("a job of this test");
            fail_job(c, &j.job_id, &j.lease_token, message)
                .await
                .expect("fail");
            left -= 1;
        }
    }
}

/// `n` jobs of `queue` dying with errors of `kind`.
fn of_kind(queue: &str, kind: char, n: usize) -> Vec<(proto::EnqueueRequest, String)> {
    (0..n)
        .map(|i| (one_attempt(queue, &format!("{kind}{i}")), message(kind, i)))
        .collect()
}

async fn list_page(
    c: &mut Client,
    queue: &str,
    page_size: u32,
    token: &str,
) -> Result<proto::ListDeadGroupsResponse, tonic::Status> {
    c.list_dead_groups(proto::ListDeadGroupsRequest {
        namespace: "ns".into(),
        queue: queue.into(),
        page_size,
        page_token: token.into(),
    })
    .await
    .map(|r| r.into_inner())
}

/// Every group of `queue` ("" every queue), page by page.
async fn groups(c: &mut Client, queue: &str) -> Vec<proto::DeadGroup> {
    let mut out = Vec::new();
    let mut token = String::new();
    loop {
        let page = list_page(c, queue, 1000, &token)
            .await
            .expect("ListDeadGroups");
        out.extend(page.groups);
        if page.next_page_token.is_empty() {
            return out;
        }
        token = page.next_page_token;
    }
}

/// (queue, kind) -> count, as ListDeadGroups reports it; each kind is one group.
async fn grouped(c: &mut Client) -> BTreeMap<(String, String), u64> {
    let mut out = BTreeMap::new();
    for g in groups(c, "").await {
        let key = (g.queue.clone(), kind_of(&g.sample_error));
        assert!(
            out.insert(key, g.count).is_none(),
            "one group per kind: {g:?}"
        );
    }
    out
}

/// (queue, kind) -> count of the dead jobs themselves (ListJobs), by the last
/// message of each one's error history.
async fn truth(c: &mut Client, queues: &[&str]) -> BTreeMap<(String, String), u64> {
    let mut out = BTreeMap::new();
    for queue in queues {
        for j in list_all_jobs(c, "ns", queue, 1000).await {
            if state(&j) == proto::JobState::Dead {
                let last = j.errors.last().expect("a dead job's error");
                *out.entry((j.queue.clone(), kind_of(&last.message)))
                    .or_default() += 1;
            }
        }
    }
    out
}

/// The fingerprint of `queue`'s group of `kind`.
async fn fingerprint(c: &mut Client, queue: &str, kind: char) -> String {
    let word = kind_of(&message(kind, 0));
    groups(c, queue)
        .await
        .into_iter()
        .find(|g| kind_of(&g.sample_error) == word)
        .unwrap_or_else(|| panic!("a group of kind {kind} in {queue}"))
        .fingerprint
}

fn key(queue: &str, kind: char) -> (String, String) {
    (queue.to_owned(), kind_of(&message(kind, 0)))
}
