//! Inspection and queue controls (issue 14): namespaces and queues with their counts,
//! pausing a queue, and the bulk retry and purge, each a bounded script call.

use super::Jobs;
use crate::{
    domain::Namespace,
    domain::{NamespacePage, QueuePage},
    effects::{Effects, Ready},
    error::Error,
    namespaces::Work,
    store::ops::{
        list_dead_groups::{DeadGroupPage, ListDeadGroups},
        pause_queue::PauseQueue,
        purge_jobs::{PurgeJobs, PurgeState},
        retry_dead_jobs::RetryDeadJobs,
    },
};

/// Most jobs one bulk script call handles: a call of `limit` jobs runs as several
/// scripts of at most this many, one after another, so none holds Redis for long;
/// each is atomic, so concurrent callers still never handle one job twice.
const BULK_PER_SCRIPT: u32 = 50;

impl Jobs {
    /// A page of registered namespaces after `after` ("" from the first).
    pub(crate) async fn list_namespaces(
        &self,
        after: &str,
        size: usize,
    ) -> Result<NamespacePage, Error> {
        Ok(self.cx.store.list_namespaces(after, size).await?)
    }

    /// A page of a namespace's queues with their counts.
    pub(crate) async fn list_queues(
        &self,
        namespace: &Namespace,
        after: &str,
        size: usize,
    ) -> Result<QueuePage, Error> {
        Ok(self.cx.store.queue_stats(namespace, after, size).await?)
    }

    /// Pauses or resumes a queue; whether the flag changed. A resumed queue's
    /// waiting long-polls are woken (its jobs may have been claimable all along).
    pub(crate) async fn pause_queue(
        &self,
        namespace: &Namespace,
        queue: &str,
        paused: bool,
    ) -> Result<bool, Error> {
        let entry = self.entry(namespace);
        let changed = self
            .cx
            .store
            .run(namespace, &PauseQueue { queue, paused })
            .await?;
        if changed && !paused {
            let effects = Effects::ready(Work::Jobs, Ready::Now);
            self.cx.apply(&entry, effects).await;
        }
        Ok(changed)
    }

    /// A page of a namespace's dead jobs grouped by error (issue 33), of one queue
    /// or ("") every queue, the largest group first.
    pub(crate) async fn list_dead_groups(
        &self,
        namespace: &Namespace,
        queue: &str,
        offset: u64,
        size: usize,
    ) -> Result<DeadGroupPage, Error> {
        let op = ListDeadGroups {
            queue,
            offset,
            limit: size,
        };
        Ok(self.cx.store.run(namespace, &op).await?)
    }

    /// Retries up to `limit` dead jobs of a queue (of one error group when
    /// `fingerprint` is not ""); how many, and whether more remain.
    pub(crate) async fn retry_dead(
        &self,
        namespace: &Namespace,
        queue: &str,
        fingerprint: &str,
        limit: u32,
    ) -> Result<(u32, bool), Error> {
        let entry = self.entry(namespace);
        let (mut retried, mut left, mut register) = (0, limit, false);
        let more = loop {
            let batch = left.min(BULK_PER_SCRIPT);
            let batch_done = self
                .cx
                .store
                .run(
                    namespace,
                    &RetryDeadJobs {
                        queue,
                        limit: batch,
                        fingerprint,
                    },
                )
                .await?;
            retried += batch_done.retried;
            register |= batch_done.register;
            left -= batch;
            if !batch_done.more || left == 0 {
                break batch_done.more;
            }
        };
        if retried > 0 {
            let effects = Effects::finished(register).and_ready(Work::Jobs, Ready::Now);
            self.cx.apply(&entry, effects).await;
        }
        Ok((retried, more))
    }

    /// Deletes up to `limit` jobs of a queue in `state` (dead ones of one error group
    /// when `fingerprint` is not ""); how many, and whether more may remain.
    pub(crate) async fn purge(
        &self,
        namespace: &Namespace,
        queue: &str,
        state: PurgeState,
        fingerprint: &str,
        limit: u32,
    ) -> Result<(u32, bool), Error> {
        let (mut purged, mut left) = (0, limit);
        loop {
            let batch = left.min(BULK_PER_SCRIPT);
            let op = PurgeJobs {
                queue,
                state,
                limit: batch,
                fingerprint,
            };
            let batch_done = self.cx.store.run(namespace, &op).await?;
            if batch_done.register {
                self.cx
                    .apply(&self.entry(namespace), Effects::finished(true))
                    .await;
            }
            purged += batch_done.purged;
            left -= batch;
            if !batch_done.more || left == 0 {
                return Ok((purged, batch_done.more));
            }
        }
    }
}
