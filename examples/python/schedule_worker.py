#!/usr/bin/env python3
"""A dueq schedule worker in Python: upsert a schedule once, then claim its due
occurrences with a lease (ClaimDueSchedule) and ack each (AckOccurrence).

    python3 examples/python/schedule_worker.py --target localhost:50051 \
        --namespace shop --count 2

The schedule (--schedule-id, default py-heartbeat) fires every --every seconds.
--count N exits after N occurrences (0: run until Ctrl-C). An occurrence not acked
within its lease is handed to the next leased claim (at-least-once): use
occurrence_id as the idempotency key of the work.
"""

import os

import common
import stubs


def main():
    p = common.parser(__doc__.splitlines()[0])
    p.add_argument("--schedule-id", default="py-heartbeat")
    p.add_argument("--every", type=int, default=1, help="seconds between occurrences")
    p.add_argument("--worker-id", default=f"python-{os.getpid()}")
    opts = p.parse_args()

    stubs.load()
    from dueq.v1 import queue_pb2, queue_pb2_grpc
    from google.protobuf.duration_pb2 import Duration

    with common.channel(opts.target) as channel:
        stub = queue_pb2_grpc.QueueServiceStub(channel)
        # Idempotent: a second run finds the schedule and keeps its next run.
        reply = stub.UpsertSchedule(
            queue_pb2.UpsertScheduleRequest(
                namespace=opts.namespace,
                schedule=queue_pb2.Schedule(
                    id=opts.schedule_id,
                    every=Duration(seconds=opts.every),
                    job_name="heartbeat",
                    payload=b"from schedule_worker.py",
                ),
            ),
            timeout=10,
        )
        print(f"schedule {reply.schedule.id} (created: {reply.created})", flush=True)
        acked = 0
        while opts.count == 0 or acked < opts.count:
            claim = stub.ClaimDueSchedule(
                queue_pb2.ClaimDueScheduleRequest(
                    namespace=opts.namespace,
                    worker_id=opts.worker_id,
                    wait=Duration(seconds=20),
                    lease=Duration(seconds=30),
                ),
                timeout=25,
            )
            if not claim.HasField("occurrence"):
                continue  # nothing came due within the wait
            occ = claim.occurrence
            due = occ.due_time.ToDatetime().isoformat()
            print(f"occurrence {occ.occurrence_id} of {occ.schedule.id}: run {occ.run_number}, due {due}", flush=True)
            stub.AckOccurrence(
                queue_pb2.AckOccurrenceRequest(
                    namespace=opts.namespace, occurrence_id=occ.occurrence_id, lease_token=occ.lease_token
                ),
                timeout=10,
            )
            print(f"acked {occ.occurrence_id}", flush=True)
            acked += 1


if __name__ == "__main__":
    common.run(main)
