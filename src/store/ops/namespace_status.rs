//! `lua/namespace_status.lua`: what a namespace's store looks like, in O(1).

use super::{job_prefixes, prelude::*};
use crate::domain::{Listing, NamespaceHealth};

script!(NamespaceStatus: "namespace_status", Job, Arity::Exactly(9), Arity::Exactly(8));

pub(crate) struct NamespaceStatus;

impl Operation for NamespaceStatus {
    type Output = NamespaceHealth;

    fn encode(&self, keys: &NamespaceKeys, call: &mut Call) {
        call.key(keys.meta())
            .key(keys.ids())
            .key(keys.listing_top())
            .key(keys.due())
            .key(keys.migrate_lock())
            .key(keys.jobs_marker())
            .key(keys.target_due())
            .key(keys.queue_registry())
            .key(keys.jobs_done());
        job_prefixes(keys, call);
    }

    fn decode(&self, mut reply: Reply) -> Result<Self::Output, StoreError> {
        let schema = Some(reply.text()?).filter(|s| !s.is_empty());
        let listing = match reply.text()?.as_str() {
            "none" => Listing::None,
            "set" => Listing::Set,
            "zset" => Listing::SortedSet,
            "tree" => Listing::Tree,
            other => Listing::Foreign(other.to_owned()),
        };
        let expected_index = reply.opt_int()?.map(|n| u64::try_from(n).unwrap_or(0));
        let index_size = reply.count()?;
        // PTTL: -2 when no lock is held.
        let lock_ttl_ms = Some(reply.int()?).filter(|ttl| *ttl != -2);
        let health = NamespaceHealth {
            schema,
            listing,
            expected_index,
            index_size,
            lock_ttl_ms,
            listed: reply.count()?,
            jobs_layout: Some(reply.text()?).filter(|s| !s.is_empty()),
            legacy_jobs: reply.flag()?,
            jobs_marker: reply.flag()?,
            job_sequence: reply.count()?,
            jobs_held: reply.flag()?,
        };
        reply.finish()?;
        Ok(health)
    }
}

#[cfg(test)]
pub(super) fn sample() -> NamespaceStatus {
    NamespaceStatus
}
