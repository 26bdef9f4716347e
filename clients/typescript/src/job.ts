// What a job handler receives, and the marker for a JSON result.

import type { Dependency } from "./flow";
import type { Progress } from "./types";

/**
 * A job handed to a {@link Handler}. Its payload is bytes; {@link Job.json} parses it
 * when you say so (the library never guesses an encoding).
 */
export interface Job {
  /** The job's id (unique in its namespace). */
  readonly id: string;
  readonly queue: string;
  readonly name: string;
  /** The payload, as enqueued. */
  readonly payload: Buffer;
  /** String metadata, as enqueued. */
  readonly headers: Record<string, string>;
  /** 1-based attempt number of this claim. */
  readonly attempt: number;
  readonly maxAttempts: number;
  readonly priority: number;
  /** The last checkpoint an earlier attempt reported (empty when none). */
  readonly checkpoint: Buffer;
  /** The lease token of this claim (for calls of your own; the worker acks for you). */
  readonly leaseToken: string;
  /**
   * Aborted when a cancel is requested for the job (CancelJob) or its lease is lost:
   * stop and throw. A job failed after a cancel request ends CANCELLED.
   */
  readonly cancelled: AbortSignal;
  /** The payload parsed as JSON. */
  json<T = unknown>(): T;
  /** Set when the job is a node of a flow (Client.enqueueFlow): the flow's id ("" otherwise). */
  readonly flowId: string;
  /** Its ref in its flow ("" otherwise). */
  readonly flowRef: string;
  /** Its direct dependencies, in `after` order, as the claim found them. */
  readonly dependencies: Dependency[];
  /**
   * The COMPLETED dependencies' results, by ref, as many as fit the claim's reply.
   * A completed dependency whose ref is missing here did not fit: read it with
   * `client.getJob(dependency.jobId)`.
   */
  readonly dependencyResults: Record<string, Buffer>;
  /** The result of dependency `ref` parsed as JSON; undefined when it is not in `dependencyResults`. */
  dependencyJson<T = unknown>(ref: string): T | undefined;
  /**
   * Reports how far the job got (stored with the job, GetJob shows it); sent at
   * once, with a lease extension. A checkpoint is handed to the next attempt.
   */
  progress(progress: Progress): void;
}

/**
 * What a handler does with a job. Its return value acks the job and is stored as
 * its result: nothing, bytes (a Uint8Array or Buffer), a string (its UTF-8 bytes),
 * or {@link json}(value). Throwing fails the attempt (retried after its backoff);
 * throwing {@link NonRetryable} makes the job dead at once.
 */
export type Handler = (job: Job) => unknown;

/** A handler result that is stored as `JSON.stringify(value)`: see {@link json}. */
export class JsonResult {
  constructor(readonly value: unknown) {}
}

/**
 * Marks a handler's result as JSON: `return json({ sent: true })` stores the
 * job's result as its JSON text.
 */
export function json(value: unknown): JsonResult {
  return new JsonResult(value);
}
