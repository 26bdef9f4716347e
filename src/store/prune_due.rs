//! The prune due-set (`keys::prune_due`): which namespaces have finished jobs to
//! prune, and when. It lives outside every namespace's slot, so it is kept with plain
//! commands, never from a script (invariant 6); a job script's reply says when to
//! register a namespace, and the pruner re-validates each entry against the
//! namespace's own finished set (docs/DESIGN.md, "Pruning").

use deadpool_redis::redis;

use super::{keys, Store, StoreError};

impl Store {
    /// Up to `limit` namespaces due for a prune at `now_ms`, earliest first.
    pub(crate) async fn prune_due(
        &self,
        now_ms: i64,
        limit: usize,
    ) -> Result<Vec<String>, StoreError> {
        self.query(
            redis::cmd("ZRANGEBYSCORE")
                .arg(keys::prune_due(&self.prefix))
                .arg("-inf")
                .arg(now_ms)
                .arg("LIMIT")
                .arg(0)
                .arg(limit)
                .to_owned(),
        )
        .await
    }

    /// Registers `namespace` to be pruned at `at_ms`, or sooner if it already is.
    pub(crate) async fn prune_soon(&self, namespace: &str, at_ms: i64) -> Result<(), StoreError> {
        self.zadd(Some("LT"), namespace, at_ms).await
    }

    /// Schedules `namespace`'s next prune at `at_ms`.
    pub(crate) async fn prune_at(&self, namespace: &str, at_ms: i64) -> Result<(), StoreError> {
        self.zadd(None, namespace, at_ms).await
    }

    /// Drops `namespace` from the due-set.
    pub(crate) async fn prune_forget(&self, namespace: &str) -> Result<(), StoreError> {
        self.query(
            redis::cmd("ZREM")
                .arg(keys::prune_due(&self.prefix))
                .arg(namespace)
                .to_owned(),
        )
        .await
    }

    async fn zadd(
        &self,
        flag: Option<&str>,
        namespace: &str,
        at_ms: i64,
    ) -> Result<(), StoreError> {
        let mut cmd = redis::cmd("ZADD");
        cmd.arg(keys::prune_due(&self.prefix));
        if let Some(flag) = flag {
            cmd.arg(flag);
        }
        cmd.arg(at_ms).arg(namespace);
        self.query(cmd).await
    }
}
