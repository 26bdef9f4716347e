//! Each principal's own limits from the auth file (issue 29).
//!
//! `max_namespaces`, the most namespaces a principal may write into. A namespace
//! counts once the principal makes a call the producer role grants in it (Enqueue,
//! EnqueueBatch, EnqueueFlow, UpsertSchedule, ...); reads, workers' calls and admin
//! calls do not count. The count is a Redis set per principal
//! (`Store::admit_principal_namespace`), so every replica enforces the same limit;
//! a replica remembers the namespaces it has seen let in, so only a principal's first
//! call into a namespace on a replica costs Redis commands. What it remembers is at
//! most each principal's `max_namespaces`.
//!
//! `max_jobs` and `max_schedules`, the most unfinished jobs and schedules the
//! principal's namespaces may hold together: soft limits. A principal's namespaces
//! sit in different Cluster slots, so no one script sees them all; each replica
//! keeps a tally per principal instead (`super::totals`): the totals it last read
//! (`Store::principal_totals`, over the set `max_namespaces` keeps) plus what it let
//! in that the read may have missed (let in after it began, or still being written
//! then: [`Admitted`]). A call is checked against the tally under a lock, with
//! no Redis command; a call that finds the last read ended a second ago or more
//! ([`REFRESH`](super::totals::REFRESH)) starts a new one in the background, so
//! while the principal writes each replica reads its totals about once a second
//! (plus the read's own time), and an idle principal costs nothing. Only a replica's
//! first call for a principal, and a call the tally would refuse once its read is
//! that old, wait for a read. Each replica admits at most the room its own tally
//! shows, so together R replicas may pass the limit by what the other R - 1 let
//! in between their reads (docs/security.md).

use std::{collections::HashSet, sync::Mutex};

use super::{
    totals::{Kind, Taken, Totals},
    ApiError,
};
use crate::{
    auth::{Caller, Principal, Role, Scope},
    error::Error,
    rpc::{Access, Rpc},
    store::Store,
    sync::lock,
};

/// The principals' namespace counts, as this replica has seen them let in, and
/// their jobs' and schedules' tallies.
pub(crate) struct Quotas {
    store: std::sync::Arc<Store>,
    /// (principal, namespace) pairs let in.
    admitted: Mutex<HashSet<(String, String)>>,
    /// `max_jobs` and `max_schedules`.
    totals: Totals,
}

/// The principal behind `caller` and its limit of `kind`, if it has one.
fn limited(caller: Option<&Caller>, kind: Kind) -> Option<(&Principal, u64)> {
    let Some(Caller::Principal(principal)) = caller else {
        return None;
    };
    let max = match kind {
        Kind::Jobs => principal.max_jobs,
        Kind::Schedules => principal.max_schedules,
    }?;
    Some((principal, max))
}

impl Quotas {
    pub(crate) fn new(store: std::sync::Arc<Store>) -> Self {
        Quotas {
            totals: Totals::new(store.clone()),
            store,
            admitted: Mutex::new(HashSet::new()),
        }
    }

    /// How many of `n` new jobs the caller's `max_jobs` lets it enqueue now: `n`
    /// for a caller without one; else as many as fit, or (`whole`) all or none. None
    /// fitting is refused RESOURCE_EXHAUSTED naming the principal and the limit; the
    /// caller has written nothing. Hold the [`Admitted`] until the jobs are written.
    pub(super) async fn admit_jobs<'a>(
        &'a self,
        caller: Option<&'a Caller>,
        n: usize,
        whole: bool,
    ) -> Result<(usize, Admitted<'a>), ApiError> {
        let Some((principal, max)) = limited(caller, Kind::Jobs).filter(|_| n > 0) else {
            return Ok((n, Admitted::nothing(&self.totals)));
        };
        let wanted = n as u64;
        let Taken { taken, held } = self
            .totals
            .take(&principal.name, Kind::Jobs, wanted, max, whole)
            .await?;
        if taken == 0 {
            return Err(ApiError::OverQuota(format!(
                "principal {:?} is at its max_jobs of {max} unfinished jobs (auth file): its \
                 namespaces hold {held}, and {n} more would pass it; let jobs finish, delete \
                 some, or ask for a higher max_jobs (nothing was written)",
                principal.name
            )));
        }
        let admitted = Admitted {
            totals: &self.totals,
            principal: &principal.name,
            kind: Kind::Jobs,
            n: taken,
        };
        Ok((usize::try_from(taken).unwrap_or(n), admitted))
    }

    /// Whether the caller's `max_jobs` lets it enqueue one job (`admit_jobs`); at
    /// the limit, a retry of a job stored under its `id` is let through too: it
    /// writes nothing, and is answered DUPLICATE as without the limit.
    pub(super) async fn admit_job<'a>(
        &'a self,
        caller: Option<&'a Caller>,
        namespace: &str,
        id: Option<&str>,
    ) -> Result<Admitted<'a>, ApiError> {
        let refused = match self.admit_jobs(caller, 1, true).await {
            Ok((_, admitted)) => return Ok(admitted),
            Err(refused @ ApiError::OverQuota(_)) => refused,
            Err(error) => return Err(error),
        };
        match id {
            // At the limit (the rare case): one EXISTS.
            Some(id) if Box::pin(self.store.job_exists(namespace, id)).await? => {
                Ok(Admitted::nothing(&self.totals))
            }
            _ => Err(refused),
        }
    }

    /// A job of a batch left out by the caller's `max_jobs` (`admit_jobs` let in
    /// fewer than the batch holds).
    pub(super) fn job_left_out(caller: Option<&Caller>) -> ApiError {
        let (name, max) = limited(caller, Kind::Jobs)
            .map_or(("", 0), |(principal, max)| (principal.name.as_str(), max));
        ApiError::OverQuota(format!(
            "principal {name:?} is at its max_jobs of {max} unfinished jobs (auth file): \
             this job would pass it; let jobs finish, delete some, or ask for a higher \
             max_jobs (this job was not written)"
        ))
    }

    /// Whether the caller's `max_schedules` lets it upsert schedule `id` into
    /// `namespace`: an update of a stored schedule always; a new one while the
    /// principal's schedules are under the limit. Refused RESOURCE_EXHAUSTED naming
    /// the principal and the limit; the caller has written nothing. Hold the
    /// [`Admitted`] until the schedule is written.
    pub(super) async fn admit_schedule<'a>(
        &'a self,
        caller: Option<&'a Caller>,
        namespace: &str,
        id: &str,
    ) -> Result<Admitted<'a>, ApiError> {
        let Some((principal, max)) = limited(caller, Kind::Schedules) else {
            return Ok(Admitted::nothing(&self.totals));
        };
        let Taken { taken, held } = self
            .totals
            .take(&principal.name, Kind::Schedules, 1, max, true)
            .await?;
        if taken == 1 {
            return Ok(Admitted {
                totals: &self.totals,
                principal: &principal.name,
                kind: Kind::Schedules,
                n: 1,
            });
        }
        // At the limit (the rare case): an update of a stored schedule adds none.
        if Box::pin(self.store.schedule_exists(namespace, id)).await? {
            return Ok(Admitted::nothing(&self.totals));
        }
        Err(ApiError::OverQuota(format!(
            "principal {:?} is at its max_schedules of {max} (auth file): its namespaces \
             hold {held} schedules, and schedule {id:?} would be a new one; delete one, \
             or ask for a higher max_schedules (nothing was written)",
            principal.name
        )))
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

/// What an admission let in under `max_jobs` or `max_schedules`, while its call
/// writes it: dropped when the call ends (written, failed or given up), it tells
/// the tally, so a totals read that begins later takes it as written (and one that
/// began before still counts it on top: `super::totals`).
pub(super) struct Admitted<'a> {
    totals: &'a Totals,
    principal: &'a str,
    kind: Kind,
    n: u64,
}

impl<'a> Admitted<'a> {
    fn nothing(totals: &'a Totals) -> Self {
        Admitted {
            totals,
            principal: "",
            kind: Kind::Jobs,
            n: 0,
        }
    }
}

impl Drop for Admitted<'_> {
    fn drop(&mut self) {
        if self.n > 0 {
            self.totals.completed(self.principal, self.kind, self.n);
        }
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

    /// Pins (issue 29 item 5): the max_jobs and max_schedules admissions every
    /// enqueue and UpsertSchedule awaits are small futures too (their Redis reads are
    /// boxed).
    #[test]
    fn the_jobs_and_schedules_admissions_are_small() {
        let quotas = Quotas::new(crate::testing::offline_context().store);
        let jobs = quotas.admit_jobs(None, 1, true);
        let size = std::mem::size_of_val(&jobs);
        assert!(size <= 512, "the jobs admission's future is {size} bytes");
        let job = quotas.admit_job(None, "ns", Some("j"));
        let size = std::mem::size_of_val(&job);
        assert!(size <= 512, "the job admission's future is {size} bytes");
        let schedule = quotas.admit_schedule(None, "ns", "s");
        let size = std::mem::size_of_val(&schedule);
        assert!(
            size <= 512,
            "the schedule admission's future is {size} bytes"
        );
    }
}
