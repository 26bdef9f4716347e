// The schedule worker: N long-polling ClaimDueSchedule loops with a lease, each
// occurrence to the handler, AckOccurrence when it returns.

import * as os from "node:os";
import type * as grpc from "@grpc/grpc-js";

import type { Client } from "./client";
import { DueqError, errorFor, fromGrpc } from "./errors";
import { duration, method, num, toDate } from "./proto";

/** One occurrence of a schedule, handed to exactly one worker. */
export interface Occurrence {
  /** Deterministic per slot: use it as the idempotency key of what you do. */
  readonly occurrenceId: string;
  readonly scheduleId: string;
  /** The slot's nominal time. */
  readonly dueTime: Date | undefined;
  /** The schedule's job_name. */
  readonly jobName: string;
  readonly payload: Buffer;
  readonly headers: Record<string, string>;
  /** 1 for the first hand-out; more after an expired lease. */
  readonly attempt: number;
  /** 1-based run number. */
  readonly runNumber: number;
  /** The payload parsed as JSON. */
  json<T = unknown>(): T;
}

/**
 * What a schedule handler does with an occurrence. Returning acks it
 * (AckOccurrence); throwing leaves it to its lease, so it is handed out again.
 */
export type OccurrenceHandler = (occurrence: Occurrence) => unknown;

/** Options of a {@link ScheduleWorker}. */
export interface ScheduleWorkerOptions {
  /** Occurrences handled at once: that many claim loops (default 1). */
  concurrency?: number;
  /** The lease of each occurrence, in ms: ack within it or it comes again (default 60,000). */
  leaseMs?: number;
  /** How long one claim waits for an occurrence to come due, in ms (default 20,000). */
  waitMs?: number;
  /** Default `<hostname>-<pid>`. */
  workerId?: string;
  /** How long stop() waits for running handlers (default 30,000 ms). */
  graceMs?: number;
  /** Stop (drain) on SIGINT and SIGTERM while run() runs (default true). */
  handleSignals?: boolean;
  /** Told of what the worker recovers from: a failed claim, a handler's throw, a refused ack. */
  onError?: (error: unknown) => void;
}

const FATAL = new Set([3, 5, 7, 9, 12, 16]);

/**
 * Runs `handler` for each due occurrence of the namespace's schedules (those
 * without a target), at most `concurrency` at once.
 *
 * ```ts
 * await new ScheduleWorker(new Client(), (o) => report(o.occurrenceId)).run();
 * ```
 */
export class ScheduleWorker {
  readonly client: Client;
  readonly handler: OccurrenceHandler;
  readonly concurrency: number;
  readonly leaseMs: number;
  readonly waitMs: number;
  readonly workerId: string;
  readonly graceMs: number;
  private readonly options: ScheduleWorkerOptions;
  private stopping = false;
  private fatal: unknown = undefined;
  private runPromise: Promise<void> | null = null;
  private readonly claims = new Set<grpc.ClientUnaryCall>();
  private readonly sleepers = new Set<() => void>();
  private onStop: () => void = () => {};

  constructor(client: Client, handler: OccurrenceHandler, options: ScheduleWorkerOptions = {}) {
    this.client = client;
    if (typeof handler !== "function") throw errorFor(3, "handler: must be a function");
    this.handler = handler;
    this.concurrency = options.concurrency ?? 1;
    if (!Number.isInteger(this.concurrency) || this.concurrency < 1) {
      throw errorFor(3, `concurrency: must be a whole number >= 1, got ${options.concurrency}`);
    }
    this.leaseMs = options.leaseMs ?? 60_000;
    this.waitMs = options.waitMs ?? 20_000;
    this.workerId = options.workerId ?? `${os.hostname()}-${process.pid}`;
    this.graceMs = options.graceMs ?? 30_000;
    this.options = options;
  }

  /** Works until stop() or SIGINT/SIGTERM; resolves once running handlers are done (or graceMs passed). */
  run(): Promise<void> {
    if (this.runPromise) throw new Error("this worker already runs");
    this.runPromise = this.main();
    return this.runPromise;
  }

  /** Stops claiming, lets running handlers finish and ack, and resolves when run() has returned. */
  async stop(): Promise<void> {
    if (!this.stopping) {
      this.stopping = true;
      this.onStop();
    }
    for (const call of this.claims) call.cancel();
    for (const wake of this.sleepers) wake();
    await this.runPromise?.catch(() => {});
  }

  private async main(): Promise<void> {
    const onSignal = () => void this.stop();
    const signals = this.options.handleSignals ?? true;
    if (signals) for (const s of ["SIGINT", "SIGTERM"] as const) process.on(s, onSignal);
    try {
      const loops = Array.from({ length: this.concurrency }, () => this.loop());
      // Once stopped, running handlers get graceMs to finish.
      let timer: NodeJS.Timeout | undefined;
      const grace = new Promise<void>((resolve) => {
        this.onStop = () => (timer = setTimeout(resolve, this.graceMs));
        if (this.stopping) this.onStop();
      });
      await Promise.race([Promise.all(loops), grace]);
      clearTimeout(timer);
      if (this.fatal !== undefined) throw this.fatal;
    } finally {
      if (signals) for (const s of ["SIGINT", "SIGTERM"] as const) process.off(s, onSignal);
    }
  }

  private async loop(): Promise<void> {
    let failures = 0;
    while (!this.stopping) {
      let occurrence: any;
      try {
        occurrence = await this.claim();
        failures = 0;
      } catch (error) {
        if (this.stopping) return;
        const e = error as DueqError;
        if (FATAL.has(e.code)) {
          this.fatal = e;
          void this.stop();
          return;
        }
        this.options.onError?.(e);
        failures++;
        await this.sleep(Math.min(5000, 100 * 2 ** failures) * (0.5 + Math.random() / 2));
        continue;
      }
      if (occurrence) await this.handle(occurrence);
    }
  }

  private claim(): Promise<any> {
    const m = method("ClaimDueSchedule");
    const request = {
      namespace: this.client.namespace,
      workerId: this.workerId,
      wait: duration(this.waitMs),
      lease: duration(this.leaseMs),
    };
    const deadline = Date.now() + this.waitMs + this.client.config.timeoutMs;
    return new Promise((resolve, reject) => {
      const call = this.client.grpc.makeUnaryRequest(
        m.path,
        m.serialize,
        m.deserialize,
        request,
        this.client.metadata(),
        { deadline },
        (error, reply: any) => {
          this.claims.delete(call);
          if (error) reject(fromGrpc(error));
          else resolve(reply.occurrence);
        },
      );
      this.claims.add(call);
    });
  }

  private async handle(o: any): Promise<void> {
    const occurrence: Occurrence = {
      occurrenceId: o.occurrenceId,
      scheduleId: o.schedule?.id ?? "",
      dueTime: toDate(o.dueTime),
      jobName: o.schedule?.jobName ?? "",
      payload: o.schedule?.payload ?? Buffer.alloc(0),
      headers: o.schedule?.headers ?? {},
      attempt: o.attempt,
      runNumber: num(o.runNumber),
      json() {
        return JSON.parse(this.payload.toString("utf8"));
      },
    };
    try {
      await this.handler(occurrence);
    } catch (error) {
      this.options.onError?.(error);
      return; // left to its lease: handed out again
    }
    const ack = { namespace: this.client.namespace, occurrenceId: o.occurrenceId, leaseToken: o.leaseToken };
    for (let tries = 0; ; tries++) {
      try {
        await this.client.unary("AckOccurrence", ack);
        return;
      } catch (error) {
        if ((error as DueqError).code !== 14 || tries >= 20) {
          this.options.onError?.(error);
          return;
        }
        await this.sleep(250);
      }
    }
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        this.sleepers.delete(wake);
        resolve();
      };
      const timer = setTimeout(wake, ms);
      this.sleepers.add(wake);
    });
  }
}
