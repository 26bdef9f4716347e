//! Each principal's namespaces (issue 29): the set of namespaces a principal with a
//! `max_namespaces` has written into, one Redis set per principal
//! (`keys::principal_namespaces`). It lives outside every namespace's slot, so it is
//! written with plain commands, never from a script (invariant 6), and every replica
//! of a service on one Redis (or Cluster) sees the same set.

use deadpool_redis::redis;

use super::{keys, Store, StoreError};

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
