import { test } from "node:test";
import * as assert from "node:assert/strict";
import { status } from "@grpc/grpc-js";

import * as dueq from "../src/index";
import { errorFor, fromGrpc } from "../src/errors";

const NAMES: Array<[number, string]> = [
  [status.CANCELLED, "Cancelled"],
  [status.UNKNOWN, "Unknown"],
  [status.INVALID_ARGUMENT, "InvalidArgument"],
  [status.DEADLINE_EXCEEDED, "DeadlineExceeded"],
  [status.NOT_FOUND, "NotFound"],
  [status.ALREADY_EXISTS, "AlreadyExists"],
  [status.PERMISSION_DENIED, "PermissionDenied"],
  [status.RESOURCE_EXHAUSTED, "ResourceExhausted"],
  [status.FAILED_PRECONDITION, "FailedPrecondition"],
  [status.ABORTED, "Aborted"],
  [status.OUT_OF_RANGE, "OutOfRange"],
  [status.UNIMPLEMENTED, "Unimplemented"],
  [status.INTERNAL, "Internal"],
  [status.UNAVAILABLE, "Unavailable"],
  [status.DATA_LOSS, "DataLoss"],
  [status.UNAUTHENTICATED, "Unauthenticated"],
];

test("each gRPC code is its own exported DueqError subclass, named after the code", () => {
  for (const [code, name] of NAMES) {
    const e = errorFor(code, "why");
    const Class = (dueq as unknown as Record<string, new (...a: never[]) => unknown>)[name];
    assert.ok(e instanceof Class, name);
    assert.ok(e instanceof dueq.DueqError);
    assert.equal(e.name, name);
    assert.equal(e.code, code);
    assert.equal(e.details, "why");
  }
});

test("a grpc-js ServiceError becomes its class, keeping code and message", () => {
  const raw = Object.assign(new Error("7 PERMISSION_DENIED: role reader"), {
    code: status.PERMISSION_DENIED,
    details: "role reader may not enqueue",
  });
  const e = fromGrpc(raw);
  assert.ok(e instanceof dueq.PermissionDenied);
  assert.equal((e as dueq.DueqError).details, "role reader may not enqueue");
  assert.equal((e as dueq.DueqError).cause, raw);
  const other = new TypeError("not grpc");
  assert.equal(fromGrpc(other), other);
});

test("an unknown code is a plain DueqError", () => {
  const e = errorFor(99, "odd");
  assert.equal(e.constructor, dueq.DueqError);
  assert.equal(e.code, 99);
});

test("NonRetryable is an Error a handler throws", () => {
  const e = new dueq.NonRetryable("bad input");
  assert.ok(e instanceof Error);
  assert.equal(e.name, "NonRetryable");
});
