//! The namespace registry (`keys::namespaces`) and the per-namespace queue pages
//! (issue 14). The registry lives outside every namespace's slot, so it is written
//! with a plain command, never from a script (invariant 6): the service registers a
//! namespace before its first write (once per process per namespace, see
//! `Context::register_namespace`), and Migrate registers every namespace it meets.
//! Every member has score 0, so a page is a ZRANGE BYLEX by name.

use deadpool_redis::redis;

use super::{keys, ops::queue_stats::QueueStatsPage, Store, StoreError};
use crate::domain::{NamespacePage, QueuePage};

/// Most queues one page of `Store::queue_stats` holds.
pub(crate) const MAX_QUEUE_PAGE: usize = 1000;

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

    /// Whether `namespace`'s queue counts are kept (meta `counts`): false for a
    /// namespace whose jobs predate them until Migrate recounts it.
    pub(crate) async fn queue_counts_kept(&self, namespace: &str) -> Result<bool, StoreError> {
        let kept: Option<String> = self
            .query(
                redis::cmd("HGET")
                    .arg(self.keys(namespace).meta())
                    .arg("counts")
                    .to_owned(),
            )
            .await?;
        Ok(kept.as_deref() == Some("1"))
    }

    /// Every queue `namespace`'s meta holds a job counter for (`n:<queue>`), by HSCAN
    /// of meta (Migrate only: O(queues) over several calls).
    pub(crate) async fn meta_queues(&self, namespace: &str) -> Result<Vec<String>, StoreError> {
        let meta = self.keys(namespace).meta();
        let mut queues = Vec::new();
        let mut cursor = 0u64;
        loop {
            let (next, pairs): (u64, Vec<Vec<u8>>) = self
                .query(
                    redis::cmd("HSCAN")
                        .arg(&meta)
                        .arg(cursor)
                        .arg("MATCH")
                        .arg("n:*")
                        .arg("COUNT")
                        .arg(500)
                        .to_owned(),
                )
                .await?;
            for field in pairs.iter().step_by(2) {
                if let Some(queue) = field.strip_prefix(b"n:") {
                    queues.push(String::from_utf8_lossy(queue).into_owned());
                }
            }
            if next == 0 {
                break;
            }
            cursor = next;
        }
        queues.sort();
        queues.dedup();
        Ok(queues)
    }

    /// A page of `namespace`'s queues after `after` ("" from the first), by name, with
    /// their counts by state, oldest pending job and paused flag: O(1) per queue
    /// (plus the heads of its ready lists), in script calls of at most
    /// [`super::ops::queue_stats::MAX_PAGE`] queues. `limit` is capped at
    /// [`MAX_QUEUE_PAGE`]. Fails with NeedsMigrate while the namespace's jobs are in
    /// an older layout.
    pub(crate) async fn queue_stats(
        &self,
        namespace: &str,
        after: &str,
        limit: usize,
    ) -> Result<QueuePage, StoreError> {
        let limit = limit.clamp(1, MAX_QUEUE_PAGE);
        let mut page = self
            .run(namespace, &QueueStatsPage { after, limit })
            .await?;
        while page.queues.len() < limit {
            let Some(after) = page.next_after.clone() else {
                break;
            };
            let more = self
                .run(
                    namespace,
                    &QueueStatsPage {
                        after: &after,
                        limit: limit - page.queues.len(),
                    },
                )
                .await?;
            page.queues.extend(more.queues);
            page.next_after = more.next_after;
        }
        Ok(page)
    }
}

#[cfg(test)]
mod tests {
    use deadpool_redis::redis;

    use crate::{
        domain::{Failure, JobRetention, JobSpec, RetentionRule, RunAt},
        store::{
            keys::NamespaceKeys,
            ops::{
                ack_job::AckJob, cancel_job::CancelJob, claim_jobs, enqueue_jobs::EnqueueJobs,
                fail_job::FailJob, migrate_counts::MigrateCounts, retry_job::RetryJob,
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
            retention: Default::default(),
            flow: Default::default(),
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

    async fn enqueue(store: &Store, jobs: &[JobSpec]) {
        store
            .run(
                "ns",
                &EnqueueJobs {
                    namespace: "ns",
                    jobs,
                    max_jobs: 0,
                },
            )
            .await
            .unwrap_or_else(|e| panic!("enqueue: {e}"));
    }

    async fn claim(store: &Store, queue: &str) -> (String, String) {
        let queues = [queue.to_owned()];
        let op = claim_jobs::ClaimJobs {
            queues: &queues,
            receipt: true,
            group: &[],
            ..claim_jobs::sample()
        };
        let batch = store.run("ns", &op).await.unwrap_or_else(|e| panic!("{e}"));
        let job = &batch.jobs[0];
        (job.id.clone(), job.lease_token.clone())
    }

    async fn ack(store: &Store, id: &str, token: &str) {
        store
            .run(
                "ns",
                &AckJob {
                    id,
                    token,
                    result: b"",
                },
            )
            .await
            .unwrap_or_else(|e| panic!("{e}"));
    }

    async fn fail(store: &Store, id: &str, token: &str, failure: &Failure) {
        store
            .run(
                "ns",
                &FailJob {
                    id,
                    token,
                    failure,
                    random: 0.0,
                },
            )
            .await
            .unwrap_or_else(|e| panic!("{e}"));
    }

    async fn cancel(store: &Store, id: &str) {
        store
            .run("ns", &CancelJob { id })
            .await
            .unwrap_or_else(|e| panic!("{e}"));
    }

    /// Every transition keeps the counts exact: enqueue, claim, ack, fail to a retry
    /// and to dead, retry, cancel; queues page by name; the oldest pending job shows.
    #[tokio::test]
    async fn counts_follow_every_transition() {
        let redis = TestRedis::start().await;
        let store = redis.store();
        enqueue_a_to_e(&store).await;
        claim_and_ack_a(&store).await;
        fail_b_to_a_retry_then_dead(&store).await;
        lua_keys_are_the_ones_keys_rs_names(&redis).await;
        retry_b_and_cancel_c_and_d(&store).await;
        queues_page_by_name(&store).await;
    }

    /// The retention keys lib/job.lua composes (issue 36) are the ones keys.rs names:
    /// a keep_for job completed is in the expiry set, a keep_last one in its queue's
    /// kept set of completed jobs.
    #[tokio::test]
    async fn retention_keys_are_the_ones_keys_rs_names() {
        let redis = TestRedis::start().await;
        let store = redis.store();
        let with = |id: &str, on_complete| JobSpec {
            retention: JobRetention {
                on_complete,
                on_fail: RetentionRule::Remove,
            },
            ..spec(id, "q", RunAt::Now, 1)
        };
        enqueue(&store, &[with("f", RetentionRule::KeepForMs(60_000))]).await;
        enqueue(&store, &[with("l", RetentionRule::KeepLast(5))]).await;
        for _ in 0..2 {
            let (id, token) = claim(&store, "q").await;
            ack(&store, &id, &token).await;
        }
        let keys = NamespaceKeys::new("dueq", "ns");
        let mut conn = redis.conn().await;
        let (expires, kept): (Option<i64>, Option<i64>) = redis::pipe()
            .cmd("ZSCORE")
            .arg(keys.retain_expiry())
            .arg("f")
            .cmd("ZSCORE")
            .arg(keys.queue_kept("completed", "q"))
            .arg("l")
            .query_async(&mut conn)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(expires.is_some() && kept.is_some(), "{expires:?} {kept:?}");
    }

    /// a, b, c pending in q (b with two attempts), d delayed in q, e pending in r;
    /// q's oldest pending job shows.
    async fn enqueue_a_to_e(store: &Store) {
        let jobs = [
            spec("a", "q", RunAt::Now, 1),
            spec("b", "q", RunAt::Now, 2),
            spec("c", "q", RunAt::Now, 1),
            spec("d", "q", RunAt::DelayMs(60_000), 1),
            spec("e", "r", RunAt::Now, 1),
        ];
        enqueue(store, &jobs).await;
        assert_eq!(counts(store, "q").await, (3, 1, 0, 0));
        let page = store
            .queue_stats("ns", "", 100)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let q = &page.queues[0];
        assert!(q.oldest_pending_ms.is_some_and(|at| at <= page.now_ms));
    }

    /// a, claimed, is active; acked, it is counted nowhere.
    async fn claim_and_ack_a(store: &Store) {
        let (a, token) = claim(store, "q").await;
        assert_eq!(a, "a");
        assert_eq!(counts(store, "q").await, (2, 1, 1, 0));
        ack(store, &a, &token).await;
        assert_eq!(counts(store, "q").await, (2, 1, 0, 0));
    }

    /// b has two attempts: its first failure retries it now (pending again, at the
    /// head), its second makes it dead.
    async fn fail_b_to_a_retry_then_dead(store: &Store) {
        let now = Failure {
            error: "x".into(),
            retry_after_ms: Some(0),
            non_retryable: false,
        };
        let (b, token) = claim(store, "q").await;
        fail(store, &b, &token, &now).await;
        assert_eq!(counts(store, "q").await, (2, 1, 0, 0), "b is pending again");
        let (b, token) = claim(store, "q").await;
        assert_eq!(b, "b", "a retried job goes to the head");
        fail(store, &b, &token, &now).await;
        assert_eq!(counts(store, "q").await, (1, 1, 0, 1), "b is dead");
    }

    /// The keys the Lua library composes are the ones keys.rs names: q's pending
    /// count, its dead set holding b, and q in the queue registry.
    async fn lua_keys_are_the_ones_keys_rs_names(redis: &TestRedis) {
        let keys = NamespaceKeys::new("dueq", "ns");
        let mut conn = redis.conn().await;
        let (pending, dead, listed): (i64, Option<i64>, Option<i64>) = redis::pipe()
            .cmd("HGET")
            .arg(keys.queue_state("q"))
            .arg("pending")
            .cmd("ZSCORE")
            .arg(keys.queue_dead("q"))
            .arg("b")
            .cmd("ZSCORE")
            .arg(keys.queue_registry())
            .arg("q")
            .query_async(&mut conn)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((pending, dead.is_some(), listed), (1, true, Some(0)));
    }

    /// Retried, the dead b is pending again; cancelled, the pending c and the
    /// delayed d are counted nowhere; r is untouched.
    async fn retry_b_and_cancel_c_and_d(store: &Store) {
        store
            .run("ns", &RetryJob { id: "b" })
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(counts(store, "q").await, (2, 1, 0, 0), "b is pending again");
        cancel(store, "c").await;
        cancel(store, "d").await;
        assert_eq!(counts(store, "q").await, (1, 0, 0, 0));
        assert_eq!(counts(store, "r").await, (1, 0, 0, 0));
    }

    /// Pages of one queue: q, then r, then no more.
    async fn queues_page_by_name(store: &Store) {
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

    /// A page larger than one script call's is read in several, seamlessly.
    #[tokio::test]
    async fn a_large_queue_page_spans_script_calls() {
        let redis = TestRedis::start().await;
        let store = redis.store();
        let jobs: Vec<JobSpec> = (0..150)
            .map(|i| spec(&format!("j{i}"), &format!("q{i:03}"), RunAt::Now, 1))
            .collect();
        enqueue(&store, &jobs).await;
        let all = store
            .queue_stats("ns", "", 1000)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(all.queues.len(), 150);
        assert_eq!(all.next_after, None);
        assert!(all.queues.iter().all(|q| q.pending == 1));
        let part = store
            .queue_stats("ns", "", 120)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(part.queues.len(), 120);
        assert_eq!(part.next_after.as_deref(), Some("q119"));
        let rest = store
            .queue_stats("ns", "q119", 120)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(rest.queues.len(), 30);
        assert_eq!(rest.next_after, None);
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

    /// One batch of Migrate's recount, under the lock token `t`: of `queue`, or
    /// `None` to record that every queue is counted.
    fn recount_step(queue: Option<&'static str>) -> MigrateCounts<'static> {
        MigrateCounts {
            token: "t",
            queue,
            batch: 64,
        }
    }

    /// A namespace whose jobs predate the counts is recounted by Migrate's batches
    /// while jobs keep moving between them: a job is counted once, by the walk or
    /// by its transition, never both; new queues count from their first job.
    #[tokio::test]
    async fn the_recount_is_exact_while_jobs_move() {
        let redis = TestRedis::start().await;
        let store = redis.store();
        enqueue_200_and_kill_j000(&store).await;
        forget_the_counts_and_take_the_lock(&redis).await;
        // First batch: jobs 1..=63 visited.
        let first = store
            .run("ns", &recount_step(Some("q")))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(first.map(|s| s.done), Some(false));
        move_jobs_between_batches(&store).await;
        recount_the_rest(&store).await;
        // 200 - dead j000 - active j001 - cancelled j151 = 197 pending.
        assert_eq!(counts(&store, "q").await, (197, 0, 1, 1));
        assert_eq!(counts(&store, "fresh").await, (1, 0, 0, 0));
        assert!(store
            .queue_counts_kept("ns")
            .await
            .unwrap_or_else(|e| panic!("{e}")));
        // A lost lock writes nothing.
        let other = MigrateCounts {
            token: "u",
            queue: Some("q"),
            batch: 64,
        };
        assert_eq!(
            store
                .run("ns", &other)
                .await
                .unwrap_or_else(|e| panic!("{e}")),
            None
        );
    }

    /// j000..j199 pending in q; then j000 dies (one attempt, failed).
    async fn enqueue_200_and_kill_j000(store: &Store) {
        let jobs: Vec<JobSpec> = (0..200)
            .map(|i| spec(&format!("j{i:03}"), "q", RunAt::Now, 1))
            .collect();
        enqueue(store, &jobs).await;
        let fatal = Failure {
            error: "x".into(),
            retry_after_ms: None,
            non_retryable: true,
        };
        let (id, token) = claim(store, "q").await;
        fail(store, &id, &token, &fatal).await;
    }

    /// Makes the namespace look written before the counts (none of their keys, no
    /// meta flag), and takes the migrate lock with token `t` as Migrate would.
    async fn forget_the_counts_and_take_the_lock(redis: &TestRedis) {
        let keys = NamespaceKeys::new("dueq", "ns");
        let mut conn = redis.conn().await;
        let _: () = redis::pipe()
            .cmd("HDEL")
            .arg(keys.meta())
            .arg("counts")
            .ignore()
            .cmd("DEL")
            .arg(keys.queue_state("q"))
            .arg(keys.queue_dead("q"))
            .arg(keys.queue_registry())
            .ignore()
            .query_async(&mut conn)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let _: () = redis::cmd("SET")
            .arg(keys.migrate_lock())
            .arg("t")
            .query_async(&mut conn)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
    }

    /// Moves between batches: j001 (already visited) is claimed; j151 (not yet) is
    /// cancelled; a new queue gets a job.
    async fn move_jobs_between_batches(store: &Store) {
        let (a, _) = claim(store, "q").await;
        assert_eq!(a, "j001");
        cancel(store, "j151").await;
        enqueue(store, &[spec("n1", "fresh", RunAt::Now, 1)]).await;
    }

    /// The batches of q to its end, then the step that records every queue counted.
    async fn recount_the_rest(store: &Store) {
        loop {
            let s = store
                .run("ns", &recount_step(Some("q")))
                .await
                .unwrap_or_else(|e| panic!("{e}"));
            if s.unwrap_or_else(|| panic!("lock lost")).done {
                break;
            }
        }
        store
            .run("ns", &recount_step(None))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
    }
}
