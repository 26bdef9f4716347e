//! `lua/get_flow.lua`: a flow's counts and a page of its nodes (issue 34).

use super::{job_head, prelude::*};
use crate::{
    domain::{FlowCounts, FlowNodeStatus, FlowPage},
    store::packed_job::packed_job,
};

script!(GetFlow<'_>: "get_flow", Job, Arity::Exactly(2), Arity::Exactly(11));

pub(crate) struct GetFlow<'a> {
    pub(crate) flow_id: &'a str,
    /// The first node's place in the stored order.
    pub(crate) from: u32,
    pub(crate) limit: u32,
}

impl Operation for GetFlow<'_> {
    /// None: no such flow (or one still being stored).
    type Output = Option<FlowPage>;

    fn encode(&self, keys: &NamespaceKeys, call: &mut Call) {
        job_head(keys, call);
        call.arg("flow_id", self.flow_id)
            .arg("from", self.from)
            .arg("limit", self.limit);
    }

    fn decode(&self, mut reply: Reply) -> Result<Self::Output, StoreError> {
        if reply.text()? == "missing" {
            reply.finish()?;
            return Ok(None);
        }
        let fit = |n: u64| u32::try_from(n).unwrap_or(u32::MAX);
        let counts = FlowCounts {
            nodes: fit(reply.count()?),
            unfinished: fit(reply.count()?),
            failed: fit(reply.count()?),
        };
        let create_ms = reply.int()?;
        let finish_ms = reply.opt_int()?;
        let cancelled = reply.flag()?;
        let next = reply.opt_int()?.map(|n| fit(n.unsigned_abs()));
        let k = reply.count()?;
        let mut nodes = Vec::new();
        for _ in 0..k {
            nodes.push(node(&mut reply)?);
        }
        reply.finish()?;
        Ok(Some(FlowPage {
            counts,
            create_ms,
            finish_ms,
            cancelled,
            nodes,
            next,
        }))
    }
}

/// One node: ref, n: entry, cause, then id, packed record ("" when gone), "".
fn node(reply: &mut Reply) -> Result<FlowNodeStatus, StoreError> {
    let reference = reply.text()?;
    let entry = reply.bytes()?;
    let failed_dependency = reply.text()?;
    let job_id = reply.text()?;
    let packed = reply.bytes()?;
    let _payload = reply.bytes()?;
    let job = if packed.is_empty() {
        None
    } else {
        Some(packed_job(job_id.clone(), &packed, Vec::new())?)
    };
    Ok(FlowNodeStatus {
        after: entry_after(&reference, &entry)?,
        reference,
        job_id,
        failed_dependency,
        job,
    })
}

/// The after refs of a node's n: entry (lib/graph.lua).
fn entry_after(reference: &str, entry: &[u8]) -> Result<Vec<String>, StoreError> {
    let corrupt = |detail: &str| StoreError::corrupt(format!("flow node {reference:?}"), detail);
    let value = rmpv::decode::read_value(&mut &entry[..]).map_err(|_| corrupt("not msgpack"))?;
    let after = value
        .as_array()
        .and_then(|parts| parts.get(1))
        .and_then(rmpv::Value::as_array)
        .ok_or_else(|| corrupt("no after list"))?;
    after
        .iter()
        .map(|v| {
            v.as_str()
                .map(str::to_owned)
                .ok_or_else(|| corrupt("an after ref is not text"))
        })
        .collect()
}

#[cfg(test)]
pub(super) fn sample() -> GetFlow<'static> {
    GetFlow {
        flow_id: "f",
        from: 0,
        limit: 10,
    }
}
