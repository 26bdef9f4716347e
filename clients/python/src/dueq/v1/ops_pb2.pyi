import datetime

from dueq.v1 import jobs_pb2 as _jobs_pb2
from google.protobuf import duration_pb2 as _duration_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Fairness(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    FAIRNESS_UNSPECIFIED: _ClassVar[Fairness]
    FAIRNESS_FIFO: _ClassVar[Fairness]
    FAIRNESS_ROUND_ROBIN: _ClassVar[Fairness]
    FAIRNESS_WEIGHTED: _ClassVar[Fairness]

class FlowKeyOrder(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    FLOW_KEY_ORDER_UNSPECIFIED: _ClassVar[FlowKeyOrder]
    FLOW_KEY_ORDER_BACKLOG: _ClassVar[FlowKeyOrder]
    FLOW_KEY_ORDER_RUNNING: _ClassVar[FlowKeyOrder]
    FLOW_KEY_ORDER_THROTTLED: _ClassVar[FlowKeyOrder]

class WorkerKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    WORKER_KIND_UNSPECIFIED: _ClassVar[WorkerKind]
    WORKER_KIND_WORK: _ClassVar[WorkerKind]
    WORKER_KIND_CLAIM_JOB: _ClassVar[WorkerKind]
    WORKER_KIND_CLAIM_DUE_SCHEDULE: _ClassVar[WorkerKind]
FAIRNESS_UNSPECIFIED: Fairness
FAIRNESS_FIFO: Fairness
FAIRNESS_ROUND_ROBIN: Fairness
FAIRNESS_WEIGHTED: Fairness
FLOW_KEY_ORDER_UNSPECIFIED: FlowKeyOrder
FLOW_KEY_ORDER_BACKLOG: FlowKeyOrder
FLOW_KEY_ORDER_RUNNING: FlowKeyOrder
FLOW_KEY_ORDER_THROTTLED: FlowKeyOrder
WORKER_KIND_UNSPECIFIED: WorkerKind
WORKER_KIND_WORK: WorkerKind
WORKER_KIND_CLAIM_JOB: WorkerKind
WORKER_KIND_CLAIM_DUE_SCHEDULE: WorkerKind

class ListNamespacesRequest(_message.Message):
    __slots__ = ("page_size", "page_token")
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    page_size: int
    page_token: str
    def __init__(self, page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListNamespacesResponse(_message.Message):
    __slots__ = ("namespaces", "next_page_token")
    NAMESPACES_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    namespaces: _containers.RepeatedScalarFieldContainer[str]
    next_page_token: str
    def __init__(self, namespaces: _Optional[_Iterable[str]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class ListQueuesRequest(_message.Message):
    __slots__ = ("namespace", "page_size", "page_token")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    page_size: int
    page_token: str
    def __init__(self, namespace: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class QueueInfo(_message.Message):
    __slots__ = ("queue", "pending", "delayed", "active", "dead", "oldest_pending_age", "paused", "counted", "removed", "policy", "waiting", "enqueued_total", "completed_total", "failed_total")
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    PENDING_FIELD_NUMBER: _ClassVar[int]
    DELAYED_FIELD_NUMBER: _ClassVar[int]
    ACTIVE_FIELD_NUMBER: _ClassVar[int]
    DEAD_FIELD_NUMBER: _ClassVar[int]
    OLDEST_PENDING_AGE_FIELD_NUMBER: _ClassVar[int]
    PAUSED_FIELD_NUMBER: _ClassVar[int]
    COUNTED_FIELD_NUMBER: _ClassVar[int]
    REMOVED_FIELD_NUMBER: _ClassVar[int]
    POLICY_FIELD_NUMBER: _ClassVar[int]
    WAITING_FIELD_NUMBER: _ClassVar[int]
    ENQUEUED_TOTAL_FIELD_NUMBER: _ClassVar[int]
    COMPLETED_TOTAL_FIELD_NUMBER: _ClassVar[int]
    FAILED_TOTAL_FIELD_NUMBER: _ClassVar[int]
    queue: str
    pending: int
    delayed: int
    active: int
    dead: int
    oldest_pending_age: _duration_pb2.Duration
    paused: bool
    counted: bool
    removed: int
    policy: QueuePolicy
    waiting: int
    enqueued_total: int
    completed_total: int
    failed_total: int
    def __init__(self, queue: _Optional[str] = ..., pending: _Optional[int] = ..., delayed: _Optional[int] = ..., active: _Optional[int] = ..., dead: _Optional[int] = ..., oldest_pending_age: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., paused: _Optional[bool] = ..., counted: _Optional[bool] = ..., removed: _Optional[int] = ..., policy: _Optional[_Union[QueuePolicy, _Mapping]] = ..., waiting: _Optional[int] = ..., enqueued_total: _Optional[int] = ..., completed_total: _Optional[int] = ..., failed_total: _Optional[int] = ...) -> None: ...

class ListQueuesResponse(_message.Message):
    __slots__ = ("queues", "next_page_token", "read_time")
    QUEUES_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    READ_TIME_FIELD_NUMBER: _ClassVar[int]
    queues: _containers.RepeatedCompositeFieldContainer[QueueInfo]
    next_page_token: str
    read_time: _timestamp_pb2.Timestamp
    def __init__(self, queues: _Optional[_Iterable[_Union[QueueInfo, _Mapping]]] = ..., next_page_token: _Optional[str] = ..., read_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class PauseQueueRequest(_message.Message):
    __slots__ = ("namespace", "queue")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    queue: str
    def __init__(self, namespace: _Optional[str] = ..., queue: _Optional[str] = ...) -> None: ...

class PauseQueueResponse(_message.Message):
    __slots__ = ("changed",)
    CHANGED_FIELD_NUMBER: _ClassVar[int]
    changed: bool
    def __init__(self, changed: _Optional[bool] = ...) -> None: ...

class ResumeQueueRequest(_message.Message):
    __slots__ = ("namespace", "queue")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    queue: str
    def __init__(self, namespace: _Optional[str] = ..., queue: _Optional[str] = ...) -> None: ...

class ResumeQueueResponse(_message.Message):
    __slots__ = ("changed",)
    CHANGED_FIELD_NUMBER: _ClassVar[int]
    changed: bool
    def __init__(self, changed: _Optional[bool] = ...) -> None: ...

class RetryDeadJobsRequest(_message.Message):
    __slots__ = ("namespace", "queue", "limit", "error_fingerprint")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    ERROR_FINGERPRINT_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    queue: str
    limit: int
    error_fingerprint: str
    def __init__(self, namespace: _Optional[str] = ..., queue: _Optional[str] = ..., limit: _Optional[int] = ..., error_fingerprint: _Optional[str] = ...) -> None: ...

class RetryDeadJobsResponse(_message.Message):
    __slots__ = ("retried", "more")
    RETRIED_FIELD_NUMBER: _ClassVar[int]
    MORE_FIELD_NUMBER: _ClassVar[int]
    retried: int
    more: bool
    def __init__(self, retried: _Optional[int] = ..., more: _Optional[bool] = ...) -> None: ...

class PurgeJobsRequest(_message.Message):
    __slots__ = ("namespace", "queue", "state", "limit", "error_fingerprint")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    ERROR_FINGERPRINT_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    queue: str
    state: _jobs_pb2.JobState
    limit: int
    error_fingerprint: str
    def __init__(self, namespace: _Optional[str] = ..., queue: _Optional[str] = ..., state: _Optional[_Union[_jobs_pb2.JobState, str]] = ..., limit: _Optional[int] = ..., error_fingerprint: _Optional[str] = ...) -> None: ...

class ListDeadGroupsRequest(_message.Message):
    __slots__ = ("namespace", "queue", "page_size", "page_token")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    queue: str
    page_size: int
    page_token: str
    def __init__(self, namespace: _Optional[str] = ..., queue: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class DeadGroup(_message.Message):
    __slots__ = ("fingerprint", "queue", "count", "first_seen", "last_seen", "sample_job_id", "sample_error")
    FINGERPRINT_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    FIRST_SEEN_FIELD_NUMBER: _ClassVar[int]
    LAST_SEEN_FIELD_NUMBER: _ClassVar[int]
    SAMPLE_JOB_ID_FIELD_NUMBER: _ClassVar[int]
    SAMPLE_ERROR_FIELD_NUMBER: _ClassVar[int]
    fingerprint: str
    queue: str
    count: int
    first_seen: _timestamp_pb2.Timestamp
    last_seen: _timestamp_pb2.Timestamp
    sample_job_id: str
    sample_error: str
    def __init__(self, fingerprint: _Optional[str] = ..., queue: _Optional[str] = ..., count: _Optional[int] = ..., first_seen: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., last_seen: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., sample_job_id: _Optional[str] = ..., sample_error: _Optional[str] = ...) -> None: ...

class ListDeadGroupsResponse(_message.Message):
    __slots__ = ("groups", "next_page_token")
    GROUPS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    groups: _containers.RepeatedCompositeFieldContainer[DeadGroup]
    next_page_token: str
    def __init__(self, groups: _Optional[_Iterable[_Union[DeadGroup, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class PurgeJobsResponse(_message.Message):
    __slots__ = ("purged", "more")
    PURGED_FIELD_NUMBER: _ClassVar[int]
    MORE_FIELD_NUMBER: _ClassVar[int]
    purged: int
    more: bool
    def __init__(self, purged: _Optional[int] = ..., more: _Optional[bool] = ...) -> None: ...

class RateLimit(_message.Message):
    __slots__ = ("limit", "period", "burst")
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    PERIOD_FIELD_NUMBER: _ClassVar[int]
    BURST_FIELD_NUMBER: _ClassVar[int]
    limit: int
    period: _duration_pb2.Duration
    burst: int
    def __init__(self, limit: _Optional[int] = ..., period: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., burst: _Optional[int] = ...) -> None: ...

class QueuePolicy(_message.Message):
    __slots__ = ("max_running", "rate", "per_key_max_running", "per_key_rate", "fairness", "weights", "default_weight")
    class WeightsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    MAX_RUNNING_FIELD_NUMBER: _ClassVar[int]
    RATE_FIELD_NUMBER: _ClassVar[int]
    PER_KEY_MAX_RUNNING_FIELD_NUMBER: _ClassVar[int]
    PER_KEY_RATE_FIELD_NUMBER: _ClassVar[int]
    FAIRNESS_FIELD_NUMBER: _ClassVar[int]
    WEIGHTS_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_WEIGHT_FIELD_NUMBER: _ClassVar[int]
    max_running: int
    rate: RateLimit
    per_key_max_running: int
    per_key_rate: RateLimit
    fairness: Fairness
    weights: _containers.ScalarMap[str, int]
    default_weight: int
    def __init__(self, max_running: _Optional[int] = ..., rate: _Optional[_Union[RateLimit, _Mapping]] = ..., per_key_max_running: _Optional[int] = ..., per_key_rate: _Optional[_Union[RateLimit, _Mapping]] = ..., fairness: _Optional[_Union[Fairness, str]] = ..., weights: _Optional[_Mapping[str, int]] = ..., default_weight: _Optional[int] = ...) -> None: ...

class SetQueuePolicyRequest(_message.Message):
    __slots__ = ("namespace", "queue", "policy")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    POLICY_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    queue: str
    policy: QueuePolicy
    def __init__(self, namespace: _Optional[str] = ..., queue: _Optional[str] = ..., policy: _Optional[_Union[QueuePolicy, _Mapping]] = ...) -> None: ...

class SetQueuePolicyResponse(_message.Message):
    __slots__ = ("policy",)
    POLICY_FIELD_NUMBER: _ClassVar[int]
    policy: QueuePolicy
    def __init__(self, policy: _Optional[_Union[QueuePolicy, _Mapping]] = ...) -> None: ...

class GetQueuePolicyRequest(_message.Message):
    __slots__ = ("namespace", "queue")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    queue: str
    def __init__(self, namespace: _Optional[str] = ..., queue: _Optional[str] = ...) -> None: ...

class GetQueuePolicyResponse(_message.Message):
    __slots__ = ("policy", "key_limits")
    POLICY_FIELD_NUMBER: _ClassVar[int]
    KEY_LIMITS_FIELD_NUMBER: _ClassVar[int]
    policy: QueuePolicy
    key_limits: int
    def __init__(self, policy: _Optional[_Union[QueuePolicy, _Mapping]] = ..., key_limits: _Optional[int] = ...) -> None: ...

class SetKeyLimitRequest(_message.Message):
    __slots__ = ("namespace", "queue", "key", "max_running", "rate")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    MAX_RUNNING_FIELD_NUMBER: _ClassVar[int]
    RATE_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    queue: str
    key: str
    max_running: int
    rate: RateLimit
    def __init__(self, namespace: _Optional[str] = ..., queue: _Optional[str] = ..., key: _Optional[str] = ..., max_running: _Optional[int] = ..., rate: _Optional[_Union[RateLimit, _Mapping]] = ...) -> None: ...

class SetKeyLimitResponse(_message.Message):
    __slots__ = ("changed",)
    CHANGED_FIELD_NUMBER: _ClassVar[int]
    changed: bool
    def __init__(self, changed: _Optional[bool] = ...) -> None: ...

class ThrottleKeyRequest(_message.Message):
    __slots__ = ("namespace", "queue", "key")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    FOR_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    queue: str
    key: str
    def __init__(self, namespace: _Optional[str] = ..., queue: _Optional[str] = ..., key: _Optional[str] = ..., **kwargs) -> None: ...

class ThrottleKeyResponse(_message.Message):
    __slots__ = ("until",)
    UNTIL_FIELD_NUMBER: _ClassVar[int]
    until: _timestamp_pb2.Timestamp
    def __init__(self, until: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class ListFlowKeysRequest(_message.Message):
    __slots__ = ("namespace", "queue", "order_by", "page_size", "page_token")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    ORDER_BY_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    queue: str
    order_by: FlowKeyOrder
    page_size: int
    page_token: str
    def __init__(self, namespace: _Optional[str] = ..., queue: _Optional[str] = ..., order_by: _Optional[_Union[FlowKeyOrder, str]] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class FlowKey(_message.Message):
    __slots__ = ("key", "backlog", "running", "throttled_until", "max_running", "rate")
    KEY_FIELD_NUMBER: _ClassVar[int]
    BACKLOG_FIELD_NUMBER: _ClassVar[int]
    RUNNING_FIELD_NUMBER: _ClassVar[int]
    THROTTLED_UNTIL_FIELD_NUMBER: _ClassVar[int]
    MAX_RUNNING_FIELD_NUMBER: _ClassVar[int]
    RATE_FIELD_NUMBER: _ClassVar[int]
    key: str
    backlog: int
    running: int
    throttled_until: _timestamp_pb2.Timestamp
    max_running: int
    rate: RateLimit
    def __init__(self, key: _Optional[str] = ..., backlog: _Optional[int] = ..., running: _Optional[int] = ..., throttled_until: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., max_running: _Optional[int] = ..., rate: _Optional[_Union[RateLimit, _Mapping]] = ...) -> None: ...

class ListFlowKeysResponse(_message.Message):
    __slots__ = ("keys", "next_page_token", "read_time")
    KEYS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    READ_TIME_FIELD_NUMBER: _ClassVar[int]
    keys: _containers.RepeatedCompositeFieldContainer[FlowKey]
    next_page_token: str
    read_time: _timestamp_pb2.Timestamp
    def __init__(self, keys: _Optional[_Iterable[_Union[FlowKey, _Mapping]]] = ..., next_page_token: _Optional[str] = ..., read_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class ListAuditEventsRequest(_message.Message):
    __slots__ = ("namespace", "page_size", "page_token")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    page_size: int
    page_token: str
    def __init__(self, namespace: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class AuditEvent(_message.Message):
    __slots__ = ("time", "principal", "method", "target", "outcome", "via")
    TIME_FIELD_NUMBER: _ClassVar[int]
    PRINCIPAL_FIELD_NUMBER: _ClassVar[int]
    METHOD_FIELD_NUMBER: _ClassVar[int]
    TARGET_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    VIA_FIELD_NUMBER: _ClassVar[int]
    time: _timestamp_pb2.Timestamp
    principal: str
    method: str
    target: str
    outcome: str
    via: str
    def __init__(self, time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., principal: _Optional[str] = ..., method: _Optional[str] = ..., target: _Optional[str] = ..., outcome: _Optional[str] = ..., via: _Optional[str] = ...) -> None: ...

class ListAuditEventsResponse(_message.Message):
    __slots__ = ("events", "next_page_token")
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    events: _containers.RepeatedCompositeFieldContainer[AuditEvent]
    next_page_token: str
    def __init__(self, events: _Optional[_Iterable[_Union[AuditEvent, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class ListWorkersRequest(_message.Message):
    __slots__ = ("namespace", "page_size", "page_token")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    page_size: int
    page_token: str
    def __init__(self, namespace: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class WorkerInfo(_message.Message):
    __slots__ = ("worker_id", "kind", "queues", "capacity", "in_flight", "connected_since", "replica", "last_seen")
    WORKER_ID_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    QUEUES_FIELD_NUMBER: _ClassVar[int]
    CAPACITY_FIELD_NUMBER: _ClassVar[int]
    IN_FLIGHT_FIELD_NUMBER: _ClassVar[int]
    CONNECTED_SINCE_FIELD_NUMBER: _ClassVar[int]
    REPLICA_FIELD_NUMBER: _ClassVar[int]
    LAST_SEEN_FIELD_NUMBER: _ClassVar[int]
    worker_id: str
    kind: WorkerKind
    queues: _containers.RepeatedScalarFieldContainer[str]
    capacity: int
    in_flight: int
    connected_since: _timestamp_pb2.Timestamp
    replica: str
    last_seen: _timestamp_pb2.Timestamp
    def __init__(self, worker_id: _Optional[str] = ..., kind: _Optional[_Union[WorkerKind, str]] = ..., queues: _Optional[_Iterable[str]] = ..., capacity: _Optional[int] = ..., in_flight: _Optional[int] = ..., connected_since: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., replica: _Optional[str] = ..., last_seen: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class LeaseInfo(_message.Message):
    __slots__ = ("job_id", "queue", "worker_id", "lease_deadline")
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    WORKER_ID_FIELD_NUMBER: _ClassVar[int]
    LEASE_DEADLINE_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    queue: str
    worker_id: str
    lease_deadline: _timestamp_pb2.Timestamp
    def __init__(self, job_id: _Optional[str] = ..., queue: _Optional[str] = ..., worker_id: _Optional[str] = ..., lease_deadline: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class ListWorkersResponse(_message.Message):
    __slots__ = ("workers", "expiring_leases", "next_page_token")
    WORKERS_FIELD_NUMBER: _ClassVar[int]
    EXPIRING_LEASES_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    workers: _containers.RepeatedCompositeFieldContainer[WorkerInfo]
    expiring_leases: _containers.RepeatedCompositeFieldContainer[LeaseInfo]
    next_page_token: str
    def __init__(self, workers: _Optional[_Iterable[_Union[WorkerInfo, _Mapping]]] = ..., expiring_leases: _Optional[_Iterable[_Union[LeaseInfo, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...
