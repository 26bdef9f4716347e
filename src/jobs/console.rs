//! What the console's Workers and Audit pages read (issue 33): the audit log and the
//! worker sessions every replica publishes (`crate::workers`), with the leases that
//! end soonest.

use super::Jobs;
use crate::{
    domain::Namespace,
    error::Error,
    store::ops::{
        list_audit::{AuditPage, ListAudit},
        list_workers::{ListWorkers, WorkersPage, MAX_LEASES},
    },
};

impl Jobs {
    /// A page of the namespace's audit log, newest first, from before the record
    /// `before` ("" for the newest).
    pub(crate) async fn list_audit(
        &self,
        namespace: &Namespace,
        before: &str,
        limit: u32,
    ) -> Result<AuditPage, Error> {
        Ok(self
            .cx
            .store
            .run(namespace, &ListAudit { before, limit })
            .await?)
    }

    /// A page of the namespace's live worker sessions from `cursor` ("0" for the
    /// first); the first page also has the leases that end soonest.
    pub(crate) async fn list_workers(
        &self,
        namespace: &Namespace,
        cursor: &str,
        limit: u32,
    ) -> Result<WorkersPage, Error> {
        let stale_ms =
            u64::try_from(self.cx.sessions.stale_after().as_millis()).unwrap_or(u64::MAX);
        let op = ListWorkers {
            stale_ms,
            cursor,
            limit,
            leases: if cursor == "0" { MAX_LEASES } else { 0 },
        };
        Ok(self.cx.store.run(namespace, &op).await?)
    }
}
