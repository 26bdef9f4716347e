"""Flows (job dependencies): the nodes `enqueue_flow` takes, what it answers, and
what `get_flow`, `cancel_flow` and `retry_flow` return, as plain values."""

import dataclasses

from ._types import JobSpec, check_name, enqueue_request, from_timestamp
from .errors import InvalidArgument
from .v1 import jobs_pb2

__all__ = ["Dependency", "EnqueuedFlow", "FlowCounts", "FlowNode", "FlowNodeStatus", "FlowStatus"]

_RULES = {
    "cancel": jobs_pb2.DEPENDENCY_FAILURE_CANCEL,
    "run": jobs_pb2.DEPENDENCY_FAILURE_RUN,
    "skip": jobs_pb2.DEPENDENCY_FAILURE_SKIP,
}
#: The longest node ref the service accepts, in bytes.
MAX_REF = 128


def state_name(value):
    """A `JobState` number as its lowercase name ("waiting", "completed", ...)."""
    return jobs_pb2.JobState.Name(value).removeprefix("JOB_STATE_").lower()


def _flow_state(value):
    return jobs_pb2.FlowState.Name(value).removeprefix("FLOW_STATE_").lower()


def _rule_name(value):
    name = jobs_pb2.DependencyFailure.Name(value).removeprefix("DEPENDENCY_FAILURE_").lower()
    return "cancel" if name == "unspecified" else name


@dataclasses.dataclass
class FlowNode:
    """One job of a flow: `ref` (its name in the flow, 1-128 bytes), `job` (a
    `dueq.JobSpec`, or a dict of `enqueue`'s arguments; no `dedup`), `after` (the
    refs it waits for) and `on_dependency_failure`: "cancel" (the default: it ends
    cancelled), "run" (it runs anyway, told which failed) or "skip" (it ends
    skipped, and its dependents treat it as finished)."""

    ref: str
    job: JobSpec
    after: list = dataclasses.field(default_factory=list)
    on_dependency_failure: str = "cancel"

    def to_proto(self, limit, prefix):
        check_name(self.ref, prefix + "ref")
        if len(self.ref.encode()) > MAX_REF:
            raise InvalidArgument(f"{prefix}ref: longer than {MAX_REF} bytes")
        spec = JobSpec(**self.job) if isinstance(self.job, dict) else self.job
        if not isinstance(spec, JobSpec):
            raise InvalidArgument(f"{prefix}job: must be a dueq.JobSpec or a dict, got {type(spec).__name__}")
        job = enqueue_request(spec, "", limit, prefix=prefix + "job.")
        rule = _RULES.get(self.on_dependency_failure)
        if rule is None:
            raise InvalidArgument(
                f"{prefix}on_dependency_failure: {self.on_dependency_failure!r} is not 'cancel', 'run' or 'skip'"
            )
        if isinstance(self.after, str):
            raise InvalidArgument(f"{prefix}after: must be a list of refs, not a string")
        for i, ref in enumerate(self.after):
            check_name(ref, f"{prefix}after[{i}]")
        return jobs_pb2.FlowNode(ref=self.ref, job=job, after=list(self.after), on_dependency_failure=rule)


def flow_request(nodes, flow_id, namespace, limit):
    """The checked `EnqueueFlowRequest`; errors name `nodes[i].<field>`."""
    req = jobs_pb2.EnqueueFlowRequest(namespace=namespace)
    if flow_id is not None:
        check_name(flow_id, "flow_id")
        req.flow_id = flow_id
    for i, node in enumerate(nodes):
        if not isinstance(node, FlowNode):
            raise InvalidArgument(f"nodes[{i}]: must be a dueq.FlowNode, got {type(node).__name__}")
        req.nodes.append(node.to_proto(limit, f"nodes[{i}]."))
    if not req.nodes:
        raise InvalidArgument("nodes: must not be empty")
    return req


@dataclasses.dataclass(frozen=True)
class EnqueuedFlow:
    """What `enqueue_flow` did: the flow's id, `outcome` ("created", or "duplicate"
    when `flow_id` named a stored flow) and each node's job id by ref."""

    flow_id: str
    outcome: str
    job_ids: dict

    @property
    def duplicate(self):
        return self.outcome != "created"

    @classmethod
    def from_proto(cls, msg):
        outcome = jobs_pb2.EnqueueOutcome.Name(msg.outcome).removeprefix("ENQUEUE_OUTCOME_").lower()
        return cls(msg.flow_id, outcome, dict(msg.job_ids))


@dataclasses.dataclass(frozen=True)
class FlowNodeStatus:
    """One node as `get_flow` shows it: `state` is a job state ("waiting",
    "pending", ..., "completed", "dead", "cancelled", "skipped");
    `failed_dependency` the ref whose failure cancelled or skipped it ("" if none)."""

    ref: str
    job_id: str
    queue: str
    name: str
    state: str
    after: list
    on_dependency_failure: str
    attempts: int
    failed_dependency: str
    create_time: object
    update_time: object
    finish_time: object

    @classmethod
    def from_proto(cls, n):
        return cls(
            n.ref, n.job_id, n.queue, n.name, state_name(n.state), list(n.after),
            _rule_name(n.on_dependency_failure), n.attempts, n.failed_dependency,
            from_timestamp(n.create_time), from_timestamp(n.update_time), from_timestamp(n.finish_time),
        )


@dataclasses.dataclass(frozen=True)
class FlowStatus:
    """A flow as `get_flow` shows it: `state` "running", "completed" (every node
    completed or skipped) or "failed" (finished, some dead or cancelled); the counts;
    `cancelled` (CancelFlow called, no RetryFlow since); every node, each after its
    dependencies."""

    flow_id: str
    state: str
    node_count: int
    unfinished: int
    failed: int
    cancelled: bool
    create_time: object
    finish_time: object
    nodes: list

    def node(self, ref):
        """The node `ref` (KeyError when the flow has none)."""
        for n in self.nodes:
            if n.ref == ref:
                return n
        raise KeyError(ref)

    @classmethod
    def from_pages(cls, pages):
        first = pages[0]
        nodes = [FlowNodeStatus.from_proto(n) for page in pages for n in page.nodes]
        return cls(
            first.flow_id, _flow_state(first.state), first.node_count, first.unfinished, first.failed,
            first.cancelled, from_timestamp(first.create_time), from_timestamp(first.finish_time), nodes,
        )


@dataclasses.dataclass(frozen=True)
class FlowCounts:
    """What `cancel_flow` and `retry_flow` leave: the flow's `state` and how many
    nodes are `unfinished` and `failed` (dead or cancelled)."""

    state: str
    unfinished: int
    failed: int

    @classmethod
    def from_proto(cls, msg):
        return cls(_flow_state(msg.state), msg.unfinished, msg.failed)


@dataclasses.dataclass(frozen=True)
class Dependency:
    """One direct dependency of a flow node, as its claim found it: `ref`, `job_id`
    and `state` ("completed" or "skipped"; "dead" or "cancelled" only under
    on_dependency_failure="run")."""

    ref: str
    job_id: str
    state: str
