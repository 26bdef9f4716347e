"""The worker's bookkeeping without a service: what it sends on the stream for
progress and lease extensions (white-box: the stream is a list)."""

import asyncio
import time
import unittest

import dueq
from dueq.v1 import jobs_pb2
from dueq.worker import Job


def claimed(job_id, lease_seconds):
    msg = jobs_pb2.ClaimedJob(job_id=job_id, lease_token="t-" + job_id, attempt=1)
    deadline = time.time() + lease_seconds
    msg.lease_deadline.seconds = int(deadline)
    msg.lease_deadline.nanos = int((deadline % 1) * 1e9)
    return msg


class Harness:
    """A Worker whose stream is a list of the requests it sent."""

    def __init__(self, lease=None):
        async def handler(job):
            return None

        self.worker = w = dueq.Worker(dueq.Client("http://127.0.0.1:1"), "q", handler, lease=lease)
        w._loop = asyncio.get_running_loop()
        w._running, w._answers, w._unary = {}, {}, set()
        w._outbox, w._writer_wake, w._stopping = [], None, False
        w._call = object()  # "connected"
        w._namespace = "ns"

    def job(self, job_id, lease_seconds):
        job = Job(claimed(job_id, lease_seconds), self.worker, self.worker.lease, time.monotonic())
        self.worker._running[job.id] = job
        return job

    def sent(self):
        out, self.worker._outbox = self.worker._outbox, []
        return [r.extend for r in out if r.WhichOneof("request") == "extend"]


class Progress(unittest.TestCase):
    def test_progress_is_sent_at_once_and_merged_while_one_is_in_flight(self):
        async def go():
            h = Harness()
            job = h.job("j", 30)
            job.progress(fraction=0.1)
            await asyncio.sleep(0)
            first = h.sent()
            self.assertEqual(len(first), 1)
            self.assertAlmostEqual(first[0].progress.fraction, 0.1)
            # In flight: the next two calls wait, merged, the latest values winning.
            job.progress(fraction=0.2, message="a")
            job.progress(fraction=0.3)
            await asyncio.sleep(0)
            self.assertEqual(h.sent(), [])
            h.worker._extended(job, 0, "", jobs_pb2.ExtendLeaseResponse())
            second = h.sent()
            self.assertEqual(len(second), 1)
            self.assertAlmostEqual(second[0].progress.fraction, 0.3)
            self.assertEqual(second[0].progress.message, "a")
            self.assertEqual(second[0].lease_token, "t-j")

        asyncio.run(go())


class LeaseExtension(unittest.TestCase):
    def test_only_jobs_with_less_than_a_third_of_their_lease_left_are_extended(self):
        async def go():
            h = Harness(lease=3.0)
            fresh = h.job("fresh", 3.0)
            old = h.job("old", 0.5)  # claimed long ago: 0.5 s of 3 s left
            scan = asyncio.get_running_loop().create_task(h.worker._scan())
            h.worker._min_lease = 3.0
            await asyncio.sleep(0.4)  # one tick (0.3 s)
            scan.cancel()
            sent = h.sent()
            self.assertEqual([e.job_id for e in sent], ["old"])
            self.assertEqual(sent[0].lease.seconds, 3)
            self.assertTrue(old._extending and not fresh._extending)

        asyncio.run(go())

    def test_a_cancel_on_the_extension_reaches_the_handler(self):
        async def go():
            h = Harness()
            job = h.job("j", 30)
            job._extending = True
            h.worker._extended(job, 0, "", jobs_pb2.ExtendLeaseResponse(cancel_requested=True))
            self.assertTrue(job.cancelled.is_set())

        asyncio.run(go())

    def test_a_lost_lease_sets_cancelled_and_stops_extending(self):
        async def go():
            h = Harness()
            job = h.job("j", 30)
            h.worker._extended(job, 10, "stale token", None)
            self.assertTrue(job._lost and job.cancelled.is_set())

        asyncio.run(go())


if __name__ == "__main__":
    unittest.main()
