"""dueq's Python client: produce jobs and schedules, and work them.

    import dueq

    client = dueq.Client()                       # DUEQ_ADDR, DUEQ_TOKEN, ... or arguments
    client.enqueue_json("emails", "welcome", {"to": "ada@example.com"})

    async def handle(job):
        print(job.id, job.json())

    dueq.Worker(client, "emails", handle, concurrency=8).run()

`AsyncClient` is the same API for asyncio; `Worker` and `ScheduleWorker` are
asyncio inside, with a blocking `run()` and an `await run_async()`. Errors are
`DueqError` subclasses named after their gRPC code; a handler raises `NonRetryable`
to make its job dead at once. The generated messages are in `dueq.v1`.
"""

from ._flow import Dependency, EnqueuedFlow, FlowCounts, FlowNode, FlowNodeStatus, FlowStatus
from ._types import Backoff, Enqueued, JobSpec, Json
from .client import AsyncClient, Client, Upserted
from .config import Config
from .errors import *  # noqa: F401,F403 - DueqError and one class per gRPC code
from .errors import __all__ as _errors
from .schedule_worker import Occurrence, ScheduleWorker
from .worker import Job, Worker
from ._common import CancelSignal

__version__ = "0.1.0"

__all__ = [
    "AsyncClient",
    "Backoff",
    "CancelSignal",
    "Client",
    "Config",
    "Dependency",
    "Enqueued",
    "EnqueuedFlow",
    "FlowCounts",
    "FlowNode",
    "FlowNodeStatus",
    "FlowStatus",
    "Job",
    "JobSpec",
    "Json",
    "Occurrence",
    "ScheduleWorker",
    "Upserted",
    "Worker",
    *_errors,
]
