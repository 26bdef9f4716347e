"""The job worker's other transport: batched unary claims (`transport="claims"`).

One loop claims up to the free slots with ClaimJob, carrying the acks of the jobs
finished since the last claim (one call and one Redis script complete them and fetch
the next, ClaimJobRequest.acks). Fails, progress and lease extensions go by unary
calls; a cancel reaches the handler on its next extension. With many short jobs it
costs a fraction of the Work stream's per-message overhead in Python (one call per
batch instead of three stream messages per job)."""

import asyncio
import logging
import time

import grpc
from google.protobuf import duration_pb2

from ._common import TRANSIENT, Backoff
from .errors import from_code, from_rpc_error
from .v1 import jobs_pb2

log = logging.getLogger("dueq")

#: How long an idle claim long-polls: also the longest a stop waits for it.
CLAIM_WAIT = 2.0
#: Acks of jobs that finish while a claim is out wait at most this long for it.
ACK_DELAY = 0.05
_ABORTED, _NOT_FOUND, _FAILED_PRECONDITION, _UNAVAILABLE = 10, 5, 9, 14


def _duration(seconds):
    whole = int(seconds)
    return duration_pb2.Duration(seconds=whole, nanos=int((seconds - whole) * 1e9))


class ClaimsTransport:
    """Mixed into Worker: `_serve_claims` replaces the stream's `_serve`."""

    async def _serve_claims(self):
        self._acks = []  # JobLease of finished jobs not yet acked
        self._claims = {}  # claim task -> the slots it may fill
        self._flush_at = None
        self._slot = asyncio.Event()
        # Two claims of half the slots each keep one in flight while the other's jobs
        # run, so the round trips overlap.
        size = max(1, min(100, (self.concurrency + 1) // 2))
        backoff = Backoff()
        while not self._stopping:
            free = self.concurrency - len(self._running) - sum(self._claims.values())
            if free > 0 and len(self._claims) < 2 and not self._backing_off(backoff):
                n = min(free, size)
                self._claims[self._loop.create_task(self._claim(n))] = n
                continue
            self._slot.clear()
            slot = self._loop.create_task(self._slot.wait())
            done, _ = await asyncio.wait([slot, self._stop_fut, *self._claims], return_when=asyncio.FIRST_COMPLETED)
            slot.cancel()
            for task in done:
                if task in self._claims:
                    del self._claims[task]
                    self._claimed(task, backoff)
        for task in list(self._claims):
            try:
                await task
            except grpc.RpcError:
                pass
        self._flush_acks()
        await self._drained

    def _backing_off(self, backoff):
        return backoff.until is not None and time.monotonic() < backoff.until

    def _claimed(self, task, backoff):
        err = task.exception()
        if err is None:
            backoff.reset()
            backoff.until = None
            return
        if not isinstance(err, grpc.RpcError) or err.code() not in TRANSIENT:
            self._abandon_all()
            raise from_rpc_error(err) if isinstance(err, grpc.RpcError) else err
        log.warning("dueq worker: ClaimJob failed (%s: %s); retrying", err.code().name, err.details())
        delay = backoff.next()
        backoff.until = time.monotonic() + delay
        self._loop.call_later(delay, self._slot.set)

    async def _claim(self, free):
        acks, self._acks = self._acks[:100], self._acks[100:]
        # A claim carrying acks does not long-poll: its reply answers them, so it
        # comes at once (the next claim, without acks, waits for work).
        req = jobs_pb2.ClaimJobRequest(
            namespace=self._namespace,
            queues=self.queues,
            worker_id=self.worker_id,
            wait=_duration(0 if acks else CLAIM_WAIT),
            max_jobs=free,
            acks=acks,
        )
        if self.lease:
            req.lease.CopyFrom(_duration(self.lease))
        try:
            reply = await self._stub.ClaimJob(req, timeout=CLAIM_WAIT + 10.0, metadata=self._metadata)
        except grpc.RpcError:
            self._acks[:0] = acks  # not known to be applied: again (a repeat answers ABORTED)
            raise
        self._acked(acks, reply.acks)
        if self._stopping:
            self._release(reply.jobs)
            return
        for claimed in reply.jobs:
            self._on_job(claimed)

    def _acked(self, sent, results):
        self._last_answer_at = time.monotonic()
        for lease, result in zip(sent, results):
            if result.code in (_UNAVAILABLE, _FAILED_PRECONDITION):
                self._acks.append(lease)
            elif result.code in (_ABORTED, _NOT_FOUND):
                log.warning("dueq worker: the ack of job %s came too late: %s", result.job_id, result.message)
            elif result.code != 0:
                log.error("dueq worker: the ack of job %s was refused: %s", result.job_id,
                          from_code(result.code, result.message))

    def _queue_ack(self, job, lease):
        """A finished job's ack: on the next claim, or by AckJobs if a claim is out
        (long-polling) for longer than ACK_DELAY."""
        self._acks.append(lease)
        self._slot.set()
        if self._claims and self._flush_at is None:
            self._flush_at = self._loop.call_later(ACK_DELAY, self._flush_if_claiming)

    def _flush_if_claiming(self):
        self._flush_at = None
        if self._claims:
            self._flush_acks()

    def _flush_acks(self):
        while self._acks:
            batch, self._acks = self._acks[:100], self._acks[100:]
            self._spawn_unary(self._ack_jobs(batch))

    async def _ack_jobs(self, batch):
        backoff = Backoff(first=0.05, cap=1.0)
        give_up = time.monotonic() + 30.0
        req = jobs_pb2.AckJobsRequest(namespace=self._namespace, acks=batch)
        while True:
            try:
                reply = await self._stub.AckJobs(req, timeout=5.0, metadata=self._metadata)
                self._acked(batch, reply.results)
                return
            except grpc.RpcError as err:
                if err.code() not in TRANSIENT or time.monotonic() > give_up:
                    log.error("dueq worker: AckJobs failed: %s", from_rpc_error(err))
                    return
            await asyncio.sleep(backoff.next())

    def _release(self, jobs):
        """Jobs a claim returned after stop(): given back at once, attempt not counted."""
        for claimed in jobs:
            req = jobs_pb2.ReleaseJobRequest(namespace=self._namespace, job_id=claimed.job_id,
                                             reason="worker stopping")
            self._spawn_unary(self._stub.ReleaseJob(req, timeout=5.0, metadata=self._metadata))
