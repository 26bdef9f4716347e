//! Flows (job dependencies): [`FlowNode`], a builder over `FlowNode` reusing
//! [`Job`], what an EnqueueFlow answers ([`EnqueuedFlow`]), and the checks made
//! before anything is sent.

use std::collections::HashMap;

use crate::{
    error::{Error, Result},
    job::{check_name, Job},
    proto,
};

pub use proto::{DependencyFailure, FlowState};

/// The longest node ref the service accepts, in bytes.
const MAX_REF: usize = 128;

/// One job of a flow: its `ref` (its name in the flow, 1-128 bytes), the [`Job`]
/// (no dedup key), the refs it runs [`after`](FlowNode::after), and what it does
/// when one of them fails ([`on_dependency_failure`](FlowNode::on_dependency_failure):
/// `Cancel` by default).
///
/// ```no_run
/// # async fn f(client: dueq_client::Client) -> dueq_client::Result<()> {
/// use dueq_client::{DependencyFailure, FlowNode, Job};
/// let flow = client
///     .enqueue_flow(
///         [
///             FlowNode::new("resize", Job::new("images", "resize", b"big.png".to_vec())),
///             FlowNode::new("notify", Job::new("mail", "notify", Vec::new()))
///                 .after(["resize"])
///                 .on_dependency_failure(DependencyFailure::Run),
///         ],
///         None,
///     )
///     .await?;
/// println!("{} {:?}", flow.flow_id, flow.job_ids["notify"]);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct FlowNode {
    reference: String,
    job: Job,
    after: Vec<String>,
    rule: DependencyFailure,
}

impl FlowNode {
    /// The node `reference` running `job`, with no dependencies.
    pub fn new(reference: impl Into<String>, job: Job) -> FlowNode {
        FlowNode {
            reference: reference.into(),
            job,
            after: Vec::new(),
            rule: DependencyFailure::Cancel,
        }
    }

    /// Runs only after these nodes finished (added to those already given).
    pub fn after<S: Into<String>>(mut self, refs: impl IntoIterator<Item = S>) -> FlowNode {
        self.after.extend(refs.into_iter().map(Into::into));
        self
    }

    /// What the node does when a dependency ends DEAD or CANCELLED: `Cancel` (it
    /// ends CANCELLED), `Run` (it runs anyway; its [`ActiveJob::dependencies`]
    /// say which failed) or `Skip` (it ends SKIPPED; its dependents treat it as
    /// finished).
    ///
    /// [`ActiveJob::dependencies`]: crate::ActiveJob::dependencies
    pub fn on_dependency_failure(mut self, rule: DependencyFailure) -> FlowNode {
        self.rule = rule;
        self
    }

    /// The checked message; errors name `{field}ref`, `{field}job.queue`, ...
    pub(crate) fn into_proto(self, max_payload: usize, field: &str) -> Result<proto::FlowNode> {
        check_name(&format!("{field}ref"), &self.reference)?;
        if self.reference.len() > MAX_REF {
            return Err(Error::invalid(
                &format!("{field}ref"),
                format!("longer than {MAX_REF} bytes"),
            ));
        }
        let job = self
            .job
            .into_request("", max_payload, &format!("{field}job."))?;
        for (k, reference) in self.after.iter().enumerate() {
            check_name(&format!("{field}after[{k}]"), reference)?;
        }
        let rule = match self.rule {
            DependencyFailure::Unspecified => DependencyFailure::Cancel,
            rule => rule,
        };
        Ok(proto::FlowNode {
            r#ref: self.reference,
            job: Some(job),
            after: self.after,
            on_dependency_failure: rule as i32,
        })
    }
}

/// The checked EnqueueFlowRequest: every node (`nodes[i].`), the flow id.
pub(crate) fn flow_request(
    namespace: &str,
    nodes: impl IntoIterator<Item = FlowNode>,
    flow_id: Option<&str>,
    max_payload: usize,
) -> Result<proto::EnqueueFlowRequest> {
    let nodes = nodes
        .into_iter()
        .enumerate()
        .map(|(i, node)| node.into_proto(max_payload, &format!("nodes[{i}].")))
        .collect::<Result<Vec<_>>>()?;
    if nodes.is_empty() {
        return Err(Error::invalid("nodes", "must not be empty"));
    }
    if let Some(id) = flow_id {
        check_name("flow_id", id)?;
    }
    Ok(proto::EnqueueFlowRequest {
        namespace: namespace.to_owned(),
        nodes,
        flow_id: flow_id.unwrap_or_default().to_owned(),
    })
}

/// What an EnqueueFlow did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnqueuedFlow {
    /// The flow's id (the one given, or a new one).
    pub flow_id: String,
    /// Created, or a duplicate when the given flow id named a stored flow (nothing
    /// was written; the job ids are the stored flow's).
    pub outcome: proto::EnqueueOutcome,
    /// Each node's job id, by ref.
    pub job_ids: HashMap<String, String>,
}

impl EnqueuedFlow {
    /// Whether nothing was stored: a flow with this id existed.
    pub fn is_duplicate(&self) -> bool {
        self.outcome != proto::EnqueueOutcome::Created
    }

    pub(crate) fn from_proto(reply: proto::EnqueueFlowResponse) -> EnqueuedFlow {
        EnqueuedFlow {
            outcome: reply.outcome(),
            flow_id: reply.flow_id,
            job_ids: reply.job_ids,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorKind;

    const MIB: usize = 1024 * 1024;

    fn node(reference: &str) -> FlowNode {
        FlowNode::new(
            reference,
            Job::json("q", reference, &serde_json::json!({"ref": reference})),
        )
    }

    fn refused(nodes: Vec<FlowNode>, flow_id: Option<&str>, field: &str) {
        let e = flow_request("ns", nodes, flow_id, 64).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
        assert!(
            e.message().starts_with(&format!("{field}:")),
            "{field}: {e}"
        );
    }

    #[test]
    fn the_nodes_reach_the_request() {
        let r = flow_request(
            "ns",
            [
                node("a"),
                node("b")
                    .after(["a"])
                    .on_dependency_failure(DependencyFailure::Run),
                node("c")
                    .after(vec!["b".to_owned()])
                    .on_dependency_failure(DependencyFailure::Skip),
            ],
            Some("f-1"),
            MIB,
        )
        .unwrap();
        assert_eq!((r.namespace.as_str(), r.flow_id.as_str()), ("ns", "f-1"));
        let refs: Vec<&str> = r.nodes.iter().map(|n| n.r#ref.as_str()).collect();
        assert_eq!(refs, ["a", "b", "c"]);
        let rules: Vec<DependencyFailure> =
            r.nodes.iter().map(|n| n.on_dependency_failure()).collect();
        assert_eq!(
            rules,
            [
                DependencyFailure::Cancel,
                DependencyFailure::Run,
                DependencyFailure::Skip
            ]
        );
        assert_eq!(r.nodes[1].after, ["a"]);
        let job = r.nodes[0].job.as_ref().unwrap();
        assert_eq!(
            (job.namespace.as_str(), job.payload.as_slice()),
            ("", &br#"{"ref":"a"}"#[..])
        );
        let r = flow_request("ns", [node("a")], None, MIB).unwrap();
        assert_eq!(r.flow_id, "");
    }

    #[test]
    fn bad_nodes_are_refused_naming_the_field() {
        refused(vec![], None, "nodes");
        refused(vec![node("a"), node("")], None, "nodes[1].ref");
        refused(vec![node(&"r".repeat(129))], None, "nodes[0].ref");
        refused(
            vec![node("a"), FlowNode::new("b", Job::new("", "n", Vec::new()))],
            None,
            "nodes[1].job.queue",
        );
        refused(
            vec![FlowNode::new("a", Job::new("q", "n", vec![0; 65]))],
            None,
            "nodes[0].job.payload",
        );
        refused(vec![node("a").after([""])], None, "nodes[0].after[0]");
        refused(vec![node("a")], Some(""), "flow_id");
    }
}
