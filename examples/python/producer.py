#!/usr/bin/env python3
"""A dueq job producer in Python: enqueues --count jobs, one Enqueue each or one
EnqueueBatch with --batch, and exits.

    python3 examples/python/producer.py --target localhost:50051 \
        --namespace shop --queue emails --count 3
"""

import json

import common
import stubs


def main():
    p = common.parser(__doc__.splitlines()[0])
    p.add_argument("--queue", default="emails")
    p.add_argument("--batch", action="store_true", help="one EnqueueBatch call for all jobs")
    opts = p.parse_args()

    stubs.load()
    from dueq.v1 import jobs_pb2, queue_pb2_grpc

    stub = queue_pb2_grpc.QueueServiceStub(common.channel(opts.target))
    jobs = [
        jobs_pb2.EnqueueRequest(
            namespace=opts.namespace,
            queue=opts.queue,
            name="demo.greet",
            payload=json.dumps({"hello": i}).encode(),
            headers={"source": "producer.py"},
            max_attempts=5,
        )
        for i in range(opts.count)
    ]
    if opts.batch:
        reply = stub.EnqueueBatch(jobs_pb2.EnqueueBatchRequest(namespace=opts.namespace, jobs=jobs), timeout=10)
        for result in reply.results:
            # A bad item fails only itself: each result holds `ok` or `error`.
            if result.HasField("error"):
                raise SystemExit(f"jobs[{result.index}]: {result.error.message}")
            print(f"enqueued {result.ok.job_id} {jobs_pb2.EnqueueOutcome.Name(result.ok.outcome)}", flush=True)
    else:
        for job in jobs:
            reply = stub.Enqueue(job, timeout=10)
            print(f"enqueued {reply.job_id} {jobs_pb2.EnqueueOutcome.Name(reply.outcome)}", flush=True)


if __name__ == "__main__":
    common.run(main)
