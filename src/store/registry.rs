//! The namespace registry (`keys::namespaces`) and the per-namespace queue pages
//! (issue 14). The registry lives outside every namespace's slot, so it is written
//! with a plain command, never from a script (invariant 6): the service registers a
//! namespace before its first write (once per process per namespace, see
//! `Context::register_namespace`), and Migrate registers every namespace it meets.
//! Every member has score 0, so a page is a ZRANGE BYLEX by name.

use deadpool_redis::redis;

use super::{keys, ops::queue_stats::QueueStatsPage, Store, StoreError};
use crate::domain::{NamespacePage, QueuePage};

/// Most names one page of namespaces holds.
pub(crate) const MAX_NAMESPACE_PAGE: usize = 1000;

impl Store {
    /// Adds `namespace` to the registry (idempotent: `ZADD NX`).
    pub(crate) async fn register_namespace(&self, namespace: &str) -> Result<(), StoreError> {
        self.query(
            redis::cmd("ZADD")
                .arg(keys::namespaces(&self.prefix))
                .arg("NX")
                .arg(0)
                .arg(namespace)
                .to_owned(),
        )
        .await
    }

    /// Registered namespaces after `after` ("" from the first), by name, at most
    /// `limit` (capped at [`MAX_NAMESPACE_PAGE`]). O(log N + limit).
    pub(crate) async fn list_namespaces(
        &self,
        after: &str,
        limit: usize,
    ) -> Result<NamespacePage, StoreError> {
        let limit = limit.clamp(1, MAX_NAMESPACE_PAGE);
        let from = if after.is_empty() {
            "-".to_owned()
        } else {
            format!("({after}")
        };
        let mut namespaces: Vec<String> = self
            .query(
                redis::cmd("ZRANGE")
                    .arg(keys::namespaces(&self.prefix))
                    .arg(from)
                    .arg("+")
                    .arg("BYLEX")
                    .arg("LIMIT")
                    .arg(0)
                    .arg(limit + 1)
                    .to_owned(),
            )
            .await?;
        let next_after = if namespaces.len() > limit {
            namespaces.truncate(limit);
            namespaces.last().cloned()
        } else {
            None
        };
        Ok(NamespacePage {
            namespaces,
            next_after,
        })
    }

    /// A page of `namespace`'s queues after `after` ("" from the first), by name, with
    /// their counts by state, oldest pending job and paused flag: one script call,
    /// O(1) per queue (plus the heads of its ready lists). `limit` is capped at
    /// [`super::ops::queue_stats::MAX_PAGE`]. Fails with NeedsMigrate while the
    /// namespace's jobs are in an older layout.
    pub(crate) async fn queue_stats(
        &self,
        namespace: &str,
        after: &str,
        limit: usize,
    ) -> Result<QueuePage, StoreError> {
        self.run(namespace, &QueueStatsPage { after, limit }).await
    }
}

#[cfg(test)]
mod tests {
    use crate::{
        domain::{Failure, JobSpec, RunAt},
        store::{
            ops::{
                ack_job::AckJob, cancel_job::CancelJob, claim_jobs, enqueue_jobs::EnqueueJobs,
                fail_job::FailJob, retry_job::RetryJob,
            },
            Store,
        },
        testing::TestRedis,
    };

    fn spec(id: &str, queue: &str, run_at: RunAt, max_attempts: u32) -> JobSpec {
        JobSpec {
            id: id.into(),
            queue: queue.into(),
            name: "n".into(),
            payload: Vec::new(),
            headers: Default::default(),
            priority: 0,
            run_at,
            max_attempts,
            backoff: Default::default(),
            lease_ms: 30_000,
            dedup: None,
        }
    }

    async fn counts(store: &Store, queue: &str) -> (u64, u64, u64, u64) {
        let page = store
            .queue_stats("ns", "", 100)
            .await
            .unwrap_or_else(|e| panic!("stats: {e}"));
        let q = page
            .queues
            .iter()
            .find(|q| q.queue == queue)
            .unwrap_or_else(|| panic!("queue {queue} not listed: {page:?}"));
        assert!(q.counted, "a namespace created now is counted");
        (q.pending, q.delayed, q.active, q.dead)
    }

    async fn claim(store: &Store, queue: &str) -> (String, String) {
        let queues = [queue.to_owned()];
        let op = claim_jobs::ClaimJobs {
            queues: &queues,
            ..claim_jobs::sample()
        };
        let batch = store.run("ns", &op).await.unwrap_or_else(|e| panic!("{e}"));
        let job = &batch.jobs[0];
        (job.id.clone(), job.lease_token.clone())
    }

    /// Every transition keeps the counts exact: enqueue, claim, ack, fail to a retry
    /// and to dead, retry, cancel; queues page by name; the oldest pending job shows.
    #[tokio::test]
    async fn counts_follow_every_transition() {
        let redis = TestRedis::start().await;
        let store = redis.store();
        let jobs = [
            spec("a", "q", RunAt::Now, 1),
            spec("b", "q", RunAt::Now, 2),
            spec("c", "q", RunAt::Now, 1),
            spec("d", "q", RunAt::DelayMs(60_000), 1),
            spec("e", "r", RunAt::Now, 1),
        ];
        store
            .run("ns", &EnqueueJobs { jobs: &jobs })
            .await
            .unwrap_or_else(|e| panic!("enqueue: {e}"));
        assert_eq!(counts(&store, "q").await, (3, 1, 0, 0));
        let page = store
            .queue_stats("ns", "", 100)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let q = &page.queues[0];
        assert!(q.oldest_pending_ms.is_some_and(|at| at <= page.now_ms));

        let (a, token) = claim(&store, "q").await;
        assert_eq!(a, "a");
        assert_eq!(counts(&store, "q").await, (2, 1, 1, 0));
        store
            .run(
                "ns",
                &AckJob {
                    id: &a,
                    token: &token,
                },
            )
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(counts(&store, "q").await, (2, 1, 0, 0));

        // b has two attempts: its failure retries it now (pending again).
        let now = Failure {
            error: "x".into(),
            retry_after_ms: Some(0),
            non_retryable: false,
        };
        let (b, token) = claim(&store, "q").await;
        store
            .run(
                "ns",
                &FailJob {
                    id: &b,
                    token: &token,
                    failure: &now,
                    random: 0.0,
                },
            )
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            counts(&store, "q").await,
            (2, 1, 0, 0),
            "b is pending again"
        );
        let (b, token) = claim(&store, "q").await;
        assert_eq!(b, "b", "a retried job goes to the head");
        store
            .run(
                "ns",
                &FailJob {
                    id: &b,
                    token: &token,
                    failure: &now,
                    random: 0.0,
                },
            )
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(counts(&store, "q").await, (1, 1, 0, 1), "b is dead");

        store
            .run("ns", &RetryJob { id: "b" })
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            counts(&store, "q").await,
            (2, 1, 0, 0),
            "b is pending again"
        );
        store
            .run("ns", &CancelJob { id: "c" })
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        store
            .run("ns", &CancelJob { id: "d" })
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(counts(&store, "q").await, (1, 0, 0, 0));
        assert_eq!(counts(&store, "r").await, (1, 0, 0, 0));

        let first = store
            .queue_stats("ns", "", 1)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(first.queues.len(), 1);
        assert_eq!(first.next_after.as_deref(), Some("q"));
        let second = store
            .queue_stats("ns", "q", 1)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(second.queues[0].queue, "r");
        assert_eq!(second.next_after, None);
    }

    #[tokio::test]
    async fn namespaces_page_by_name() {
        let redis = TestRedis::start().await;
        let store = redis.store();
        for ns in ["b", "a", "c", "a"] {
            store
                .register_namespace(ns)
                .await
                .unwrap_or_else(|e| panic!("{e}"));
        }
        let page = store
            .list_namespaces("", 2)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(page.namespaces, ["a", "b"]);
        assert_eq!(page.next_after.as_deref(), Some("b"));
        let page = store
            .list_namespaces("b", 2)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(page.namespaces, ["c"]);
        assert_eq!(page.next_after, None);
    }
}
