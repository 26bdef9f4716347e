#!/usr/bin/env python3
"""A dueq worker loop in Python: long-poll ClaimJob, do the work, AckJob or FailJob.

Needs `python3 -m pip install grpcio grpcio-tools`. The gRPC stubs are generated
from the repository's proto/ directory with grpcio-tools at start-up (into a
temporary directory), so nothing generated is checked in.

    python3 examples/python/worker.py --target localhost:50051 \
        --namespace shop --queue emails --enqueue 3 --stop-after 3

--enqueue N first enqueues N demo jobs; --stop-after N exits after handling N jobs
(0: run until interrupted).
"""

import argparse
import os
import sys
import tempfile
import time

import grpc
import grpc_tools
from grpc_tools import protoc

PROTO_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "proto")


def load_stubs():
    """Generates dueq's Python stubs from proto/ and imports them."""
    out = tempfile.mkdtemp(prefix="dueq-stubs-")
    well_known = os.path.join(os.path.dirname(grpc_tools.__file__), "_proto")
    protos = [
        os.path.join("dueq", "v1", name)
        for name in sorted(os.listdir(os.path.join(PROTO_DIR, "dueq", "v1")))
        if name.endswith(".proto")
    ]
    args = ["protoc", f"-I{PROTO_DIR}", f"-I{well_known}", f"--python_out={out}", f"--grpc_python_out={out}"]
    if protoc.main(args + protos) != 0:
        sys.exit("could not generate the gRPC stubs from proto/")
    sys.path.insert(0, out)
    from dueq.v1 import jobs_pb2, queue_pb2_grpc  # noqa: E402 (generated above)

    return jobs_pb2, queue_pb2_grpc


def handle(job):
    """The actual work. Raise to fail the attempt (it is retried with backoff)."""
    print(f"working on {job.job_id} ({job.name}, attempt {job.attempt}): {job.payload!r}", flush=True)
    if job.headers.get("fail") == "yes":
        raise RuntimeError("asked to fail")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="localhost:50051")
    parser.add_argument("--namespace", default="shop")
    parser.add_argument("--queue", default="emails")
    parser.add_argument("--worker-id", default=f"python-{os.getpid()}")
    parser.add_argument("--enqueue", type=int, default=0, help="enqueue this many demo jobs first")
    parser.add_argument("--stop-after", type=int, default=0, help="exit after this many jobs (0: never)")
    opts = parser.parse_args()

    jobs_pb2, queue_pb2_grpc = load_stubs()
    from google.protobuf.duration_pb2 import Duration

    channel = grpc.insecure_channel(opts.target)
    stub = queue_pb2_grpc.QueueServiceStub(channel)

    for i in range(opts.enqueue):
        reply = stub.Enqueue(
            jobs_pb2.EnqueueRequest(
                namespace=opts.namespace,
                queue=opts.queue,
                name="demo.greet",
                payload=f"hello {i}".encode(),
                headers={"source": "worker.py"},
                max_attempts=5,
            ),
            timeout=10,
        )
        print(f"enqueued {reply.job_id}", flush=True)

    handled = 0
    while opts.stop_after == 0 or handled < opts.stop_after:
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
                    max_jobs=10,
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
                except grpc.RpcError as err:
                    if err.code() != grpc.StatusCode.ABORTED:
                        raise
            handled += 1


if __name__ == "__main__":
    main()
