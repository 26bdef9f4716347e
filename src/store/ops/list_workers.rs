//! `lua/list_workers.lua`: a page of a namespace's worker sessions and its soonest
//! ending leases (issue 33).

use super::{job_head, prelude::*, publish_workers::SessionRecord};

script!(ListWorkers<'_>: "list_workers", Job, Arity::Exactly(3), Arity::Exactly(12));

/// Most sessions one page holds (about: a page may hold a few more).
pub(crate) const MAX_PAGE: u32 = 1000;

/// Most expiring leases returned.
pub(crate) const MAX_LEASES: u32 = 50;

pub(crate) struct ListWorkers<'a> {
    /// A session last published longer ago than this is stale.
    pub(crate) stale_ms: u64,
    /// The page's HSCAN cursor ("0" for the first).
    pub(crate) cursor: &'a str,
    /// 1..=[`MAX_PAGE`].
    pub(crate) limit: u32,
    /// Expiring leases wanted, 0..=[`MAX_LEASES`].
    pub(crate) leases: u32,
}

/// One live session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Session {
    pub(crate) record: SessionRecord,
    /// When its replica last published it (Redis clock, epoch ms).
    pub(crate) last_seen_ms: i64,
}

/// An active job's lease.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LeaseEntry {
    pub(crate) id: String,
    pub(crate) queue: String,
    pub(crate) worker: String,
    pub(crate) deadline_ms: i64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct WorkersPage {
    pub(crate) sessions: Vec<Session>,
    /// The next page's cursor; `None` at the end.
    pub(crate) next_cursor: Option<String>,
    /// Soonest deadline first.
    pub(crate) leases: Vec<LeaseEntry>,
}

impl Operation for ListWorkers<'_> {
    type Output = WorkersPage;

    fn encode(&self, keys: &NamespaceKeys, call: &mut Call) {
        job_head(keys, call);
        call.key(keys.workers())
            .arg("stale_ms", self.stale_ms)
            .arg("cursor", self.cursor)
            .arg("limit", self.limit.clamp(1, MAX_PAGE))
            .arg("leases", self.leases.min(MAX_LEASES));
    }

    fn decode(&self, mut reply: Reply) -> Result<Self::Output, StoreError> {
        let _now = reply.int()?;
        let cursor = reply.text()?;
        let n = reply.count()?;
        let mut sessions = Vec::new();
        for _ in 0..n {
            let value = reply.text()?;
            let Some((seen, record)) = value.split_once('\n') else {
                continue;
            };
            // A record this version cannot read (written by a newer one) is left out.
            if let (Ok(last_seen_ms), Some(record)) = (seen.parse(), SessionRecord::decode(record))
            {
                sessions.push(Session {
                    record,
                    last_seen_ms,
                });
            }
        }
        let m = reply.count()?;
        let mut leases = Vec::new();
        for _ in 0..m {
            leases.push(LeaseEntry {
                id: reply.text()?,
                queue: reply.text()?,
                worker: reply.text()?,
                deadline_ms: reply.int()?,
            });
        }
        reply.finish()?;
        Ok(WorkersPage {
            sessions,
            next_cursor: (cursor != "0").then_some(cursor),
            leases,
        })
    }
}

#[cfg(test)]
pub(super) fn sample() -> ListWorkers<'static> {
    ListWorkers {
        stale_ms: 15_000,
        cursor: "0",
        limit: 10,
        leases: 50,
    }
}
