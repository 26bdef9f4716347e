"""Flows without a service: `FlowNode` builds the `EnqueueFlowRequest` the service
takes, bad input is InvalidArgument naming `nodes[i].<field>` before anything is
sent (the client points at a port nothing listens on: a sent call would be
Unavailable), and a claimed node's job handle shows its flow, dependencies and their
results."""

import time
import unittest

import dueq
from dueq._flow import FlowStatus, flow_request
from dueq.v1 import jobs_pb2
from dueq.worker import Job

NOWHERE = "http://127.0.0.1:1"


def node(ref, after=(), **kwargs):
    return dueq.FlowNode(ref, dueq.JobSpec.json("q", ref, {"ref": ref}), after=list(after), **kwargs)


class FlowRequests(unittest.TestCase):
    def test_the_nodes_reach_the_request(self):
        req = flow_request(
            [node("a"), node("b", ["a"], on_dependency_failure="run"), node("c", ["b"], on_dependency_failure="skip")],
            "f-1", "ns", 1024,
        )
        self.assertEqual(req.namespace, "ns")
        self.assertEqual(req.flow_id, "f-1")
        self.assertEqual([n.ref for n in req.nodes], ["a", "b", "c"])
        self.assertEqual(list(req.nodes[1].after), ["a"])
        self.assertEqual(req.nodes[0].job.payload, b'{"ref":"a"}')
        self.assertEqual(req.nodes[0].job.namespace, "")
        rules = [n.on_dependency_failure for n in req.nodes]
        self.assertEqual(rules, [jobs_pb2.DEPENDENCY_FAILURE_CANCEL, jobs_pb2.DEPENDENCY_FAILURE_RUN,
                                 jobs_pb2.DEPENDENCY_FAILURE_SKIP])

    def test_a_job_given_as_a_dict(self):
        req = flow_request([dueq.FlowNode("a", {"queue": "q", "name": "n", "priority": 3})], None, "ns", 1024)
        self.assertEqual((req.nodes[0].job.queue, req.nodes[0].job.priority), ("q", 3))
        self.assertEqual(req.flow_id, "")


class FlowValidation(unittest.TestCase):
    def setUp(self):
        self.client = dueq.Client(NOWHERE, namespace="t", timeout=2)

    def tearDown(self):
        self.client.close()

    def assert_invalid(self, field, nodes, flow_id=None):
        with self.assertRaises(dueq.InvalidArgument) as caught:
            self.client.enqueue_flow(nodes, flow_id=flow_id)
        self.assertTrue(caught.exception.message.startswith(field + ":"), caught.exception.message)

    def test_no_nodes(self):
        self.assert_invalid("nodes", [])

    def test_an_empty_ref(self):
        self.assert_invalid("nodes[1].ref", [node("a"), node("")])

    def test_a_ref_over_128_bytes(self):
        self.assert_invalid("nodes[0].ref", [node("r" * 129)])

    def test_a_bad_job_is_named_inside_its_node(self):
        bad = dueq.FlowNode("b", dueq.JobSpec("", "n"))
        self.assert_invalid("nodes[1].job.queue", [node("a"), bad])

    def test_an_unknown_rule(self):
        self.assert_invalid("nodes[0].on_dependency_failure", [node("a", on_dependency_failure="ignore")])

    def test_after_as_a_string(self):
        self.assert_invalid("nodes[0].after", [dueq.FlowNode("a", dueq.JobSpec("q", "n"), after="b")])

    def test_an_empty_ref_in_after(self):
        self.assert_invalid("nodes[0].after[0]", [node("a", [""])])

    def test_an_empty_flow_id(self):
        self.assert_invalid("flow_id", [node("a")], flow_id="")

    def test_an_empty_flow_id_for_the_other_calls(self):
        for call in (self.client.get_flow, self.client.cancel_flow, self.client.retry_flow):
            with self.assertRaises(dueq.InvalidArgument):
                call("")

    def test_a_good_flow_is_sent(self):
        with self.assertRaises(dueq.Unavailable):
            self.client.enqueue_flow([node("a"), node("b", ["a"])])


class FlowViews(unittest.TestCase):
    def test_get_flow_pages_become_one_status(self):
        one = jobs_pb2.GetFlowResponse(flow_id="f", state=jobs_pb2.FLOW_STATE_FAILED, node_count=2, failed=1,
                                       next_page_token="t")
        one.nodes.add(ref="a", job_id="j-a", state=jobs_pb2.JOB_STATE_DEAD)
        two = jobs_pb2.GetFlowResponse()
        two.nodes.add(ref="b", job_id="j-b", state=jobs_pb2.JOB_STATE_SKIPPED, after=["a"], failed_dependency="a",
                      on_dependency_failure=jobs_pb2.DEPENDENCY_FAILURE_SKIP)
        status = FlowStatus.from_pages([one, two])
        self.assertEqual((status.state, status.node_count, status.failed), ("failed", 2, 1))
        self.assertEqual([n.ref for n in status.nodes], ["a", "b"])
        b = status.node("b")
        self.assertEqual((b.state, b.after, b.failed_dependency, b.on_dependency_failure),
                         ("skipped", ["a"], "a", "skip"))
        self.assertEqual(status.node("a").on_dependency_failure, "cancel")
        with self.assertRaises(KeyError):
            status.node("c")

    def test_a_claimed_node_shows_its_flow_and_dependencies(self):
        msg = jobs_pb2.ClaimedJob(job_id="j-d", lease_token="t", attempt=1, flow_id="f", flow_ref="d")
        msg.lease_deadline.seconds = int(time.time()) + 30
        msg.dependencies.add(ref="b", job_id="j-b", state=jobs_pb2.JOB_STATE_COMPLETED)
        msg.dependencies.add(ref="c", job_id="j-c", state=jobs_pb2.JOB_STATE_DEAD)
        msg.dependency_results["b"] = b'{"n":1}'
        job = Job(msg, None, None, time.monotonic())
        self.assertEqual((job.flow_id, job.flow_ref), ("f", "d"))
        self.assertEqual(job.dependencies, [dueq.Dependency("b", "j-b", "completed"),
                                            dueq.Dependency("c", "j-c", "dead")])
        self.assertEqual(job.dependency_results, {"b": b'{"n":1}'})
        self.assertEqual(job.dependency_json("b"), {"n": 1})
        with self.assertRaises(KeyError):
            job.dependency_json("c")

    def test_the_new_states_have_names(self):
        enqueued = dueq.Enqueued.from_proto(jobs_pb2.EnqueueResponse(job_id="j", state=jobs_pb2.JOB_STATE_WAITING))
        self.assertEqual(enqueued.state, "waiting")
        job = jobs_pb2.Job(job_id="j", state=jobs_pb2.JOB_STATE_SKIPPED, flow_id="f", flow_ref="a")
        self.assertEqual((job.flow_id, job.flow_ref), ("f", "a"))

    def test_a_job_outside_a_flow_has_none(self):
        msg = jobs_pb2.ClaimedJob(job_id="j", lease_token="t", attempt=1)
        job = Job(msg, None, None, time.monotonic())
        self.assertEqual((job.flow_id, job.flow_ref, job.dependencies, job.dependency_results), ("", "", [], {}))


if __name__ == "__main__":
    unittest.main()
