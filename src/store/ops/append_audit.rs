//! `lua/append_audit.lua`: appends audit records to a namespace's log (issue 33).

use super::prelude::*;

script!(AppendAudit<'_>: "append_audit", Core, Arity::Exactly(1), Arity::Groups { fixed: 1, group: 5 });

/// About how many records a namespace's audit log keeps (XADD MAXLEN ~).
pub(crate) const AUDIT_LOG_LEN: u32 = 10_000;

/// One audited call, as it is recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct AuditRecord {
    pub(crate) principal: String,
    pub(crate) method: &'static str,
    pub(crate) target: String,
    /// The status code's name: `OK`, `NOT_FOUND`, ...
    pub(crate) outcome: &'static str,
    /// `grpc` or `console`.
    pub(crate) via: &'static str,
}

pub(crate) struct AppendAudit<'a> {
    pub(crate) records: &'a [AuditRecord],
}

impl Operation for AppendAudit<'_> {
    type Output = u64;

    fn encode(&self, keys: &NamespaceKeys, call: &mut Call) {
        call.key(keys.audit()).arg("max_len", AUDIT_LOG_LEN);
        for record in self.records {
            call.arg("principal", &record.principal)
                .arg("method", record.method)
                .arg("target", &record.target)
                .arg("outcome", record.outcome)
                .arg("via", record.via);
        }
    }

    fn decode(&self, mut reply: Reply) -> Result<Self::Output, StoreError> {
        let n = reply.count()?;
        reply.finish()?;
        Ok(n)
    }
}

#[cfg(test)]
pub(super) fn sample() -> AppendAudit<'static> {
    static RECORDS: std::sync::LazyLock<Vec<AuditRecord>> = std::sync::LazyLock::new(|| {
        vec![AuditRecord {
            principal: "ops".into(),
            method: "CancelJob",
            target: "job:1".into(),
            outcome: "OK",
            via: "grpc",
        }]
    });
    AppendAudit { records: &RECORDS }
}
