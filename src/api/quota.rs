//! Each principal's own limits from the auth file (issue 29): `max_namespaces`, the
//! most namespaces a principal may write into. A namespace counts once the
//! principal makes a call the producer role grants in it (Enqueue, EnqueueBatch,
//! EnqueueFlow, UpsertSchedule, ...); reads, workers' calls and admin calls do not
//! count. The count is a Redis set per principal
//! (`Store::admit_principal_namespace`), so every replica enforces the same limit;
//! a replica remembers the namespaces it has seen let in, so only a principal's first
//! call into a namespace on a replica costs Redis commands. What it remembers is at
//! most each principal's `max_namespaces`.

use std::{collections::HashSet, sync::Mutex};

use super::ApiError;
use crate::{
    auth::{Caller, Role, Scope},
    error::Error,
    rpc::{Access, Rpc},
    store::Store,
    sync::lock,
};

/// The principals' namespace counts, as this replica has seen them let in.
pub(crate) struct Quotas {
    store: std::sync::Arc<Store>,
    /// (principal, namespace) pairs let in.
    admitted: Mutex<HashSet<(String, String)>>,
}

impl Quotas {
    pub(crate) fn new(store: std::sync::Arc<Store>) -> Self {
        Quotas {
            store,
            admitted: Mutex::new(HashSet::new()),
        }
    }

    /// Whether `caller` may call `rpc` in `scope` under its `max_namespaces`: a call
    /// the producer role grants, into a namespace beyond the principal's limit, is
    /// refused RESOURCE_EXHAUSTED naming the principal and the limit; nothing is
    /// written.
    pub(super) async fn admit(
        &self,
        caller: Option<&Caller>,
        rpc: &Rpc,
        scope: Scope<'_>,
    ) -> Result<(), ApiError> {
        let (
            Some(Caller::Principal(principal)),
            Access::Role(Role::Producer),
            Scope::Namespace(ns),
        ) = (caller, rpc.access, scope)
        else {
            return Ok(());
        };
        let Some(max) = principal.max_namespaces else {
            return Ok(());
        };
        let pair = (principal.name.clone(), ns.to_owned());
        if lock(&self.admitted).contains(&pair) {
            return Ok(());
        }
        // Boxed: every RPC handler awaits this admission, so the Redis call's
        // future (7.4 KB) inline here would be part of every handler's future, which
        // a long-poll holds for its whole wait (10,000 waiters: 70 MB more RSS).
        let admitted = Box::pin(
            self.store
                .admit_principal_namespace(&principal.name, ns, max),
        );
        if admitted.await.map_err(|e| ApiError::App(Error::Store(e)))? {
            lock(&self.admitted).insert(pair);
            return Ok(());
        }
        Err(ApiError::OverQuota(format!(
            "principal {:?} holds its max_namespaces of {max} (auth file): namespace {ns:?} \
             would be one more; write into one of its namespaces, or ask for a higher \
             max_namespaces (nothing was written)",
            principal.name
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::Quotas;
    use crate::{
        auth::Scope,
        rpc::{Access, CallKind, Rpc},
    };

    /// Pins: the admission every RPC handler awaits is a small future (136 bytes in a
    /// debug build; 7,432 with the Redis call inline), so it does not swell the
    /// handler's own future, which a long-poll holds for its whole wait.
    #[test]
    fn the_admission_every_handler_awaits_is_small() {
        static ENQUEUE: Rpc = Rpc {
            service: "dueq.v1.QueueService",
            method: "Enqueue",
            path: "/dueq.v1.QueueService/Enqueue",
            access: Access::Role(crate::auth::Role::Producer),
            kind: CallKind::Unary,
            audited: false,
        };
        let quotas = Quotas::new(crate::testing::offline_context().store);
        let admit = quotas.admit(None, &ENQUEUE, Scope::Namespace("ns"));
        let size = std::mem::size_of_val(&admit);
        assert!(size <= 256, "the admission's future is {size} bytes");
    }
}
