// The producer API's option and result types, and their conversion to and from the
// protobuf messages (camelCase fields, Durations and Timestamps, enum numbers).

import type { Client } from "./client";
import { invalid } from "./errors";
import { duration, enumType, num, timestamp, toDate, toMs } from "./proto";
import * as protobuf from "protobufjs";

/** A job's place in its lifecycle (proto JobState without its prefix). */
export type JobState =
  | "UNSPECIFIED"
  | "PENDING"
  | "DELAYED"
  | "ACTIVE"
  | "COMPLETED"
  | "DEAD"
  | "CANCELLED"
  /** A flow node waiting for its dependencies. */
  | "WAITING"
  /** A flow node not run: a dependency failed under `onDependencyFailure: "skip"`. */
  | "SKIPPED";
/** What an enqueue did (proto EnqueueOutcome without its prefix). */
export type EnqueueOutcome = "UNSPECIFIED" | "CREATED" | "DUPLICATE" | "REPLACED" | "EXTENDED";
/** A schedule's status (proto ScheduleStatus without its prefix). */
export type ScheduleStatus = "UNSPECIFIED" | "ACTIVE" | "PAUSED" | "COMPLETED";

/** The wait before a retry. */
export interface Backoff {
  /** `fixed`: always `baseMs`; `exponential`: baseMs * 2^(attempt-1), at most capMs. */
  kind: "fixed" | "exponential";
  baseMs: number;
  /** Exponential only: the longest wait (service default 1 hour). */
  capMs?: number;
  /** 0-1: each wait is shortened by a random fraction of up to this much. */
  jitter?: number;
}

/** Deduplication: while a job holds `key`, another enqueue with it does `mode`. */
export interface Dedup {
  key: string;
  /** How long the key holds (default 1 hour; at most 365 days). */
  ttlMs?: number;
  /** `skip` (default): answer DUPLICATE; `replace`: replace a waiting job's payload and headers; `extend`: restart the ttl. */
  mode?: "skip" | "replace" | "extend";
}

/** Options of one enqueue (all optional). */
export interface EnqueueOptions {
  /** Higher runs first (default 0). */
  priority?: number;
  /** Claimable after this long, in milliseconds. */
  delayMs?: number;
  /** Claimable at this instant. */
  runAt?: Date;
  /** Your own job id (an idempotency key): an existing id answers DUPLICATE. */
  jobId?: string;
  /** A dedup key (a string: mode skip, ttl 1 hour), or the full settings. */
  dedup?: string | Dedup;
  /** Claims before the job is dead, 1-1000 (service default 3). */
  maxAttempts?: number;
  /** The wait before a retry (service default exponential, 1 s base, 1 h cap). */
  backoff?: Backoff;
  /** String metadata for the worker. */
  headers?: Record<string, string>;
  /** The lease of a claim when the worker does not set one (service default 30 s). */
  leaseMs?: number;
}

/** One job of {@link Client.enqueueBatch}. */
export interface EnqueueItem extends EnqueueOptions {
  queue: string;
  name: string;
  /** Bytes; a string is its UTF-8 bytes. */
  payload?: Uint8Array | string;
}

/** What an enqueue did. */
export interface EnqueueResult {
  /** The new job's id, or the existing one's when not CREATED. */
  jobId: string;
  outcome: EnqueueOutcome;
  /** True when nothing new was stored (DUPLICATE, REPLACED or EXTENDED). */
  duplicate: boolean;
  /** The job's state after the call. */
  state: JobState;
}

/** A progress report of a running job (every field optional). */
export interface Progress {
  /** 0.0-1.0. */
  fraction?: number;
  /** Free text for people, up to 256 bytes. */
  message?: string;
  /** Opaque bytes (up to 64 KiB) handed to the next attempt as its `checkpoint`. */
  checkpoint?: Uint8Array;
}

/** A stored job, as {@link Client.getJob} returns it. */
export interface JobInfo {
  id: string;
  queue: string;
  name: string;
  payload: Buffer;
  headers: Record<string, string>;
  priority: number;
  state: JobState;
  /** Claims so far. */
  attempts: number;
  maxAttempts: number;
  /** Failed attempts, oldest first. */
  errors: Array<{ attempt: number; message: string; time?: Date }>;
  createTime?: Date;
  updateTime?: Date;
  runAt?: Date;
  leaseDeadline?: Date;
  finishTime?: Date;
  workerId: string;
  dedupKey: string;
  /** The latest progress its worker reported, when any. */
  progress?: Progress & { updateTime?: Date };
  /** What the handler returned (COMPLETED). */
  result: Buffer;
  cancelRequested: boolean;
  version: number;
  /** Set when the job is a node of a flow: the flow's id and the node's ref ("" otherwise). */
  flowId: string;
  flowRef: string;
}

/** A schedule's definition, for {@link Client.upsertSchedule}. Exactly one of cron or everyMs. */
export interface ScheduleSpec {
  /** 1-256 bytes; empty: the service makes one up. */
  id?: string;
  /** 5 fields, or 6 with seconds first, in `timezone`. */
  cron?: string;
  /** A fixed interval in milliseconds (at least 1000). */
  everyMs?: number;
  /** IANA zone of the cron (default UTC). */
  timezone?: string;
  startTime?: Date;
  endTime?: Date;
  /** Fire at most this many times (0: unlimited). */
  runLimit?: number;
  /** The name handed to the worker. */
  jobName?: string;
  payload?: Uint8Array | string;
  headers?: Record<string, string>;
  /** On create: start paused. */
  paused?: boolean;
  /** Leased occurrences: hand-outs at most (0: unlimited). */
  maxAttempts?: number;
}

/** A stored schedule. */
export interface Schedule {
  id: string;
  cron?: string;
  everyMs?: number;
  timezone: string;
  jobName: string;
  payload: Buffer;
  headers: Record<string, string>;
  status: ScheduleStatus;
  runCount: number;
  runLimit: number;
  lastRunTime?: Date;
  nextRunTime?: Date;
  createTime?: Date;
  updateTime?: Date;
  revision: number;
  pauseNote: string;
}

/** The name of enum value `value` of dueq.v1.`type`, without `prefix`. */
export function enumName<T extends string>(type: string, prefix: string, value: number): T {
  const e = enums.get(type) ?? enumType(type);
  enums.set(type, e);
  const name = e.valuesById[value] ?? `${prefix}UNSPECIFIED`;
  return name.slice(prefix.length) as T;
}
const enums = new Map<string, protobuf.Enum>();

const DEDUP_MODES = { skip: 1, replace: 2, extend: 3 } as const;
const BACKOFF_KINDS = { fixed: 1, exponential: 2 } as const;

/** @internal The EnqueueRequest of `item`, checked; field names start with `prefix`. */
export function enqueueRequest(client: Client, item: EnqueueItem, prefix: string): object {
  client.checkName(`${prefix}queue`, item.queue);
  client.checkName(`${prefix}name`, item.name);
  const req: Record<string, unknown> = {
    namespace: client.namespace,
    queue: item.queue,
    name: item.name,
    payload: client.checkPayload(`${prefix}payload`, item.payload),
    headers: item.headers ?? {},
    priority: item.priority ?? 0,
    jobId: item.jobId ?? "",
  };
  if (item.delayMs !== undefined && item.runAt !== undefined) throw invalid(`${prefix}delayMs`, "give delayMs or runAt, not both");
  if (item.delayMs !== undefined) req.delay = duration(item.delayMs);
  if (item.runAt !== undefined) req.runAt = timestamp(item.runAt);
  if (item.maxAttempts !== undefined) req.maxAttempts = item.maxAttempts;
  if (item.leaseMs !== undefined) req.lease = duration(item.leaseMs);
  if (item.backoff !== undefined) {
    const b = item.backoff;
    const kind = BACKOFF_KINDS[b.kind];
    if (kind === undefined) throw invalid(`${prefix}backoff.kind`, `must be "fixed" or "exponential", got ${JSON.stringify(b.kind)}`);
    req.backoff = { kind, base: duration(b.baseMs), cap: b.capMs === undefined ? null : duration(b.capMs), jitter: b.jitter ?? 0 };
  }
  if (item.dedup !== undefined) {
    const d = typeof item.dedup === "string" ? { key: item.dedup } : item.dedup;
    const mode = DEDUP_MODES[d.mode ?? "skip"];
    if (mode === undefined) throw invalid(`${prefix}dedup.mode`, `must be "skip", "replace" or "extend"`);
    req.dedupKey = d.key;
    req.dedupTtl = duration(d.ttlMs ?? 3_600_000);
    req.dedupMode = mode;
  }
  return req;
}

/** @internal */
export function toEnqueueResult(r: any): EnqueueResult {
  const outcome = enumName<EnqueueOutcome>("EnqueueOutcome", "ENQUEUE_OUTCOME_", r.outcome);
  return { jobId: r.jobId, outcome, duplicate: outcome !== "CREATED", state: enumName("JobState", "JOB_STATE_", r.state) };
}

/** @internal */
export function toJob(j: any): JobInfo {
  const p = j.progress;
  return {
    id: j.jobId,
    queue: j.queue,
    name: j.name,
    payload: Buffer.from(j.payload),
    headers: { ...j.headers },
    priority: j.priority,
    state: enumName("JobState", "JOB_STATE_", j.state),
    attempts: j.attempts,
    maxAttempts: j.maxAttempts,
    errors: (j.errors as any[]).map((e) => ({ attempt: e.attempt, message: e.message, time: toDate(e.time) })),
    createTime: toDate(j.createTime),
    updateTime: toDate(j.updateTime),
    runAt: toDate(j.runAt),
    leaseDeadline: toDate(j.leaseDeadline),
    finishTime: toDate(j.finishTime),
    workerId: j.workerId,
    dedupKey: j.dedupKey,
    progress: p
      ? {
          fraction: p.fraction ?? undefined,
          message: p.message ?? undefined,
          checkpoint: p.checkpoint ? Buffer.from(p.checkpoint) : undefined,
          updateTime: toDate(p.updateTime),
        }
      : undefined,
    result: Buffer.from(j.result),
    cancelRequested: j.cancelRequested,
    version: num(j.version),
    flowId: j.flowId ?? "",
    flowRef: j.flowRef ?? "",
  };
}

/** @internal The Schedule message of `spec`, checked. */
export function scheduleMessage(client: Client, spec: ScheduleSpec): object {
  if ((spec.cron === undefined) === (spec.everyMs === undefined)) {
    throw invalid("schedule.cron", "give exactly one of cron or everyMs");
  }
  const s: Record<string, unknown> = {
    id: spec.id ?? "",
    timezone: spec.timezone ?? "",
    runLimit: spec.runLimit ?? 0,
    jobName: spec.jobName ?? "",
    payload: client.checkPayload("schedule.payload", spec.payload),
    headers: spec.headers ?? {},
    paused: spec.paused ?? false,
    maxAttempts: spec.maxAttempts ?? 0,
  };
  if (spec.cron !== undefined) s.cron = spec.cron;
  if (spec.everyMs !== undefined) s.every = duration(spec.everyMs);
  if (spec.startTime) s.startTime = timestamp(spec.startTime);
  if (spec.endTime) s.endTime = timestamp(spec.endTime);
  return s;
}

/** @internal */
export function toSchedule(s: any): Schedule {
  return {
    id: s.id,
    cron: s.timing === "cron" ? s.cron : undefined,
    everyMs: s.timing === "every" ? toMs(s.every) : undefined,
    timezone: s.timezone,
    jobName: s.jobName,
    payload: Buffer.from(s.payload),
    headers: { ...s.headers },
    status: enumName("ScheduleStatus", "SCHEDULE_STATUS_", s.status),
    runCount: num(s.runCount),
    runLimit: num(s.runLimit),
    lastRunTime: toDate(s.lastRunTime),
    nextRunTime: toDate(s.nextRunTime),
    createTime: toDate(s.createTime),
    updateTime: toDate(s.updateTime),
    revision: num(s.revision),
    pauseNote: s.pauseNote,
  };
}
