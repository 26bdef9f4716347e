import { test } from "node:test";
import * as assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import * as path from "node:path";

import { Client, InvalidArgument, Worker } from "../src/index";

// Nothing listens on port 1: a request that went out would fail Unavailable, so an
// InvalidArgument proves the client refused it before sending.
const client = new Client({ addr: "http://127.0.0.1:1", maxPayloadSize: 8 });

async function refused(p: Promise<unknown>, field: string): Promise<void> {
  await assert.rejects(p, (e: unknown) => {
    assert.ok(e instanceof InvalidArgument, String(e));
    assert.ok(e.details.startsWith(`${field}:`), e.details);
    return true;
  });
}

test("enqueue refuses an empty queue or name and a payload over maxPayloadSize, naming the field", async () => {
  await refused(client.enqueue("", "n", "x"), "queue");
  await refused(client.enqueue("q", "", "x"), "name");
  await refused(client.enqueue("q", "n", Buffer.alloc(9)), "payload");
  await refused(client.enqueueJson("q", "n", "x".repeat(20)), "payload");
  await refused(client.enqueueJson("q", "n", undefined), "payload");
  await refused(client.enqueue("q", "n", "x", { delayMs: 1, runAt: new Date() }), "delayMs");
});

test("enqueueBatch names the item", async () => {
  await refused(
    client.enqueueBatch([
      { queue: "q", name: "a" },
      { queue: "", name: "b" },
    ]),
    "jobs[1].queue",
  );
});

test("the worker checks its settings", () => {
  assert.throws(() => new Worker(client, [], () => {}), /queues/);
  assert.throws(() => new Worker(client, ["q", ""], () => {}), /queues\[1\]/);
  assert.throws(() => new Worker(client, "q", () => {}, { concurrency: 0 }), /concurrency/);
});

test("src/gen/descriptor.ts is what scripts/generate.js makes of proto/", () => {
  const root = path.resolve(__dirname, "..", "..");
  execFileSync(process.execPath, [path.join(root, "scripts", "generate.js"), "--check"], { stdio: "pipe" });
});
