//! `lua/publish_workers.lua`: one replica's worker sessions in a namespace (issue 33).

use super::prelude::*;

script!(PublishWorkers<'_>: "publish_workers", Core, Arity::Exactly(1), Arity::Groups { fixed: 1, group: 2 });

/// What a worker session is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) enum SessionKind {
    #[serde(rename = "w")]
    Work,
    #[serde(rename = "j")]
    ClaimJob,
    #[serde(rename = "s")]
    ClaimDueSchedule,
}

/// One session as it is published (JSON, short names: it is stored per session).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct SessionRecord {
    #[serde(rename = "w")]
    pub(crate) worker: String,
    #[serde(rename = "k")]
    pub(crate) kind: SessionKind,
    #[serde(rename = "q")]
    pub(crate) queues: Vec<String>,
    #[serde(rename = "c")]
    pub(crate) capacity: u32,
    #[serde(rename = "f")]
    pub(crate) in_flight: u32,
    /// Epoch ms (the replica's estimate of the Redis clock).
    #[serde(rename = "s")]
    pub(crate) since_ms: i64,
    /// The replica serving it.
    #[serde(rename = "r")]
    pub(crate) replica: String,
}

impl SessionRecord {
    pub(crate) fn encode(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    pub(crate) fn decode(text: &str) -> Option<SessionRecord> {
        serde_json::from_str(text).ok()
    }
}

pub(crate) struct PublishWorkers<'a> {
    /// The hash's ttl, the readers' staleness bound.
    pub(crate) ttl_ms: u64,
    /// Session id -> its record, `None` to remove it.
    pub(crate) sessions: &'a [(String, Option<SessionRecord>)],
}

impl Operation for PublishWorkers<'_> {
    type Output = u64;

    fn encode(&self, keys: &NamespaceKeys, call: &mut Call) {
        call.key(keys.workers()).arg("ttl_ms", self.ttl_ms.max(1));
        for (field, record) in self.sessions {
            let record = record.as_ref().map(SessionRecord::encode).unwrap_or_default();
            call.arg("field", field).arg("record", record);
        }
    }

    fn decode(&self, mut reply: Reply) -> Result<Self::Output, StoreError> {
        let n = reply.count()?;
        reply.finish()?;
        Ok(n)
    }
}

#[cfg(test)]
pub(super) fn sample() -> PublishWorkers<'static> {
    static SESSIONS: std::sync::LazyLock<Vec<(String, Option<SessionRecord>)>> =
        std::sync::LazyLock::new(|| vec![("r-1".into(), None)]);
    PublishWorkers {
        ttl_ms: 15_000,
        sessions: &SESSIONS,
    }
}
