//! `lua/list_audit.lua`: a page of a namespace's audit log, newest first (issue 33).

use super::prelude::*;

script!(ListAudit<'_>: "list_audit", Core, Arity::Exactly(1), Arity::Exactly(2));

/// Most records one page holds.
pub(crate) const MAX_PAGE: u32 = 1000;

pub(crate) struct ListAudit<'a> {
    /// The stream id of the previous page's last record ("" for the newest).
    pub(crate) before: &'a str,
    /// 1..=[`MAX_PAGE`].
    pub(crate) limit: u32,
}

/// One stored record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct AuditEntry {
    /// Its stream id (`<ms>-<seq>`), the page token after it.
    pub(crate) id: String,
    /// When it was appended (the id's milliseconds: the Redis clock).
    pub(crate) at_ms: i64,
    pub(crate) principal: String,
    pub(crate) method: String,
    pub(crate) target: String,
    pub(crate) outcome: String,
    pub(crate) via: String,
}

/// A page of records, newest first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct AuditPage {
    pub(crate) entries: Vec<AuditEntry>,
    /// Whether older records follow the page's last.
    pub(crate) more: bool,
}

impl Operation for ListAudit<'_> {
    type Output = AuditPage;

    fn encode(&self, keys: &NamespaceKeys, call: &mut Call) {
        call.key(keys.audit())
            .arg("before", self.before)
            .arg("limit", self.limit.clamp(1, MAX_PAGE));
    }

    fn decode(&self, mut reply: Reply) -> Result<Self::Output, StoreError> {
        let more = reply.flag()?;
        let n = reply.count()?;
        let mut entries = Vec::with_capacity(usize::try_from(n).unwrap_or(0).min(1000));
        for _ in 0..n {
            let id = reply.text()?;
            let at_ms = id
                .split('-')
                .next()
                .and_then(|ms| ms.parse().ok())
                .unwrap_or(0);
            entries.push(AuditEntry {
                id,
                at_ms,
                principal: reply.text()?,
                method: reply.text()?,
                target: reply.text()?,
                outcome: reply.text()?,
                via: reply.text()?,
            });
        }
        reply.finish()?;
        Ok(AuditPage { entries, more })
    }
}

#[cfg(test)]
pub(super) fn sample() -> ListAudit<'static> {
    ListAudit {
        before: "",
        limit: 10,
    }
}
