//! `lua/queue_stats.lua`: a page of a namespace's queues with their state counts.

use super::{job_head, prelude::*};
use crate::domain::{QueuePage, QueueStats};

script!(QueueStatsPage<'_>: "queue_stats", Job, Arity::Exactly(2), Arity::Exactly(10));

/// Most queues one script call reads (its run time is bounded by it);
/// `Store::queue_stats` makes several calls for a larger page.
pub(crate) const MAX_PAGE: usize = 25;

pub(crate) struct QueueStatsPage<'a> {
    /// List queues after this name ("" from the first).
    pub(crate) after: &'a str,
    /// At most [`MAX_PAGE`] (larger values are capped).
    pub(crate) limit: usize,
}

impl Operation for QueueStatsPage<'_> {
    type Output = QueuePage;

    fn encode(&self, keys: &NamespaceKeys, call: &mut Call) {
        job_head(keys, call);
        call.arg("after", self.after)
            .arg("limit", self.limit.clamp(1, MAX_PAGE));
    }

    fn decode(&self, mut reply: Reply) -> Result<Self::Output, StoreError> {
        let now_ms = reply.int()?;
        let more = reply.flag()?;
        let n = reply.count()?;
        let mut queues = Vec::with_capacity(usize::try_from(n).unwrap_or(0).min(MAX_PAGE));
        for _ in 0..n {
            queues.push(QueueStats {
                queue: reply.text()?,
                pending: u64::try_from(reply.int()?).unwrap_or(0),
                delayed: reply.count()?,
                active: reply.count()?,
                dead: reply.count()?,
                paused: reply.flag()?,
                oldest_pending_ms: reply.opt_int()?,
                counted: reply.flag()?,
                removed: reply.count()?,
                waiting: reply.count()?,
                enqueued: reply.count()?,
                completed: reply.count()?,
                failed: reply.count()?,
                policy: super::get_queue_policy::read_policy(&mut reply)?,
            });
        }
        reply.finish()?;
        let next_after = if more {
            queues.last().map(|q| q.queue.clone())
        } else {
            None
        };
        Ok(QueuePage {
            now_ms,
            queues,
            next_after,
        })
    }
}

#[cfg(test)]
pub(super) fn sample() -> QueueStatsPage<'static> {
    QueueStatsPage {
        after: "",
        limit: 10,
    }
}
