//! Job dependencies (issue 34): a flow is a directed acyclic graph of jobs of one
//! namespace; each node runs once the nodes it comes after have finished. The graph's
//! rules that need no I/O live here: a flow's shape is checked (refs, duplicates,
//! cycles, sizes) and ordered (every node after its dependencies) before anything is
//! stored; lua/lib/graph.lua keeps the rest.

use std::collections::{BTreeMap, HashMap};

use super::{JobSpec, JobState, NewJob};

/// Most nodes in a flow.
pub(crate) const MAX_FLOW_NODES: usize = 1_000;
/// Most dependencies (`after` entries) in a flow, all nodes together.
pub(crate) const MAX_FLOW_EDGES: usize = 10_000;
/// Longest node ref, in bytes.
pub(crate) const MAX_REF_LEN: usize = 128;

/// What a node does when one of its dependencies ends dead or cancelled.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) enum OnDependencyFailure {
    /// Ends cancelled at once.
    #[default]
    Cancel,
    /// Runs anyway once every dependency finished.
    Run,
    /// Ends skipped at once; its dependents treat it as finished.
    Skip,
}

impl OnDependencyFailure {
    /// As the record keeps it (lib/graph.lua position odf).
    pub(crate) fn record_text(self) -> &'static str {
        match self {
            Self::Cancel => "",
            Self::Run => "r",
            Self::Skip => "s",
        }
    }

    /// One letter, as a node's n: entry lists its dependents' rules.
    fn letter(self) -> char {
        match self {
            Self::Cancel => 'c',
            Self::Run => 'r',
            Self::Skip => 's',
        }
    }

    pub(crate) fn parse(text: &str) -> Option<Self> {
        Some(match text {
            "" => Self::Cancel,
            "r" => Self::Run,
            "s" => Self::Skip,
            _ => return None,
        })
    }
}

/// A validated node as the caller asked for it.
#[derive(Debug, Clone)]
pub(crate) struct NewFlowNode {
    pub(crate) reference: String,
    pub(crate) job: NewJob,
    pub(crate) after: Vec<String>,
    pub(crate) on_failure: OnDependencyFailure,
}

/// A node ready to store: its job, and its entry in the flow hash.
#[derive(Debug, Clone)]
pub(crate) struct FlowNodeSpec {
    pub(crate) reference: String,
    pub(crate) job: JobSpec,
    pub(crate) on_failure: OnDependencyFailure,
    /// How many dependencies it has.
    pub(crate) waits: usize,
    /// lib/graph.lua's n: entry: msgpack { id, after refs, dependent refs, after ids,
    /// dependents' rules }.
    pub(crate) entry: Vec<u8>,
}

/// Why a flow's shape was refused: the node's index in the request, its ref, and what
/// is wrong (`field` is relative to the node, e.g. "after[2]").
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ShapeError {
    pub(crate) index: usize,
    pub(crate) reference: String,
    pub(crate) field: String,
    pub(crate) message: String,
}

/// The flow, every node after its dependencies (Kahn's order, ties in request
/// order), each with its n: entry; or the first thing wrong with its shape. The
/// caller checked each node's own fields and the counts.
pub(crate) fn order(
    nodes: Vec<NewFlowNode>,
    max_lease_ms: i64,
) -> Result<Vec<FlowNodeSpec>, ShapeError> {
    let mut index: HashMap<&str, usize> = HashMap::with_capacity(nodes.len());
    for (i, node) in nodes.iter().enumerate() {
        if index.insert(node.reference.as_str(), i).is_some() {
            return Err(shape(i, node, "ref", "is used by an earlier node"));
        }
    }
    let mut deps: Vec<Vec<usize>> = Vec::with_capacity(nodes.len());
    let mut dependents: Vec<Vec<usize>> = vec![Vec::new(); nodes.len()];
    for (i, node) in nodes.iter().enumerate() {
        let mut mine = Vec::with_capacity(node.after.len());
        for (k, after) in node.after.iter().enumerate() {
            let field = format!("after[{k}]");
            let Some(&d) = index.get(after.as_str()) else {
                return Err(shape(
                    i,
                    node,
                    &field,
                    format!("names no node of the flow: {after:?}"),
                ));
            };
            if d == i {
                return Err(shape(i, node, &field, "a node cannot come after itself"));
            }
            if mine.contains(&d) {
                return Err(shape(i, node, &field, format!("names {after:?} twice")));
            }
            mine.push(d);
            dependents[d].push(i);
        }
        deps.push(mine);
    }
    let sorted = topological(&deps, &dependents).map_err(|i| {
        shape(
            i,
            &nodes[i],
            "after",
            "is part of a cycle: a flow must be acyclic",
        )
    })?;
    let specs: Vec<JobSpec> = nodes
        .iter()
        .map(|n| n.job.clone().into_spec(max_lease_ms))
        .collect();
    Ok(sorted
        .into_iter()
        .map(|i| {
            let node = &nodes[i];
            let entry = entry(&specs, &nodes, i, &deps[i], &dependents[i]);
            FlowNodeSpec {
                reference: node.reference.clone(),
                job: specs[i].clone(),
                on_failure: node.on_failure,
                waits: deps[i].len(),
                entry,
            }
        })
        .collect())
}

fn shape(index: usize, node: &NewFlowNode, field: &str, message: impl Into<String>) -> ShapeError {
    ShapeError {
        index,
        reference: node.reference.clone(),
        field: field.to_owned(),
        message: message.into(),
    }
}

/// Kahn's algorithm, ready nodes taken in request order; Err(a node on a cycle).
fn topological(deps: &[Vec<usize>], dependents: &[Vec<usize>]) -> Result<Vec<usize>, usize> {
    let mut waiting: Vec<usize> = deps.iter().map(Vec::len).collect();
    let mut ready: std::collections::BTreeSet<usize> =
        (0..deps.len()).filter(|&i| waiting[i] == 0).collect();
    let mut out = Vec::with_capacity(deps.len());
    while let Some(i) = ready.pop_first() {
        out.push(i);
        for &d in &dependents[i] {
            waiting[d] -= 1;
            if waiting[d] == 0 {
                ready.insert(d);
            }
        }
    }
    match (0..deps.len()).find(|&i| waiting[i] > 0) {
        Some(on_cycle) => Err(on_cycle),
        None => Ok(out),
    }
}

/// Node i's n: entry (lib/graph.lua).
fn entry(
    specs: &[JobSpec],
    nodes: &[NewFlowNode],
    i: usize,
    deps: &[usize],
    dependents: &[usize],
) -> Vec<u8> {
    use rmpv::Value;
    let text = |s: &str| Value::from(s);
    let value = Value::Array(vec![
        text(&specs[i].id),
        Value::Array(deps.iter().map(|&d| text(&nodes[d].reference)).collect()),
        Value::Array(
            dependents
                .iter()
                .map(|&d| text(&nodes[d].reference))
                .collect(),
        ),
        Value::Array(deps.iter().map(|&d| text(&specs[d].id)).collect()),
        text(
            &dependents
                .iter()
                .map(|&d| nodes[d].on_failure.letter())
                .collect::<String>(),
        ),
    ]);
    let mut out = Vec::new();
    // Writing to a Vec cannot fail.
    let _ = rmpv::encode::write_value(&mut out, &value);
    out
}

/// What an EnqueueFlow stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FlowEnqueued {
    pub(crate) flow_id: String,
    /// Each node's job id, by ref.
    pub(crate) job_ids: BTreeMap<String, String>,
    /// False: the flow id named a flow already stored (nothing was written).
    pub(crate) created: bool,
}

/// Where a flow is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FlowState {
    Running,
    Completed,
    Failed,
}

/// A flow's counts, as its hash keeps them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FlowCounts {
    pub(crate) nodes: u32,
    pub(crate) unfinished: u32,
    pub(crate) failed: u32,
}

impl FlowCounts {
    pub(crate) fn state(self) -> FlowState {
        if self.unfinished > 0 {
            FlowState::Running
        } else if self.failed > 0 {
            FlowState::Failed
        } else {
            FlowState::Completed
        }
    }
}

/// One node as GetFlow shows it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct FlowNodeStatus {
    pub(crate) reference: String,
    pub(crate) job_id: String,
    pub(crate) after: Vec<String>,
    /// The failed dependency that cancelled or skipped it ("" none).
    pub(crate) failed_dependency: String,
    /// None once the job was deleted (DeleteJob of a finished node).
    pub(crate) job: Option<super::JobRecord>,
}

/// A page of a flow.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct FlowPage {
    pub(crate) counts: FlowCounts,
    pub(crate) create_ms: i64,
    pub(crate) finish_ms: Option<i64>,
    pub(crate) cancelled: bool,
    pub(crate) nodes: Vec<FlowNodeStatus>,
    /// Where the next page starts; None when this is the last.
    pub(crate) next: Option<u32>,
}

/// A node as its record names it (positions dag, ref, odf).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FlowMembership {
    pub(crate) flow_id: String,
    pub(crate) reference: String,
    pub(crate) on_failure: OnDependencyFailure,
}

/// One dependency of a claimed node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Dependency {
    pub(crate) reference: String,
    pub(crate) job_id: String,
    /// None when its record was gone.
    pub(crate) state: Option<JobState>,
    /// Its result when it completed and the claim's budget held it.
    pub(crate) result: Option<Vec<u8>>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::RunAt;

    fn node(reference: &str, after: &[&str]) -> NewFlowNode {
        NewFlowNode {
            reference: reference.into(),
            job: NewJob {
                id: Some(format!("job-{reference}")),
                queue: "q".into(),
                name: "n".into(),
                payload: Vec::new(),
                headers: BTreeMap::new(),
                priority: 0,
                run_at: RunAt::Now,
                max_attempts: None,
                backoff: None,
                lease_ms: None,
                dedup: None,
                retention: Default::default(),
                flow: Default::default(),
            },
            after: after.iter().map(|s| (*s).to_owned()).collect(),
            on_failure: OnDependencyFailure::Cancel,
        }
    }

    fn refs(specs: &[FlowNodeSpec]) -> Vec<&str> {
        specs.iter().map(|s| s.reference.as_str()).collect()
    }

    #[test]
    fn every_node_comes_after_its_dependencies_ties_in_request_order() {
        let nodes = vec![
            node("notify", &["thumb-a", "thumb-b"]),
            node("thumb-b", &["resize"]),
            node("resize", &[]),
            node("thumb-a", &["resize"]),
        ];
        let specs = order(nodes, 30_000).unwrap();
        assert_eq!(refs(&specs), ["resize", "thumb-b", "thumb-a", "notify"]);
        assert_eq!(specs[3].waits, 2);
        let entry = rmpv::decode::read_value(&mut &specs[0].entry[..]).unwrap();
        let parts = entry.as_array().unwrap();
        assert_eq!(parts[0].as_str(), Some("job-resize"));
        assert_eq!(parts[2].as_array().unwrap().len(), 2);
        assert_eq!(parts[4].as_str(), Some("cc"));
    }

    #[test]
    fn a_cycle_an_unknown_ref_a_duplicate_and_a_self_edge_are_named() {
        let err = order(vec![node("a", &["b"]), node("b", &["a"])], 1).unwrap_err();
        assert_eq!((err.index, err.field.as_str()), (0, "after"));
        assert!(err.message.contains("cycle"), "{err:?}");
        let err = order(vec![node("a", &[]), node("b", &["a", "zz"])], 1).unwrap_err();
        assert_eq!(
            (err.index, err.reference.as_str(), err.field.as_str()),
            (1, "b", "after[1]")
        );
        let err = order(vec![node("a", &[]), node("a", &[])], 1).unwrap_err();
        assert_eq!((err.index, err.field.as_str()), (1, "ref"));
        let err = order(vec![node("a", &["a"])], 1).unwrap_err();
        assert_eq!(err.field, "after[0]");
        let err = order(vec![node("a", &[]), node("b", &["a", "a"])], 1).unwrap_err();
        assert!(err.message.contains("twice"), "{err:?}");
    }

    #[test]
    fn a_flow_is_running_until_every_node_finished_and_failed_if_one_failed() {
        let counts = |unfinished, failed| FlowCounts {
            nodes: 3,
            unfinished,
            failed,
        };
        assert_eq!(counts(1, 1).state(), FlowState::Running);
        assert_eq!(counts(0, 1).state(), FlowState::Failed);
        assert_eq!(counts(0, 0).state(), FlowState::Completed);
    }
}
