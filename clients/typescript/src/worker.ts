// The job worker: one Work stream, handlers as promises, acks written on the stream
// in one batch per tick, leases extended by one ticker, a drain on stop, and a
// reconnect with backoff that loses no ack and sends none twice.

import * as os from "node:os";

import type { Client } from "./client";
import { Cancelled, type DueqError, errorFor, NonRetryable } from "./errors";
import { toDependencies, type Dependency } from "./flow";
import { JsonResult, type Handler, type Job } from "./job";
import { duration, num } from "./proto";
import type { Progress } from "./types";
import { WorkStream, type StreamStatus } from "./work-stream";

/** Options of a {@link Worker}. */
export interface WorkerOptions {
  /** Jobs handled at once: the stream's capacity (default 1). */
  concurrency?: number;
  /** The lease of each claim, in milliseconds (default: each job's own, 30 s unless enqueued otherwise). */
  leaseMs?: number;
  /** Recorded on each job it claims (default `<hostname>-<pid>`). */
  workerId?: string;
  /** How long stop() waits for running handlers before giving their jobs back (default 30,000 ms). */
  graceMs?: number;
  /** Stop (drain) on SIGINT and SIGTERM while run() runs (default true). */
  handleSignals?: boolean;
  /** First wait before reconnecting after the stream broke (default 100 ms); doubles, with jitter. */
  reconnectMinMs?: number;
  /** Longest wait before reconnecting (default 5,000 ms). */
  reconnectMaxMs?: number;
  /** Told of what the worker recovers from: a broken stream, a lost lease, a refused ack (default: none). */
  onError?: (error: unknown) => void;
}

// Where a job is. RUNNING: the handler runs. FINISHED: its ack or fail waits to be
// sent. SENT: sent on the stream, answer awaited. UNARY: sent by AckJob/FailJob
// (during a drain). HELD: arrived after stop(); never run, given back when the
// stream closes.
const RUNNING = 0;
const FINISHED = 1;
const SENT = 2;
const UNARY = 3;
const HELD = 4;

const OK = 0;
const CANCELLED = 1;
const INVALID_ARGUMENT = 3;
const NOT_FOUND = 5;
const ABORTED = 10;
const UNAVAILABLE = 14;

/** Stream ends after which the worker reconnects; any other is the end of run(). */
const RETRYABLE = new Set([1, 2, 4, 8, 10, 13, 14]);

/** One claimed job: what the handler sees, and the worker's bookkeeping of it. */
class ActiveJob implements Job {
  state = RUNNING;
  /** The ack or fail to send. */
  request: object | null = null;
  /** Local time the lease ends, and its length, for extensions. */
  leaseEnd: number;
  leaseLen: number;
  extending = false;
  lost = false;
  cancelRequested = false;
  retryAt = 0;
  pendingProgress: Record<string, unknown> | null = null;
  controller: AbortController | null = null;
  /** An earlier claim of the same job id this worker still answers for (its lease ran out). */
  older: ActiveJob | null = null;

  constructor(
    readonly worker: Worker,
    readonly msg: any,
    now: number,
    leaseMs: number | undefined,
  ) {
    this.leaseLen = leaseMs ?? Math.max(1000, deadlineMs(msg.leaseDeadline) - now);
    this.leaseEnd = now + this.leaseLen;
  }

  get id(): string {
    return this.msg.jobId;
  }
  get leaseToken(): string {
    return this.msg.leaseToken;
  }
  get queue(): string {
    return this.msg.queue;
  }
  get name(): string {
    return this.msg.name;
  }
  get payload(): Buffer {
    return this.msg.payload;
  }
  get headers(): Record<string, string> {
    return this.msg.headers;
  }
  get attempt(): number {
    return this.msg.attempt;
  }
  get maxAttempts(): number {
    return this.msg.maxAttempts;
  }
  get priority(): number {
    return this.msg.priority;
  }
  get checkpoint(): Buffer {
    return this.msg.checkpoint;
  }
  get cancelled(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.cancelRequested) this.controller.abort(cancelReason(this.lost));
    }
    return this.controller.signal;
  }
  json<T = unknown>(): T {
    return JSON.parse(this.payload.toString("utf8")) as T;
  }
  get flowId(): string {
    return this.msg.flowId ?? "";
  }
  get flowRef(): string {
    return this.msg.flowRef ?? "";
  }
  get dependencies(): Dependency[] {
    return toDependencies(this.msg);
  }
  get dependencyResults(): Record<string, Buffer> {
    const out: Record<string, Buffer> = {};
    for (const [ref, bytes] of Object.entries(this.msg.dependencyResults ?? {})) out[ref] = Buffer.from(bytes as Uint8Array);
    return out;
  }
  dependencyJson<T = unknown>(ref: string): T | undefined {
    const bytes = this.msg.dependencyResults?.[ref];
    return bytes === undefined ? undefined : (JSON.parse(Buffer.from(bytes).toString("utf8")) as T);
  }
  progress(progress: Progress): void {
    const p = (this.pendingProgress ??= {});
    if (progress.fraction !== undefined) p.fraction = progress.fraction;
    if (progress.message !== undefined) p.message = progress.message;
    if (progress.checkpoint !== undefined) p.checkpoint = progress.checkpoint;
    this.worker.wake();
  }
  cancel(lost: boolean): void {
    if (this.cancelRequested) return;
    this.cancelRequested = true;
    this.lost ||= lost;
    this.controller?.abort(cancelReason(lost));
  }
}

function cancelReason(lost: boolean): Error {
  return new Cancelled(CANCELLED, lost ? "the job's lease was lost" : "a cancel was requested");
}

function deadlineMs(ts: { seconds?: unknown; nanos?: number } | null): number {
  return ts ? num(ts.seconds) * 1000 + Math.floor((ts.nanos ?? 0) / 1e6) : Date.now() + 30_000;
}

function errorText(error: unknown): string {
  const text = error instanceof Error ? error.message || error.name : String(error);
  return text.length > 4000 ? text.slice(0, 4000) : text;
}

const EMPTY = Buffer.alloc(0);
let warnedResult = false;

/** The bytes a handler's return value is stored as. */
function resultBytes(value: unknown): Uint8Array {
  if (value === undefined || value === null) return EMPTY;
  if (value instanceof Uint8Array) return value;
  if (typeof value === "string") return Buffer.from(value);
  if (value instanceof JsonResult) return Buffer.from(JSON.stringify(value.value) ?? "null");
  if (!warnedResult) {
    warnedResult = true;
    process.emitWarning("a dueq handler returned a value that is not bytes, a string or json(value): stored no result");
  }
  return EMPTY;
}

/**
 * Works jobs of one or more queues over one Work stream: the service pushes up to
 * `concurrency` jobs, each goes to `handler`, and its return acks the job (or its
 * throw fails it) on the same stream.
 *
 * ```ts
 * const worker = new Worker(new Client(), "emails", async (job) => {
 *   await send(job.json());
 * }, { concurrency: 8 });
 * await worker.run(); // until SIGINT/SIGTERM or worker.stop()
 * ```
 *
 * - Leases are extended before a third of them is left while the handler runs.
 * - `stop()` (or SIGINT/SIGTERM) drains: no new job starts, running handlers get
 *   `graceMs` to finish and are acked, then the stream closes and run() returns.
 * - When the stream breaks (the service restarts or fails over) the worker
 *   reconnects with capped, jittered exponential backoff; handlers keep running and
 *   their acks go on the new stream; an ack whose answer was lost is sent again
 *   (the service answers ABORTED for one that had gone through, and completes
 *   nothing twice).
 */
export class Worker {
  readonly client: Client;
  readonly queues: string[];
  readonly handler: Handler;
  readonly concurrency: number;
  readonly leaseMs: number | undefined;
  readonly workerId: string;
  readonly graceMs: number;
  private readonly options: WorkerOptions;

  private readonly jobs = new Map<string, ActiveJob>();
  private running = 0;
  private call: WorkStream | null = null;
  private outbox: object[] = [];
  private flushQueued = false;
  private flushTimer: NodeJS.Timeout | null = null;
  private readonly batchTarget: number;
  private stopping = false;
  private closing = false;
  private fatal: unknown = undefined;
  private runPromise: Promise<void> | null = null;
  private wakeStop: () => void = () => {};
  private wakeDrain: (() => void) | null = null;
  private wakeSleep: (() => void) | null = null;
  private ticker: NodeJS.Timeout | null = null;
  private tickMs: number;

  constructor(client: Client, queues: string | string[], handler: Handler, options: WorkerOptions = {}) {
    this.client = client;
    this.queues = typeof queues === "string" ? [queues] : [...queues];
    if (this.queues.length === 0) throw errorFor(INVALID_ARGUMENT, "queues: give at least one queue");
    this.queues.forEach((q, i) => client.checkName(`queues[${i}]`, q));
    if (typeof handler !== "function") throw errorFor(INVALID_ARGUMENT, "handler: must be a function");
    this.handler = handler;
    this.concurrency = options.concurrency ?? 1;
    if (!Number.isInteger(this.concurrency) || this.concurrency < 1 || this.concurrency > 1000) {
      throw errorFor(INVALID_ARGUMENT, `concurrency: must be a whole number 1-1000, got ${options.concurrency}`);
    }
    if (options.leaseMs !== undefined && !(options.leaseMs >= 1)) {
      throw errorFor(INVALID_ARGUMENT, `leaseMs: must be positive, got ${options.leaseMs}`);
    }
    this.leaseMs = options.leaseMs;
    this.workerId = options.workerId ?? `${os.hostname()}-${process.pid}`;
    this.graceMs = options.graceMs ?? 30_000;
    this.options = options;
    this.batchTarget = Math.max(1, Math.floor(this.concurrency / 2));
    this.tickMs = Math.max(20, Math.min(250, Math.floor((this.leaseMs ?? 3000) / 15)));
  }

  /**
   * Works until stop() or SIGINT/SIGTERM, then drains and resolves. Rejects with the
   * DueqError that ended the stream when reconnecting cannot help (e.g.
   * Unauthenticated, PermissionDenied, InvalidArgument).
   */
  run(): Promise<void> {
    if (this.runPromise) throw new Error("this worker already runs");
    this.runPromise = this.main();
    return this.runPromise;
  }

  /** Drains (see the class) and resolves when run() has returned. */
  async stop(): Promise<void> {
    this.stopping = true;
    this.wakeStop();
    this.wakeSleep?.();
    await this.runPromise?.catch(() => {});
  }

  private async main(): Promise<void> {
    const onSignal = () => {
      if (this.stopping) this.closing = true; // a second signal: stop waiting
      void this.stop();
      this.wakeDrain?.();
    };
    const signals = this.options.handleSignals ?? true;
    if (signals) for (const s of ["SIGINT", "SIGTERM"] as const) process.on(s, onSignal);
    this.ticker = setInterval(() => this.tick(), this.tickMs);
    this.ticker.unref();
    try {
      const stopped = new Promise<void>((resolve) => (this.wakeStop = resolve));
      if (this.stopping) this.wakeStop();
      const loop = this.connectLoop();
      await stopped;
      await this.drain();
      this.closing = true;
      this.endStream();
      await loop;
      if (this.fatal !== undefined) throw this.fatal;
    } finally {
      clearInterval(this.ticker);
      if (signals) for (const s of ["SIGINT", "SIGTERM"] as const) process.off(s, onSignal);
      for (const job of this.jobs.values()) job.cancel(true);
      this.jobs.clear();
    }
  }

  /** Opens streams until the worker closes; backs off between broken ones. */
  private async connectLoop(): Promise<void> {
    let failures = 0;
    while (!this.closing) {
      // No new stream once stopping: it would only be handed jobs to give back.
      // What finishes meanwhile is acked unary (streamEnded, settle).
      if (this.stopping) return;
      const { status, received } = await this.session();
      if (this.closing) return;
      if (!RETRYABLE.has(status.code) && status.code !== OK) {
        this.fatal = errorFor(status.code, status.details);
        this.stopping = true;
        this.wakeStop();
        return;
      }
      this.options.onError?.(errorFor(status.code, `the Work stream ended: ${status.details}`));
      failures = received ? 0 : failures + 1;
      const cap = Math.min(this.options.reconnectMaxMs ?? 5000, (this.options.reconnectMinMs ?? 100) * 2 ** failures);
      await this.sleep(cap * (0.5 + Math.random() / 2));
    }
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.wakeSleep = done;
    });
  }

  /** One Work stream, from start to its status. */
  private session(): Promise<{ status: StreamStatus; received: boolean }> {
    return new Promise((resolve) => {
      let received = false;
      const call: WorkStream = new WorkStream(
        this.client.work,
        this.client.config.token,
        (msg) => {
          received = true;
          this.onMessage(msg);
        },
        (status) => {
          if (this.call === call) this.streamEnded();
          resolve({ status, received });
        },
      );
      this.call = call;
      const start = {
        namespace: this.client.namespace,
        queues: this.queues,
        workerId: this.workerId,
        capacity: this.concurrency,
        lease: this.leaseMs === undefined ? null : duration(this.leaseMs),
      };
      call.write([{ start }]);
      // What finished while no stream was open goes on this one.
      for (const job of this.jobs.values()) {
        for (let j: ActiveJob | null = job; j; j = j.older) {
          if (j.state === FINISHED && !this.stopping) this.sendOutcome(j);
        }
      }
      this.wake();
    });
  }

  /** The current stream ended: what was sent on it and not answered is sent again. */
  private streamEnded(): void {
    this.call = null;
    for (const [id, job] of this.jobs) {
      let keep: ActiveJob | null = null;
      for (let j: ActiveJob | null = job; j; j = j.older) {
        j.extending = false;
        if (j.state === SENT) j.state = FINISHED;
        if (j.state === HELD) continue; // the service gives it back
        if (this.stopping && j.state === FINISHED) this.sendUnary(j);
        if (!keep) keep = j;
      }
      if (keep) this.jobs.set(id, keep);
      else this.jobs.delete(id);
    }
    this.checkDrained();
  }

  private onMessage(msg: any): void {
    if (msg.job) this.onJob(msg.job);
    else if (msg.ack) this.onAnswer(msg.ack);
    else if (msg.fail) this.onAnswer(msg.fail);
    else if (msg.extend) this.onExtended(msg.extend);
    else if (msg.cancel) this.find(msg.cancel.jobId, msg.cancel.leaseToken)?.cancel(false);
  }

  private onJob(claimed: any): void {
    const job = new ActiveJob(this, claimed, Date.now(), this.leaseMs);
    const earlier = this.jobs.get(job.id);
    if (earlier) job.older = earlier;
    this.jobs.set(job.id, job);
    if (this.stopping) {
      job.state = HELD;
      return;
    }
    if (claimed.cancelRequested) job.cancel(false);
    this.running++;
    let result: unknown;
    try {
      result = this.handler(job);
    } catch (error) {
      this.settle(job, false, error);
      return;
    }
    if (result !== null && typeof result === "object" && typeof (result as Promise<unknown>).then === "function") {
      (result as Promise<unknown>).then(
        (value) => this.settle(job, true, value),
        (error) => this.settle(job, false, error),
      );
    } else {
      this.settle(job, true, result);
    }
  }

  /** The handler returned (ok) or threw: ack or fail the job. */
  private settle(job: ActiveJob, ok: boolean, value: unknown): void {
    this.running--;
    job.pendingProgress = null;
    if (job.lost) {
      this.forget(job);
      return;
    }
    job.state = FINISHED;
    job.request = ok
      ? { ack: { jobId: job.id, leaseToken: job.leaseToken, result: resultBytes(value) } }
      : {
          fail: {
            jobId: job.id,
            leaseToken: job.leaseToken,
            error: errorText(value),
            nonRetryable: value instanceof NonRetryable,
          },
        };
    if (this.stopping) this.sendUnary(job);
    else if (this.call) this.sendOutcome(job);
    else this.checkDrained();
  }

  /**
   * Queues an ack or fail. They are written together once half the capacity is
   * waiting, or after a millisecond: the service applies the acks that arrive
   * together (and claims their refills) in one Redis script call, so larger groups
   * cost Redis less per job.
   */
  private sendOutcome(job: ActiveJob): void {
    job.state = SENT;
    this.outbox.push(job.request!);
    if (this.outbox.length >= this.batchTarget) this.flushSoon();
    else if (!this.flushQueued && this.flushTimer === null) this.flushTimer = setTimeout(this.flush, 1);
  }

  private flushSoon(): void {
    if (!this.flushQueued) {
      this.flushQueued = true;
      setImmediate(this.flush);
    }
  }

  /** Writes what was queued, in one go. */
  private readonly flush = (): void => {
    this.flushQueued = false;
    if (this.flushTimer !== null) {
      clearTimeout(this.flushTimer);
      this.flushTimer = null;
    }
    const out = this.outbox;
    this.outbox = [];
    const call = this.call;
    if (!call) return; // streamEnded() put their jobs back to FINISHED
    call.write(out);
  };

  /** During a drain: ack or fail by a unary call, so the stream's slots stay taken and nothing new comes. */
  private sendUnary(job: ActiveJob): void {
    job.state = UNARY;
    const r = job.request as { ack?: any; fail?: any };
    const [name, request] = r.ack
      ? ["AckJob", { namespace: this.client.namespace, ...r.ack }]
      : ["FailJob", { namespace: this.client.namespace, ...r.fail }];
    const attempt = (tries: number): void => {
      this.client.unary(name, request).then(
        () => this.forget(job),
        (error: DueqError) => {
          if (error.code === UNAVAILABLE && tries < 20 && !this.closing) setTimeout(() => attempt(tries + 1), 250);
          else {
            this.options.onError?.(error);
            this.forget(job);
          }
        },
      );
    };
    attempt(0);
  }

  /** The oldest claim of `jobId` whose ack or fail awaits its answer. */
  private onAnswer(answer: { jobId: string; code: number; message: string }): void {
    let found: ActiveJob | null = null;
    for (let j = this.jobs.get(answer.jobId) ?? null; j; j = j.older) if (j.state === SENT) found = j;
    if (!found) return;
    const code = answer.code;
    if (code === OK || code === ABORTED || code === NOT_FOUND || code === INVALID_ARGUMENT) {
      if (code !== OK) this.options.onError?.(errorFor(code, `${answer.jobId}: ${answer.message}`));
      this.forget(found);
    } else {
      // Not applied (UNAVAILABLE, FAILED_PRECONDITION): send it again shortly.
      found.state = FINISHED;
      found.retryAt = Date.now() + 200;
    }
  }

  private onExtended(answer: { jobId: string; code: number; message: string; result: any }): void {
    const job = this.jobs.get(answer.jobId);
    let j: ActiveJob | null = job ?? null;
    while (j && !j.extending) j = j.older;
    if (!j) return;
    j.extending = false;
    if (answer.code === OK) {
      if (answer.result?.cancelRequested) j.cancel(false);
    } else if (answer.code === ABORTED || answer.code === NOT_FOUND) {
      this.options.onError?.(errorFor(answer.code, `${answer.jobId}: lease lost: ${answer.message}`));
      j.cancel(true);
    }
  }

  private find(jobId: string, token: string): ActiveJob | null {
    for (let j = this.jobs.get(jobId) ?? null; j; j = j.older) if (j.leaseToken === token) return j;
    return null;
  }

  /** Drops a job that needs nothing more. */
  private forget(job: ActiveJob): void {
    const head = this.jobs.get(job.id);
    if (head === job) {
      if (job.older) this.jobs.set(job.id, job.older);
      else this.jobs.delete(job.id);
    } else {
      for (let j: ActiveJob | null = head ?? null; j; j = j.older) {
        if (j.older === job) {
          j.older = job.older;
          break;
        }
      }
    }
    if (this.stopping) this.checkDrained();
  }

  /** @internal Progress was reported: send it soon. */
  wake(): void {
    if (!this.flushQueued && this.call) {
      this.flushQueued = true;
      process.nextTick(() => {
        this.tick();
        this.flush();
      });
    }
  }

  /** Extends leases nearly a third from their end, sends progress, resends refused acks. */
  private tick(): void {
    const call = this.call;
    if (!call) return;
    const now = Date.now();
    for (const head of this.jobs.values()) {
      for (let j: ActiveJob | null = head; j; j = j.older) {
        if (j.state === RUNNING && !j.extending && !j.lost) {
          if (j.pendingProgress !== null || now >= j.leaseEnd - j.leaseLen / 3 - this.tickMs) this.extend(j, now);
        } else if (j.state === FINISHED && j.retryAt !== 0 && now >= j.retryAt && !this.stopping) {
          j.retryAt = 0;
          this.sendOutcome(j);
        }
      }
    }
  }

  private extend(job: ActiveJob, now: number): void {
    job.extending = true;
    const progress = job.pendingProgress;
    job.pendingProgress = null;
    job.leaseEnd = now + job.leaseLen;
    this.outbox.push({
      extend: { jobId: job.id, leaseToken: job.leaseToken, lease: duration(job.leaseLen), progress },
    });
    this.flushSoon();
  }

  private drained(): boolean {
    if (this.running > 0) return false;
    for (const head of this.jobs.values()) {
      for (let j: ActiveJob | null = head; j; j = j.older) if (j.state !== HELD) return false;
    }
    return true;
  }

  private checkDrained(): void {
    if (this.stopping && this.wakeDrain && this.drained()) this.wakeDrain();
  }

  /** Waits, at most graceMs, for running handlers to finish and their acks to be answered. */
  private async drain(): Promise<void> {
    // Outcomes already written to the stream are answered there. Those not written
    // yet, and those waiting for a stream, go unary: written to the stream, their
    // answers would free slots that the service refills with jobs this worker
    // would only give back.
    const unwritten = new Set(this.outbox);
    this.outbox = this.outbox.filter((m) => !("ack" in m || "fail" in m));
    for (const head of this.jobs.values()) {
      for (let j: ActiveJob | null = head; j; j = j.older) {
        if (j.state === FINISHED || (j.state === SENT && unwritten.has(j.request!))) this.sendUnary(j);
      }
    }
    if (this.drained() || this.closing) return;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, this.graceMs);
      this.wakeDrain = () => {
        clearTimeout(timer);
        resolve();
      };
      this.checkDrained();
    });
    this.wakeDrain = null;
  }

  /** Closes our side once drained (the service gives back what it still holds), or cancels. */
  private endStream(): void {
    this.wakeSleep?.();
    const call = this.call;
    if (!call) return;
    if (this.drained()) call.end();
    else call.cancel();
  }
}

