import { test } from "node:test";
import * as assert from "node:assert/strict";

import { Client, InvalidArgument, Unavailable, type FlowNode } from "../src/index";
import { flowRequest, toDependencies, toFlowStatus } from "../src/flow";
import { messageType } from "../src/proto";
import { toJob } from "../src/types";

// Nothing listens on port 1: a request that went out would fail Unavailable, so an
// InvalidArgument proves the client refused it before sending.
const client = new Client({ addr: "http://127.0.0.1:1", namespace: "ns", maxPayloadSize: 64, timeoutMs: 2000 });

const node = (ref: string, after: string[] = [], extra: Partial<FlowNode> = {}): FlowNode => ({
  ref,
  job: { queue: "q", name: ref, payload: JSON.stringify({ ref }) },
  after,
  ...extra,
});

async function refused(p: Promise<unknown>, field: string): Promise<void> {
  await assert.rejects(p, (e: unknown) => {
    assert.ok(e instanceof InvalidArgument, String(e));
    assert.ok(e.details.startsWith(`${field}:`), e.details);
    return true;
  });
}

test("flowRequest builds the EnqueueFlowRequest: nodes, after, rules, the job's fields", () => {
  const req: any = flowRequest(
    client,
    [node("a"), node("b", ["a"], { onDependencyFailure: "run" }), node("c", ["b"], { onDependencyFailure: "skip" })],
    "f-1",
  );
  assert.equal(req.namespace, "ns");
  assert.equal(req.flowId, "f-1");
  assert.deepEqual(req.nodes.map((n: any) => n.ref), ["a", "b", "c"]);
  assert.deepEqual(req.nodes.map((n: any) => n.onDependencyFailure), [1, 2, 3]);
  assert.deepEqual(req.nodes[1].after, ["a"]);
  assert.equal(req.nodes[0].job.namespace, "");
  // It encodes as the proto message.
  const bytes = messageType("EnqueueFlowRequest").encode(req).finish();
  const back: any = messageType("EnqueueFlowRequest").decode(bytes);
  assert.equal(Buffer.from(back.nodes[0].job.payload).toString(), '{"ref":"a"}');
  assert.equal((flowRequest(client, [node("a")], undefined) as any).flowId, "");
});

test("enqueueFlow refuses bad nodes naming nodes[i].field, before sending", async () => {
  await refused(client.enqueueFlow([]), "nodes");
  await refused(client.enqueueFlow([node("a"), node("")]), "nodes[1].ref");
  await refused(client.enqueueFlow([node("r".repeat(129))]), "nodes[0].ref");
  await refused(client.enqueueFlow([node("a"), { ref: "b", job: { queue: "", name: "n" } }]), "nodes[1].job.queue");
  await refused(client.enqueueFlow([{ ref: "a", job: { queue: "q", name: "n", payload: Buffer.alloc(65) } }]), "nodes[0].job.payload");
  await refused(client.enqueueFlow([node("a", [], { onDependencyFailure: "ignore" as any })]), "nodes[0].onDependencyFailure");
  await refused(client.enqueueFlow([node("a", [""])]), "nodes[0].after[0]");
  await refused(client.enqueueFlow([node("a")], ""), "flowId");
  await refused(client.getFlow(""), "flowId");
  await refused(client.cancelFlow(""), "flowId");
  await refused(client.retryFlow(""), "flowId");
  await assert.rejects(client.enqueueFlow([node("a"), node("b", ["a"])]), (e) => e instanceof Unavailable);
});

test("GetFlow pages become one FlowStatus; a claim's dependencies get their state names", () => {
  const status = toFlowStatus([
    { flowId: "f", state: 3, nodeCount: 2, unfinished: 0, failed: 1, cancelled: false, nodes: [{ ref: "a", jobId: "j-a", queue: "q", name: "a", state: 5, after: [], onDependencyFailure: 0, attempts: 1, failedDependency: "" }] },
    { nodes: [{ ref: "b", jobId: "j-b", queue: "q", name: "b", state: 8, after: ["a"], onDependencyFailure: 3, attempts: 0, failedDependency: "a" }] },
  ]);
  assert.equal(status.state, "FAILED");
  assert.deepEqual(status.nodes.map((n) => [n.ref, n.state, n.onDependencyFailure, n.failedDependency]), [
    ["a", "DEAD", "cancel", ""],
    ["b", "SKIPPED", "skip", "a"],
  ]);
  assert.deepEqual(toDependencies({ dependencies: [{ ref: "a", jobId: "j-a", state: 7 }] }), [{ ref: "a", jobId: "j-a", state: "WAITING" }]);
  assert.deepEqual(toDependencies({}), []);
});

test("a stored job shows its flow and the WAITING and SKIPPED states", () => {
  const Job = messageType("Job");
  const waiting = toJob(Job.decode(Job.encode({ jobId: "j", state: 7, flowId: "f", flowRef: "a" }).finish()));
  assert.deepEqual([waiting.state, waiting.flowId, waiting.flowRef], ["WAITING", "f", "a"]);
  const skipped = toJob(Job.decode(Job.encode({ jobId: "j", state: 8 }).finish()));
  assert.deepEqual([skipped.state, skipped.flowId, skipped.flowRef], ["SKIPPED", "", ""]);
});
