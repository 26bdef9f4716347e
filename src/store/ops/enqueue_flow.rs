//! `lua/enqueue_flow.lua`: store one part of a flow (issue 34); the last part commits
//! it.

use super::{enqueue_jobs::encode_job, job_prefixes, prelude::*};
use crate::domain::FlowNodeSpec;

script!(EnqueueFlow<'_>:
    "enqueue_flow",
    Job,
    Arity::Exactly(2),
    Arity::Groups {
        fixed: 17,
        group: 23
    }
);

pub(crate) struct EnqueueFlow<'a> {
    pub(crate) flow_id: &'a str,
    /// This store's token (random, the same for every part).
    pub(crate) token: &'a str,
    /// Most unfinished jobs the namespace may hold (0: no limit).
    pub(crate) max_jobs: u64,
    /// The flow's node count.
    pub(crate) total: usize,
    /// The first part: every ref and job id, msgpack arrays (stored order).
    pub(crate) first: Option<(&'a [u8], &'a [u8])>,
    /// The last part: commits the flow.
    pub(crate) last: bool,
    pub(crate) nodes: &'a [FlowNodeSpec],
}

/// What one part's call did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum FlowStored {
    /// Written; `register`: put the namespace in the prune due-set.
    Stored { register: bool },
    /// The flow id names a committed flow: its refs and ids (msgpack arrays).
    Duplicate { refs: Vec<u8>, ids: Vec<u8> },
    /// Another call is storing this flow id.
    Busy,
    /// This store was given up (no call for the stage's time to live).
    Lost,
    /// A job id is taken: the node's place in this part, and the id.
    Exists { index: usize, id: String },
    /// The namespace's job quota would be passed.
    Quota,
}

impl Operation for EnqueueFlow<'_> {
    type Output = FlowStored;

    fn encode(&self, keys: &NamespaceKeys, call: &mut Call) {
        call.key(keys.meta()).key(keys.jobs_done());
        job_prefixes(keys, call);
        let (refs, ids): (&[u8], &[u8]) = self.first.unwrap_or((b"", b""));
        call.arg("flow_id", self.flow_id)
            .arg("token", self.token)
            .arg("max_jobs", self.max_jobs)
            .arg("first", u8::from(self.first.is_some()))
            .arg("last", u8::from(self.last))
            .arg("total", self.total)
            .arg("refs", refs)
            .arg("ids", ids)
            .arg("count", self.nodes.len());
        for node in self.nodes {
            encode_job(call, &node.job);
            call.arg("ref", &node.reference)
                .arg("odf", node.on_failure.record_text())
                .arg("node", node.entry.as_slice())
                .arg("waits", node.waits);
        }
    }

    fn decode(&self, mut reply: Reply) -> Result<Self::Output, StoreError> {
        let out = match reply.text()?.as_str() {
            "stored" => FlowStored::Stored {
                register: reply.flag()?,
            },
            "duplicate" => FlowStored::Duplicate {
                refs: reply.bytes()?,
                ids: reply.bytes()?,
            },
            "busy" => FlowStored::Busy,
            "lost" => FlowStored::Lost,
            "exists" => FlowStored::Exists {
                index: usize::try_from(reply.count()?).unwrap_or(usize::MAX),
                id: reply.text()?,
            },
            "quota" => FlowStored::Quota,
            other => {
                return Err(StoreError::corrupt(
                    "enqueue_flow reply",
                    format!("unexpected {other:?}"),
                ))
            }
        };
        reply.finish()?;
        Ok(out)
    }
}

#[cfg(test)]
pub(super) fn sample() -> EnqueueFlow<'static> {
    use std::sync::LazyLock;
    static NODES: LazyLock<Vec<FlowNodeSpec>> = LazyLock::new(|| {
        let job = super::enqueue_jobs::sample().jobs[0].clone();
        vec![FlowNodeSpec {
            reference: "a".into(),
            job,
            on_failure: Default::default(),
            waits: 0,
            entry: Vec::new(),
        }]
    });
    EnqueueFlow {
        flow_id: "f",
        token: "t",
        max_jobs: 0,
        total: 1,
        first: Some((b"", b"")),
        last: true,
        nodes: &NODES,
    }
}
