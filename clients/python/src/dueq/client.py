"""The producer API: `AsyncClient` (asyncio) and `Client` (blocking), the same
methods on both."""

import collections

import grpc

from . import _channel
from ._flow import EnqueuedFlow, FlowCounts, FlowStatus, flow_request
from ._types import Enqueued, JobSpec, check_name, check_payload, enqueue_request, json_bytes, to_duration
from .config import MAX_PAYLOAD_SIZE, Config
from .errors import InvalidArgument, from_code, from_rpc_error
from .v1 import jobs_pb2, queue_pb2, queue_pb2_grpc

__all__ = ["AsyncClient", "Client", "Upserted"]

#: What `upsert_schedule` answers: the stored schedule, and whether it was new.
Upserted = collections.namedtuple("Upserted", ["schedule", "created"])


class _Api:
    """The calls, written once: each builds and checks its request (raising
    `InvalidArgument` before anything is sent), then `_call`s the stub method."""

    def __init__(
        self,
        addr=None,
        *,
        token=None,
        namespace=None,
        tls_ca=None,
        tls_cert=None,
        tls_key=None,
        tls_server_name=None,
        timeout=10.0,
        max_payload_size=MAX_PAYLOAD_SIZE,
        config=None,
    ):
        if config is None:
            config = Config.resolve(
                addr,
                token=token,
                namespace=namespace,
                tls_ca=tls_ca,
                tls_cert=tls_cert,
                tls_key=tls_key,
                tls_server_name=tls_server_name,
                timeout=timeout,
                max_payload_size=max_payload_size,
            )
        #: The resolved `Config` (arguments over `DUEQ_*` over defaults).
        self.config = config
        self.namespace = config.namespace
        self._metadata = _channel.metadata(config)

    # Jobs.

    def enqueue(self, queue, name, payload=b"", **options):
        """Enqueues one job; returns `Enqueued(job_id, outcome, state)`.

        `payload` is bytes (use `enqueue_json` for a JSON value). Options:
        `priority` (int, higher first), `delay` (seconds or timedelta) or `run_at`
        (datetime), `job_id` (idempotency key), `dedup` (a dedup key) with
        `dedup_ttl` (default one day) and `dedup_mode` ("skip", "replace",
        "extend"), `max_attempts`, `backoff` (`dueq.Backoff`), `headers` (dict of
        str), `lease` (seconds). A duplicate is not an error: `result.duplicate`.
        """
        spec = JobSpec(queue, name, payload, **options)
        req = enqueue_request(spec, self.namespace, self.config.max_payload_size)
        return self._call("Enqueue", req, Enqueued.from_proto)

    def enqueue_json(self, queue, name, value, **options):
        """`enqueue` with `value` encoded as JSON (UTF-8) for its payload."""
        return self.enqueue(queue, name, json_bytes(value, "payload"), **options)

    def enqueue_batch(self, jobs):
        """Enqueues up to the service's batch limit (default 1000) in one call and one
        Redis round trip. `jobs` are `dueq.JobSpec`s (or dicts of `enqueue`'s
        arguments). Returns one item per job, in order: an `Enqueued`, or the
        `DueqError` that refused that job alone (not raised)."""
        req = jobs_pb2.EnqueueBatchRequest(namespace=self.namespace)
        limit = self.config.max_payload_size
        for i, job in enumerate(jobs):
            spec = JobSpec(**job) if isinstance(job, dict) else job
            req.jobs.append(enqueue_request(spec, "", limit, prefix=f"jobs[{i}]."))
        if not req.jobs:
            raise InvalidArgument("jobs: must not be empty")
        return self._call("EnqueueBatch", req, _batch_results)

    def get_job(self, job_id):
        """The job (`dueq.v1.jobs_pb2.Job`) with its error history. `NotFound` if
        unknown or pruned."""
        check_name(job_id, "job_id")
        req = jobs_pb2.GetJobRequest(namespace=self.namespace, job_id=job_id)
        return self._call("GetJob", req, lambda r: r.job)

    def cancel(self, job_id):
        """Cancels a pending or delayed job (CANCELLED at once), or asks the worker of
        an active one to stop. Returns the job. `FailedPrecondition` when finished."""
        check_name(job_id, "job_id")
        req = jobs_pb2.CancelJobRequest(namespace=self.namespace, job_id=job_id)
        return self._call("CancelJob", req, lambda r: r.job)

    def retry(self, job_id):
        """Makes a dead job pending again; returns it. `FailedPrecondition` otherwise."""
        check_name(job_id, "job_id")
        req = jobs_pb2.RetryJobRequest(namespace=self.namespace, job_id=job_id)
        return self._call("RetryJob", req, lambda r: r.job)

    # Flows.

    def enqueue_flow(self, nodes, flow_id=None):
        """Enqueues a flow: `nodes` are `dueq.FlowNode`s forming a graph without
        cycles (up to 1,000), stored all or nothing; a node runs once every ref in
        its `after` has finished. `flow_id` makes the call idempotent (a stored flow
        with it answers "duplicate"). Returns `EnqueuedFlow(flow_id, outcome,
        job_ids)`, the job ids by ref. A bad node is `InvalidArgument` naming it
        (`nodes[2].after[0]: ...`), from this client or from the service."""
        req = flow_request(nodes, flow_id, self.namespace, self.config.max_payload_size)
        return self._call("EnqueueFlow", req, EnqueuedFlow.from_proto)

    def cancel_flow(self, flow_id):
        """Cancels every unfinished node of the flow (an active one's worker is asked
        to stop; a node readied later is cancelled). Returns `FlowCounts`."""
        check_name(flow_id, "flow_id")
        req = jobs_pb2.CancelFlowRequest(namespace=self.namespace, flow_id=flow_id)
        return self._call("CancelFlow", req, FlowCounts.from_proto)

    def retry_flow(self, flow_id):
        """Re-arms the flow's dead, cancelled and skipped nodes (completed ones keep
        their results) and lifts its cancel. Returns `FlowCounts`."""
        check_name(flow_id, "flow_id")
        req = jobs_pb2.RetryFlowRequest(namespace=self.namespace, flow_id=flow_id)
        return self._call("RetryFlow", req, FlowCounts.from_proto)

    def _flow_page(self, flow_id, page_token):
        check_name(flow_id, "flow_id")
        return jobs_pb2.GetFlowRequest(namespace=self.namespace, flow_id=flow_id, page_token=page_token)

    # Schedules.

    def upsert_schedule(
        self,
        schedule_id,
        *,
        cron=None,
        every=None,
        timezone=None,
        job_name="",
        payload=b"",
        headers=None,
        paused=False,
        schedule=None,
    ):
        """Creates or replaces a schedule: `cron` (a cron expression, in `timezone`)
        or `every` (seconds or timedelta), `job_name`, `payload` (bytes) and `headers`
        handed to the worker with every occurrence. For every other field pass a whole
        `dueq.v1.queue_pb2.Schedule` as `schedule` (its id is set from
        `schedule_id`). Returns `Upserted(schedule, created)`."""
        check_name(schedule_id, "schedule_id")
        msg = queue_pb2.Schedule() if schedule is None else _copy(schedule)
        msg.id = schedule_id
        if (cron is None) == (every is None) and schedule is None:
            raise InvalidArgument("cron: give exactly one of cron or every")
        if cron is not None:
            msg.cron = cron
        if every is not None:
            msg.every.CopyFrom(to_duration(every, "every"))
        if timezone is not None:
            msg.timezone = timezone
        if job_name:
            msg.job_name = job_name
        if payload:
            msg.payload = check_payload(payload, self.config.max_payload_size)
        for key, value in (headers or {}).items():
            msg.headers[key] = value
        msg.paused = msg.paused or paused
        req = queue_pb2.UpsertScheduleRequest(namespace=self.namespace, schedule=msg)
        return self._call("UpsertSchedule", req, lambda r: Upserted(r.schedule, r.created))

    def get_schedule(self, schedule_id):
        """The schedule (`dueq.v1.queue_pb2.Schedule`). `NotFound` if unknown."""
        check_name(schedule_id, "schedule_id")
        req = queue_pb2.GetScheduleRequest(namespace=self.namespace, id=schedule_id)
        return self._call("GetSchedule", req, lambda r: r.schedule)

    def pause_schedule(self, schedule_id, note=""):
        """Pauses a schedule (never claimed until resumed); returns it."""
        check_name(schedule_id, "schedule_id")
        req = queue_pb2.PauseScheduleRequest(namespace=self.namespace, id=schedule_id, note=note)
        return self._call("PauseSchedule", req, lambda r: r.schedule)

    def resume_schedule(self, schedule_id):
        """Resumes a paused schedule (its next run recomputed from now); returns it."""
        check_name(schedule_id, "schedule_id")
        req = queue_pb2.ResumeScheduleRequest(namespace=self.namespace, id=schedule_id)
        return self._call("ResumeSchedule", req, lambda r: r.schedule)

    def trigger_schedule(self, schedule_id, ignore_overlap=False):
        """An occurrence now, outside the timing; returns its occurrence id."""
        check_name(schedule_id, "schedule_id")
        req = queue_pb2.TriggerScheduleRequest(
            namespace=self.namespace, id=schedule_id, ignore_overlap=ignore_overlap
        )
        return self._call("TriggerSchedule", req, lambda r: r.occurrence_id)

    def delete_schedule(self, schedule_id):
        """Deletes a schedule. `NotFound` if unknown."""
        check_name(schedule_id, "schedule_id")
        req = queue_pb2.DeleteScheduleRequest(namespace=self.namespace, id=schedule_id)
        return self._call("DeleteSchedule", req, lambda r: None)

    def _list_request(self, page_token):
        return queue_pb2.ListSchedulesRequest(
            namespace=self.namespace,
            page_size=1000,
            page_token=page_token,
            view=queue_pb2.SCHEDULE_VIEW_FULL,
        )


def _copy(msg):
    out = type(msg)()
    out.CopyFrom(msg)
    return out


def _batch_results(resp):
    out = []
    for item in resp.results:
        if item.WhichOneof("result") == "ok":
            out.append(Enqueued.from_proto(item.ok))
        else:
            out.append(from_code(item.error.code, item.error.message))
    return out


class AsyncClient(_Api):
    """The producer API for asyncio: `await client.enqueue(...)`.

    `AsyncClient(addr=None, *, token=None, namespace=None, tls_ca=None,
    tls_cert=None, tls_key=None, tls_server_name=None, timeout=10.0)`: each argument
    left None is read from its `DUEQ_*` variable (`DUEQ_ADDR`, `DUEQ_TOKEN`,
    `DUEQ_NAMESPACE`, `DUEQ_TLS_CA`, `DUEQ_TLS_CLIENT_CERT`, `DUEQ_TLS_CLIENT_KEY`,
    `DUEQ_TLS_SERVER_NAME`). The channel opens at the first call, in the running
    event loop; `await client.close()` (or `async with`) closes it.
    """

    _channel = None
    _stub = None

    @property
    def stub(self):
        """The generated `QueueServiceStub` over this client's channel (asyncio), for
        calls the client does not wrap; pass `metadata=client.call_metadata`."""
        if self._stub is None:
            self._channel = _channel.aio_channel(self.config)
            self._stub = queue_pb2_grpc.QueueServiceStub(self._channel)
        return self._stub

    @property
    def call_metadata(self):
        return self._metadata

    async def _call(self, method, request, convert, timeout=None):
        try:
            reply = await getattr(self.stub, method)(
                request, timeout=timeout or self.config.timeout, metadata=self._metadata
            )
        except grpc.RpcError as err:
            raise from_rpc_error(err) from err
        return convert(reply)

    async def get_flow(self, flow_id):
        """The flow (`FlowStatus`: its state, counts and every node, all pages).
        `NotFound` if unknown or pruned."""
        pages = [await self._call("GetFlow", self._flow_page(flow_id, ""), lambda r: r)]
        while pages[-1].next_page_token:
            pages.append(await self._call("GetFlow", self._flow_page(flow_id, pages[-1].next_page_token), lambda r: r))
        return FlowStatus.from_pages(pages)

    async def list_schedules(self):
        """Every schedule of the namespace (all pages), in id order."""
        out, token = [], ""
        while True:
            reply = await self._call("ListSchedules", self._list_request(token), lambda r: r)
            out.extend(reply.schedules)
            token = reply.next_page_token
            if not token:
                return out

    async def close(self):
        """Closes the channel (calls in flight are cancelled)."""
        if self._channel is not None:
            await self._channel.close()
            self._channel = self._stub = None

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc):
        await self.close()


class Client(_Api):
    """The producer API, blocking: `client.enqueue(...)`. Same arguments as
    `AsyncClient`; usable as a context manager (closes its channel)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._channel = _channel.sync_channel(self.config)
        self.stub = queue_pb2_grpc.QueueServiceStub(self._channel)

    @property
    def call_metadata(self):
        return self._metadata

    def _call(self, method, request, convert, timeout=None):
        try:
            reply = getattr(self.stub, method)(
                request, timeout=timeout or self.config.timeout, metadata=self._metadata
            )
        except grpc.RpcError as err:
            raise from_rpc_error(err) from err
        return convert(reply)

    def get_flow(self, flow_id):
        """The flow (`FlowStatus`: its state, counts and every node, all pages).
        `NotFound` if unknown or pruned."""
        pages = [self._call("GetFlow", self._flow_page(flow_id, ""), lambda r: r)]
        while pages[-1].next_page_token:
            pages.append(self._call("GetFlow", self._flow_page(flow_id, pages[-1].next_page_token), lambda r: r))
        return FlowStatus.from_pages(pages)

    def list_schedules(self):
        """Every schedule of the namespace (all pages), in id order."""
        out, token = [], ""
        while True:
            reply = self._call("ListSchedules", self._list_request(token), lambda r: r)
            out.extend(reply.schedules)
            token = reply.next_page_token
            if not token:
                return out

    def close(self):
        self._channel.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
