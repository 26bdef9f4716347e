// @dueq/client: the dueq client for Node.js.

export { Client, jsonBytes, type CallOptions } from "./client";
export { resolveConfig, type ClientOptions, type ResolvedConfig } from "./config";
export * from "./errors";
export type {
  Dependency,
  DependencyFailure,
  EnqueuedFlow,
  FlowCounts,
  FlowNode,
  FlowNodeStatus,
  FlowState,
  FlowStatus,
} from "./flow";
export { json, JsonResult, type Handler, type Job } from "./job";
export { Worker, type WorkerOptions } from "./worker";
export { ScheduleWorker, type Occurrence, type OccurrenceHandler, type ScheduleWorkerOptions } from "./schedule-worker";
export type {
  Backoff,
  Dedup,
  EnqueueItem,
  EnqueueOptions,
  EnqueueOutcome,
  EnqueueResult,
  JobInfo,
  JobState,
  Progress,
  Schedule,
  ScheduleSpec,
  ScheduleStatus,
} from "./types";
