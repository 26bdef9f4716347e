//! Flow control (issue 32): a queue's policy, one key's own limits, throttles and
//! the listing of active keys, each one script call. What a claim admits under them
//! is lib/flow.lua's, inside claim_jobs.

use super::Jobs;
use crate::{
    domain::{KeyLimit, Namespace, QueuePolicy},
    effects::{Effects, Ready},
    error::Error,
    namespaces::Work,
    store::ops::{
        get_queue_policy::{GetQueuePolicy, StoredPolicy},
        list_flow_keys::{FlowKeyOrder, FlowKeyPage, ListFlowKeys},
        set_key_limit::SetKeyLimit,
        set_queue_policy::SetQueuePolicy,
        throttle_key::ThrottleKey,
    },
};

impl Jobs {
    /// Replaces a queue's policy. Waiting claims are woken: a limit may have been
    /// raised or lifted.
    pub(crate) async fn set_queue_policy(
        &self,
        namespace: &Namespace,
        queue: &str,
        policy: &QueuePolicy,
    ) -> Result<(), Error> {
        let entry = self.entry(namespace);
        self.cx
            .store
            .run(namespace, &SetQueuePolicy { queue, policy })
            .await?;
        self.cx
            .apply(&entry, Effects::ready(Work::Jobs, Ready::Now))
            .await;
        Ok(())
    }

    pub(crate) async fn get_queue_policy(
        &self,
        namespace: &Namespace,
        queue: &str,
    ) -> Result<StoredPolicy, Error> {
        Ok(self
            .cx
            .store
            .run(namespace, &GetQueuePolicy { queue })
            .await?)
    }

    /// Sets or removes one key's own limits; whether they changed. Lanes parked on
    /// the key come back, and waiting claims are woken for them.
    pub(crate) async fn set_key_limit(
        &self,
        namespace: &Namespace,
        queue: &str,
        key: &str,
        limit: KeyLimit,
    ) -> Result<bool, Error> {
        let entry = self.entry(namespace);
        let set = self
            .cx
            .store
            .run(namespace, &SetKeyLimit { queue, key, limit })
            .await?;
        if set.changed {
            self.cx
                .apply(&entry, Effects::ready(Work::Jobs, Ready::Now))
                .await;
        }
        Ok(set.changed)
    }

    /// Throttles a key for `for_ms` (0 lifts it); when the throttle ends. Lanes a
    /// lifted or shortened throttle held come back, and waiting claims are woken.
    pub(crate) async fn throttle_key(
        &self,
        namespace: &Namespace,
        queue: &str,
        key: &str,
        for_ms: i64,
    ) -> Result<Option<i64>, Error> {
        let entry = self.entry(namespace);
        let throttled = self
            .cx
            .store
            .run(namespace, &ThrottleKey { queue, key, for_ms })
            .await?;
        if throttled.woke {
            self.cx
                .apply(&entry, Effects::ready(Work::Jobs, Ready::Now))
                .await;
        }
        Ok(throttled.until_ms)
    }

    pub(crate) async fn list_flow_keys(
        &self,
        namespace: &Namespace,
        queue: &str,
        order: FlowKeyOrder,
        offset: u64,
        limit: u32,
    ) -> Result<FlowKeyPage, Error> {
        Ok(self
            .cx
            .store
            .run(
                namespace,
                &ListFlowKeys {
                    queue,
                    order,
                    offset,
                    limit,
                },
            )
            .await?)
    }
}
