//! The dispatch due-set (`keys::dispatch_due`): which namespaces have target schedules
//! (issue 30), scored by their earliest due slot. Like the prune due-set it lives
//! outside every namespace's slot, so it is kept with plain commands, never from a
//! script (invariant 6): a schedule write that makes a target slot due registers its
//! namespace after its script (`ZADD LT`), and the dispatcher re-registers a
//! namespace after each visit from the target index's head, then looks at that head
//! again, so a registration made by another replica meanwhile is never lost
//! (docs/DESIGN.md, "Dispatch").

use deadpool_redis::redis;

use super::{keys, Store, StoreError};

impl Store {
    /// Up to `limit` namespaces with a target slot due at `now_ms`, earliest first.
    pub(crate) async fn dispatch_due(
        &self,
        now_ms: i64,
        limit: usize,
    ) -> Result<Vec<String>, StoreError> {
        self.query(
            redis::cmd("ZRANGEBYSCORE")
                .arg(keys::dispatch_due(&self.prefix))
                .arg("-inf")
                .arg(now_ms)
                .arg("LIMIT")
                .arg(0)
                .arg(limit)
                .to_owned(),
        )
        .await
    }

    /// The earliest time in the dispatch due-set (`None`: empty).
    pub(crate) async fn dispatch_next(&self) -> Result<Option<i64>, StoreError> {
        let first: Vec<(String, f64)> = self
            .query(
                redis::cmd("ZRANGE")
                    .arg(keys::dispatch_due(&self.prefix))
                    .arg(0)
                    .arg(0)
                    .arg("WITHSCORES")
                    .to_owned(),
            )
            .await?;
        Ok(first.first().map(|(_, at)| *at as i64))
    }

    /// Registers `namespace` for a dispatch at `at_ms`, or sooner if it already is.
    pub(crate) async fn dispatch_soon(
        &self,
        namespace: &str,
        at_ms: i64,
    ) -> Result<(), StoreError> {
        self.query(
            redis::cmd("ZADD")
                .arg(keys::dispatch_due(&self.prefix))
                .arg("LT")
                .arg(at_ms)
                .arg(namespace)
                .to_owned(),
        )
        .await
    }

    /// After a visit: registers `namespace` at `at_ms` (`None`: drops it), then reads
    /// the head of its target index and registers that if it is sooner. A schedule
    /// write whose own `ZADD LT` came before this call's first write is seen by that
    /// read (its script ran before the read); one that came after lowers the score
    /// itself. Returns the score left.
    pub(crate) async fn dispatch_again(
        &self,
        namespace: &str,
        at_ms: Option<i64>,
    ) -> Result<Option<i64>, StoreError> {
        let set = keys::dispatch_due(&self.prefix);
        let cmd = match at_ms {
            Some(at) => redis::cmd("ZADD")
                .arg(&set)
                .arg(at)
                .arg(namespace)
                .to_owned(),
            None => redis::cmd("ZREM").arg(&set).arg(namespace).to_owned(),
        };
        let () = self.query::<redis::Value>(cmd).await.map(|_| ())?;
        let head: Vec<(String, f64)> = self
            .query(
                redis::cmd("ZRANGE")
                    .arg(self.keys(namespace).target_due())
                    .arg(0)
                    .arg(0)
                    .arg("WITHSCORES")
                    .to_owned(),
            )
            .await?;
        let head = head.first().map(|(_, at)| *at as i64);
        match (head, at_ms) {
            (Some(h), Some(at)) if h < at => self.dispatch_soon(namespace, h).await?,
            (Some(h), None) => self.dispatch_soon(namespace, h).await?,
            _ => return Ok(at_ms),
        }
        Ok(head)
    }

    /// Drops `namespace` from the dispatch due-set (not a valid namespace name).
    pub(crate) async fn dispatch_forget(&self, namespace: &str) -> Result<(), StoreError> {
        self.query(
            redis::cmd("ZREM")
                .arg(keys::dispatch_due(&self.prefix))
                .arg(namespace)
                .to_owned(),
        )
        .await
    }
}
