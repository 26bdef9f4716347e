//! Each principal's namespaces (issue 29): the set of namespaces a principal with a
//! `max_namespaces` has written into, one Redis set per principal
//! (`keys::principal_namespaces`). It lives outside every namespace's slot, so it is
//! written with plain commands, never from a script (invariant 6), and every replica
//! of a service on one Redis (or Cluster) sees the same set. A principal with
//! `max_jobs` or `max_schedules` has its namespaces' counts summed over the set
//! (`principal_totals`).

use deadpool_redis::redis;
use futures_util::{stream, StreamExt};

use super::{keys, NamespaceKeys, Store, StoreError};

impl Store {
    /// Whether `principal` may write into `namespace` under `max` namespaces: yes if
    /// the namespace is already one of its set; otherwise it is added, and kept only
    /// if the set then holds at most `max`. A namespace let in is never taken out
    /// here, and each one was let in seeing every earlier one in the set, so however
    /// many replicas add at once no more than `max` are ever let in (two racing for
    /// the last place may both be refused; a retry takes it). Three commands on a
    /// namespace's first use, one after (callers keep what was let in).
    pub(crate) async fn admit_principal_namespace(
        &self,
        principal: &str,
        namespace: &str,
        max: u32,
    ) -> Result<bool, StoreError> {
        let key = keys::principal_namespaces(&self.prefix, principal);
        let member: bool = self
            .query(redis::cmd("SISMEMBER").arg(&key).arg(namespace).to_owned())
            .await?;
        if member {
            return Ok(true);
        }
        let added: u64 = self
            .query(redis::cmd("SADD").arg(&key).arg(namespace).to_owned())
            .await?;
        if added == 0 {
            return Ok(true);
        }
        let count: u64 = self.query(redis::cmd("SCARD").arg(&key).to_owned()).await?;
        if count <= u64::from(max) {
            return Ok(true);
        }
        let _: u64 = self
            .query(redis::cmd("SREM").arg(&key).arg(namespace).to_owned())
            .await?;
        Ok(false)
    }
}

/// What a principal's namespaces hold together (`Store::principal_totals`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct PrincipalTotals {
    /// Unfinished jobs (stored and not finished), as `--max-jobs-per-namespace`
    /// counts them in each namespace.
    pub(crate) jobs: u64,
    /// Schedules, as `--max-schedules-per-namespace` counts them.
    pub(crate) schedules: u64,
}

/// Namespaces read at once by one [`Store::principal_totals`].
const TOTALS_IN_FLIGHT: usize = 64;

impl Store {
    /// The unfinished jobs and the schedules of every namespace in `principal`'s set
    /// (the one `admit_principal_namespace` keeps), summed: one SMEMBERS, then per
    /// namespace one pipeline of HMGET (meta `stored`, `listed`) and ZCARD (the
    /// finished set), the counts the namespace's own quotas read, [`TOTALS_IN_FLIGHT`]
    /// namespaces at a time. Each namespace is read as it is when its pipeline runs,
    /// not all at one instant: the caller's limit is a soft one (`api::quota`).
    pub(crate) async fn principal_totals(
        &self,
        principal: &str,
    ) -> Result<PrincipalTotals, StoreError> {
        let key = keys::principal_namespaces(&self.prefix, principal);
        let namespaces: Vec<String> = self
            .query(redis::cmd("SMEMBERS").arg(&key).to_owned())
            .await?;
        let mut reads = stream::iter(namespaces)
            .map(|namespace| self.namespace_counts(namespace))
            .buffer_unordered(TOTALS_IN_FLIGHT);
        let mut totals = PrincipalTotals::default();
        while let Some(counts) = reads.next().await {
            let counts = counts?;
            totals.jobs += counts.jobs;
            totals.schedules += counts.schedules;
        }
        Ok(totals)
    }

    /// One namespace's unfinished jobs (meta `stored` less the finished set, as
    /// enqueue_jobs.lua reckons them) and schedules (meta `listed`).
    async fn namespace_counts(&self, namespace: String) -> Result<PrincipalTotals, StoreError> {
        let keys = NamespaceKeys::new(&self.prefix, &namespace);
        let mut pipe = redis::pipe();
        pipe.cmd("HMGET")
            .arg(keys.meta())
            .arg("stored")
            .arg("listed")
            .cmd("ZCARD")
            .arg(keys.jobs_done());
        let (slot, mut conn) = self.conns.get().await?;
        let ((stored, listed), done): ((Option<u64>, Option<u64>), u64) = pipe
            .query_async(&mut conn)
            .await
            .map_err(|e| self.fail(slot, &namespace, e))?;
        Ok(PrincipalTotals {
            jobs: stored.unwrap_or(0).saturating_sub(done),
            schedules: listed.unwrap_or(0),
        })
    }

    /// Whether job `id` is stored in `namespace`: an Enqueue of it is a retry,
    /// which writes nothing, so a principal at its `max_jobs` may still make it.
    pub(crate) async fn job_exists(&self, namespace: &str, id: &str) -> Result<bool, StoreError> {
        let key = NamespaceKeys::new(&self.prefix, namespace).job(id);
        self.query(redis::cmd("EXISTS").arg(key).to_owned()).await
    }

    /// Whether schedule `id` is stored in `namespace`: an UpsertSchedule of it is an
    /// update, which a principal at its `max_schedules` may still make.
    pub(crate) async fn schedule_exists(
        &self,
        namespace: &str,
        id: &str,
    ) -> Result<bool, StoreError> {
        let key = NamespaceKeys::new(&self.prefix, namespace).schedule(id);
        self.query(redis::cmd("EXISTS").arg(key).to_owned()).await
    }
}
