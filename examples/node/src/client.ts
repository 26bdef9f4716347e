// What the three examples share: loading the proto with @grpc/proto-loader, the
// command line, and a promise around grpc-js's callback calls.
//
// The types in ./generated come from the same proto/ files by
// `npm run generate` (proto-loader-gen-types) with the same options as LOAD_OPTIONS
// below: if the two disagree, the types lie (see README.md).

import * as path from "node:path";
import { parseArgs } from "node:util";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";

import type { ProtoGrpcType } from "./generated/queue";
import type { QueueServiceClient } from "./generated/dueq/v1/QueueService";

export type { QueueServiceClient };

// dist/client.js -> the repository's proto/ directory.
const PROTO_DIR = process.env.DUEQ_PROTO_DIR ?? path.resolve(__dirname, "..", "..", "..", "proto");

const LOAD_OPTIONS: protoLoader.Options = {
  // Field names as in the .proto (job_id, lease_token). Without it proto-loader
  // expects and returns camelCase (jobId) and silently drops snake_case fields.
  keepCase: true,
  // 64-bit integers (uint64 run_count, Timestamp seconds) as decimal strings, not
  // Long objects: a JavaScript number loses precision above 2^53.
  longs: String,
  // Enums as their names ("JOB_STATE_PENDING"), not numbers.
  enums: String,
  // Unset fields come back with their default (0, "", []), as in other languages.
  defaults: true,
  // A oneof's chosen field name is set (e.g. Schedule.timing = "every").
  oneofs: true,
  // Where `import "dueq/v1/jobs.proto"` is resolved; google/protobuf/* is built in.
  includeDirs: [PROTO_DIR],
};

// The largest reply this client accepts; the server's --max-message-size default.
const MAX_MESSAGE = 4 * 1024 * 1024;

export function connect(target: string): QueueServiceClient {
  const definition = protoLoader.loadSync("dueq/v1/queue.proto", LOAD_OPTIONS);
  const loaded = grpc.loadPackageDefinition(definition) as unknown as ProtoGrpcType;
  return new loaded.dueq.v1.QueueService(target, grpc.credentials.createInsecure(), {
    "grpc.max_receive_message_length": MAX_MESSAGE,
  });
}

/** One unary call as a promise, with a deadline; `started` receives the call (to cancel it). */
export function call<Res>(
  start: (options: grpc.CallOptions, callback: grpc.requestCallback<Res>) => grpc.ClientUnaryCall,
  timeoutSeconds: number,
  started?: (call: grpc.ClientUnaryCall) => void,
): Promise<Res> {
  return new Promise((resolve, reject) => {
    const options = { deadline: Date.now() + timeoutSeconds * 1000 };
    const pending = start(options, (error, reply) => {
      if (error) reject(error);
      else resolve(reply as Res);
    });
    started?.(pending);
  });
}

export function isStatus(error: unknown, code: grpc.status): boolean {
  return typeof error === "object" && error !== null && (error as grpc.ServiceError).code === code;
}

export interface Options {
  target: string;
  namespace: string;
  queue: string;
  count: number;
  batch: boolean;
  workerId: string;
}

/** --target, --namespace (or DUEQ_TARGET, DUEQ_NAMESPACE), --queue, --count, --batch, --worker-id. */
export function options(defaultCount: number): Options {
  const { values } = parseArgs({
    options: {
      target: { type: "string", default: process.env.DUEQ_TARGET ?? "localhost:50051" },
      namespace: { type: "string", default: process.env.DUEQ_NAMESPACE ?? "shop" },
      queue: { type: "string", default: "emails" },
      count: { type: "string", default: String(defaultCount) },
      batch: { type: "boolean", default: false },
      "worker-id": { type: "string", default: `node-${process.pid}` },
    },
  });
  const count = Number(values.count);
  if (!Number.isInteger(count) || count < 0) {
    throw new Error(`--count must be a whole number, got ${values.count}`);
  }
  return {
    target: values.target!,
    namespace: values.namespace!,
    queue: values.queue!,
    count,
    batch: values.batch!,
    workerId: values["worker-id"]!,
  };
}

/** Runs main; a failure prints its message (no stack for a gRPC status) and exits 1. */
export function run(main: () => Promise<void>): void {
  main().catch((error: unknown) => {
    const status = error as Partial<grpc.ServiceError>;
    if (status.code !== undefined && status.details !== undefined) {
      console.error(`error: ${grpc.status[status.code]}: ${status.details}`);
    } else {
      console.error(error);
    }
    process.exit(1);
  });
}
