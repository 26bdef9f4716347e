// The protobuf messages and the gRPC methods of dueq.v1.QueueService, built at load
// time by protobufjs from the committed descriptor (gen/descriptor.ts, generated from
// proto/ by scripts/generate.js). Messages are plain objects with camelCase fields;
// encoding takes them as they are (no conversion pass), decoding returns protobufjs
// message objects whose unset fields read as their defaults.

import * as protobuf from "protobufjs";

import { descriptor } from "./gen/descriptor";

const root = protobuf.Root.fromJSON(descriptor as protobuf.INamespace);
root.resolveAll();

/** A protobufjs message type of the dueq.v1 package. */
export type MessageType = protobuf.Type;

/** Looks up `dueq.v1.<name>`. */
export function messageType(name: string): MessageType {
  return root.lookupType(`dueq.v1.${name}`);
}

/** One method of the service: its path, and how its messages travel. */
export interface Method {
  readonly path: string;
  readonly serialize: (value: object) => Buffer;
  readonly deserialize: (bytes: Buffer) => any;
}

const methods = new Map<string, Method>();

/** The method `name` of dueq.v1.QueueService (e.g. "Enqueue"). */
export function method(name: string): Method {
  let m = methods.get(name);
  if (!m) {
    const service = root.lookupService("dueq.v1.QueueService");
    const def = service.methods[name];
    if (!def) throw new Error(`dueq.v1.QueueService has no method ${name}`);
    const req = root.lookupType(def.requestType);
    const res = root.lookupType(def.responseType);
    m = {
      path: `/dueq.v1.QueueService/${name}`,
      serialize: (value) => req.encode(value as protobuf.Message).finish() as Buffer,
      deserialize: (bytes) => res.decode(bytes),
    };
    methods.set(name, m);
  }
  return m;
}

/** A google.protobuf.Duration from milliseconds. */
export function duration(ms: number): { seconds: number; nanos: number } {
  const seconds = Math.floor(ms / 1000);
  return { seconds, nanos: Math.round((ms - seconds * 1000) * 1e6) };
}

/** A google.protobuf.Timestamp from a Date. */
export function timestamp(at: Date): { seconds: number; nanos: number } {
  return duration(at.getTime());
}

/** A 64-bit integer as protobufjs decodes it (a number, or a Long) as a number. */
export function num(value: unknown): number {
  if (typeof value === "number") return value;
  if (value && typeof (value as { toNumber?: unknown }).toNumber === "function") {
    return (value as { toNumber(): number }).toNumber();
  }
  return Number(value ?? 0);
}

/** A decoded google.protobuf.Timestamp (or Duration) as a Date; undefined when unset. */
export function toDate(value: { seconds?: unknown; nanos?: number } | null | undefined): Date | undefined {
  if (!value) return undefined;
  return new Date(num(value.seconds) * 1000 + Math.floor((value.nanos ?? 0) / 1e6));
}

/** A decoded google.protobuf.Duration in milliseconds; undefined when unset. */
export function toMs(value: { seconds?: unknown; nanos?: number } | null | undefined): number | undefined {
  if (!value) return undefined;
  return num(value.seconds) * 1000 + Math.floor((value.nanos ?? 0) / 1e6);
}

/** Looks up the enum `dueq.v1.<name>`. */
export function enumType(name: string): protobuf.Enum {
  return root.lookupEnum(`dueq.v1.${name}`);
}
