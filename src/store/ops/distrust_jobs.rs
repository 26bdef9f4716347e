//! `lua/distrust_jobs.lua`: refuse a namespace whose job sequence went backwards
//! until Migrate rebuilds its job metadata (issue 29; `crate::monitor`).

use super::{delete_schedule::single_flag, prelude::*};

script!(DistrustJobs: "distrust_jobs", Job, Arity::Exactly(1), Arity::Exactly(1));

pub(crate) struct DistrustJobs {
    /// The job sequence the monitor saw before.
    pub(crate) seen: u64,
}

impl Operation for DistrustJobs {
    /// Whether the namespace is now refused (false: its sequence is back at or past
    /// `seen`, nothing written).
    type Output = bool;

    fn encode(&self, keys: &NamespaceKeys, call: &mut Call) {
        call.key(keys.meta()).arg("seen", self.seen);
    }

    fn decode(&self, reply: Reply) -> Result<Self::Output, StoreError> {
        single_flag(reply)
    }
}

#[cfg(test)]
pub(super) fn sample() -> DistrustJobs {
    DistrustJobs { seen: 10 }
}

#[cfg(test)]
mod tests {
    use deadpool_redis::redis;

    use super::DistrustJobs;
    use crate::{
        store::{
            ops::enqueue_jobs::{self, EnqueueJobs},
            StoreError,
        },
        testing::TestRedis,
    };

    /// The compare-and-set (invariant 2): a namespace whose writes carried its job
    /// sequence back to or past the one the monitor saw is left alone; one still
    /// behind is refused until Migrate, as a lost meta is.
    #[tokio::test]
    async fn refuses_only_while_the_sequence_is_still_behind() {
        let redis = TestRedis::start().await;
        let store = redis.store();
        let mut conn = redis.conn().await;
        let jobs = enqueue_jobs::sample().jobs;
        let enqueue = EnqueueJobs {
            namespace: "ns",
            jobs,
            max_jobs: 0,
        };
        store.run("ns", &enqueue).await.unwrap_or_else(|e| panic!("enqueue: {e}"));
        let gseq: u64 = redis::cmd("HGET")
            .arg("dueq:{ns}:meta")
            .arg("gseq")
            .query_async(&mut conn)
            .await
            .unwrap_or_else(|e| panic!("gseq: {e}"));

        let caught_up = DistrustJobs { seen: gseq };
        let refused = store.run("ns", &caught_up).await.unwrap_or_else(|e| panic!("{e}"));
        assert!(!refused, "the sequence is where the monitor saw it");
        store.run("ns", &enqueue).await.unwrap_or_else(|e| panic!("still served: {e}"));

        let behind = DistrustJobs { seen: gseq + 100 };
        let refused = store.run("ns", &behind).await.unwrap_or_else(|e| panic!("{e}"));
        assert!(refused);
        match store.run("ns", &enqueue).await {
            Err(StoreError::NeedsMigrate { .. }) => {}
            other => panic!("refused until Migrate, got {other:?}"),
        }
    }
}
