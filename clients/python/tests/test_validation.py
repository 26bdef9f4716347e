"""Bad input is InvalidArgument naming the field, raised before anything is sent:
the clients here point at a port nothing listens on, so a call that was sent would
be Unavailable instead."""

import asyncio
import unittest

import dueq
from dueq.worker import _result_bytes

NOWHERE = "http://127.0.0.1:1"


class ProducerValidation(unittest.TestCase):
    def setUp(self):
        self.client = dueq.Client(NOWHERE, namespace="t", timeout=2)

    def tearDown(self):
        self.client.close()

    def assert_invalid(self, field, call, *args, **kwargs):
        with self.assertRaises(dueq.InvalidArgument) as caught:
            call(*args, **kwargs)
        self.assertTrue(caught.exception.message.startswith(field + ":"), caught.exception.message)
        self.assertIsInstance(caught.exception, dueq.DueqError)

    def test_an_empty_queue(self):
        self.assert_invalid("queue", self.client.enqueue, "", "n", b"")

    def test_an_empty_name(self):
        self.assert_invalid("name", self.client.enqueue, "q", "", b"")

    def test_a_payload_over_the_limit(self):
        # The default limit is the service's default: 1 MiB.
        self.assert_invalid("payload", self.client.enqueue, "q", "n", bytes(1024 * 1024 + 1))

    def test_a_payload_at_the_limit_is_sent(self):
        with self.assertRaises(dueq.Unavailable):
            self.client.enqueue("q", "n", bytes(1024 * 1024))

    def test_a_lower_limit_of_the_client(self):
        small = dueq.Client(NOWHERE, max_payload_size=10)
        self.assert_invalid("payload", small.enqueue, "q", "n", bytes(11))

    def test_a_str_payload_is_not_guessed(self):
        self.assert_invalid("payload", self.client.enqueue, "q", "n", "text")

    def test_a_value_json_cannot_encode(self):
        self.assert_invalid("payload", self.client.enqueue_json, "q", "n", {"x": object()})

    def test_a_bad_backoff_kind(self):
        self.assert_invalid("backoff.kind", self.client.enqueue, "q", "n", b"", backoff=dueq.Backoff("linear"))

    def test_delay_and_run_at_together(self):
        self.assert_invalid("delay", self.client.enqueue, "q", "n", b"", delay=1, run_at=0)

    def test_a_batch_item_names_its_index(self):
        jobs = [dueq.JobSpec("q", "n"), dueq.JobSpec("", "n")]
        self.assert_invalid("jobs[1].queue", self.client.enqueue_batch, jobs)

    def test_an_empty_batch(self):
        self.assert_invalid("jobs", self.client.enqueue_batch, [])

    def test_an_empty_job_id(self):
        self.assert_invalid("job_id", self.client.get_job, "")

    def test_a_schedule_needs_one_timing(self):
        self.assert_invalid("cron", self.client.upsert_schedule, "s")
        self.assert_invalid("cron", self.client.upsert_schedule, "s", cron="* * * * *", every=60)

    def test_the_async_client_refuses_before_sending(self):
        async def go():
            client = dueq.AsyncClient(NOWHERE)
            try:
                with self.assertRaises(dueq.InvalidArgument) as caught:
                    await client.enqueue("", "n", b"")
                self.assertTrue(caught.exception.message.startswith("queue:"))
                with self.assertRaises(dueq.Unavailable):
                    await client.enqueue("q", "n", b"")
            finally:
                await client.close()

        asyncio.run(go())


class WorkerValidation(unittest.TestCase):
    def setUp(self):
        self.client = dueq.Client(NOWHERE)

    async def handler(self, job):
        return None

    def assert_invalid(self, field, *args, **kwargs):
        with self.assertRaises(dueq.InvalidArgument) as caught:
            dueq.Worker(self.client, *args, **kwargs)
        self.assertTrue(caught.exception.message.startswith(field), caught.exception.message)

    def test_no_queues(self):
        self.assert_invalid("queues", [], self.handler)

    def test_an_empty_queue_name(self):
        self.assert_invalid("queues[1]", ["a", ""], self.handler)

    def test_concurrency_out_of_range(self):
        self.assert_invalid("concurrency", "q", self.handler, concurrency=0)
        self.assert_invalid("concurrency", "q", self.handler, concurrency=1001)

    def test_a_bad_lease(self):
        self.assert_invalid("lease", "q", self.handler, lease=-1)

    def test_a_handler_that_is_not_callable(self):
        self.assert_invalid("handler", "q", "not a function")

    def test_not_a_client(self):
        with self.assertRaises(dueq.InvalidArgument) as caught:
            dueq.Worker("http://x:1", "q", self.handler)
        self.assertTrue(caught.exception.message.startswith("client:"))

    def test_an_unknown_transport(self):
        self.assert_invalid("transport", "q", self.handler, transport="carrier pigeon")

    def test_a_single_queue_name_is_a_list_of_one(self):
        self.assertEqual(dueq.Worker(self.client, "q", self.handler).queues, ["q"])


class HandlerResults(unittest.TestCase):
    def test_none_is_an_empty_result(self):
        self.assertEqual(_result_bytes(None), b"")

    def test_bytes_are_kept(self):
        self.assertEqual(_result_bytes(b"\x00\x01"), b"\x00\x01")

    def test_json_is_encoded_only_when_asked(self):
        self.assertEqual(_result_bytes(dueq.Json({"ok": True})), b'{"ok":true}')
        with self.assertRaises(dueq.InvalidArgument) as caught:
            _result_bytes({"ok": True})
        self.assertTrue(caught.exception.message.startswith("result:"))

    def test_a_result_over_64_kib(self):
        with self.assertRaises(dueq.InvalidArgument):
            _result_bytes(bytes(64 * 1024 + 1))


if __name__ == "__main__":
    unittest.main()
