"""The schedule worker: claims due occurrences of the namespace's schedules
(ClaimDueSchedule, long-polling, leased) and acks each (AckOccurrence) once its
handler returns."""

import asyncio
import json
import logging
import time

import grpc

from ._common import (
    TRANSIENT,
    Backoff,
    Runner,
    Signals,
    async_client,
    check_concurrency,
    check_seconds,
    default_worker_id,
)
from ._types import from_timestamp, to_duration
from .errors import Aborted, NotFound, from_rpc_error
from .v1 import queue_pb2

__all__ = ["Occurrence", "ScheduleWorker"]

log = logging.getLogger("dueq")


class Occurrence:
    """One firing of a schedule, handed to exactly one worker at a time.

    `occurrence_id` is the idempotency key: the same occurrence always has the same
    id, and an occurrence whose handler raised (or whose worker died) comes again
    with it after its lease. Also `schedule_id`, `due_time` (aware UTC datetime),
    `payload` (bytes), `headers`, `name` (the schedule's job_name), `attempt`,
    `run_number`, `schedule` (the `dueq.v1.queue_pb2.Schedule`) and `json()`."""

    def __init__(self, msg):
        self._msg = msg
        self.occurrence_id = msg.occurrence_id
        self.schedule_id = msg.schedule.id
        self.due_time = from_timestamp(msg.due_time)
        self.payload = msg.schedule.payload
        self.headers = dict(msg.schedule.headers)
        self.name = msg.schedule.job_name
        self.attempt = msg.attempt
        self.run_number = msg.run_number
        self.lease_token = msg.lease_token

    @property
    def schedule(self):
        return self._msg.schedule

    def json(self):
        """The payload parsed as JSON."""
        return json.loads(self.payload)

    def __repr__(self):
        return f"Occurrence(occurrence_id={self.occurrence_id!r}, schedule_id={self.schedule_id!r})"


class ScheduleWorker:
    """Runs `handler(occurrence)` for each due occurrence of the client's namespace.

    `ScheduleWorker(client, handler, *, concurrency=1, lease=60.0, wait=20.0,
    worker_id=None, grace=30.0)`: `concurrency` claim loops, each long-polling
    ClaimDueSchedule up to `wait` seconds with a `lease` (seconds) the handler must
    finish within. The handler (async or plain) returning acks the occurrence
    (AckOccurrence); raising leaves it to its lease, so it comes again (same
    occurrence id) to this or another worker.

    `run()` blocks until SIGINT/SIGTERM or `stop()`; `await run_async()` inside a
    loop. On stop no new claims start, running handlers get `grace` to finish and are
    acked.
    """

    def __init__(self, client, handler, *, concurrency=1, lease=60.0, wait=20.0, worker_id=None, grace=30.0):
        check_concurrency(concurrency, most=10000)
        self._client = client
        self.concurrency = concurrency
        self.lease = check_seconds(lease, "lease", optional=False)
        self.wait = check_seconds(wait, "wait", optional=False)
        self.grace = check_seconds(grace, "grace")
        self.worker_id = worker_id or default_worker_id("python-schedule-worker")
        self._runner = Runner(handler, concurrency)
        async_client(client)
        self._loop = None
        self._stop_requested = False

    def run(self):
        """Works until SIGINT/SIGTERM or `stop()`, then drains; returns when done."""
        asyncio.run(self.run_async())

    def stop(self):
        """Stops claiming; running handlers get `grace` to finish. Any thread."""
        loop = self._loop
        if loop is None:
            self._stop_requested = True
            return
        try:
            loop.call_soon_threadsafe(self._on_stop)
        except RuntimeError:
            pass

    async def run_async(self, *, handle_signals=True):
        """`run()` for a running event loop."""
        self._loop = loop = asyncio.get_running_loop()
        client, owned = async_client(self._client)
        self._stub, self._metadata, self._namespace = client.stub, client.call_metadata, client.namespace
        self._stopped = asyncio.Event()
        self._polls = set()
        self._handling = set()
        signals = Signals(loop, self.stop) if handle_signals else None
        if self._stop_requested:
            self._on_stop()
        loops = [loop.create_task(self._claim_loop()) for _ in range(self.concurrency)]
        try:
            done, _ = await asyncio.wait([*loops, loop.create_task(self._drain())],
                                         return_when=asyncio.FIRST_EXCEPTION)
            for task in done:
                if task.exception() is not None:
                    raise task.exception()
        finally:
            for task in loops:
                task.cancel()
            if signals:
                signals.remove()
            self._runner.close()
            if owned:
                await client.close()
            self._loop = None

    def _on_stop(self):
        if not self._stopped.is_set():
            self._stopped.set()
            for call in list(self._polls):
                call.cancel()

    async def _drain(self):
        await self._stopped.wait()
        deadline = time.monotonic() + self.grace
        while self._handling and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        for task in list(self._handling):
            task.cancel()
        while self._handling:
            await asyncio.sleep(0.02)

    async def _claim_loop(self):
        req = queue_pb2.ClaimDueScheduleRequest(
            namespace=self._namespace,
            worker_id=self.worker_id,
            wait=to_duration(self.wait, "wait"),
            lease=to_duration(self.lease, "lease"),
        )
        backoff = Backoff()
        while not self._stopped.is_set():
            call = self._stub.ClaimDueSchedule(req, timeout=self.wait + 10.0, metadata=self._metadata)
            self._polls.add(call)
            try:
                reply = await call
                backoff.reset()
            except asyncio.CancelledError:
                if self._stopped.is_set():
                    return
                raise
            except grpc.RpcError as err:
                if self._stopped.is_set():
                    return
                if err.code() not in TRANSIENT:
                    raise from_rpc_error(err) from err
                log.warning("dueq schedule worker: claim failed (%s); retrying", err.code().name)
                await self._pause(backoff.next())
                continue
            finally:
                self._polls.discard(call)
            if reply.HasField("occurrence"):
                task = self._loop.create_task(self._handle(Occurrence(reply.occurrence)))
                self._handling.add(task)
                try:
                    await asyncio.shield(task)
                finally:
                    self._handling.discard(task)

    async def _pause(self, seconds):
        try:
            await asyncio.wait_for(self._stopped.wait(), seconds)
        except asyncio.TimeoutError:
            pass

    async def _handle(self, occ):
        try:
            await self._runner.call(occ)
        except asyncio.CancelledError:
            return  # the grace period ended: the lease brings it back
        except Exception as exc:
            log.warning("dueq schedule worker: occurrence %s failed (it comes again after its lease): %s",
                        occ.occurrence_id, exc)
            return
        await self._ack(occ)

    async def _ack(self, occ):
        req = queue_pb2.AckOccurrenceRequest(
            namespace=self._namespace, occurrence_id=occ.occurrence_id, lease_token=occ.lease_token
        )
        backoff = Backoff(first=0.05, cap=1.0)
        give_up = time.monotonic() + self.lease
        while True:
            try:
                await self._stub.AckOccurrence(req, timeout=5.0, metadata=self._metadata)
                return
            except grpc.RpcError as err:
                error = from_rpc_error(err)
                if isinstance(error, (Aborted, NotFound)) or err.code() not in TRANSIENT:
                    log.warning("dueq schedule worker: ack of occurrence %s refused: %s", occ.occurrence_id, error)
                    return
                if time.monotonic() > give_up:
                    log.error("dueq schedule worker: ack of occurrence %s failed: %s", occ.occurrence_id, error)
                    return
            await asyncio.sleep(backoff.next())
