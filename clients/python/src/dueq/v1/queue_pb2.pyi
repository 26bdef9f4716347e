import datetime

from google.protobuf import duration_pb2 as _duration_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from dueq.v1 import admin_pb2 as _admin_pb2
from dueq.v1 import jobs_pb2 as _jobs_pb2
from dueq.v1 import ops_pb2 as _ops_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ScheduleStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SCHEDULE_STATUS_UNSPECIFIED: _ClassVar[ScheduleStatus]
    SCHEDULE_STATUS_ACTIVE: _ClassVar[ScheduleStatus]
    SCHEDULE_STATUS_PAUSED: _ClassVar[ScheduleStatus]
    SCHEDULE_STATUS_COMPLETED: _ClassVar[ScheduleStatus]

class OverlapPolicy(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    OVERLAP_POLICY_UNSPECIFIED: _ClassVar[OverlapPolicy]
    OVERLAP_POLICY_ALLOW_ALL: _ClassVar[OverlapPolicy]
    OVERLAP_POLICY_SKIP: _ClassVar[OverlapPolicy]
    OVERLAP_POLICY_BUFFER_ONE: _ClassVar[OverlapPolicy]

class CatchupPolicy(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    CATCHUP_POLICY_UNSPECIFIED: _ClassVar[CatchupPolicy]
    CATCHUP_POLICY_ONE: _ClassVar[CatchupPolicy]
    CATCHUP_POLICY_SKIP: _ClassVar[CatchupPolicy]
    CATCHUP_POLICY_ALL: _ClassVar[CatchupPolicy]

class RunOutcome(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    RUN_OUTCOME_UNSPECIFIED: _ClassVar[RunOutcome]
    RUN_OUTCOME_LEASED: _ClassVar[RunOutcome]
    RUN_OUTCOME_ACKED: _ClassVar[RunOutcome]
    RUN_OUTCOME_LEASE_EXPIRED: _ClassVar[RunOutcome]
    RUN_OUTCOME_NOT_LEASED: _ClassVar[RunOutcome]
    RUN_OUTCOME_SKIPPED_OVERLAP: _ClassVar[RunOutcome]
    RUN_OUTCOME_ENQUEUED: _ClassVar[RunOutcome]

class ScheduleOrder(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SCHEDULE_ORDER_UNSPECIFIED: _ClassVar[ScheduleOrder]
    SCHEDULE_ORDER_ID: _ClassVar[ScheduleOrder]
    SCHEDULE_ORDER_NEXT_RUN: _ClassVar[ScheduleOrder]

class ScheduleView(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SCHEDULE_VIEW_UNSPECIFIED: _ClassVar[ScheduleView]
    SCHEDULE_VIEW_BASIC: _ClassVar[ScheduleView]
    SCHEDULE_VIEW_FULL: _ClassVar[ScheduleView]

class OccurrenceKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    OCCURRENCE_KIND_UNSPECIFIED: _ClassVar[OccurrenceKind]
    OCCURRENCE_KIND_SCHEDULED: _ClassVar[OccurrenceKind]
    OCCURRENCE_KIND_TRIGGERED: _ClassVar[OccurrenceKind]
    OCCURRENCE_KIND_BACKFILL: _ClassVar[OccurrenceKind]
SCHEDULE_STATUS_UNSPECIFIED: ScheduleStatus
SCHEDULE_STATUS_ACTIVE: ScheduleStatus
SCHEDULE_STATUS_PAUSED: ScheduleStatus
SCHEDULE_STATUS_COMPLETED: ScheduleStatus
OVERLAP_POLICY_UNSPECIFIED: OverlapPolicy
OVERLAP_POLICY_ALLOW_ALL: OverlapPolicy
OVERLAP_POLICY_SKIP: OverlapPolicy
OVERLAP_POLICY_BUFFER_ONE: OverlapPolicy
CATCHUP_POLICY_UNSPECIFIED: CatchupPolicy
CATCHUP_POLICY_ONE: CatchupPolicy
CATCHUP_POLICY_SKIP: CatchupPolicy
CATCHUP_POLICY_ALL: CatchupPolicy
RUN_OUTCOME_UNSPECIFIED: RunOutcome
RUN_OUTCOME_LEASED: RunOutcome
RUN_OUTCOME_ACKED: RunOutcome
RUN_OUTCOME_LEASE_EXPIRED: RunOutcome
RUN_OUTCOME_NOT_LEASED: RunOutcome
RUN_OUTCOME_SKIPPED_OVERLAP: RunOutcome
RUN_OUTCOME_ENQUEUED: RunOutcome
SCHEDULE_ORDER_UNSPECIFIED: ScheduleOrder
SCHEDULE_ORDER_ID: ScheduleOrder
SCHEDULE_ORDER_NEXT_RUN: ScheduleOrder
SCHEDULE_VIEW_UNSPECIFIED: ScheduleView
SCHEDULE_VIEW_BASIC: ScheduleView
SCHEDULE_VIEW_FULL: ScheduleView
OCCURRENCE_KIND_UNSPECIFIED: OccurrenceKind
OCCURRENCE_KIND_SCHEDULED: OccurrenceKind
OCCURRENCE_KIND_TRIGGERED: OccurrenceKind
OCCURRENCE_KIND_BACKFILL: OccurrenceKind

class Schedule(_message.Message):
    __slots__ = ("id", "cron", "every", "timezone", "start_time", "end_time", "run_limit", "job_name", "payload", "headers", "paused", "catchup_policy", "catchup_limit", "catchup_window", "offset", "overlap_policy", "max_attempts", "jitter", "status", "run_count", "last_run_time", "next_run_time", "create_time", "update_time", "revision", "skipped_catchup", "skipped_window", "pause_note", "skipped_overlap", "buffered_time", "triggered_time", "backfill_time", "enqueue")
    class HeadersEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    ID_FIELD_NUMBER: _ClassVar[int]
    CRON_FIELD_NUMBER: _ClassVar[int]
    EVERY_FIELD_NUMBER: _ClassVar[int]
    TIMEZONE_FIELD_NUMBER: _ClassVar[int]
    START_TIME_FIELD_NUMBER: _ClassVar[int]
    END_TIME_FIELD_NUMBER: _ClassVar[int]
    RUN_LIMIT_FIELD_NUMBER: _ClassVar[int]
    JOB_NAME_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_FIELD_NUMBER: _ClassVar[int]
    HEADERS_FIELD_NUMBER: _ClassVar[int]
    PAUSED_FIELD_NUMBER: _ClassVar[int]
    CATCHUP_POLICY_FIELD_NUMBER: _ClassVar[int]
    CATCHUP_LIMIT_FIELD_NUMBER: _ClassVar[int]
    CATCHUP_WINDOW_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    OVERLAP_POLICY_FIELD_NUMBER: _ClassVar[int]
    MAX_ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    JITTER_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    RUN_COUNT_FIELD_NUMBER: _ClassVar[int]
    LAST_RUN_TIME_FIELD_NUMBER: _ClassVar[int]
    NEXT_RUN_TIME_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    UPDATE_TIME_FIELD_NUMBER: _ClassVar[int]
    REVISION_FIELD_NUMBER: _ClassVar[int]
    SKIPPED_CATCHUP_FIELD_NUMBER: _ClassVar[int]
    SKIPPED_WINDOW_FIELD_NUMBER: _ClassVar[int]
    PAUSE_NOTE_FIELD_NUMBER: _ClassVar[int]
    SKIPPED_OVERLAP_FIELD_NUMBER: _ClassVar[int]
    BUFFERED_TIME_FIELD_NUMBER: _ClassVar[int]
    TRIGGERED_TIME_FIELD_NUMBER: _ClassVar[int]
    BACKFILL_TIME_FIELD_NUMBER: _ClassVar[int]
    ENQUEUE_FIELD_NUMBER: _ClassVar[int]
    id: str
    cron: str
    every: _duration_pb2.Duration
    timezone: str
    start_time: _timestamp_pb2.Timestamp
    end_time: _timestamp_pb2.Timestamp
    run_limit: int
    job_name: str
    payload: bytes
    headers: _containers.ScalarMap[str, str]
    paused: bool
    catchup_policy: CatchupPolicy
    catchup_limit: int
    catchup_window: _duration_pb2.Duration
    offset: _duration_pb2.Duration
    overlap_policy: OverlapPolicy
    max_attempts: int
    jitter: _duration_pb2.Duration
    status: ScheduleStatus
    run_count: int
    last_run_time: _timestamp_pb2.Timestamp
    next_run_time: _timestamp_pb2.Timestamp
    create_time: _timestamp_pb2.Timestamp
    update_time: _timestamp_pb2.Timestamp
    revision: int
    skipped_catchup: int
    skipped_window: int
    pause_note: str
    skipped_overlap: int
    buffered_time: _timestamp_pb2.Timestamp
    triggered_time: _timestamp_pb2.Timestamp
    backfill_time: _timestamp_pb2.Timestamp
    enqueue: EnqueueTarget
    def __init__(self, id: _Optional[str] = ..., cron: _Optional[str] = ..., every: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., timezone: _Optional[str] = ..., start_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., end_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., run_limit: _Optional[int] = ..., job_name: _Optional[str] = ..., payload: _Optional[bytes] = ..., headers: _Optional[_Mapping[str, str]] = ..., paused: _Optional[bool] = ..., catchup_policy: _Optional[_Union[CatchupPolicy, str]] = ..., catchup_limit: _Optional[int] = ..., catchup_window: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., offset: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., overlap_policy: _Optional[_Union[OverlapPolicy, str]] = ..., max_attempts: _Optional[int] = ..., jitter: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., status: _Optional[_Union[ScheduleStatus, str]] = ..., run_count: _Optional[int] = ..., last_run_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., next_run_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., create_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., update_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., revision: _Optional[int] = ..., skipped_catchup: _Optional[int] = ..., skipped_window: _Optional[int] = ..., pause_note: _Optional[str] = ..., skipped_overlap: _Optional[int] = ..., buffered_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., triggered_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., backfill_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., enqueue: _Optional[_Union[EnqueueTarget, _Mapping]] = ...) -> None: ...

class EnqueueTarget(_message.Message):
    __slots__ = ("queue", "priority", "max_attempts", "backoff", "headers", "lease")
    class HeadersEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    MAX_ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    BACKOFF_FIELD_NUMBER: _ClassVar[int]
    HEADERS_FIELD_NUMBER: _ClassVar[int]
    LEASE_FIELD_NUMBER: _ClassVar[int]
    queue: str
    priority: int
    max_attempts: int
    backoff: _jobs_pb2.Backoff
    headers: _containers.ScalarMap[str, str]
    lease: _duration_pb2.Duration
    def __init__(self, queue: _Optional[str] = ..., priority: _Optional[int] = ..., max_attempts: _Optional[int] = ..., backoff: _Optional[_Union[_jobs_pb2.Backoff, _Mapping]] = ..., headers: _Optional[_Mapping[str, str]] = ..., lease: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class UpsertScheduleRequest(_message.Message):
    __slots__ = ("namespace", "schedule")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    SCHEDULE_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    schedule: Schedule
    def __init__(self, namespace: _Optional[str] = ..., schedule: _Optional[_Union[Schedule, _Mapping]] = ...) -> None: ...

class UpsertScheduleResponse(_message.Message):
    __slots__ = ("schedule", "created")
    SCHEDULE_FIELD_NUMBER: _ClassVar[int]
    CREATED_FIELD_NUMBER: _ClassVar[int]
    schedule: Schedule
    created: bool
    def __init__(self, schedule: _Optional[_Union[Schedule, _Mapping]] = ..., created: _Optional[bool] = ...) -> None: ...

class GetScheduleRequest(_message.Message):
    __slots__ = ("namespace", "id")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    id: str
    def __init__(self, namespace: _Optional[str] = ..., id: _Optional[str] = ...) -> None: ...

class GetScheduleResponse(_message.Message):
    __slots__ = ("schedule", "recent_runs")
    SCHEDULE_FIELD_NUMBER: _ClassVar[int]
    RECENT_RUNS_FIELD_NUMBER: _ClassVar[int]
    schedule: Schedule
    recent_runs: _containers.RepeatedCompositeFieldContainer[ScheduleRun]
    def __init__(self, schedule: _Optional[_Union[Schedule, _Mapping]] = ..., recent_runs: _Optional[_Iterable[_Union[ScheduleRun, _Mapping]]] = ...) -> None: ...

class ScheduleRun(_message.Message):
    __slots__ = ("occurrence_id", "due_time", "claim_time", "lateness", "worker_id", "attempt", "outcome", "kind")
    OCCURRENCE_ID_FIELD_NUMBER: _ClassVar[int]
    DUE_TIME_FIELD_NUMBER: _ClassVar[int]
    CLAIM_TIME_FIELD_NUMBER: _ClassVar[int]
    LATENESS_FIELD_NUMBER: _ClassVar[int]
    WORKER_ID_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    occurrence_id: str
    due_time: _timestamp_pb2.Timestamp
    claim_time: _timestamp_pb2.Timestamp
    lateness: _duration_pb2.Duration
    worker_id: str
    attempt: int
    outcome: RunOutcome
    kind: OccurrenceKind
    def __init__(self, occurrence_id: _Optional[str] = ..., due_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., claim_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., lateness: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., worker_id: _Optional[str] = ..., attempt: _Optional[int] = ..., outcome: _Optional[_Union[RunOutcome, str]] = ..., kind: _Optional[_Union[OccurrenceKind, str]] = ...) -> None: ...

class ListSchedulesRequest(_message.Message):
    __slots__ = ("namespace", "page_size", "page_token", "status", "view", "order", "overdue_by")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    VIEW_FIELD_NUMBER: _ClassVar[int]
    ORDER_FIELD_NUMBER: _ClassVar[int]
    OVERDUE_BY_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    page_size: int
    page_token: str
    status: ScheduleStatus
    view: ScheduleView
    order: ScheduleOrder
    overdue_by: _duration_pb2.Duration
    def __init__(self, namespace: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ..., status: _Optional[_Union[ScheduleStatus, str]] = ..., view: _Optional[_Union[ScheduleView, str]] = ..., order: _Optional[_Union[ScheduleOrder, str]] = ..., overdue_by: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class ListSchedulesResponse(_message.Message):
    __slots__ = ("schedules", "next_page_token")
    SCHEDULES_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    schedules: _containers.RepeatedCompositeFieldContainer[Schedule]
    next_page_token: str
    def __init__(self, schedules: _Optional[_Iterable[_Union[Schedule, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class DeleteScheduleRequest(_message.Message):
    __slots__ = ("namespace", "id")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    id: str
    def __init__(self, namespace: _Optional[str] = ..., id: _Optional[str] = ...) -> None: ...

class DeleteScheduleResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class PauseScheduleRequest(_message.Message):
    __slots__ = ("namespace", "id", "note")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    NOTE_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    id: str
    note: str
    def __init__(self, namespace: _Optional[str] = ..., id: _Optional[str] = ..., note: _Optional[str] = ...) -> None: ...

class PauseScheduleResponse(_message.Message):
    __slots__ = ("schedule",)
    SCHEDULE_FIELD_NUMBER: _ClassVar[int]
    schedule: Schedule
    def __init__(self, schedule: _Optional[_Union[Schedule, _Mapping]] = ...) -> None: ...

class ResumeScheduleRequest(_message.Message):
    __slots__ = ("namespace", "id")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    id: str
    def __init__(self, namespace: _Optional[str] = ..., id: _Optional[str] = ...) -> None: ...

class ResumeScheduleResponse(_message.Message):
    __slots__ = ("schedule",)
    SCHEDULE_FIELD_NUMBER: _ClassVar[int]
    schedule: Schedule
    def __init__(self, schedule: _Optional[_Union[Schedule, _Mapping]] = ...) -> None: ...

class ClaimDueScheduleRequest(_message.Message):
    __slots__ = ("namespace", "worker_id", "wait", "lease")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    WORKER_ID_FIELD_NUMBER: _ClassVar[int]
    WAIT_FIELD_NUMBER: _ClassVar[int]
    LEASE_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    worker_id: str
    wait: _duration_pb2.Duration
    lease: _duration_pb2.Duration
    def __init__(self, namespace: _Optional[str] = ..., worker_id: _Optional[str] = ..., wait: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., lease: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class ClaimDueScheduleResponse(_message.Message):
    __slots__ = ("occurrence",)
    OCCURRENCE_FIELD_NUMBER: _ClassVar[int]
    occurrence: Occurrence
    def __init__(self, occurrence: _Optional[_Union[Occurrence, _Mapping]] = ...) -> None: ...

class Occurrence(_message.Message):
    __slots__ = ("occurrence_id", "schedule", "due_time", "claim_time", "run_number", "skipped_runs", "lease_token", "lease_deadline", "attempt", "kind", "jittered_time")
    OCCURRENCE_ID_FIELD_NUMBER: _ClassVar[int]
    SCHEDULE_FIELD_NUMBER: _ClassVar[int]
    DUE_TIME_FIELD_NUMBER: _ClassVar[int]
    CLAIM_TIME_FIELD_NUMBER: _ClassVar[int]
    RUN_NUMBER_FIELD_NUMBER: _ClassVar[int]
    SKIPPED_RUNS_FIELD_NUMBER: _ClassVar[int]
    LEASE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    LEASE_DEADLINE_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    JITTERED_TIME_FIELD_NUMBER: _ClassVar[int]
    occurrence_id: str
    schedule: Schedule
    due_time: _timestamp_pb2.Timestamp
    claim_time: _timestamp_pb2.Timestamp
    run_number: int
    skipped_runs: int
    lease_token: str
    lease_deadline: _timestamp_pb2.Timestamp
    attempt: int
    kind: OccurrenceKind
    jittered_time: _timestamp_pb2.Timestamp
    def __init__(self, occurrence_id: _Optional[str] = ..., schedule: _Optional[_Union[Schedule, _Mapping]] = ..., due_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., claim_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., run_number: _Optional[int] = ..., skipped_runs: _Optional[int] = ..., lease_token: _Optional[str] = ..., lease_deadline: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., attempt: _Optional[int] = ..., kind: _Optional[_Union[OccurrenceKind, str]] = ..., jittered_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class BackfillScheduleRequest(_message.Message):
    __slots__ = ("namespace", "id", "start_time", "end_time")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    START_TIME_FIELD_NUMBER: _ClassVar[int]
    END_TIME_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    id: str
    start_time: _timestamp_pb2.Timestamp
    end_time: _timestamp_pb2.Timestamp
    def __init__(self, namespace: _Optional[str] = ..., id: _Optional[str] = ..., start_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., end_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class BackfillScheduleResponse(_message.Message):
    __slots__ = ("slots", "added", "waiting")
    SLOTS_FIELD_NUMBER: _ClassVar[int]
    ADDED_FIELD_NUMBER: _ClassVar[int]
    WAITING_FIELD_NUMBER: _ClassVar[int]
    slots: int
    added: int
    waiting: int
    def __init__(self, slots: _Optional[int] = ..., added: _Optional[int] = ..., waiting: _Optional[int] = ...) -> None: ...

class TriggerScheduleRequest(_message.Message):
    __slots__ = ("namespace", "id", "ignore_overlap")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    IGNORE_OVERLAP_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    id: str
    ignore_overlap: bool
    def __init__(self, namespace: _Optional[str] = ..., id: _Optional[str] = ..., ignore_overlap: _Optional[bool] = ...) -> None: ...

class TriggerScheduleResponse(_message.Message):
    __slots__ = ("occurrence_id", "due_time")
    OCCURRENCE_ID_FIELD_NUMBER: _ClassVar[int]
    DUE_TIME_FIELD_NUMBER: _ClassVar[int]
    occurrence_id: str
    due_time: _timestamp_pb2.Timestamp
    def __init__(self, occurrence_id: _Optional[str] = ..., due_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class SetScheduleNextRunRequest(_message.Message):
    __slots__ = ("namespace", "id", "next_run_time", "expected_revision")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    NEXT_RUN_TIME_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_REVISION_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    id: str
    next_run_time: _timestamp_pb2.Timestamp
    expected_revision: int
    def __init__(self, namespace: _Optional[str] = ..., id: _Optional[str] = ..., next_run_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., expected_revision: _Optional[int] = ...) -> None: ...

class SetScheduleNextRunResponse(_message.Message):
    __slots__ = ("schedule",)
    SCHEDULE_FIELD_NUMBER: _ClassVar[int]
    schedule: Schedule
    def __init__(self, schedule: _Optional[_Union[Schedule, _Mapping]] = ...) -> None: ...

class PreviewScheduleRequest(_message.Message):
    __slots__ = ("namespace", "id", "schedule", "count", "from_time")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    SCHEDULE_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    FROM_TIME_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    id: str
    schedule: Schedule
    count: int
    from_time: _timestamp_pb2.Timestamp
    def __init__(self, namespace: _Optional[str] = ..., id: _Optional[str] = ..., schedule: _Optional[_Union[Schedule, _Mapping]] = ..., count: _Optional[int] = ..., from_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class PreviewScheduleResponse(_message.Message):
    __slots__ = ("fire_times", "timezone")
    FIRE_TIMES_FIELD_NUMBER: _ClassVar[int]
    TIMEZONE_FIELD_NUMBER: _ClassVar[int]
    fire_times: _containers.RepeatedCompositeFieldContainer[FireTime]
    timezone: str
    def __init__(self, fire_times: _Optional[_Iterable[_Union[FireTime, _Mapping]]] = ..., timezone: _Optional[str] = ...) -> None: ...

class FireTime(_message.Message):
    __slots__ = ("time", "local_time", "utc_offset_seconds", "dst_adjusted", "note")
    TIME_FIELD_NUMBER: _ClassVar[int]
    LOCAL_TIME_FIELD_NUMBER: _ClassVar[int]
    UTC_OFFSET_SECONDS_FIELD_NUMBER: _ClassVar[int]
    DST_ADJUSTED_FIELD_NUMBER: _ClassVar[int]
    NOTE_FIELD_NUMBER: _ClassVar[int]
    time: _timestamp_pb2.Timestamp
    local_time: str
    utc_offset_seconds: int
    dst_adjusted: bool
    note: str
    def __init__(self, time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., local_time: _Optional[str] = ..., utc_offset_seconds: _Optional[int] = ..., dst_adjusted: _Optional[bool] = ..., note: _Optional[str] = ...) -> None: ...

class AckOccurrenceRequest(_message.Message):
    __slots__ = ("namespace", "occurrence_id", "lease_token")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    OCCURRENCE_ID_FIELD_NUMBER: _ClassVar[int]
    LEASE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    occurrence_id: str
    lease_token: str
    def __init__(self, namespace: _Optional[str] = ..., occurrence_id: _Optional[str] = ..., lease_token: _Optional[str] = ...) -> None: ...

class AckOccurrenceResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...
