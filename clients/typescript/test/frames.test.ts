import { test } from "node:test";
import * as assert from "node:assert/strict";

import { frame, FrameReader } from "../src/work-stream";

const messages = [Buffer.from("a"), Buffer.alloc(0), Buffer.from("hello world"), Buffer.alloc(70_000, 7)];

test("frames split anywhere come out whole, in order", () => {
  const bytes = frame(messages);
  for (const cut of [1, 2, 5, 6, 7, 13, 1000]) {
    const reader = new FrameReader();
    const out: Buffer[] = [];
    for (let at = 0; at < bytes.length; at += cut) {
      assert.equal(reader.push(bytes.subarray(at, at + cut), (m) => out.push(Buffer.from(m))), undefined);
    }
    assert.deepEqual(out, messages, `cut every ${cut} bytes`);
  }
});

test("a compressed frame is refused", () => {
  const bytes = frame([Buffer.from("x")]);
  bytes[0] = 1;
  assert.match(new FrameReader().push(bytes, () => assert.fail("no frame")) ?? "", /compressed/);
});
