// Flows (job dependencies): the nodes Client.enqueueFlow takes, and what
// enqueueFlow, getFlow, cancelFlow and retryFlow answer.

import type { Client } from "./client";
import { invalid } from "./errors";
import { toDate } from "./proto";
import { enqueueRequest, enumName, type EnqueueItem, type EnqueueOutcome, type JobState } from "./types";

/** What a node does when a dependency ends DEAD or CANCELLED. */
export type DependencyFailure = "cancel" | "run" | "skip";

/** Where a flow is (proto FlowState without its prefix). */
export type FlowState = "UNSPECIFIED" | "RUNNING" | "COMPLETED" | "FAILED";

/**
 * One job of a flow: `ref` (its name in the flow, 1-128 bytes), `job` (the fields
 * of an enqueue, as {@link Client.enqueueBatch} takes them; no `dedup`), `after`
 * (the refs it waits for) and `onDependencyFailure`: `cancel` (the default: it
 * ends CANCELLED), `run` (it runs anyway, told which failed) or `skip` (it ends
 * SKIPPED, and its dependents treat it as finished).
 */
export interface FlowNode {
  ref: string;
  job: EnqueueItem;
  after?: string[];
  onDependencyFailure?: DependencyFailure;
}

/** What {@link Client.enqueueFlow} did. */
export interface EnqueuedFlow {
  flowId: string;
  /** CREATED, or DUPLICATE when `flowId` named a stored flow (nothing written). */
  outcome: EnqueueOutcome;
  duplicate: boolean;
  /** Each node's job id, by ref. */
  jobIds: Record<string, string>;
}

/** One node of a flow as {@link Client.getFlow} shows it. */
export interface FlowNodeStatus {
  ref: string;
  jobId: string;
  queue: string;
  name: string;
  state: JobState;
  /** Refs of its dependencies, as enqueued. */
  after: string[];
  onDependencyFailure: DependencyFailure;
  attempts: number;
  /** CANCELLED or SKIPPED because of a dependency: that dependency's ref ("" if none). */
  failedDependency: string;
  createTime?: Date;
  updateTime?: Date;
  finishTime?: Date;
}

/** A flow, with every node (each after its dependencies). */
export interface FlowStatus {
  flowId: string;
  /** RUNNING; COMPLETED (every node COMPLETED or SKIPPED); FAILED (finished, some DEAD or CANCELLED). */
  state: FlowState;
  nodeCount: number;
  unfinished: number;
  /** Nodes that ended DEAD or CANCELLED. */
  failed: number;
  /** CancelFlow was called (and no RetryFlow since). */
  cancelled: boolean;
  createTime?: Date;
  finishTime?: Date;
  nodes: FlowNodeStatus[];
}

/** What {@link Client.cancelFlow} and {@link Client.retryFlow} leave. */
export interface FlowCounts {
  state: FlowState;
  unfinished: number;
  failed: number;
}

/** One direct dependency of a claimed flow node, as the claim found it. */
export interface Dependency {
  ref: string;
  jobId: string;
  /** COMPLETED or SKIPPED; DEAD or CANCELLED only under `onDependencyFailure: "run"`. */
  state: JobState;
}

const RULES: Record<DependencyFailure, number> = { cancel: 1, run: 2, skip: 3 };
const RULE_NAMES: Record<number, DependencyFailure> = { 0: "cancel", 1: "cancel", 2: "run", 3: "skip" };
/** The longest node ref the service accepts, in bytes. */
const MAX_REF = 128;

/** @internal The EnqueueFlowRequest of `nodes`, checked; errors name `nodes[i].<field>`. */
export function flowRequest(client: Client, nodes: FlowNode[], flowId: string | undefined): object {
  if (!Array.isArray(nodes) || nodes.length === 0) throw invalid("nodes", "must not be empty");
  if (flowId !== undefined) client.checkName("flowId", flowId);
  const out = nodes.map((node, i) => {
    const prefix = `nodes[${i}].`;
    client.checkName(`${prefix}ref`, node.ref);
    if (Buffer.byteLength(node.ref) > MAX_REF) throw invalid(`${prefix}ref`, `longer than ${MAX_REF} bytes`);
    if (node.job === null || typeof node.job !== "object") throw invalid(`${prefix}job`, "must be an enqueue item");
    const job = enqueueRequest(client, node.job, `${prefix}job.`) as Record<string, unknown>;
    job.namespace = "";
    const rule = RULES[node.onDependencyFailure ?? "cancel"];
    if (rule === undefined) {
      throw invalid(`${prefix}onDependencyFailure`, `must be "cancel", "run" or "skip", got ${JSON.stringify(node.onDependencyFailure)}`);
    }
    const after = node.after ?? [];
    if (!Array.isArray(after)) throw invalid(`${prefix}after`, "must be an array of refs");
    after.forEach((ref, k) => client.checkName(`${prefix}after[${k}]`, ref));
    return { ref: node.ref, job, after, onDependencyFailure: rule };
  });
  return { namespace: client.namespace, nodes: out, flowId: flowId ?? "" };
}

/** @internal */
export function toEnqueuedFlow(r: any): EnqueuedFlow {
  const outcome = enumName<EnqueueOutcome>("EnqueueOutcome", "ENQUEUE_OUTCOME_", r.outcome);
  return { flowId: r.flowId, outcome, duplicate: outcome !== "CREATED", jobIds: { ...r.jobIds } };
}

function toNode(n: any): FlowNodeStatus {
  return {
    ref: n.ref,
    jobId: n.jobId,
    queue: n.queue,
    name: n.name,
    state: enumName("JobState", "JOB_STATE_", n.state),
    after: [...n.after],
    onDependencyFailure: RULE_NAMES[n.onDependencyFailure] ?? "cancel",
    attempts: n.attempts,
    failedDependency: n.failedDependency,
    createTime: toDate(n.createTime),
    updateTime: toDate(n.updateTime),
    finishTime: toDate(n.finishTime),
  };
}

/** @internal One FlowStatus from the pages of GetFlow, in order. */
export function toFlowStatus(pages: any[]): FlowStatus {
  const f = pages[0];
  return {
    flowId: f.flowId,
    state: enumName("FlowState", "FLOW_STATE_", f.state),
    nodeCount: f.nodeCount,
    unfinished: f.unfinished,
    failed: f.failed,
    cancelled: Boolean(f.cancelled),
    createTime: toDate(f.createTime),
    finishTime: toDate(f.finishTime),
    nodes: pages.flatMap((p) => (p.nodes as any[]).map(toNode)),
  };
}

/** @internal */
export function toFlowCounts(r: any): FlowCounts {
  return { state: enumName("FlowState", "FLOW_STATE_", r.state), unfinished: r.unfinished, failed: r.failed };
}

/** @internal The dependencies of a claimed job message. */
export function toDependencies(msg: any): Dependency[] {
  return ((msg.dependencies ?? []) as any[]).map((d) => ({
    ref: d.ref,
    jobId: d.jobId,
    state: enumName("JobState", "JOB_STATE_", d.state),
  }));
}
