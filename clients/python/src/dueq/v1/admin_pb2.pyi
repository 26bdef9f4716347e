import datetime

from google.protobuf import duration_pb2 as _duration_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class MigrateSource(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    MIGRATE_SOURCE_UNSPECIFIED: _ClassVar[MigrateSource]
    MIGRATE_SOURCE_BORINGNODE_QUEUE: _ClassVar[MigrateSource]
    MIGRATE_SOURCE_DUEQ: _ClassVar[MigrateSource]

class MigratePhase(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    MIGRATE_PHASE_UNSPECIFIED: _ClassVar[MigratePhase]
    MIGRATE_PHASE_STARTED: _ClassVar[MigratePhase]
    MIGRATE_PHASE_RECORDS: _ClassVar[MigratePhase]
    MIGRATE_PHASE_INDEX: _ClassVar[MigratePhase]
    MIGRATE_PHASE_IMPORT: _ClassVar[MigratePhase]
    MIGRATE_PHASE_DONE: _ClassVar[MigratePhase]
    MIGRATE_PHASE_JOBS: _ClassVar[MigratePhase]
MIGRATE_SOURCE_UNSPECIFIED: MigrateSource
MIGRATE_SOURCE_BORINGNODE_QUEUE: MigrateSource
MIGRATE_SOURCE_DUEQ: MigrateSource
MIGRATE_PHASE_UNSPECIFIED: MigratePhase
MIGRATE_PHASE_STARTED: MigratePhase
MIGRATE_PHASE_RECORDS: MigratePhase
MIGRATE_PHASE_INDEX: MigratePhase
MIGRATE_PHASE_IMPORT: MigratePhase
MIGRATE_PHASE_DONE: MigratePhase
MIGRATE_PHASE_JOBS: MigratePhase

class MigrateRequest(_message.Message):
    __slots__ = ("namespace", "all_namespaces", "dry_run", "batch_size", "source", "source_prefix", "delete_source")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    ALL_NAMESPACES_FIELD_NUMBER: _ClassVar[int]
    DRY_RUN_FIELD_NUMBER: _ClassVar[int]
    BATCH_SIZE_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    SOURCE_PREFIX_FIELD_NUMBER: _ClassVar[int]
    DELETE_SOURCE_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    all_namespaces: bool
    dry_run: bool
    batch_size: int
    source: MigrateSource
    source_prefix: str
    delete_source: bool
    def __init__(self, namespace: _Optional[str] = ..., all_namespaces: _Optional[bool] = ..., dry_run: _Optional[bool] = ..., batch_size: _Optional[int] = ..., source: _Optional[_Union[MigrateSource, str]] = ..., source_prefix: _Optional[str] = ..., delete_source: _Optional[bool] = ...) -> None: ...

class RecordProblem(_message.Message):
    __slots__ = ("id", "reason")
    ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    id: str
    reason: str
    def __init__(self, id: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class MigrateProgress(_message.Message):
    __slots__ = ("namespace", "phase", "scanned", "indexed", "repaired", "removed", "estimated_total", "imported", "already_present", "problems", "from_schema", "to_schema", "dry_run", "batches", "longest_batch", "jobs_converted", "from_jobs_layout", "to_jobs_layout", "schedules_converted")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    PHASE_FIELD_NUMBER: _ClassVar[int]
    SCANNED_FIELD_NUMBER: _ClassVar[int]
    INDEXED_FIELD_NUMBER: _ClassVar[int]
    REPAIRED_FIELD_NUMBER: _ClassVar[int]
    REMOVED_FIELD_NUMBER: _ClassVar[int]
    ESTIMATED_TOTAL_FIELD_NUMBER: _ClassVar[int]
    IMPORTED_FIELD_NUMBER: _ClassVar[int]
    ALREADY_PRESENT_FIELD_NUMBER: _ClassVar[int]
    PROBLEMS_FIELD_NUMBER: _ClassVar[int]
    FROM_SCHEMA_FIELD_NUMBER: _ClassVar[int]
    TO_SCHEMA_FIELD_NUMBER: _ClassVar[int]
    DRY_RUN_FIELD_NUMBER: _ClassVar[int]
    BATCHES_FIELD_NUMBER: _ClassVar[int]
    LONGEST_BATCH_FIELD_NUMBER: _ClassVar[int]
    JOBS_CONVERTED_FIELD_NUMBER: _ClassVar[int]
    FROM_JOBS_LAYOUT_FIELD_NUMBER: _ClassVar[int]
    TO_JOBS_LAYOUT_FIELD_NUMBER: _ClassVar[int]
    SCHEDULES_CONVERTED_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    phase: MigratePhase
    scanned: int
    indexed: int
    repaired: int
    removed: int
    estimated_total: int
    imported: int
    already_present: int
    problems: _containers.RepeatedCompositeFieldContainer[RecordProblem]
    from_schema: int
    to_schema: int
    dry_run: bool
    batches: int
    longest_batch: _duration_pb2.Duration
    jobs_converted: int
    from_jobs_layout: int
    to_jobs_layout: int
    schedules_converted: int
    def __init__(self, namespace: _Optional[str] = ..., phase: _Optional[_Union[MigratePhase, str]] = ..., scanned: _Optional[int] = ..., indexed: _Optional[int] = ..., repaired: _Optional[int] = ..., removed: _Optional[int] = ..., estimated_total: _Optional[int] = ..., imported: _Optional[int] = ..., already_present: _Optional[int] = ..., problems: _Optional[_Iterable[_Union[RecordProblem, _Mapping]]] = ..., from_schema: _Optional[int] = ..., to_schema: _Optional[int] = ..., dry_run: _Optional[bool] = ..., batches: _Optional[int] = ..., longest_batch: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., jobs_converted: _Optional[int] = ..., from_jobs_layout: _Optional[int] = ..., to_jobs_layout: _Optional[int] = ..., schedules_converted: _Optional[int] = ...) -> None: ...

class GetNamespaceStatusRequest(_message.Message):
    __slots__ = ("namespace",)
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    def __init__(self, namespace: _Optional[str] = ...) -> None: ...

class NamespaceStatus(_message.Message):
    __slots__ = ("namespace", "schema_version", "current_schema_version", "needs_migrate", "expected_index_size", "index_size", "index_damaged", "migration_running", "message", "jobs_layout", "current_jobs_layout", "jobs_need_migrate")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    SCHEMA_VERSION_FIELD_NUMBER: _ClassVar[int]
    CURRENT_SCHEMA_VERSION_FIELD_NUMBER: _ClassVar[int]
    NEEDS_MIGRATE_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_INDEX_SIZE_FIELD_NUMBER: _ClassVar[int]
    INDEX_SIZE_FIELD_NUMBER: _ClassVar[int]
    INDEX_DAMAGED_FIELD_NUMBER: _ClassVar[int]
    MIGRATION_RUNNING_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    JOBS_LAYOUT_FIELD_NUMBER: _ClassVar[int]
    CURRENT_JOBS_LAYOUT_FIELD_NUMBER: _ClassVar[int]
    JOBS_NEED_MIGRATE_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    schema_version: int
    current_schema_version: int
    needs_migrate: bool
    expected_index_size: int
    index_size: int
    index_damaged: bool
    migration_running: bool
    message: str
    jobs_layout: int
    current_jobs_layout: int
    jobs_need_migrate: bool
    def __init__(self, namespace: _Optional[str] = ..., schema_version: _Optional[int] = ..., current_schema_version: _Optional[int] = ..., needs_migrate: _Optional[bool] = ..., expected_index_size: _Optional[int] = ..., index_size: _Optional[int] = ..., index_damaged: _Optional[bool] = ..., migration_running: _Optional[bool] = ..., message: _Optional[str] = ..., jobs_layout: _Optional[int] = ..., current_jobs_layout: _Optional[int] = ..., jobs_need_migrate: _Optional[bool] = ...) -> None: ...
