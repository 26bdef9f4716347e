"""The job worker: one Work stream, a handler per job.

The service pushes up to `concurrency` jobs on the stream; the worker runs the
handler for each, acks it on the same stream with what the handler returned (or fails
it when the handler raises), extends each lease before a third of it is left while
the handler runs, and reconnects with backoff when the stream breaks.
"""

import asyncio
import json
import logging
import time

import grpc
from google.protobuf import duration_pb2

from ._common import (
    TRANSIENT,
    Backoff,
    CancelSignal,
    Runner,
    Signals,
    async_client,
    check_concurrency,
    check_seconds,
    default_worker_id,
)
from ._claims import ClaimsTransport
from ._flow import Dependency, state_name
from ._types import Json, check_name, from_timestamp
from .errors import Aborted, InvalidArgument, NonRetryable, NotFound, from_code, from_rpc_error
from .v1 import jobs_pb2

__all__ = ["Job", "Worker"]

log = logging.getLogger("dueq")

_OK, _NOT_FOUND, _ABORTED = 0, 5, 10
_FAILED_PRECONDITION, _UNAVAILABLE = 9, 14
#: The largest result the service keeps (JobLease.result); larger fails the job.
MAX_RESULT = 64 * 1024
#: The longest error text the service records.
MAX_ERROR = 4096


class Job:
    """A job handed to a handler.

    `id`, `queue`, `name`, `payload` (bytes), `headers` (dict), `attempt` (1-based),
    `max_attempts`, `priority`, `checkpoint` (bytes an earlier attempt reported),
    `lease_token`; `json()` parses the payload as JSON; `cancelled` is a
    `CancelSignal` set when a cancel is requested (or the lease was lost: another
    worker may have the job now); `progress(fraction=, message=, checkpoint=)`
    reports how far the job got (sent at once, the latest values winning).

    A node of a flow (`enqueue_flow`) also has `flow_id`, `flow_ref`,
    `dependencies` (its direct dependencies: `Dependency(ref, job_id, state)`) and
    `dependency_results` (the completed ones' results, bytes by ref;
    `dependency_json(ref)` parses one). A completed dependency whose ref is missing
    from `dependency_results` did not fit the claim's reply budget: read it with
    `client.get_job(job_id).result`."""

    __slots__ = ("_msg", "_worker", "id", "lease_token", "cancelled", "_expiry", "_lease", "_task",
                 "_extending", "_sent_at", "_progress", "_lost")

    def __init__(self, msg, worker, lease, now):
        self._msg = msg
        self._worker = worker
        self.id = msg.job_id
        self.lease_token = msg.lease_token
        self.cancelled = CancelSignal()
        deadline = msg.lease_deadline
        remaining = deadline.seconds + deadline.nanos * 1e-9 - time.time()
        self._expiry = now + remaining
        self._lease = lease or max(remaining, 0.5)
        self._task = None
        self._extending = False
        self._sent_at = 0.0
        self._progress = None
        self._lost = False

    queue = property(lambda self: self._msg.queue, doc="The queue it came from.")
    name = property(lambda self: self._msg.name, doc="What the job is (its name).")
    payload = property(lambda self: self._msg.payload, doc="The payload, bytes.")
    attempt = property(lambda self: self._msg.attempt, doc="1-based attempt number.")
    max_attempts = property(lambda self: self._msg.max_attempts, doc="Claims before it is dead.")
    priority = property(lambda self: self._msg.priority, doc="Its priority.")
    checkpoint = property(lambda self: self._msg.checkpoint, doc="An earlier attempt's checkpoint.")
    flow_id = property(lambda self: self._msg.flow_id, doc="Its flow's id; empty when not a flow node.")
    flow_ref = property(lambda self: self._msg.flow_ref, doc="Its ref in its flow; empty when not a flow node.")

    @property
    def dependencies(self):
        """Its direct dependencies, in `after` order: `Dependency(ref, job_id, state)`."""
        return [Dependency(d.ref, d.job_id, state_name(d.state)) for d in self._msg.dependencies]

    @property
    def dependency_results(self):
        """The completed dependencies' results, bytes by ref (those that fit the reply)."""
        return dict(self._msg.dependency_results)

    def dependency_json(self, ref):
        """The result of dependency `ref` parsed as JSON. `KeyError` when it is not
        here (not completed, or it did not fit: read it with `get_job`)."""
        if ref not in self._msg.dependency_results:
            raise KeyError(ref)
        return json.loads(self._msg.dependency_results[ref])

    @property
    def headers(self):
        """The job's headers, a dict of str."""
        return dict(self._msg.headers)

    @property
    def create_time(self):
        """When it was enqueued (an aware UTC datetime)."""
        return from_timestamp(self._msg.create_time)

    def json(self):
        """The payload parsed as JSON (raises `ValueError` if it is not JSON)."""
        return json.loads(self._msg.payload)

    def progress(self, fraction=None, message=None, checkpoint=None):
        """Reports progress: `fraction` 0.0-1.0, `message` (text for people),
        `checkpoint` (bytes handed to the next attempt if this one fails). Sent at
        once as a lease extension on the stream; calls while one is in flight are
        merged, the latest values winning. Safe from handler threads."""
        fields = {}
        if fraction is not None:
            fields["fraction"] = float(fraction)
        if message is not None:
            fields["message"] = str(message)
        if checkpoint is not None:
            if not isinstance(checkpoint, (bytes, bytearray)):
                raise InvalidArgument("progress.checkpoint: must be bytes")
            fields["checkpoint"] = bytes(checkpoint)
        if fields:
            self._worker._loop.call_soon_threadsafe(self._worker._on_progress, self, fields)

    def __repr__(self):
        return f"Job(id={self.id!r}, queue={self.queue!r}, name={self.name!r}, attempt={self.attempt})"


def _duration(seconds):
    whole = int(seconds)
    return duration_pb2.Duration(seconds=whole, nanos=int((seconds - whole) * 1e9))


def _error_text(exc):
    text = str(exc) or type(exc).__name__
    return text.encode()[:MAX_ERROR].decode(errors="ignore")


def _result_bytes(result):
    """The ack's result from what the handler returned: None, bytes, or `Json(value)`."""
    if result is None:
        return b""
    if isinstance(result, Json):
        data = result.encode()
    elif isinstance(result, (bytes, bytearray, memoryview)):
        data = bytes(result)
    else:
        raise InvalidArgument(
            f"result: a handler returns bytes, dueq.Json(value) or None, not {type(result).__name__}"
        )
    if len(data) > MAX_RESULT:
        raise InvalidArgument(f"result: {len(data)} bytes is over the limit of {MAX_RESULT} bytes")
    return data


class Worker(ClaimsTransport):
    """Works jobs of `queues` with `handler`, over one Work stream.

    `Worker(client, queues, handler, *, concurrency=1, lease=None, worker_id=None,
    grace=30.0)`. `client` is a `dueq.Client` or `dueq.AsyncClient` (its namespace
    and connection are used); `queues` a name or a list of 1-16 names; `handler` an
    `async def handler(job)` (run on the event loop) or a plain function (run in a
    thread pool of `concurrency` threads). It returns the job's result (bytes,
    `dueq.Json(value)` or None) to ack it; raising fails the job (retried after its
    backoff); raising `dueq.NonRetryable` makes it dead at once.

    `concurrency` is how many jobs run at once (the stream's capacity); `lease`
    (seconds) overrides each job's own lease for the claims; `grace` is how long
    in-flight handlers get to finish after `stop()`. `transport` is "claims" (the
    default: batched ClaimJob calls carrying the acks of finished jobs; fails,
    extends and progress by unary calls, a cancel seen at the next lease extension)
    or "stream" (the Work stream: jobs pushed, acks, fails, extends and cancels on
    one stream, a cancel seen at once). In Python the stream pays grpc's asyncio
    layer three messages per job: "claims" does several times the jobs per second
    at a fraction of the Redis cost (docs/performance.md).

    `run()` blocks until SIGINT/SIGTERM or `stop()`; `await run_async()` is the same
    inside an event loop. Either raises the typed `DueqError` that ended the stream
    when it is not worth a reconnect (e.g. `PermissionDenied`, `Unauthenticated`).
    """

    def __init__(
        self, client, queues, handler, *, concurrency=1, lease=None, worker_id=None, grace=30.0, transport="claims"
    ):
        if isinstance(queues, str):
            queues = [queues]
        queues = list(queues)
        if not 1 <= len(queues) <= 16:
            raise InvalidArgument(f"queues: give 1-16 queue names, got {len(queues)}")
        for i, q in enumerate(queues):
            check_name(q, f"queues[{i}]")
        check_concurrency(concurrency)
        if transport not in ("stream", "claims"):
            raise InvalidArgument(f"transport: {transport!r} is not 'stream' or 'claims'")
        self.transport = transport
        self._client = client
        self.queues = queues
        self.concurrency = concurrency
        self.lease = check_seconds(lease, "lease")
        self.grace = check_seconds(grace, "grace")
        self.worker_id = worker_id or default_worker_id("python-worker")
        self._runner = Runner(handler, concurrency)
        async_client(client)  # checks its type now
        self._loop = None
        self._stop_requested = False
        self._stopping = False
        self._first_job_at = None
        self._last_answer_at = None

    def run(self):
        """Works until SIGINT/SIGTERM or `stop()`, then drains; returns when done."""
        asyncio.run(self.run_async())

    def stop(self):
        """Stops taking jobs: in-flight handlers get `grace` to finish and are acked,
        then the stream closes and `run()` returns. Safe from any thread or a signal
        handler; a second call skips what is left of the grace period."""
        loop = self._loop
        if loop is None:
            self._stop_requested = True
            return
        try:
            loop.call_soon_threadsafe(self._on_stop)
        except RuntimeError:  # the loop has closed: nothing left to stop
            pass

    async def run_async(self, *, handle_signals=True):
        """`run()` for a running event loop; SIGINT/SIGTERM call `stop()` unless
        `handle_signals` is false."""
        self._loop = loop = asyncio.get_running_loop()
        client, owned = async_client(self._client)
        self._stub, self._metadata = client.stub, client.call_metadata
        self._namespace = client.namespace
        self._running = {}  # job id -> Job whose handler runs
        self._answers = {}  # job id -> (Job, WorkRequest) of an ack/fail not answered yet
        self._outbox = []
        self._writer_wake = None
        self._call = None
        self._stop_fut = loop.create_future()
        self._drained = None
        self._unary = set()
        self._min_lease = self.lease or 30.0
        signals = Signals(loop, self.stop) if handle_signals else None
        self._scanner = loop.create_task(self._scan())
        if self._stop_requested:
            self._on_stop()
        try:
            await (self._serve() if self.transport == "stream" else self._serve_claims())
        finally:
            self._scanner.cancel()
            if signals:
                signals.remove()
            for task in list(self._unary):
                task.cancel()
            self._runner.close()
            if owned:
                await client.close()
            self._loop = None

    # The stream.

    async def _serve(self):
        backoff = Backoff()
        while True:
            if not self._stopping:
                try:
                    if await self._session():
                        backoff.reset()
                except grpc.RpcError as err:
                    if err.code() not in TRANSIENT:
                        self._abandon_all()
                        raise from_rpc_error(err) from err
                    log.warning("dueq worker: the Work stream broke (%s: %s); reconnecting",
                                err.code().name, err.details())
            if self._stopping:
                # Whatever the stream did not answer goes by unary calls now.
                self._answers_by_unary()
                await self._drained
                return
            try:  # wait before reconnecting, unless stopped meanwhile
                await asyncio.wait_for(asyncio.shield(self._stop_fut), backoff.next())
            except asyncio.TimeoutError:
                pass

    async def _session(self):
        """One Work stream, until it ends. Returns whether any message came."""
        start = jobs_pb2.WorkRequest(
            start=jobs_pb2.WorkStart(
                namespace=self._namespace,
                queues=self.queues,
                worker_id=self.worker_id,
                capacity=self.concurrency,
            )
        )
        if self.lease:
            start.start.lease.CopyFrom(_duration(self.lease))
        call = self._stub.Work(metadata=self._metadata)
        self._outbox = [start] + [req for _, req in self._answers.values()]
        for job in self._running.values():
            job._extending = False
        self._call = call
        writer = self._loop.create_task(self._write(call))
        got = False
        try:
            read, eof, on_message = call.read, grpc.aio.EOF, self._on_message
            while True:
                try:
                    msg = await read()
                except asyncio.CancelledError:
                    if self._stopping and call.cancelled():
                        return got  # closed by the drain, which waited long enough
                    raise
                if msg is eof:
                    return got
                got = True
                on_message(msg)
        finally:
            self._call = None
            writer.cancel()
            call.cancel()

    async def _write(self, call):
        loop = self._loop
        try:
            while True:
                if not self._outbox:
                    self._writer_wake = loop.create_future()
                    await self._writer_wake
                    continue
                batch, self._outbox = self._outbox, []
                for req in batch:
                    await call.write(req)
        except (grpc.RpcError, asyncio.InvalidStateError):
            pass  # the stream broke: the reader sees why

    def _send(self, req):
        self._outbox.append(req)
        wake = self._writer_wake
        if wake is not None and not wake.done():
            wake.set_result(None)

    def _on_message(self, msg):
        kind = msg.WhichOneof("response")
        if kind == "job":
            self._on_job(msg.job)
        elif kind == "ack" or kind == "fail":
            self._on_answer(getattr(msg, kind), kind)
        elif kind == "extend":
            self._on_extend(msg.extend)
        elif kind == "cancel":
            job = self._running.get(msg.cancel.job_id)
            if job is not None and job.lease_token == msg.cancel.lease_token:
                job.cancelled._fire()

    # Jobs.

    def _on_job(self, claimed):
        now = time.monotonic()
        if self._first_job_at is None:
            self._first_job_at = now
        if self._stopping:
            return  # not started: closing the stream gives it back
        job = Job(claimed, self, self.lease, now)
        if claimed.cancel_requested:
            job.cancelled._fire()
        self._running[job.id] = job
        if job._lease < self._min_lease:
            self._min_lease = job._lease
            self._scanner.cancel()
            self._scanner = self._loop.create_task(self._scan())
        job._task = self._loop.create_task(self._handle(job))

    async def _handle(self, job):
        try:
            result = await self._runner.call(job)
            req = jobs_pb2.WorkRequest(
                ack=jobs_pb2.JobLease(job_id=job.id, lease_token=job.lease_token, result=_result_bytes(result))
            )
        except asyncio.CancelledError:
            if self._running.get(job.id) is job:
                del self._running[job.id]
            if self._stopping:
                return  # the grace period ended: closing the stream gives it back
            raise
        except Exception as exc:  # the handler failed: fail the job
            retry = not isinstance(exc, NonRetryable)
            log.info("dueq worker: job %s failed (attempt %s): %s", job.id, job.attempt, exc,
                     exc_info=retry and log.isEnabledFor(logging.DEBUG))
            req = jobs_pb2.WorkRequest(
                fail=jobs_pb2.FailJobRequest(
                    job_id=job.id, lease_token=job.lease_token, error=_error_text(exc), non_retryable=not retry
                )
            )
        self._finish(job, req)

    def _finish(self, job, req):
        if self._running.get(job.id) is job:
            del self._running[job.id]
        if self._stopping:
            self._answer_by_unary(job, req)
            return
        if self.transport == "claims":
            if req.WhichOneof("request") == "ack":
                self._queue_ack(job, req.ack)
            else:
                self._slot.set()
                self._answer_by_unary(job, req)
            return
        self._answers[job.id] = (job, req)
        if self._call is not None:
            self._send(req)

    def _on_answer(self, result, kind):
        self._last_answer_at = time.monotonic()
        entry = self._answers.pop(result.job_id, None)
        code = result.code
        if code == _OK or entry is None:
            return
        job, req = entry
        if code in (_UNAVAILABLE, _FAILED_PRECONDITION):
            # Not applied: the job is still held; send it again shortly.
            self._answers[job.id] = entry
            self._loop.call_later(0.2, self._resend, job.id, entry)
        elif code in (_ABORTED, _NOT_FOUND):
            log.warning("dueq worker: the %s of job %s came too late, the lease was lost: %s",
                        kind, result.job_id, result.message)
        else:
            log.error("dueq worker: the %s of job %s was refused: %s", kind, result.job_id,
                      from_code(code, result.message))

    def _resend(self, job_id, entry):
        if self._answers.get(job_id) is not entry:
            return
        if self._stopping:
            del self._answers[job_id]
            self._answer_by_unary(*entry)
        elif self._call is not None:
            self._send(entry[1])

    # Lease extension and progress.

    async def _scan(self):
        """Every tick, extends the lease of each running job with less than a third
        of its lease left (one task for all jobs: no per-job timer)."""
        while True:
            tick = min(1.0, max(0.02, self._min_lease / 10))
            await asyncio.sleep(tick)
            now = time.monotonic()
            for job in list(self._running.values()):
                if not job._extending and not job._lost and job._expiry - now < job._lease / 3:
                    self._extend(job)

    def _extend(self, job):
        req = jobs_pb2.ExtendLeaseRequest(job_id=job.id, lease_token=job.lease_token, lease=_duration(job._lease))
        if job._progress:
            req.progress.CopyFrom(jobs_pb2.JobProgress(**job._progress))
            job._progress = None
        job._extending = True
        job._sent_at = time.monotonic()
        if self._call is not None:
            self._send(jobs_pb2.WorkRequest(extend=req))
        else:
            self._spawn_unary(self._extend_unary(job, req))

    def _on_progress(self, job, fields):
        if self._running.get(job.id) is not job or job._lost:
            return
        job._progress = {**(job._progress or {}), **fields}
        if not job._extending:
            self._extend(job)

    def _on_extend(self, result):
        job = self._running.get(result.job_id)
        if job is None:
            return
        self._extended(job, result.code, result.message, result.result)

    def _extended(self, job, code, message, reply):
        job._extending = False
        if code == _OK:
            job._expiry = job._sent_at + job._lease
            if reply.cancel_requested:
                job.cancelled._fire()
            if job._progress:
                self._extend(job)
        elif code in (_ABORTED, _NOT_FOUND):
            job._lost = True
            log.warning("dueq worker: lost the lease of job %s: %s", job.id, message)
            job.cancelled._fire()
        else:
            log.warning("dueq worker: extending job %s failed: %s", job.id, from_code(code, message))

    async def _extend_unary(self, job, req):
        req.namespace = self._namespace
        try:
            reply = await self._stub.ExtendLease(req, timeout=5.0, metadata=self._metadata)
            self._extended(job, _OK, "", reply)
        except grpc.RpcError as err:
            self._extended(job, err.code().value[0], err.details(), None)

    # Stopping.

    def _on_stop(self):
        if self._stopping:
            if self._drained is not None and not self._drained.done():
                self._grace_over.set()
            return
        self._stopping = True
        self._stop_fut.set_result(None)
        if self.transport == "claims":
            self._flush_acks()
        self._grace_over = asyncio.Event()
        self._drained = self._loop.create_task(self._drain())

    async def _drain(self):
        """No new jobs; in-flight handlers get `grace`; their acks go by unary calls
        (a stream ack would free a slot the service refills); then the stream closes."""
        try:
            await asyncio.wait_for(self._quiet(handlers_only=True), self.grace)
        except asyncio.TimeoutError:
            pass
        if self._running:
            log.warning("dueq worker: %d handlers still running after the grace period; "
                        "their jobs go back to the queue", len(self._running))
            for job in list(self._running.values()):
                job.cancelled._fire()
                job._task.cancel()
        try:
            await asyncio.wait_for(self._quiet(handlers_only=False), max(self.grace, 5.0))
        except asyncio.TimeoutError:
            log.warning("dueq worker: %d acks unanswered; closing anyway", len(self._answers) + len(self._unary))
        call = self._call
        if call is not None:
            try:
                await call.done_writing()
                # The service ends the stream once it has taken the close in.
                self._loop.call_later(5.0, call.cancel)
            except (grpc.RpcError, asyncio.InvalidStateError):
                pass

    async def _quiet(self, handlers_only):
        while self._running or (not handlers_only and (self._answers or self._unary or self._pending_acks())):
            if self._grace_over.is_set() and handlers_only:
                return
            await asyncio.sleep(0.02)

    def _pending_acks(self):
        return bool(getattr(self, "_acks", None))

    def _answers_by_unary(self):
        for job_id, (job, req) in list(self._answers.items()):
            del self._answers[job_id]
            self._answer_by_unary(job, req)

    def _answer_by_unary(self, job, req):
        self._spawn_unary(self._unary_answer(job, req))

    def _spawn_unary(self, coro):
        task = self._loop.create_task(coro)
        self._unary.add(task)
        task.add_done_callback(self._unary.discard)

    async def _unary_answer(self, job, req):
        """AckJob or FailJob with the job's lease token, retried while the service
        is unreachable and the lease may still hold."""
        kind = req.WhichOneof("request")
        if kind == "ack":
            call, msg = self._stub.AckJob, jobs_pb2.AckJobRequest(
                namespace=self._namespace, job_id=job.id, lease_token=job.lease_token, result=req.ack.result)
        else:
            call, msg = self._stub.FailJob, req.fail
            msg.namespace = self._namespace
        backoff = Backoff(first=0.05, cap=1.0)
        give_up = time.monotonic() + max(job._lease, 5.0)
        while True:
            try:
                await call(msg, timeout=5.0, metadata=self._metadata)
                self._last_answer_at = time.monotonic()
                return
            except grpc.RpcError as err:
                error = from_rpc_error(err)
            if isinstance(error, (Aborted, NotFound)):
                log.warning("dueq worker: the %s of job %s came too late: %s", kind, job.id, error)
                return
            if err.code() not in TRANSIENT or time.monotonic() > give_up:
                log.error("dueq worker: the %s of job %s failed: %s", kind, job.id, error)
                return
            await asyncio.sleep(backoff.next())

    def _abandon_all(self):
        for job in list(self._running.values()):
            job.cancelled._fire()
            if job._task is not None:
                job._task.cancel()
        self._running.clear()
