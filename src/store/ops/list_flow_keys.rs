//! `lua/list_flow_keys.lua`: a page of a queue's active flow keys (issue 32).

use super::{job_head, prelude::*};
use crate::domain::KeyLimit;

script!(ListFlowKeys<'_>: "list_flow_keys", Job, Arity::Exactly(2), Arity::Exactly(12));

/// Most keys one page holds.
pub(crate) const MAX_PAGE: u32 = 1000;

/// What a page is ordered by (most first).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FlowKeyOrder {
    Backlog,
    Running,
    Throttled,
}

pub(crate) struct ListFlowKeys<'a> {
    pub(crate) queue: &'a str,
    pub(crate) order: FlowKeyOrder,
    /// Keys of that order to skip.
    pub(crate) offset: u64,
    /// 1..=[`MAX_PAGE`].
    pub(crate) limit: u32,
}

/// One active key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FlowKeyInfo {
    pub(crate) key: String,
    pub(crate) backlog: u64,
    pub(crate) running: u64,
    /// Epoch ms.
    pub(crate) throttled_until_ms: Option<i64>,
    /// Its SetKeyLimit override.
    pub(crate) limit: Option<KeyLimit>,
}

/// A page of keys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FlowKeyPage {
    pub(crate) now_ms: i64,
    pub(crate) keys: Vec<FlowKeyInfo>,
    /// The offset of the next page, `None` at the end.
    pub(crate) next_offset: Option<u64>,
}

impl Operation for ListFlowKeys<'_> {
    type Output = FlowKeyPage;

    fn encode(&self, keys: &NamespaceKeys, call: &mut Call) {
        job_head(keys, call);
        let order = match self.order {
            FlowKeyOrder::Backlog => "b",
            FlowKeyOrder::Running => "c",
            FlowKeyOrder::Throttled => "h",
        };
        call.arg("queue", self.queue)
            .arg("order", order)
            .arg("offset", self.offset)
            .arg("limit", self.limit.clamp(1, MAX_PAGE));
    }

    fn decode(&self, mut reply: Reply) -> Result<Self::Output, StoreError> {
        let now_ms = reply.int()?;
        let next_offset = reply
            .opt_int()?
            .map(|n| u64::try_from(n).unwrap_or(0));
        let n = reply.count()?;
        let mut keys = Vec::with_capacity(usize::try_from(n).unwrap_or(0).min(1000));
        for _ in 0..n {
            keys.push(FlowKeyInfo {
                key: reply.text()?,
                backlog: reply.count()?,
                running: reply.count()?,
                throttled_until_ms: reply.opt_int()?,
                limit: Some(reply.text()?)
                    .filter(|t| !t.is_empty())
                    .map(|t| KeyLimit::parse(&t)),
            });
        }
        reply.finish()?;
        Ok(FlowKeyPage {
            now_ms,
            keys,
            next_offset,
        })
    }
}

#[cfg(test)]
pub(super) fn sample() -> ListFlowKeys<'static> {
    ListFlowKeys {
        queue: "q",
        order: FlowKeyOrder::Backlog,
        offset: 0,
        limit: 10,
    }
}
