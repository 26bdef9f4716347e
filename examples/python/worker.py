#!/usr/bin/env python3
"""A dueq job worker in Python over the Work stream: the server pushes jobs, the
worker acks (or fails) each on the same stream.

Needs `python3 -m pip install grpcio grpcio-tools` (the stubs are generated from
proto/ at start-up, see stubs.py).

    python3 examples/python/worker.py --target localhost:50051 \
        --namespace shop --queue emails --count 3

--count N exits after handling N jobs (0: run until Ctrl-C or SIGTERM, which stop
it cleanly). Jobs the server pushed and this worker has not finished go back to
the queue at once when it stops (their attempt counts, as if a lease expired).
"""

import os
import queue
import time

import grpc

import common
import stubs

# Jobs the server pushes ahead: the stream holds at most this many at once, and a
# slot frees when the server answers the job's ack or fail. They are handled one
# after another here while all their leases run, so keep it to what gets done
# within one lease.
CAPACITY = 3


def handle(job):
    """The actual work. Raise to fail the attempt (it is retried with backoff)."""
    print(f"working on {job.job_id} ({job.name}, attempt {job.attempt}): {job.payload!r}", flush=True)
    if job.headers.get("fail") == "yes":
        raise RuntimeError("asked to fail")


class Stream:
    """One Work stream: the messages to send (a queue the request iterator drains)
    and the replies."""

    def __init__(self, stub, start):
        self.outbox = queue.Queue()
        self.outbox.put(start)
        self.replies = stub.Work(self._requests())

    def _requests(self):
        while True:
            message = self.outbox.get()
            if message is None:  # close our side
                return
            yield message

    def send(self, message):
        self.outbox.put(message)

    def close(self):
        self.outbox.put(None)
        self.replies.cancel()


def work(stub, jobs_pb2, Duration, opts):
    handled = 0
    # Acks and fails sent and not yet answered, by job id. If the server shuts down
    # the stream ends UNAVAILABLE and these jobs keep their leases: they are sent
    # again on the next stream (a stream to any replica takes them).
    unanswered = {}
    while opts.count == 0 or handled < opts.count:
        start = jobs_pb2.WorkRequest(
            start=jobs_pb2.WorkStart(
                namespace=opts.namespace,
                queues=[opts.queue],
                worker_id=opts.worker_id,
                lease=Duration(seconds=30),
                capacity=CAPACITY if opts.count == 0 else min(CAPACITY, opts.count - handled),
            )
        )
        stream = Stream(stub, start)
        for message in unanswered.values():
            stream.send(message)
        try:
            for reply in stream.replies:
                kind = reply.WhichOneof("response")
                if kind == "job":
                    job = reply.job
                    lease = jobs_pb2.JobLease(job_id=job.job_id, lease_token=job.lease_token)
                    # Long work should send WorkRequest(extend=...) before the lease ends.
                    try:
                        handle(job)
                        message = jobs_pb2.WorkRequest(ack=lease)
                    except Exception as exc:  # the work failed: record it, dueq retries
                        message = jobs_pb2.WorkRequest(
                            fail=jobs_pb2.FailJobRequest(
                                job_id=job.job_id, lease_token=job.lease_token, error=str(exc)
                            )
                        )
                    unanswered[job.job_id] = message
                    stream.send(message)
                    continue
                # The answer to an ack or a fail: its slot is free again.
                result = getattr(reply, kind)
                unanswered.pop(result.job_id, None)
                if result.code == grpc.StatusCode.OK.value[0]:
                    print(f"{'acked' if kind == 'ack' else 'failed'} {result.job_id}", flush=True)
                elif result.code == grpc.StatusCode.ABORTED.value[0]:
                    # Our lease expired and the job went to another worker.
                    print(f"lost the lease on {result.job_id}; dropping it", flush=True)
                else:
                    raise RuntimeError(f"{kind} of {result.job_id} refused: {result.code} {result.message}")
                handled += 1
                if opts.count and handled >= opts.count:
                    break
        except grpc.RpcError as err:
            if err.code() != grpc.StatusCode.UNAVAILABLE:
                raise
            time.sleep(1)  # the server shut down or is unreachable: back off, reconnect
        finally:
            stream.close()


def main():
    p = common.parser(__doc__.splitlines()[0])
    p.add_argument("--queue", default="emails")
    p.add_argument("--worker-id", default=f"python-{os.getpid()}")
    opts = p.parse_args()

    stubs.load()
    from dueq.v1 import jobs_pb2, queue_pb2_grpc
    from google.protobuf.duration_pb2 import Duration

    with common.channel(opts.target) as channel:
        work(queue_pb2_grpc.QueueServiceStub(channel), jobs_pb2, Duration, opts)


if __name__ == "__main__":
    common.run(main)
