//! Flows (issue 34): EnqueueFlow stores a graph of jobs in bounded parts and commits
//! it; GetFlow pages through it; CancelFlow and RetryFlow start sweeps. Whatever a
//! script leaves for later (lua/lib/graph.lua "Bounded work") is taken here by
//! drain_graph calls until nothing is left, and by the pruner otherwise.

use std::collections::BTreeMap;

use super::{chunks, Jobs};
use crate::{
    domain::{
        order_flow, FlowEnqueued, FlowNodeSpec, FlowPage, Namespace, NewFlowNode, ShapeError,
    },
    effects::{Effects, Ready},
    error::{Error, Missing},
    namespaces::Work,
    store::{
        ops::{
            abort_flow::AbortFlow,
            cancel_flow::CancelFlow,
            drain_graph::Drained,
            enqueue_flow::{EnqueueFlow, FlowStored},
            get_flow::GetFlow,
            retry_flow::RetryFlow,
        },
        StoreError,
    },
};

/// Most abort_flow calls one failed store makes before it leaves the rest to the
/// pruner (64 nodes a call: a 1,000-node flow several times over).
const ABORT_CALLS: usize = 64;

impl Jobs {
    /// The validated nodes with ids and defaults, every node after its dependencies;
    /// or what is wrong with the graph's shape.
    pub(crate) fn flow_specs(
        &self,
        nodes: Vec<NewFlowNode>,
    ) -> Result<Vec<FlowNodeSpec>, ShapeError> {
        order_flow(nodes, self.max_lease_ms)
    }

    /// Stores `nodes` (every node after its dependencies, `order_flow`) as flow
    /// `flow_id`, all or nothing; their job ids by ref.
    pub(crate) async fn enqueue_flow(
        &self,
        namespace: &Namespace,
        flow_id: &str,
        nodes: Vec<FlowNodeSpec>,
    ) -> Result<FlowEnqueued, Error> {
        let token = uuid::Uuid::new_v4().to_string();
        let refs = pack_texts(nodes.iter().map(|n| n.reference.as_str()));
        let ids = pack_texts(nodes.iter().map(|n| n.job.id.as_str()));
        let parts = chunks::chunks_of(&nodes, |n| &n.job);
        let mut register = false;
        for (i, part) in parts.iter().enumerate() {
            let op = EnqueueFlow {
                flow_id,
                token: &token,
                max_jobs: self.max_jobs,
                total: nodes.len(),
                first: (i == 0).then_some((refs.as_slice(), ids.as_slice())),
                last: i + 1 == parts.len(),
                nodes: part,
            };
            let stored = match self.cx.store.run(namespace, &op).await {
                Ok(stored) => stored,
                Err(error) => {
                    return Err(self
                        .give_up(namespace, flow_id, &token, i, error.into())
                        .await)
                }
            };
            match stored {
                FlowStored::Stored { register: r } => register |= r,
                FlowStored::Duplicate { refs, ids } => return duplicate(flow_id, &refs, &ids),
                refused => {
                    // The first call checks every node's id: its index is the flow's.
                    let scope: &[FlowNodeSpec] = if i == 0 { &nodes } else { part };
                    let error = refusal(namespace, flow_id, scope, refused, self.max_jobs);
                    return Err(self.give_up(namespace, flow_id, &token, i, error).await);
                }
            }
        }
        let entry = self.entry(namespace);
        let mut effects = Effects::finished(register).stored();
        effects.created = nodes.iter().map(|n| n.job.queue.as_str()).collect();
        effects.flow_created = true;
        self.cx.apply(&entry, effects).await;
        self.drain(namespace).await;
        let job_ids = nodes
            .iter()
            .map(|n| (n.reference.clone(), n.job.id.clone()))
            .collect();
        Ok(FlowEnqueued {
            flow_id: flow_id.to_owned(),
            job_ids,
            created: true,
        })
    }

    /// Gives up a store that failed after part `part` (0-based): what earlier parts
    /// wrote is deleted now (the pruner deletes it later if this fails too); returns
    /// `error`.
    async fn give_up(
        &self,
        namespace: &Namespace,
        flow_id: &str,
        token: &str,
        part: usize,
        error: Error,
    ) -> Error {
        if part == 0 {
            return error;
        }
        let op = AbortFlow { flow_id, token };
        for _ in 0..ABORT_CALLS {
            match self.cx.store.run(namespace, &op).await {
                Ok(true) => continue,
                Ok(false) => break,
                Err(abort) => {
                    tracing::warn!(%flow_id, %abort, "could not give up a flow's store; the pruner will");
                    break;
                }
            }
        }
        error
    }

    /// A page of flow `flow_id`'s nodes from place `from`.
    pub(crate) async fn get_flow(
        &self,
        namespace: &Namespace,
        flow_id: &str,
        from: u32,
        limit: u32,
    ) -> Result<FlowPage, Error> {
        let op = GetFlow {
            flow_id,
            from,
            limit,
        };
        self.cx
            .store
            .run(namespace, &op)
            .await?
            .ok_or_else(|| Error::NotFound(Missing::Flow(flow_id.to_owned())))
    }

    /// Cancels flow `flow_id`'s unfinished nodes (active ones are asked to stop);
    /// returns the flow's first page afterwards.
    pub(crate) async fn cancel_flow(
        &self,
        namespace: &Namespace,
        flow_id: &str,
    ) -> Result<FlowPage, Error> {
        let started = self
            .cx
            .store
            .run(namespace, &CancelFlow { flow_id })
            .await?;
        self.after_sweep(namespace, flow_id, started).await
    }

    /// Re-arms flow `flow_id`'s dead, cancelled and skipped nodes; returns the flow's
    /// first page afterwards.
    pub(crate) async fn retry_flow(
        &self,
        namespace: &Namespace,
        flow_id: &str,
    ) -> Result<FlowPage, Error> {
        let started = self.cx.store.run(namespace, &RetryFlow { flow_id }).await?;
        self.after_sweep(namespace, flow_id, started).await
    }

    async fn after_sweep(
        &self,
        namespace: &Namespace,
        flow_id: &str,
        started: Option<Drained>,
    ) -> Result<FlowPage, Error> {
        let started = started.ok_or_else(|| Error::NotFound(Missing::Flow(flow_id.to_owned())))?;
        self.apply_drained(namespace, started).await;
        if started.more {
            self.drain(namespace).await;
        }
        self.get_flow(namespace, flow_id, 0, 1).await
    }

    /// Takes the namespace's queued graph work until none is left (or leaves the
    /// rest to the pruner, which the scripts registered for it).
    pub(crate) async fn drain(&self, namespace: &Namespace) {
        self.cx.drain_graph(&self.entry(namespace)).await;
    }

    async fn apply_drained(&self, namespace: &Namespace, drained: Drained) {
        let mut effects = Effects::finished(drained.register || drained.more);
        if drained.woke {
            effects = effects.and_ready(Work::Jobs, Ready::Now);
        }
        self.cx.apply(&self.entry(namespace), effects).await;
    }
}

/// A msgpack array of texts.
fn pack_texts<'a>(texts: impl Iterator<Item = &'a str>) -> Vec<u8> {
    let value = rmpv::Value::Array(texts.map(rmpv::Value::from).collect());
    let mut out = Vec::new();
    // Writing to a Vec cannot fail.
    let _ = rmpv::encode::write_value(&mut out, &value);
    out
}

/// A msgpack array of texts, read back.
fn unpack_texts(what: &str, bytes: &[u8]) -> Result<Vec<String>, StoreError> {
    let corrupt = || StoreError::corrupt(what, "not a msgpack array of texts");
    let value = rmpv::decode::read_value(&mut &bytes[..]).map_err(|_| corrupt())?;
    value
        .as_array()
        .ok_or_else(corrupt)?
        .iter()
        .map(|v| v.as_str().map(str::to_owned).ok_or_else(corrupt))
        .collect()
}

/// The stored flow's ids by ref (a DUPLICATE).
fn duplicate(flow_id: &str, refs: &[u8], ids: &[u8]) -> Result<FlowEnqueued, Error> {
    let what = format!("flow {flow_id}");
    let refs = unpack_texts(&what, refs)?;
    let ids = unpack_texts(&what, ids)?;
    Ok(FlowEnqueued {
        flow_id: flow_id.to_owned(),
        job_ids: refs.into_iter().zip(ids).collect::<BTreeMap<_, _>>(),
        created: false,
    })
}

/// The error a refused part's reply means; `part` holds the nodes its indexes count
/// (the whole flow for the first call, which checks every id).
fn refusal(
    namespace: &Namespace,
    flow_id: &str,
    part: &[FlowNodeSpec],
    refused: FlowStored,
    max_jobs: u64,
) -> Error {
    match refused {
        FlowStored::Busy => Error::FlowBusy(format!(
            "flow {flow_id:?} is being stored by another call; call again for its job ids"
        )),
        FlowStored::Lost => Error::FlowBusy(format!(
            "the store of flow {flow_id:?} was given up (too long between its parts); \
             nothing of it is kept, enqueue it again"
        )),
        FlowStored::Exists { index, id } => {
            let reference = part.get(index).map_or("", |n| n.reference.as_str());
            Error::FlowRefused(format!(
                "node {reference:?}: a job with id {id:?} exists; every node of a flow is a \
                 new job: choose another job_id or leave it empty (nothing was stored)"
            ))
        }
        FlowStored::Quota => Error::Store(StoreError::Quota {
            namespace: namespace.as_str().to_owned(),
            what: "jobs".into(),
            limit: max_jobs,
        }),
        FlowStored::Stored { .. } | FlowStored::Duplicate { .. } => Error::Store(
            StoreError::corrupt("enqueue_flow reply", "an outcome out of place"),
        ),
    }
}
