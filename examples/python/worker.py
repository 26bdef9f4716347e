#!/usr/bin/env python3
"""A dueq job worker in Python: long-poll ClaimJob, do the work, AckJob or FailJob.

Needs `python3 -m pip install grpcio grpcio-tools` (the stubs are generated from
proto/ at start-up, see stubs.py).

    python3 examples/python/worker.py --target localhost:50051 \
        --namespace shop --queue emails --count 3

--count N exits after handling N jobs (0: run until Ctrl-C or SIGTERM, which stop
it cleanly; jobs claimed and not yet acked go back to the queue when their lease
ends).
"""

import os
import time

import grpc

import common
import stubs

# Claimed jobs are handled one after another while all their leases run, so claim
# only what gets done within one lease; 3 jobs with the largest payload (1 MiB by
# default) also fit one 4 MiB reply. (The server bounds its replies too.)
MAX_JOBS = 3


def handle(job):
    """The actual work. Raise to fail the attempt (it is retried with backoff)."""
    print(f"working on {job.job_id} ({job.name}, attempt {job.attempt}): {job.payload!r}", flush=True)
    if job.headers.get("fail") == "yes":
        raise RuntimeError("asked to fail")


def work(stub, jobs_pb2, Duration, opts):
    handled = 0
    while opts.count == 0 or handled < opts.count:
        try:
            # Long-poll: the server answers as soon as a job is claimable, or empty
            # after `wait` (and always just before our own deadline).
            reply = stub.ClaimJob(
                jobs_pb2.ClaimJobRequest(
                    namespace=opts.namespace,
                    queues=[opts.queue],
                    worker_id=opts.worker_id,
                    wait=Duration(seconds=20),
                    lease=Duration(seconds=30),
                    max_jobs=MAX_JOBS if opts.count == 0 else min(MAX_JOBS, opts.count - handled),
                ),
                timeout=25,
            )
        except grpc.RpcError as err:
            if err.code() == grpc.StatusCode.UNAVAILABLE:
                time.sleep(1)  # Redis or the service is down: back off and retry
                continue
            raise
        for job in reply.jobs:
            ids = dict(namespace=opts.namespace, job_id=job.job_id, lease_token=job.lease_token)
            try:
                # Long work should call stub.ExtendLease(...) before the lease ends.
                handle(job)
                stub.AckJob(jobs_pb2.AckJobRequest(**ids), timeout=10)
                print(f"acked {job.job_id}", flush=True)
            except grpc.RpcError as err:
                if err.code() != grpc.StatusCode.ABORTED:
                    raise
                # ABORTED: our lease expired and the job went to another worker.
                print(f"lost the lease on {job.job_id}; dropping it", flush=True)
            except Exception as exc:  # the work failed: record it, dueq retries
                try:
                    stub.FailJob(jobs_pb2.FailJobRequest(error=str(exc), **ids), timeout=10)
                    print(f"failed {job.job_id}", flush=True)
                except grpc.RpcError as err:
                    if err.code() != grpc.StatusCode.ABORTED:
                        raise
            handled += 1


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
