import datetime

from google.protobuf import duration_pb2 as _duration_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class JobState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    JOB_STATE_UNSPECIFIED: _ClassVar[JobState]
    JOB_STATE_PENDING: _ClassVar[JobState]
    JOB_STATE_DELAYED: _ClassVar[JobState]
    JOB_STATE_ACTIVE: _ClassVar[JobState]
    JOB_STATE_COMPLETED: _ClassVar[JobState]
    JOB_STATE_DEAD: _ClassVar[JobState]
    JOB_STATE_CANCELLED: _ClassVar[JobState]
    JOB_STATE_WAITING: _ClassVar[JobState]
    JOB_STATE_SKIPPED: _ClassVar[JobState]

class BackoffKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    BACKOFF_KIND_UNSPECIFIED: _ClassVar[BackoffKind]
    BACKOFF_KIND_FIXED: _ClassVar[BackoffKind]
    BACKOFF_KIND_EXPONENTIAL: _ClassVar[BackoffKind]

class EnqueueOutcome(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ENQUEUE_OUTCOME_UNSPECIFIED: _ClassVar[EnqueueOutcome]
    ENQUEUE_OUTCOME_CREATED: _ClassVar[EnqueueOutcome]
    ENQUEUE_OUTCOME_DUPLICATE: _ClassVar[EnqueueOutcome]
    ENQUEUE_OUTCOME_REPLACED: _ClassVar[EnqueueOutcome]
    ENQUEUE_OUTCOME_EXTENDED: _ClassVar[EnqueueOutcome]

class DedupMode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    DEDUP_MODE_UNSPECIFIED: _ClassVar[DedupMode]
    DEDUP_MODE_SKIP: _ClassVar[DedupMode]
    DEDUP_MODE_REPLACE: _ClassVar[DedupMode]
    DEDUP_MODE_EXTEND: _ClassVar[DedupMode]

class JobView(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    JOB_VIEW_UNSPECIFIED: _ClassVar[JobView]
    JOB_VIEW_BASIC: _ClassVar[JobView]
    JOB_VIEW_FULL: _ClassVar[JobView]

class DependencyFailure(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    DEPENDENCY_FAILURE_UNSPECIFIED: _ClassVar[DependencyFailure]
    DEPENDENCY_FAILURE_CANCEL: _ClassVar[DependencyFailure]
    DEPENDENCY_FAILURE_RUN: _ClassVar[DependencyFailure]
    DEPENDENCY_FAILURE_SKIP: _ClassVar[DependencyFailure]

class FlowState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    FLOW_STATE_UNSPECIFIED: _ClassVar[FlowState]
    FLOW_STATE_RUNNING: _ClassVar[FlowState]
    FLOW_STATE_COMPLETED: _ClassVar[FlowState]
    FLOW_STATE_FAILED: _ClassVar[FlowState]
JOB_STATE_UNSPECIFIED: JobState
JOB_STATE_PENDING: JobState
JOB_STATE_DELAYED: JobState
JOB_STATE_ACTIVE: JobState
JOB_STATE_COMPLETED: JobState
JOB_STATE_DEAD: JobState
JOB_STATE_CANCELLED: JobState
JOB_STATE_WAITING: JobState
JOB_STATE_SKIPPED: JobState
BACKOFF_KIND_UNSPECIFIED: BackoffKind
BACKOFF_KIND_FIXED: BackoffKind
BACKOFF_KIND_EXPONENTIAL: BackoffKind
ENQUEUE_OUTCOME_UNSPECIFIED: EnqueueOutcome
ENQUEUE_OUTCOME_CREATED: EnqueueOutcome
ENQUEUE_OUTCOME_DUPLICATE: EnqueueOutcome
ENQUEUE_OUTCOME_REPLACED: EnqueueOutcome
ENQUEUE_OUTCOME_EXTENDED: EnqueueOutcome
DEDUP_MODE_UNSPECIFIED: DedupMode
DEDUP_MODE_SKIP: DedupMode
DEDUP_MODE_REPLACE: DedupMode
DEDUP_MODE_EXTEND: DedupMode
JOB_VIEW_UNSPECIFIED: JobView
JOB_VIEW_BASIC: JobView
JOB_VIEW_FULL: JobView
DEPENDENCY_FAILURE_UNSPECIFIED: DependencyFailure
DEPENDENCY_FAILURE_CANCEL: DependencyFailure
DEPENDENCY_FAILURE_RUN: DependencyFailure
DEPENDENCY_FAILURE_SKIP: DependencyFailure
FLOW_STATE_UNSPECIFIED: FlowState
FLOW_STATE_RUNNING: FlowState
FLOW_STATE_COMPLETED: FlowState
FLOW_STATE_FAILED: FlowState

class Backoff(_message.Message):
    __slots__ = ("kind", "base", "cap", "jitter")
    KIND_FIELD_NUMBER: _ClassVar[int]
    BASE_FIELD_NUMBER: _ClassVar[int]
    CAP_FIELD_NUMBER: _ClassVar[int]
    JITTER_FIELD_NUMBER: _ClassVar[int]
    kind: BackoffKind
    base: _duration_pb2.Duration
    cap: _duration_pb2.Duration
    jitter: float
    def __init__(self, kind: _Optional[_Union[BackoffKind, str]] = ..., base: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., cap: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., jitter: _Optional[float] = ...) -> None: ...

class EnqueueRequest(_message.Message):
    __slots__ = ("namespace", "queue", "name", "payload", "headers", "priority", "run_at", "delay", "max_attempts", "backoff", "lease", "job_id", "dedup_key", "dedup_ttl", "dedup_mode", "retention", "fairness_key", "concurrency_key", "rate_key", "cost")
    class HeadersEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_FIELD_NUMBER: _ClassVar[int]
    HEADERS_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    RUN_AT_FIELD_NUMBER: _ClassVar[int]
    DELAY_FIELD_NUMBER: _ClassVar[int]
    MAX_ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    BACKOFF_FIELD_NUMBER: _ClassVar[int]
    LEASE_FIELD_NUMBER: _ClassVar[int]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    DEDUP_KEY_FIELD_NUMBER: _ClassVar[int]
    DEDUP_TTL_FIELD_NUMBER: _ClassVar[int]
    DEDUP_MODE_FIELD_NUMBER: _ClassVar[int]
    RETENTION_FIELD_NUMBER: _ClassVar[int]
    FAIRNESS_KEY_FIELD_NUMBER: _ClassVar[int]
    CONCURRENCY_KEY_FIELD_NUMBER: _ClassVar[int]
    RATE_KEY_FIELD_NUMBER: _ClassVar[int]
    COST_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    queue: str
    name: str
    payload: bytes
    headers: _containers.ScalarMap[str, str]
    priority: int
    run_at: _timestamp_pb2.Timestamp
    delay: _duration_pb2.Duration
    max_attempts: int
    backoff: Backoff
    lease: _duration_pb2.Duration
    job_id: str
    dedup_key: str
    dedup_ttl: _duration_pb2.Duration
    dedup_mode: DedupMode
    retention: JobRetention
    fairness_key: str
    concurrency_key: str
    rate_key: str
    cost: int
    def __init__(self, namespace: _Optional[str] = ..., queue: _Optional[str] = ..., name: _Optional[str] = ..., payload: _Optional[bytes] = ..., headers: _Optional[_Mapping[str, str]] = ..., priority: _Optional[int] = ..., run_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., delay: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., max_attempts: _Optional[int] = ..., backoff: _Optional[_Union[Backoff, _Mapping]] = ..., lease: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., job_id: _Optional[str] = ..., dedup_key: _Optional[str] = ..., dedup_ttl: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., dedup_mode: _Optional[_Union[DedupMode, str]] = ..., retention: _Optional[_Union[JobRetention, _Mapping]] = ..., fairness_key: _Optional[str] = ..., concurrency_key: _Optional[str] = ..., rate_key: _Optional[str] = ..., cost: _Optional[int] = ...) -> None: ...

class JobRetention(_message.Message):
    __slots__ = ("on_complete", "on_fail")
    ON_COMPLETE_FIELD_NUMBER: _ClassVar[int]
    ON_FAIL_FIELD_NUMBER: _ClassVar[int]
    on_complete: RetentionRule
    on_fail: RetentionRule
    def __init__(self, on_complete: _Optional[_Union[RetentionRule, _Mapping]] = ..., on_fail: _Optional[_Union[RetentionRule, _Mapping]] = ...) -> None: ...

class RetentionRule(_message.Message):
    __slots__ = ("remove", "keep_last", "keep_for")
    REMOVE_FIELD_NUMBER: _ClassVar[int]
    KEEP_LAST_FIELD_NUMBER: _ClassVar[int]
    KEEP_FOR_FIELD_NUMBER: _ClassVar[int]
    remove: bool
    keep_last: int
    keep_for: _duration_pb2.Duration
    def __init__(self, remove: _Optional[bool] = ..., keep_last: _Optional[int] = ..., keep_for: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class EnqueueResponse(_message.Message):
    __slots__ = ("job_id", "outcome", "state")
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    outcome: EnqueueOutcome
    state: JobState
    def __init__(self, job_id: _Optional[str] = ..., outcome: _Optional[_Union[EnqueueOutcome, str]] = ..., state: _Optional[_Union[JobState, str]] = ...) -> None: ...

class EnqueueBatchRequest(_message.Message):
    __slots__ = ("namespace", "jobs")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    JOBS_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    jobs: _containers.RepeatedCompositeFieldContainer[EnqueueRequest]
    def __init__(self, namespace: _Optional[str] = ..., jobs: _Optional[_Iterable[_Union[EnqueueRequest, _Mapping]]] = ...) -> None: ...

class ItemError(_message.Message):
    __slots__ = ("code", "message")
    CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    code: int
    message: str
    def __init__(self, code: _Optional[int] = ..., message: _Optional[str] = ...) -> None: ...

class EnqueueBatchResult(_message.Message):
    __slots__ = ("index", "ok", "error")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    OK_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    index: int
    ok: EnqueueResponse
    error: ItemError
    def __init__(self, index: _Optional[int] = ..., ok: _Optional[_Union[EnqueueResponse, _Mapping]] = ..., error: _Optional[_Union[ItemError, _Mapping]] = ...) -> None: ...

class EnqueueBatchResponse(_message.Message):
    __slots__ = ("results",)
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[EnqueueBatchResult]
    def __init__(self, results: _Optional[_Iterable[_Union[EnqueueBatchResult, _Mapping]]] = ...) -> None: ...

class ClaimJobRequest(_message.Message):
    __slots__ = ("namespace", "queues", "worker_id", "wait", "lease", "max_jobs", "acks")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    QUEUES_FIELD_NUMBER: _ClassVar[int]
    WORKER_ID_FIELD_NUMBER: _ClassVar[int]
    WAIT_FIELD_NUMBER: _ClassVar[int]
    LEASE_FIELD_NUMBER: _ClassVar[int]
    MAX_JOBS_FIELD_NUMBER: _ClassVar[int]
    ACKS_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    queues: _containers.RepeatedScalarFieldContainer[str]
    worker_id: str
    wait: _duration_pb2.Duration
    lease: _duration_pb2.Duration
    max_jobs: int
    acks: _containers.RepeatedCompositeFieldContainer[JobLease]
    def __init__(self, namespace: _Optional[str] = ..., queues: _Optional[_Iterable[str]] = ..., worker_id: _Optional[str] = ..., wait: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., lease: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., max_jobs: _Optional[int] = ..., acks: _Optional[_Iterable[_Union[JobLease, _Mapping]]] = ...) -> None: ...

class ClaimedJob(_message.Message):
    __slots__ = ("job_id", "lease_token", "attempt", "lease_deadline", "queue", "name", "payload", "headers", "priority", "max_attempts", "create_time", "schedule", "checkpoint", "cancel_requested", "flow_id", "flow_ref", "dependencies", "dependency_results")
    class HeadersEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    class DependencyResultsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: bytes
        def __init__(self, key: _Optional[str] = ..., value: _Optional[bytes] = ...) -> None: ...
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    LEASE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    LEASE_DEADLINE_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_FIELD_NUMBER: _ClassVar[int]
    HEADERS_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    MAX_ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    SCHEDULE_FIELD_NUMBER: _ClassVar[int]
    CHECKPOINT_FIELD_NUMBER: _ClassVar[int]
    CANCEL_REQUESTED_FIELD_NUMBER: _ClassVar[int]
    FLOW_ID_FIELD_NUMBER: _ClassVar[int]
    FLOW_REF_FIELD_NUMBER: _ClassVar[int]
    DEPENDENCIES_FIELD_NUMBER: _ClassVar[int]
    DEPENDENCY_RESULTS_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    lease_token: str
    attempt: int
    lease_deadline: _timestamp_pb2.Timestamp
    queue: str
    name: str
    payload: bytes
    headers: _containers.ScalarMap[str, str]
    priority: int
    max_attempts: int
    create_time: _timestamp_pb2.Timestamp
    schedule: JobSchedule
    checkpoint: bytes
    cancel_requested: bool
    flow_id: str
    flow_ref: str
    dependencies: _containers.RepeatedCompositeFieldContainer[JobDependency]
    dependency_results: _containers.ScalarMap[str, bytes]
    def __init__(self, job_id: _Optional[str] = ..., lease_token: _Optional[str] = ..., attempt: _Optional[int] = ..., lease_deadline: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., queue: _Optional[str] = ..., name: _Optional[str] = ..., payload: _Optional[bytes] = ..., headers: _Optional[_Mapping[str, str]] = ..., priority: _Optional[int] = ..., max_attempts: _Optional[int] = ..., create_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., schedule: _Optional[_Union[JobSchedule, _Mapping]] = ..., checkpoint: _Optional[bytes] = ..., cancel_requested: _Optional[bool] = ..., flow_id: _Optional[str] = ..., flow_ref: _Optional[str] = ..., dependencies: _Optional[_Iterable[_Union[JobDependency, _Mapping]]] = ..., dependency_results: _Optional[_Mapping[str, bytes]] = ...) -> None: ...

class JobDependency(_message.Message):
    __slots__ = ("ref", "job_id", "state")
    REF_FIELD_NUMBER: _ClassVar[int]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    ref: str
    job_id: str
    state: JobState
    def __init__(self, ref: _Optional[str] = ..., job_id: _Optional[str] = ..., state: _Optional[_Union[JobState, str]] = ...) -> None: ...

class JobSchedule(_message.Message):
    __slots__ = ("schedule_id", "due_time", "run_number")
    SCHEDULE_ID_FIELD_NUMBER: _ClassVar[int]
    DUE_TIME_FIELD_NUMBER: _ClassVar[int]
    RUN_NUMBER_FIELD_NUMBER: _ClassVar[int]
    schedule_id: str
    due_time: _timestamp_pb2.Timestamp
    run_number: int
    def __init__(self, schedule_id: _Optional[str] = ..., due_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., run_number: _Optional[int] = ...) -> None: ...

class JobProgress(_message.Message):
    __slots__ = ("fraction", "message", "checkpoint", "update_time")
    FRACTION_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    CHECKPOINT_FIELD_NUMBER: _ClassVar[int]
    UPDATE_TIME_FIELD_NUMBER: _ClassVar[int]
    fraction: float
    message: str
    checkpoint: bytes
    update_time: _timestamp_pb2.Timestamp
    def __init__(self, fraction: _Optional[float] = ..., message: _Optional[str] = ..., checkpoint: _Optional[bytes] = ..., update_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class ClaimJobResponse(_message.Message):
    __slots__ = ("jobs", "acks")
    JOBS_FIELD_NUMBER: _ClassVar[int]
    ACKS_FIELD_NUMBER: _ClassVar[int]
    jobs: _containers.RepeatedCompositeFieldContainer[ClaimedJob]
    acks: _containers.RepeatedCompositeFieldContainer[AckResult]
    def __init__(self, jobs: _Optional[_Iterable[_Union[ClaimedJob, _Mapping]]] = ..., acks: _Optional[_Iterable[_Union[AckResult, _Mapping]]] = ...) -> None: ...

class JobLease(_message.Message):
    __slots__ = ("job_id", "lease_token", "result")
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    LEASE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    lease_token: str
    result: bytes
    def __init__(self, job_id: _Optional[str] = ..., lease_token: _Optional[str] = ..., result: _Optional[bytes] = ...) -> None: ...

class AckResult(_message.Message):
    __slots__ = ("job_id", "code", "message")
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    code: int
    message: str
    def __init__(self, job_id: _Optional[str] = ..., code: _Optional[int] = ..., message: _Optional[str] = ...) -> None: ...

class AckJobsRequest(_message.Message):
    __slots__ = ("namespace", "acks")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    ACKS_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    acks: _containers.RepeatedCompositeFieldContainer[JobLease]
    def __init__(self, namespace: _Optional[str] = ..., acks: _Optional[_Iterable[_Union[JobLease, _Mapping]]] = ...) -> None: ...

class AckJobsResponse(_message.Message):
    __slots__ = ("results",)
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[AckResult]
    def __init__(self, results: _Optional[_Iterable[_Union[AckResult, _Mapping]]] = ...) -> None: ...

class WorkRequest(_message.Message):
    __slots__ = ("start", "ack", "fail", "extend")
    START_FIELD_NUMBER: _ClassVar[int]
    ACK_FIELD_NUMBER: _ClassVar[int]
    FAIL_FIELD_NUMBER: _ClassVar[int]
    EXTEND_FIELD_NUMBER: _ClassVar[int]
    start: WorkStart
    ack: JobLease
    fail: FailJobRequest
    extend: ExtendLeaseRequest
    def __init__(self, start: _Optional[_Union[WorkStart, _Mapping]] = ..., ack: _Optional[_Union[JobLease, _Mapping]] = ..., fail: _Optional[_Union[FailJobRequest, _Mapping]] = ..., extend: _Optional[_Union[ExtendLeaseRequest, _Mapping]] = ...) -> None: ...

class WorkStart(_message.Message):
    __slots__ = ("namespace", "queues", "worker_id", "lease", "capacity")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    QUEUES_FIELD_NUMBER: _ClassVar[int]
    WORKER_ID_FIELD_NUMBER: _ClassVar[int]
    LEASE_FIELD_NUMBER: _ClassVar[int]
    CAPACITY_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    queues: _containers.RepeatedScalarFieldContainer[str]
    worker_id: str
    lease: _duration_pb2.Duration
    capacity: int
    def __init__(self, namespace: _Optional[str] = ..., queues: _Optional[_Iterable[str]] = ..., worker_id: _Optional[str] = ..., lease: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., capacity: _Optional[int] = ...) -> None: ...

class WorkResponse(_message.Message):
    __slots__ = ("job", "ack", "fail", "extend", "cancel")
    JOB_FIELD_NUMBER: _ClassVar[int]
    ACK_FIELD_NUMBER: _ClassVar[int]
    FAIL_FIELD_NUMBER: _ClassVar[int]
    EXTEND_FIELD_NUMBER: _ClassVar[int]
    CANCEL_FIELD_NUMBER: _ClassVar[int]
    job: ClaimedJob
    ack: AckResult
    fail: FailResult
    extend: ExtendResult
    cancel: JobLease
    def __init__(self, job: _Optional[_Union[ClaimedJob, _Mapping]] = ..., ack: _Optional[_Union[AckResult, _Mapping]] = ..., fail: _Optional[_Union[FailResult, _Mapping]] = ..., extend: _Optional[_Union[ExtendResult, _Mapping]] = ..., cancel: _Optional[_Union[JobLease, _Mapping]] = ...) -> None: ...

class FailResult(_message.Message):
    __slots__ = ("job_id", "code", "message", "result")
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    code: int
    message: str
    result: FailJobResponse
    def __init__(self, job_id: _Optional[str] = ..., code: _Optional[int] = ..., message: _Optional[str] = ..., result: _Optional[_Union[FailJobResponse, _Mapping]] = ...) -> None: ...

class ExtendResult(_message.Message):
    __slots__ = ("job_id", "code", "message", "result")
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    code: int
    message: str
    result: ExtendLeaseResponse
    def __init__(self, job_id: _Optional[str] = ..., code: _Optional[int] = ..., message: _Optional[str] = ..., result: _Optional[_Union[ExtendLeaseResponse, _Mapping]] = ...) -> None: ...

class AckJobRequest(_message.Message):
    __slots__ = ("namespace", "job_id", "lease_token", "result")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    LEASE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    job_id: str
    lease_token: str
    result: bytes
    def __init__(self, namespace: _Optional[str] = ..., job_id: _Optional[str] = ..., lease_token: _Optional[str] = ..., result: _Optional[bytes] = ...) -> None: ...

class AckJobResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class FailJobRequest(_message.Message):
    __slots__ = ("namespace", "job_id", "lease_token", "error", "retry_after", "non_retryable")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    LEASE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    RETRY_AFTER_FIELD_NUMBER: _ClassVar[int]
    NON_RETRYABLE_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    job_id: str
    lease_token: str
    error: str
    retry_after: _duration_pb2.Duration
    non_retryable: bool
    def __init__(self, namespace: _Optional[str] = ..., job_id: _Optional[str] = ..., lease_token: _Optional[str] = ..., error: _Optional[str] = ..., retry_after: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., non_retryable: _Optional[bool] = ...) -> None: ...

class FailJobResponse(_message.Message):
    __slots__ = ("state", "run_at")
    STATE_FIELD_NUMBER: _ClassVar[int]
    RUN_AT_FIELD_NUMBER: _ClassVar[int]
    state: JobState
    run_at: _timestamp_pb2.Timestamp
    def __init__(self, state: _Optional[_Union[JobState, str]] = ..., run_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class ExtendLeaseRequest(_message.Message):
    __slots__ = ("namespace", "job_id", "lease_token", "lease", "progress")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    LEASE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    LEASE_FIELD_NUMBER: _ClassVar[int]
    PROGRESS_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    job_id: str
    lease_token: str
    lease: _duration_pb2.Duration
    progress: JobProgress
    def __init__(self, namespace: _Optional[str] = ..., job_id: _Optional[str] = ..., lease_token: _Optional[str] = ..., lease: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., progress: _Optional[_Union[JobProgress, _Mapping]] = ...) -> None: ...

class ExtendLeaseResponse(_message.Message):
    __slots__ = ("lease_deadline", "cancel_requested")
    LEASE_DEADLINE_FIELD_NUMBER: _ClassVar[int]
    CANCEL_REQUESTED_FIELD_NUMBER: _ClassVar[int]
    lease_deadline: _timestamp_pb2.Timestamp
    cancel_requested: bool
    def __init__(self, lease_deadline: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., cancel_requested: _Optional[bool] = ...) -> None: ...

class JobErrorEntry(_message.Message):
    __slots__ = ("attempt", "message", "time", "worker_id")
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    TIME_FIELD_NUMBER: _ClassVar[int]
    WORKER_ID_FIELD_NUMBER: _ClassVar[int]
    attempt: int
    message: str
    time: _timestamp_pb2.Timestamp
    worker_id: str
    def __init__(self, attempt: _Optional[int] = ..., message: _Optional[str] = ..., time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., worker_id: _Optional[str] = ...) -> None: ...

class Job(_message.Message):
    __slots__ = ("job_id", "queue", "name", "payload", "headers", "priority", "state", "attempts", "max_attempts", "backoff", "lease", "errors", "create_time", "update_time", "run_at", "lease_deadline", "worker_id", "finish_time", "dedup_key", "schedule", "progress", "result", "cancel_requested", "version", "fairness_key", "concurrency_key", "rate_key", "cost", "flow_id", "flow_ref")
    class HeadersEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_FIELD_NUMBER: _ClassVar[int]
    HEADERS_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    MAX_ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    BACKOFF_FIELD_NUMBER: _ClassVar[int]
    LEASE_FIELD_NUMBER: _ClassVar[int]
    ERRORS_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    UPDATE_TIME_FIELD_NUMBER: _ClassVar[int]
    RUN_AT_FIELD_NUMBER: _ClassVar[int]
    LEASE_DEADLINE_FIELD_NUMBER: _ClassVar[int]
    WORKER_ID_FIELD_NUMBER: _ClassVar[int]
    FINISH_TIME_FIELD_NUMBER: _ClassVar[int]
    DEDUP_KEY_FIELD_NUMBER: _ClassVar[int]
    SCHEDULE_FIELD_NUMBER: _ClassVar[int]
    PROGRESS_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    CANCEL_REQUESTED_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    FAIRNESS_KEY_FIELD_NUMBER: _ClassVar[int]
    CONCURRENCY_KEY_FIELD_NUMBER: _ClassVar[int]
    RATE_KEY_FIELD_NUMBER: _ClassVar[int]
    COST_FIELD_NUMBER: _ClassVar[int]
    FLOW_ID_FIELD_NUMBER: _ClassVar[int]
    FLOW_REF_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    queue: str
    name: str
    payload: bytes
    headers: _containers.ScalarMap[str, str]
    priority: int
    state: JobState
    attempts: int
    max_attempts: int
    backoff: Backoff
    lease: _duration_pb2.Duration
    errors: _containers.RepeatedCompositeFieldContainer[JobErrorEntry]
    create_time: _timestamp_pb2.Timestamp
    update_time: _timestamp_pb2.Timestamp
    run_at: _timestamp_pb2.Timestamp
    lease_deadline: _timestamp_pb2.Timestamp
    worker_id: str
    finish_time: _timestamp_pb2.Timestamp
    dedup_key: str
    schedule: JobSchedule
    progress: JobProgress
    result: bytes
    cancel_requested: bool
    version: int
    fairness_key: str
    concurrency_key: str
    rate_key: str
    cost: int
    flow_id: str
    flow_ref: str
    def __init__(self, job_id: _Optional[str] = ..., queue: _Optional[str] = ..., name: _Optional[str] = ..., payload: _Optional[bytes] = ..., headers: _Optional[_Mapping[str, str]] = ..., priority: _Optional[int] = ..., state: _Optional[_Union[JobState, str]] = ..., attempts: _Optional[int] = ..., max_attempts: _Optional[int] = ..., backoff: _Optional[_Union[Backoff, _Mapping]] = ..., lease: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., errors: _Optional[_Iterable[_Union[JobErrorEntry, _Mapping]]] = ..., create_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., update_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., run_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., lease_deadline: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., worker_id: _Optional[str] = ..., finish_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., dedup_key: _Optional[str] = ..., schedule: _Optional[_Union[JobSchedule, _Mapping]] = ..., progress: _Optional[_Union[JobProgress, _Mapping]] = ..., result: _Optional[bytes] = ..., cancel_requested: _Optional[bool] = ..., version: _Optional[int] = ..., fairness_key: _Optional[str] = ..., concurrency_key: _Optional[str] = ..., rate_key: _Optional[str] = ..., cost: _Optional[int] = ..., flow_id: _Optional[str] = ..., flow_ref: _Optional[str] = ...) -> None: ...

class GetJobRequest(_message.Message):
    __slots__ = ("namespace", "job_id")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    job_id: str
    def __init__(self, namespace: _Optional[str] = ..., job_id: _Optional[str] = ...) -> None: ...

class GetJobResponse(_message.Message):
    __slots__ = ("job",)
    JOB_FIELD_NUMBER: _ClassVar[int]
    job: Job
    def __init__(self, job: _Optional[_Union[Job, _Mapping]] = ...) -> None: ...

class ListJobsRequest(_message.Message):
    __slots__ = ("namespace", "queue", "state", "page_size", "page_token", "view", "filter")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    VIEW_FIELD_NUMBER: _ClassVar[int]
    FILTER_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    queue: str
    state: JobState
    page_size: int
    page_token: str
    view: JobView
    filter: JobFilter
    def __init__(self, namespace: _Optional[str] = ..., queue: _Optional[str] = ..., state: _Optional[_Union[JobState, str]] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ..., view: _Optional[_Union[JobView, str]] = ..., filter: _Optional[_Union[JobFilter, _Mapping]] = ...) -> None: ...

class JobFilter(_message.Message):
    __slots__ = ("name", "dedup_key", "header_key", "header_value", "error_contains", "created_after", "created_before")
    NAME_FIELD_NUMBER: _ClassVar[int]
    DEDUP_KEY_FIELD_NUMBER: _ClassVar[int]
    HEADER_KEY_FIELD_NUMBER: _ClassVar[int]
    HEADER_VALUE_FIELD_NUMBER: _ClassVar[int]
    ERROR_CONTAINS_FIELD_NUMBER: _ClassVar[int]
    CREATED_AFTER_FIELD_NUMBER: _ClassVar[int]
    CREATED_BEFORE_FIELD_NUMBER: _ClassVar[int]
    name: str
    dedup_key: str
    header_key: str
    header_value: str
    error_contains: str
    created_after: _timestamp_pb2.Timestamp
    created_before: _timestamp_pb2.Timestamp
    def __init__(self, name: _Optional[str] = ..., dedup_key: _Optional[str] = ..., header_key: _Optional[str] = ..., header_value: _Optional[str] = ..., error_contains: _Optional[str] = ..., created_after: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., created_before: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class ListJobsResponse(_message.Message):
    __slots__ = ("jobs", "next_page_token", "scanned")
    JOBS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    SCANNED_FIELD_NUMBER: _ClassVar[int]
    jobs: _containers.RepeatedCompositeFieldContainer[Job]
    next_page_token: str
    scanned: int
    def __init__(self, jobs: _Optional[_Iterable[_Union[Job, _Mapping]]] = ..., next_page_token: _Optional[str] = ..., scanned: _Optional[int] = ...) -> None: ...

class BulkJobsRequest(_message.Message):
    __slots__ = ("namespace", "queue", "job_ids", "query")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    JOB_IDS_FIELD_NUMBER: _ClassVar[int]
    QUERY_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    queue: str
    job_ids: JobIds
    query: JobQuery
    def __init__(self, namespace: _Optional[str] = ..., queue: _Optional[str] = ..., job_ids: _Optional[_Union[JobIds, _Mapping]] = ..., query: _Optional[_Union[JobQuery, _Mapping]] = ...) -> None: ...

class JobIds(_message.Message):
    __slots__ = ("job_ids",)
    JOB_IDS_FIELD_NUMBER: _ClassVar[int]
    job_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, job_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class JobQuery(_message.Message):
    __slots__ = ("state", "filter", "page_token")
    STATE_FIELD_NUMBER: _ClassVar[int]
    FILTER_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    state: JobState
    filter: JobFilter
    page_token: str
    def __init__(self, state: _Optional[_Union[JobState, str]] = ..., filter: _Optional[_Union[JobFilter, _Mapping]] = ..., page_token: _Optional[str] = ...) -> None: ...

class BulkJobsResponse(_message.Message):
    __slots__ = ("applied", "skipped", "skips", "scanned", "next_page_token")
    APPLIED_FIELD_NUMBER: _ClassVar[int]
    SKIPPED_FIELD_NUMBER: _ClassVar[int]
    SKIPS_FIELD_NUMBER: _ClassVar[int]
    SCANNED_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    applied: int
    skipped: int
    skips: _containers.RepeatedCompositeFieldContainer[BulkJobSkip]
    scanned: int
    next_page_token: str
    def __init__(self, applied: _Optional[int] = ..., skipped: _Optional[int] = ..., skips: _Optional[_Iterable[_Union[BulkJobSkip, _Mapping]]] = ..., scanned: _Optional[int] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class BulkJobSkip(_message.Message):
    __slots__ = ("job_id", "reason")
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    reason: str
    def __init__(self, job_id: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class CancelJobRequest(_message.Message):
    __slots__ = ("namespace", "job_id")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    job_id: str
    def __init__(self, namespace: _Optional[str] = ..., job_id: _Optional[str] = ...) -> None: ...

class CancelJobResponse(_message.Message):
    __slots__ = ("job",)
    JOB_FIELD_NUMBER: _ClassVar[int]
    job: Job
    def __init__(self, job: _Optional[_Union[Job, _Mapping]] = ...) -> None: ...

class WatchJobRequest(_message.Message):
    __slots__ = ("namespace", "job_id", "after_version", "view")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    AFTER_VERSION_FIELD_NUMBER: _ClassVar[int]
    VIEW_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    job_id: str
    after_version: int
    view: JobView
    def __init__(self, namespace: _Optional[str] = ..., job_id: _Optional[str] = ..., after_version: _Optional[int] = ..., view: _Optional[_Union[JobView, str]] = ...) -> None: ...

class WatchJobResponse(_message.Message):
    __slots__ = ("job",)
    JOB_FIELD_NUMBER: _ClassVar[int]
    job: Job
    def __init__(self, job: _Optional[_Union[Job, _Mapping]] = ...) -> None: ...

class RetryJobRequest(_message.Message):
    __slots__ = ("namespace", "job_id")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    job_id: str
    def __init__(self, namespace: _Optional[str] = ..., job_id: _Optional[str] = ...) -> None: ...

class RetryJobResponse(_message.Message):
    __slots__ = ("job",)
    JOB_FIELD_NUMBER: _ClassVar[int]
    job: Job
    def __init__(self, job: _Optional[_Union[Job, _Mapping]] = ...) -> None: ...

class DeleteJobRequest(_message.Message):
    __slots__ = ("namespace", "job_id")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    job_id: str
    def __init__(self, namespace: _Optional[str] = ..., job_id: _Optional[str] = ...) -> None: ...

class DeleteJobResponse(_message.Message):
    __slots__ = ("job",)
    JOB_FIELD_NUMBER: _ClassVar[int]
    job: Job
    def __init__(self, job: _Optional[_Union[Job, _Mapping]] = ...) -> None: ...

class ReleaseJobRequest(_message.Message):
    __slots__ = ("namespace", "job_id", "count_attempt", "reason")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    COUNT_ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    job_id: str
    count_attempt: bool
    reason: str
    def __init__(self, namespace: _Optional[str] = ..., job_id: _Optional[str] = ..., count_attempt: _Optional[bool] = ..., reason: _Optional[str] = ...) -> None: ...

class ReleaseJobResponse(_message.Message):
    __slots__ = ("job",)
    JOB_FIELD_NUMBER: _ClassVar[int]
    job: Job
    def __init__(self, job: _Optional[_Union[Job, _Mapping]] = ...) -> None: ...

class FlowNode(_message.Message):
    __slots__ = ("ref", "job", "after", "on_dependency_failure")
    REF_FIELD_NUMBER: _ClassVar[int]
    JOB_FIELD_NUMBER: _ClassVar[int]
    AFTER_FIELD_NUMBER: _ClassVar[int]
    ON_DEPENDENCY_FAILURE_FIELD_NUMBER: _ClassVar[int]
    ref: str
    job: EnqueueRequest
    after: _containers.RepeatedScalarFieldContainer[str]
    on_dependency_failure: DependencyFailure
    def __init__(self, ref: _Optional[str] = ..., job: _Optional[_Union[EnqueueRequest, _Mapping]] = ..., after: _Optional[_Iterable[str]] = ..., on_dependency_failure: _Optional[_Union[DependencyFailure, str]] = ...) -> None: ...

class EnqueueFlowRequest(_message.Message):
    __slots__ = ("namespace", "nodes", "flow_id")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    NODES_FIELD_NUMBER: _ClassVar[int]
    FLOW_ID_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    nodes: _containers.RepeatedCompositeFieldContainer[FlowNode]
    flow_id: str
    def __init__(self, namespace: _Optional[str] = ..., nodes: _Optional[_Iterable[_Union[FlowNode, _Mapping]]] = ..., flow_id: _Optional[str] = ...) -> None: ...

class EnqueueFlowResponse(_message.Message):
    __slots__ = ("flow_id", "job_ids", "outcome")
    class JobIdsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    FLOW_ID_FIELD_NUMBER: _ClassVar[int]
    JOB_IDS_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    flow_id: str
    job_ids: _containers.ScalarMap[str, str]
    outcome: EnqueueOutcome
    def __init__(self, flow_id: _Optional[str] = ..., job_ids: _Optional[_Mapping[str, str]] = ..., outcome: _Optional[_Union[EnqueueOutcome, str]] = ...) -> None: ...

class FlowNodeStatus(_message.Message):
    __slots__ = ("ref", "job_id", "queue", "name", "state", "after", "on_dependency_failure", "attempts", "create_time", "update_time", "finish_time", "failed_dependency")
    REF_FIELD_NUMBER: _ClassVar[int]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    AFTER_FIELD_NUMBER: _ClassVar[int]
    ON_DEPENDENCY_FAILURE_FIELD_NUMBER: _ClassVar[int]
    ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    UPDATE_TIME_FIELD_NUMBER: _ClassVar[int]
    FINISH_TIME_FIELD_NUMBER: _ClassVar[int]
    FAILED_DEPENDENCY_FIELD_NUMBER: _ClassVar[int]
    ref: str
    job_id: str
    queue: str
    name: str
    state: JobState
    after: _containers.RepeatedScalarFieldContainer[str]
    on_dependency_failure: DependencyFailure
    attempts: int
    create_time: _timestamp_pb2.Timestamp
    update_time: _timestamp_pb2.Timestamp
    finish_time: _timestamp_pb2.Timestamp
    failed_dependency: str
    def __init__(self, ref: _Optional[str] = ..., job_id: _Optional[str] = ..., queue: _Optional[str] = ..., name: _Optional[str] = ..., state: _Optional[_Union[JobState, str]] = ..., after: _Optional[_Iterable[str]] = ..., on_dependency_failure: _Optional[_Union[DependencyFailure, str]] = ..., attempts: _Optional[int] = ..., create_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., update_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., finish_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., failed_dependency: _Optional[str] = ...) -> None: ...

class GetFlowRequest(_message.Message):
    __slots__ = ("namespace", "flow_id", "page_size", "page_token")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    FLOW_ID_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    flow_id: str
    page_size: int
    page_token: str
    def __init__(self, namespace: _Optional[str] = ..., flow_id: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class GetFlowResponse(_message.Message):
    __slots__ = ("flow_id", "state", "node_count", "unfinished", "failed", "create_time", "finish_time", "nodes", "next_page_token", "cancelled")
    FLOW_ID_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    NODE_COUNT_FIELD_NUMBER: _ClassVar[int]
    UNFINISHED_FIELD_NUMBER: _ClassVar[int]
    FAILED_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    FINISH_TIME_FIELD_NUMBER: _ClassVar[int]
    NODES_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    CANCELLED_FIELD_NUMBER: _ClassVar[int]
    flow_id: str
    state: FlowState
    node_count: int
    unfinished: int
    failed: int
    create_time: _timestamp_pb2.Timestamp
    finish_time: _timestamp_pb2.Timestamp
    nodes: _containers.RepeatedCompositeFieldContainer[FlowNodeStatus]
    next_page_token: str
    cancelled: bool
    def __init__(self, flow_id: _Optional[str] = ..., state: _Optional[_Union[FlowState, str]] = ..., node_count: _Optional[int] = ..., unfinished: _Optional[int] = ..., failed: _Optional[int] = ..., create_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., finish_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., nodes: _Optional[_Iterable[_Union[FlowNodeStatus, _Mapping]]] = ..., next_page_token: _Optional[str] = ..., cancelled: _Optional[bool] = ...) -> None: ...

class CancelFlowRequest(_message.Message):
    __slots__ = ("namespace", "flow_id")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    FLOW_ID_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    flow_id: str
    def __init__(self, namespace: _Optional[str] = ..., flow_id: _Optional[str] = ...) -> None: ...

class CancelFlowResponse(_message.Message):
    __slots__ = ("state", "unfinished", "failed")
    STATE_FIELD_NUMBER: _ClassVar[int]
    UNFINISHED_FIELD_NUMBER: _ClassVar[int]
    FAILED_FIELD_NUMBER: _ClassVar[int]
    state: FlowState
    unfinished: int
    failed: int
    def __init__(self, state: _Optional[_Union[FlowState, str]] = ..., unfinished: _Optional[int] = ..., failed: _Optional[int] = ...) -> None: ...

class RetryFlowRequest(_message.Message):
    __slots__ = ("namespace", "flow_id")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    FLOW_ID_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    flow_id: str
    def __init__(self, namespace: _Optional[str] = ..., flow_id: _Optional[str] = ...) -> None: ...

class RetryFlowResponse(_message.Message):
    __slots__ = ("state", "unfinished", "failed")
    STATE_FIELD_NUMBER: _ClassVar[int]
    UNFINISHED_FIELD_NUMBER: _ClassVar[int]
    FAILED_FIELD_NUMBER: _ClassVar[int]
    state: FlowState
    unfinished: int
    failed: int
    def __init__(self, state: _Optional[_Union[FlowState, str]] = ..., unfinished: _Optional[int] = ..., failed: _Optional[int] = ...) -> None: ...
