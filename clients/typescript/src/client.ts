// The connection to a dueq service and the producer API: jobs in, schedules, and
// the calls a worker falls back to.

import * as fs from "node:fs";
import * as grpc from "@grpc/grpc-js";

import { resolveConfig, type ClientOptions, type ResolvedConfig } from "./config";
import { DueqError, errorFor, fromGrpc, invalid } from "./errors";
import { flowRequest, toEnqueuedFlow, toFlowCounts, toFlowStatus, type EnqueuedFlow, type FlowCounts, type FlowNode, type FlowStatus } from "./flow";
import { method, toDate } from "./proto";
import { Http2Connection } from "./work-stream";
import {
  enqueueRequest,
  toEnqueueResult,
  toJob,
  toSchedule,
  scheduleMessage,
  type EnqueueItem,
  type EnqueueOptions,
  type EnqueueResult,
  type JobInfo,
  type Schedule,
  type ScheduleSpec,
} from "./types";

/** Per-call options of the unary calls. */
export interface CallOptions {
  /** This call's deadline in milliseconds, instead of the client's timeoutMs. */
  timeoutMs?: number;
}

/**
 * A connection to a dueq service: the producer API (enqueue, jobs, schedules), and
 * what {@link Worker} and {@link ScheduleWorker} run on.
 *
 * Every option not given is read from its `DUEQ_*` environment variable (`DUEQ_ADDR`,
 * `DUEQ_TOKEN`, `DUEQ_NAMESPACE`, `DUEQ_TLS_CA`, `DUEQ_TLS_CLIENT_CERT`,
 * `DUEQ_TLS_CLIENT_KEY`, `DUEQ_TLS_SERVER_NAME`). The connection is made lazily, on
 * the first call; {@link Client.close} ends it.
 *
 * ```ts
 * const client = new Client(); // DUEQ_ADDR etc.
 * const { jobId } = await client.enqueueJson("emails", "welcome", { to: "a@b.c" });
 * ```
 */
export class Client {
  /** The settings in force (options over environment over defaults). */
  readonly config: ResolvedConfig;
  /** The namespace of every call. */
  readonly namespace: string;
  /** @internal The grpc-js client the calls and streams go through. */
  readonly grpc: grpc.Client;

  /** @internal The HTTP/2 connection of the workers' Work streams. */
  readonly work: Http2Connection;

  constructor(options: ClientOptions = {}) {
    this.config = resolveConfig(options);
    this.namespace = this.config.namespace;
    this.grpc = new grpc.Client(this.config.target, credentials(this.config), channelOptions(this.config));
    this.work = new Http2Connection(this.config);
  }

  /** @internal Metadata of one call: the bearer token, when there is one. */
  metadata(): grpc.Metadata {
    const md = new grpc.Metadata();
    if (this.config.token !== undefined) md.set("authorization", `Bearer ${this.config.token}`);
    return md;
  }

  /** @internal One unary call of QueueService as a promise; errors are DueqErrors. */
  unary(name: string, request: object, options: CallOptions = {}): Promise<any> {
    const m = method(name);
    const deadline = Date.now() + (options.timeoutMs ?? this.config.timeoutMs);
    return new Promise((resolve, reject) => {
      this.grpc.makeUnaryRequest(m.path, m.serialize, m.deserialize, request, this.metadata(), { deadline }, (error, reply) =>
        error ? reject(fromGrpc(error)) : resolve(reply),
      );
    });
  }

  /** @internal Throws InvalidArgument unless `value` is a non-empty string. */
  checkName(field: string, value: unknown): void {
    if (typeof value !== "string" || value.length === 0) throw invalid(field, "must not be empty");
  }

  /** @internal The payload as bytes; InvalidArgument when over maxPayloadSize. */
  checkPayload(field: string, payload: Uint8Array | string | undefined): Uint8Array {
    const bytes = payload === undefined ? new Uint8Array() : typeof payload === "string" ? Buffer.from(payload) : payload;
    if (!(bytes instanceof Uint8Array)) throw invalid(field, "must be bytes (a Uint8Array or Buffer) or a string");
    if (bytes.length > this.config.maxPayloadSize) {
      throw invalid(field, `is ${bytes.length} bytes, over the client's maxPayloadSize of ${this.config.maxPayloadSize}`);
    }
    return bytes;
  }

  /**
   * Enqueues one job. `payload` is bytes (a string is sent as its UTF-8 bytes); for
   * JSON use {@link Client.enqueueJson}. Throws InvalidArgument (naming the field)
   * before sending anything for an empty queue or name or a payload over
   * maxPayloadSize.
   */
  async enqueue(queue: string, name: string, payload?: Uint8Array | string, options: EnqueueOptions = {}): Promise<EnqueueResult> {
    const request = enqueueRequest(this, { queue, name, payload, ...options }, "");
    return toEnqueueResult(await this.unary("Enqueue", request));
  }

  /** Enqueues one job whose payload is `JSON.stringify(value)`. */
  async enqueueJson(queue: string, name: string, value: unknown, options: EnqueueOptions = {}): Promise<EnqueueResult> {
    return this.enqueue(queue, name, jsonBytes("payload", value), options);
  }

  /**
   * Enqueues up to the service's batch limit (1,000) of jobs in one call and one
   * Redis round trip. One result per item, in order: an EnqueueResult, or the
   * DueqError that refused that item alone.
   */
  async enqueueBatch(items: EnqueueItem[]): Promise<Array<EnqueueResult | DueqError>> {
    const jobs = items.map((item, i) => enqueueRequest(this, item, `jobs[${i}].`));
    const reply = await this.unary("EnqueueBatch", { namespace: this.namespace, jobs });
    return (reply.results as any[]).map((r) => (r.ok ? toEnqueueResult(r.ok) : errorFor(r.error.code, r.error.message)));
  }

  /** The job, as stored now. NotFound when there is none. */
  async getJob(jobId: string, options?: CallOptions): Promise<JobInfo> {
    this.checkName("jobId", jobId);
    const reply = await this.unary("GetJob", { namespace: this.namespace, jobId }, options);
    return toJob(reply.job);
  }

  /**
   * Cancels a job: a pending or delayed one ends CANCELLED at once; an active one
   * stays ACTIVE with cancelRequested set until its worker stops it.
   */
  async cancel(jobId: string, options?: CallOptions): Promise<JobInfo> {
    this.checkName("jobId", jobId);
    return toJob((await this.unary("CancelJob", { namespace: this.namespace, jobId }, options)).job);
  }

  /** Revives a dead (or cancelled) job: PENDING again with its attempts reset. */
  async retry(jobId: string, options?: CallOptions): Promise<JobInfo> {
    this.checkName("jobId", jobId);
    return toJob((await this.unary("RetryJob", { namespace: this.namespace, jobId }, options)).job);
  }

  /**
   * Enqueues a flow: `nodes` form a graph without cycles (up to 1,000), stored all
   * or nothing; a node runs once every ref in its `after` has finished. `flowId`
   * makes the call idempotent (a stored flow with it answers DUPLICATE). The job ids
   * come back by ref. A bad node is InvalidArgument naming it
   * (`nodes[2].after[0]: ...`), from this client or from the service.
   */
  async enqueueFlow(nodes: FlowNode[], flowId?: string, options?: CallOptions): Promise<EnqueuedFlow> {
    const request = flowRequest(this, nodes, flowId);
    return toEnqueuedFlow(await this.unary("EnqueueFlow", request, options));
  }

  /** The flow: its state, counts and every node (all pages). NotFound when there is none. */
  async getFlow(flowId: string, options?: CallOptions): Promise<FlowStatus> {
    this.checkName("flowId", flowId);
    const pages: any[] = [];
    let pageToken = "";
    do {
      const reply = await this.unary("GetFlow", { namespace: this.namespace, flowId, pageToken }, options);
      pages.push(reply);
      pageToken = reply.nextPageToken;
    } while (pageToken);
    return toFlowStatus(pages);
  }

  /** Cancels every unfinished node (an active one's worker is asked to stop; a node readied later is cancelled). */
  async cancelFlow(flowId: string, options?: CallOptions): Promise<FlowCounts> {
    this.checkName("flowId", flowId);
    return toFlowCounts(await this.unary("CancelFlow", { namespace: this.namespace, flowId }, options));
  }

  /** Re-arms the dead, cancelled and skipped nodes (completed ones keep their results) and lifts a cancel. */
  async retryFlow(flowId: string, options?: CallOptions): Promise<FlowCounts> {
    this.checkName("flowId", flowId);
    return toFlowCounts(await this.unary("RetryFlow", { namespace: this.namespace, flowId }, options));
  }

  /** Creates or updates a schedule; `created` is true when it did not exist. */
  async upsertSchedule(spec: ScheduleSpec, options?: CallOptions): Promise<Schedule & { created: boolean }> {
    const schedule = scheduleMessage(this, spec);
    const reply = await this.unary("UpsertSchedule", { namespace: this.namespace, schedule }, options);
    return { ...toSchedule(reply.schedule), created: Boolean(reply.created) };
  }

  /** The schedule `id`. NotFound when there is none. */
  async getSchedule(id: string, options?: CallOptions): Promise<Schedule> {
    this.checkName("id", id);
    return toSchedule((await this.unary("GetSchedule", { namespace: this.namespace, id }, options)).schedule);
  }

  /** Every schedule of the namespace, in id order (all pages). */
  async listSchedules(options?: CallOptions): Promise<Schedule[]> {
    const all: Schedule[] = [];
    let pageToken = "";
    do {
      const reply = await this.unary("ListSchedules", { namespace: this.namespace, pageSize: 1000, pageToken }, options);
      for (const s of reply.schedules) all.push(toSchedule(s));
      pageToken = reply.nextPageToken;
    } while (pageToken);
    return all;
  }

  /** Pauses a schedule (it never fires until resumed); `note` says why. */
  async pauseSchedule(id: string, note = "", options?: CallOptions): Promise<Schedule> {
    this.checkName("id", id);
    return toSchedule((await this.unary("PauseSchedule", { namespace: this.namespace, id, note }, options)).schedule);
  }

  /** Resumes a paused schedule. */
  async resumeSchedule(id: string, options?: CallOptions): Promise<Schedule> {
    this.checkName("id", id);
    return toSchedule((await this.unary("ResumeSchedule", { namespace: this.namespace, id }, options)).schedule);
  }

  /** Runs a schedule once now, outside its timing: the occurrence's id and due time. */
  async triggerSchedule(id: string, options?: CallOptions): Promise<{ occurrenceId: string; dueTime?: Date }> {
    this.checkName("id", id);
    const reply = await this.unary("TriggerSchedule", { namespace: this.namespace, id }, options);
    return { occurrenceId: reply.occurrenceId, dueTime: toDate(reply.dueTime) };
  }

  /** Deletes a schedule. NotFound when there is none. */
  async deleteSchedule(id: string, options?: CallOptions): Promise<void> {
    this.checkName("id", id);
    await this.unary("DeleteSchedule", { namespace: this.namespace, id }, options);
  }

  /** Closes the connection; calls after it fail. */
  close(): void {
    this.work.close();
    this.grpc.close();
  }
}

/** `JSON.stringify(value)` as bytes; InvalidArgument naming `field` when it has no JSON form. */
export function jsonBytes(field: string, value: unknown): Buffer {
  const text = JSON.stringify(value);
  if (text === undefined) throw invalid(field, `${typeof value} has no JSON form`);
  return Buffer.from(text);
}

function readPem(field: string, file: string | undefined): Buffer | null {
  if (file === undefined) return null;
  try {
    return fs.readFileSync(file);
  } catch (error) {
    throw invalid(field, `cannot read ${file}: ${(error as Error).message}`);
  }
}

function credentials(config: ResolvedConfig): grpc.ChannelCredentials {
  if (!config.tls) return grpc.credentials.createInsecure();
  return grpc.credentials.createSsl(
    readPem("tlsCa", config.tlsCa),
    readPem("tlsKey", config.tlsKey),
    readPem("tlsCert", config.tlsCert),
  );
}

function channelOptions(config: ResolvedConfig): grpc.ChannelOptions {
  const options: grpc.ChannelOptions = {
    "grpc.max_receive_message_length": 64 * 1024 * 1024,
    "grpc.max_send_message_length": 64 * 1024 * 1024,
    // A restarted service is found again within seconds, not grpc-js's 2 minutes.
    "grpc.initial_reconnect_backoff_ms": 100,
    "grpc.max_reconnect_backoff_ms": 2000,
    // A connection that died without a FIN (a failover) is noticed.
    "grpc.keepalive_time_ms": 30_000,
    "grpc.keepalive_timeout_ms": 10_000,
  };
  if (config.tlsServerName !== undefined) {
    options["grpc.ssl_target_name_override"] = config.tlsServerName;
    options["grpc.default_authority"] = config.tlsServerName;
  }
  return options;
}
