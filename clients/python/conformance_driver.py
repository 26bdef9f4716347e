#!/usr/bin/env python3
"""The Python conformance driver (clients/conformance/README.md): one mode per run,
its parameters as one JSON argument, its connection only from DUEQ_* variables,
one JSON event per line on stdout. `work` and `bench` also take an optional
`"transport"` (`dueq.Worker`'s: "claims", its default, or "stream").

    PYTHONPATH=clients/python/src python3 clients/python/conformance_driver.py '{"mode":"work",...}'
"""

import signal
import sys


class EarlyStop:
    """SIGTERM/SIGINT from the start (importing grpc takes a while): stops the
    current worker, or the one about to run. The worker's own handlers replace
    these while it runs."""

    worker = None
    requested = False

    @classmethod
    def handle(cls, signum, frame):
        cls.requested = True
        if cls.worker is not None:
            cls.worker.stop()

    @classmethod
    def watch(cls, worker):
        """From here a SIGTERM stops `worker`; says so with a `ready` event."""
        cls.worker = worker
        if cls.requested:
            worker.stop()
        emit(event="ready")


signal.signal(signal.SIGTERM, EarlyStop.handle)
signal.signal(signal.SIGINT, EarlyStop.handle)

import asyncio  # noqa: E402 - after the signal handlers, on purpose
import json  # noqa: E402
import resource  # noqa: E402

import dueq  # noqa: E402
from dueq.v1 import jobs_pb2, queue_pb2


def emit(**event):
    sys.stdout.write(json.dumps(event) + "\n")
    sys.stdout.flush()


def state_name(job):
    return jobs_pb2.JobState.Name(job.state)


class StopAfter:
    """Calls `stop()` of a worker once `n` handlers have returned (or raised)."""

    def __init__(self, n):
        self.n, self.count, self.worker = n, 0, None

    def returned(self):
        self.count += 1
        if self.n is not None and self.count == self.n:
            self.worker.stop()


async def work(params):
    stop = StopAfter(params.get("stop_after"))

    async def handler(job):
        try:
            return await run_job(job)
        finally:
            stop.returned()

    lease = params.get("lease_ms")
    worker = dueq.Worker(
        dueq.AsyncClient(),
        params["queues"],
        handler,
        concurrency=params.get("concurrency") or 1,
        lease=lease / 1000 if lease else None,
        transport=params.get("transport") or "claims",
    )
    stop.worker = worker
    EarlyStop.watch(worker)
    await worker.run_async()
    emit(event="exit")


async def run_job(job):
    emit(event="start", job_id=job.id, attempt=job.attempt, name=job.name)
    spec = job.json()
    if spec.get("progress"):
        job.progress(**spec["progress"])
    if spec.get("sleep_ms"):
        await asyncio.sleep(spec["sleep_ms"] / 1000)
    if spec.get("wait_cancel"):
        await job.cancelled.wait()
        emit(event="cancelled", job_id=job.id)
        raise RuntimeError("cancelled")
    if spec.get("fail") == "retry" and job.attempt <= spec.get("fail_attempts", 1):
        raise RuntimeError("planned failure")
    if spec.get("fail") == "fatal":
        raise dueq.NonRetryable("planned fatal")
    emit(event="done", job_id=job.id)
    return dueq.Json({"ok": True, "job_id": job.id})


async def schedules(params):
    stop = StopAfter(params.get("stop_after"))

    async def handler(occ):
        emit(event="occurrence", occurrence_id=occ.occurrence_id, schedule_id=occ.schedule_id)
        stop.returned()

    worker = dueq.ScheduleWorker(dueq.AsyncClient(), handler, concurrency=params.get("concurrency") or 1)
    stop.worker = worker
    EarlyStop.watch(worker)
    await worker.run_async()
    emit(event="exit")


async def produce(params):
    c, q = dueq.AsyncClient(), params["queue"]
    r = await c.enqueue(
        q, "raw", b"raw", priority=5, delay=60, job_id="p-1", headers={"h": "v"},
        max_attempts=7, backoff=dueq.Backoff("exponential", 2.0),
    )
    emit(event="call", call="enqueue", job_id=r.job_id, duplicate=r.duplicate)
    r = await c.enqueue_json(q, "json", {"n": 1}, dedup="d-1")
    emit(event="call", call="enqueue_json", job_id=r.job_id, duplicate=r.duplicate)
    r = await c.enqueue_json(q, "json", {"n": 1}, dedup="d-1")
    emit(event="call", call="enqueue_json", job_id=r.job_id, duplicate=r.duplicate)
    batch = await c.enqueue_batch([dueq.JobSpec(q, "batch", b"", job_id=f"b-{i}") for i in (1, 2, 3)])
    emit(event="call", call="enqueue_batch", job_ids=[item.job_id for item in batch])
    job = await c.get_job("p-1")
    emit(event="call", call="get_job", job_id=job.job_id, state=state_name(job), priority=job.priority,
         max_attempts=job.max_attempts, headers=dict(job.headers))
    job = await c.cancel("p-1")
    emit(event="call", call="cancel", job_id=job.job_id, state=state_name(job))
    job = await c.retry(params["dead_job_id"])
    emit(event="call", call="retry", job_id=job.job_id, state=state_name(job))
    await schedule_calls(c)
    await c.close()


async def schedule_calls(c):
    status = queue_pb2.ScheduleStatus.Name
    up = await c.upsert_schedule("s-1", every=3600, payload=b'{"s":1}', job_name="s")
    emit(event="call", call="upsert_schedule", id=up.schedule.id, created=up.created)
    s = await c.get_schedule("s-1")
    emit(event="call", call="get_schedule", id=s.id, payload=s.payload.decode(),
         every_seconds=s.every.seconds, status=status(s.status))
    listed = await c.list_schedules()
    emit(event="call", call="list_schedules", ids=[s.id for s in listed])
    s = await c.pause_schedule("s-1")
    emit(event="call", call="pause_schedule", id=s.id, paused=s.status == queue_pb2.SCHEDULE_STATUS_PAUSED,
         status=status(s.status))
    s = await c.resume_schedule("s-1")
    emit(event="call", call="resume_schedule", id=s.id, paused=s.status == queue_pb2.SCHEDULE_STATUS_PAUSED,
         status=status(s.status))
    occurrence = await c.trigger_schedule("s-1")
    emit(event="call", call="trigger_schedule", id="s-1", occurrence_id=occurrence)
    await c.delete_schedule("s-1")
    emit(event="call", call="delete_schedule", id="s-1")


async def call(params):
    if params.get("call", "enqueue") != "enqueue":
        sys.exit(f"unknown call {params.get('call')!r}")
    try:
        c = dueq.AsyncClient()
        r = await c.enqueue(params["queue"], "call", bytes(params.get("payload_bytes", 0)))
        emit(event="ok", job_id=r.job_id)
    except dueq.DueqError as err:
        emit(event="error", kind=type(err).__name__, code=err.code_number, message=err.message)


async def bench(params):
    n = params["jobs"]
    stop = StopAfter(n)

    async def handler(job):
        stop.returned()

    worker = dueq.Worker(
        dueq.AsyncClient(),
        params["queues"],
        handler,
        concurrency=params.get("concurrency") or 32,
        transport=params.get("transport") or "claims",
    )
    stop.worker = worker
    EarlyStop.watch(worker)
    cpu0 = resource.getrusage(resource.RUSAGE_SELF)
    await worker.run_async()
    cpu1 = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (cpu1.ru_utime - cpu0.ru_utime) + (cpu1.ru_stime - cpu0.ru_stime)
    first, last = worker._first_job_at, worker._last_answer_at
    seconds = (last - first) if first is not None and last is not None else 0.0
    emit(event="bench", jobs=stop.count, seconds=round(seconds, 4), cpu_seconds=round(cpu, 4))


async def flow(params):
    c, q = dueq.AsyncClient(), params["queue"]

    def node(ref, after=(), payload=None, **options):
        rule = options.pop("rule", "cancel")
        job = dueq.JobSpec.json(q, f"flow.{ref}", payload or {}, **options)
        return dueq.FlowNode(ref, job, after=list(after), on_dependency_failure=rule)

    flows = {
        "f-ok": [node("a"), node("b", ["a"]), node("c", ["a"]), node("d", ["b", "c"])],
        "f-fail": [node("a", payload={"fail": "fatal"}), node("x", ["a"]), node("y", ["a"], rule="run")],
        "f-cancel": [node("a", delay=3600), node("b", ["a"])],
    }
    for flow_id, nodes in flows.items():
        r = await c.enqueue_flow(nodes, flow_id=flow_id)
        emit(event="call", call="enqueue_flow", flow_id=r.flow_id, outcome=r.outcome.upper(), job_ids=r.job_ids)
    counts = await c.cancel_flow("f-cancel")
    emit(event="call", call="cancel_flow", state=counts.state.upper(), unfinished=counts.unfinished,
         failed=counts.failed)
    try:
        await c.enqueue_flow([node("a", ["nope"])], flow_id="f-bad")
        emit(event="ok", call="enqueue_flow")
    except dueq.DueqError as err:
        emit(event="error", call="enqueue_flow", kind=type(err).__name__, code=err.code_number, message=err.message)
    await flow_worker(params, q)
    for flow_id in ("f-ok", "f-fail"):
        f = await c.get_flow(flow_id)
        nodes = [dict(ref=n.ref, job_id=n.job_id, state=n.state.upper(), after=n.after,
                      failed_dependency=n.failed_dependency) for n in f.nodes]
        emit(event="call", call="get_flow", flow_id=f.flow_id, state=f.state.upper(), nodes=nodes)
    counts = await c.retry_flow("f-fail")
    emit(event="call", call="retry_flow", state=counts.state.upper(), unfinished=counts.unfinished,
         failed=counts.failed)
    await c.close()


async def flow_worker(params, q):
    """Works the flows' six runnable nodes, printing what each handler sees."""
    stop = StopAfter(6)

    async def handler(job):
        try:
            deps = [dict(ref=d.ref, job_id=d.job_id, state=d.state.upper()) for d in job.dependencies]
            results = {ref: job.dependency_json(ref) for ref in job.dependency_results}
            emit(event="start", job_id=job.id, flow_id=job.flow_id, flow_ref=job.flow_ref,
                 dependencies=deps, results=results)
            if job.json().get("fail") == "fatal":
                raise dueq.NonRetryable("planned fatal")
            return dueq.Json({"ref": job.flow_ref})
        finally:
            stop.returned()

    worker = dueq.Worker(dueq.AsyncClient(), q, handler, concurrency=params.get("concurrency") or 2,
                         transport=params.get("transport") or "claims")
    stop.worker = worker
    EarlyStop.watch(worker)
    await worker.run_async()


MODES = {"work": work, "schedules": schedules, "produce": produce, "call": call, "bench": bench, "flow": flow}


def main():
    if len(sys.argv) != 2:
        sys.exit(f"usage: {sys.argv[0]} '<json params>'")
    params = json.loads(sys.argv[1])
    mode = MODES.get(params.get("mode"))
    if mode is None:
        sys.exit(f"unknown mode {params.get('mode')!r}; one of {', '.join(MODES)}")
    try:
        import uvloop  # optional: faster, when installed

        uvloop.install()
    except ImportError:
        pass
    asyncio.run(mode(params))


if __name__ == "__main__":
    main()
