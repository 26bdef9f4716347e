// The conformance driver (clients/conformance/README.md): `node
// dist/conformance/driver.js '<json params>'`. Connects only from the DUEQ_*
// environment, prints one JSON event per line.

import { Client, DueqError, json, NonRetryable, ScheduleWorker, Worker, type DependencyFailure, type EnqueueOptions, type FlowNode, type Job } from "../index";

type Params = Record<string, any>;

function emit(event: Record<string, unknown>): void {
  process.stdout.write(JSON.stringify(event) + "\n");
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Calls `stop` once `n` handlers have returned (never when n is null). */
function stopAfter(n: number | null | undefined, stop: () => void): () => void {
  let returned = 0;
  return () => {
    if (n != null && ++returned === n) setImmediate(stop);
  };
}

async function work(client: Client, p: Params): Promise<void> {
  let worker: Worker | undefined = undefined;
  const returned = stopAfter(p.stop_after, () => void worker?.stop());
  const handler = async (job: Job) => {
    try {
      emit({ event: "start", job_id: job.id, attempt: job.attempt, name: job.name });
      const spec = job.json<Params>();
      if (spec.progress) job.progress(spec.progress);
      if (spec.sleep_ms) await sleep(spec.sleep_ms);
      if (spec.wait_cancel) {
        const signal = job.cancelled;
        if (!signal.aborted) await new Promise((resolve) => signal.addEventListener("abort", resolve, { once: true }));
        emit({ event: "cancelled", job_id: job.id });
        throw new Error("cancelled");
      }
      if (spec.fail === "retry" && job.attempt <= (spec.fail_attempts ?? 1)) throw new Error("planned failure");
      if (spec.fail === "fatal") throw new NonRetryable("planned fatal");
      emit({ event: "done", job_id: job.id });
      return json({ ok: true, job_id: job.id });
    } finally {
      returned();
    }
  };
  worker = new Worker(client, p.queues, handler, {
    concurrency: p.concurrency ?? 1,
    leaseMs: p.lease_ms ?? undefined,
    onError: (e) => process.stderr.write(`worker: ${String(e)}\n`),
  });
  // run() registers its signal handlers before its first await: from here a SIGTERM drains.
  const running = worker.run();
  emit({ event: "ready" });
  await running;
  emit({ event: "exit" });
}

async function schedules(client: Client, p: Params): Promise<void> {
  let worker: ScheduleWorker | undefined = undefined;
  const returned = stopAfter(p.stop_after, () => void worker?.stop());
  worker = new ScheduleWorker(
    client,
    (o) => {
      emit({ event: "occurrence", occurrence_id: o.occurrenceId, schedule_id: o.scheduleId });
      returned();
    },
    { concurrency: p.concurrency ?? 1, waitMs: 5000, onError: (e) => process.stderr.write(`schedules: ${String(e)}\n`) },
  );
  // run() registers its signal handlers before its first await: from here a SIGTERM drains.
  const running = worker.run();
  emit({ event: "ready" });
  await running;
  emit({ event: "exit" });
}

async function produce(client: Client, p: Params): Promise<void> {
  const q = p.queue;
  const call = (name: string, fields: Record<string, unknown>) => emit({ event: "call", call: name, ...fields });
  const e = await client.enqueue(q, "raw", Buffer.from("raw"), {
    priority: 5,
    delayMs: 60_000,
    jobId: "p-1",
    headers: { h: "v" },
    maxAttempts: 7,
    backoff: { kind: "exponential", baseMs: 2000 },
  });
  call("enqueue", { job_id: e.jobId, outcome: e.outcome });
  const j1 = await client.enqueueJson(q, "json", { n: 1 }, { dedup: "d-1" });
  call("enqueue_json", { job_id: j1.jobId, duplicate: j1.duplicate });
  const j2 = await client.enqueueJson(q, "json", { n: 1 }, { dedup: "d-1" });
  call("enqueue_json", { job_id: j2.jobId, duplicate: j2.duplicate });
  const batch = await client.enqueueBatch(
    ["b-1", "b-2", "b-3"].map((jobId) => ({ queue: q, name: "batch", payload: Buffer.from(jobId), jobId })),
  );
  call("enqueue_batch", { job_ids: batch.map((r) => (r instanceof DueqError ? null : r.jobId)) });
  const got = await client.getJob("p-1");
  call("get_job", { job_id: got.id, state: got.state, priority: got.priority, max_attempts: got.maxAttempts, headers: got.headers });
  call("cancel", { job_id: "p-1", state: (await client.cancel("p-1")).state });
  if (p.dead_job_id) call("retry", { job_id: p.dead_job_id, state: (await client.retry(p.dead_job_id)).state });
  const s = await client.upsertSchedule({ id: "s-1", everyMs: 3_600_000, payload: JSON.stringify({ s: 1 }) });
  call("upsert_schedule", { id: s.id, created: s.created });
  const g = await client.getSchedule("s-1");
  call("get_schedule", { id: g.id, every_ms: g.everyMs, payload: g.payload.toString(), status: g.status });
  call("list_schedules", { ids: (await client.listSchedules()).map((x) => x.id) });
  const paused = await client.pauseSchedule("s-1");
  call("pause_schedule", { id: "s-1", status: paused.status, paused: paused.status === "PAUSED" });
  const resumed = await client.resumeSchedule("s-1");
  call("resume_schedule", { id: "s-1", status: resumed.status, paused: resumed.status === "PAUSED" });
  call("trigger_schedule", { id: "s-1", occurrence_id: (await client.triggerSchedule("s-1")).occurrenceId });
  await client.deleteSchedule("s-1");
  call("delete_schedule", { id: "s-1" });
}

async function flow(client: Client, p: Params): Promise<void> {
  const q: string = p.queue;
  const call = (name: string, fields: Record<string, unknown>) => emit({ event: "call", call: name, ...fields });
  const node = (ref: string, after: string[] = [], payload: object = {}, options: EnqueueOptions = {}, rule?: DependencyFailure): FlowNode => ({
    ref,
    job: { queue: q, name: `flow.${ref}`, payload: JSON.stringify(payload), ...options },
    after,
    onDependencyFailure: rule,
  });
  const flows: Record<string, FlowNode[]> = {
    "f-ok": [node("a"), node("b", ["a"]), node("c", ["a"]), node("d", ["b", "c"])],
    "f-fail": [node("a", [], { fail: "fatal" }), node("x", ["a"]), node("y", ["a"], {}, {}, "run")],
    "f-cancel": [node("a", [], {}, { delayMs: 3_600_000 }), node("b", ["a"])],
  };
  for (const [flowId, nodes] of Object.entries(flows)) {
    const r = await client.enqueueFlow(nodes, flowId);
    call("enqueue_flow", { flow_id: r.flowId, outcome: r.outcome, job_ids: r.jobIds });
  }
  const cancelled = await client.cancelFlow("f-cancel");
  call("cancel_flow", { state: cancelled.state, unfinished: cancelled.unfinished, failed: cancelled.failed });
  try {
    await client.enqueueFlow([node("a", ["nope"])], "f-bad");
    emit({ event: "ok", call: "enqueue_flow" });
  } catch (error) {
    if (!(error instanceof DueqError)) throw error;
    emit({ event: "error", call: "enqueue_flow", kind: error.name, code: error.code, message: error.details });
  }
  await flowWorker(client, p);
  for (const flowId of ["f-ok", "f-fail"]) {
    const f = await client.getFlow(flowId);
    const nodes = f.nodes.map((n) => ({ ref: n.ref, job_id: n.jobId, state: n.state, after: n.after, failed_dependency: n.failedDependency }));
    call("get_flow", { flow_id: f.flowId, state: f.state, nodes });
  }
  const retried = await client.retryFlow("f-fail");
  call("retry_flow", { state: retried.state, unfinished: retried.unfinished, failed: retried.failed });
}

/** Works the flows' six runnable nodes, printing what each handler sees. */
async function flowWorker(client: Client, p: Params): Promise<void> {
  let worker: Worker | undefined = undefined;
  const returned = stopAfter(6, () => void worker?.stop());
  const handler = async (job: Job) => {
    try {
      const dependencies = job.dependencies.map((d) => ({ ref: d.ref, job_id: d.jobId, state: d.state }));
      const results = Object.fromEntries(Object.keys(job.dependencyResults).map((ref) => [ref, job.dependencyJson(ref)]));
      emit({ event: "start", job_id: job.id, flow_id: job.flowId, flow_ref: job.flowRef, dependencies, results });
      if (job.json<Params>().fail === "fatal") throw new NonRetryable("planned fatal");
      return json({ ref: job.flowRef });
    } finally {
      returned();
    }
  };
  worker = new Worker(client, p.queue, handler, {
    concurrency: p.concurrency ?? 2,
    onError: (e) => process.stderr.write(`worker: ${String(e)}\n`),
  });
  const running = worker.run();
  emit({ event: "ready" });
  await running;
}

async function oneCall(client: Client, p: Params): Promise<void> {
  if (p.call !== "enqueue") throw new Error(`call: unknown call ${JSON.stringify(p.call)}`);
  try {
    const r = await client.enqueue(p.queue, "call", Buffer.alloc(p.payload_bytes ?? 0));
    emit({ event: "ok", job_id: r.jobId });
  } catch (error) {
    if (!(error instanceof DueqError)) throw error;
    emit({ event: "error", kind: error.name, code: error.code, message: error.details });
  }
}

async function bench(client: Client, p: Params): Promise<void> {
  const jobs: number = p.jobs;
  let done = 0;
  let first = 0;
  let worker: Worker | undefined = undefined;
  const cpu0 = process.cpuUsage();
  worker = new Worker(
    client,
    p.queues,
    () => {
      if (first === 0) first = performance.now();
      if (++done === jobs) setImmediate(() => void worker!.stop());
    },
    { concurrency: p.concurrency ?? 32, handleSignals: true },
  );
  await worker.run();
  const seconds = (performance.now() - first) / 1000;
  const cpu = process.cpuUsage(cpu0);
  emit({ event: "bench", jobs: done, seconds, cpu_seconds: (cpu.user + cpu.system) / 1e6 });
}

async function main(): Promise<void> {
  const p: Params = JSON.parse(process.argv[2] ?? "{}");
  const client = new Client();
  try {
    switch (p.mode) {
      case "work":
        return await work(client, p);
      case "schedules":
        return await schedules(client, p);
      case "produce":
        return await produce(client, p);
      case "call":
        return await oneCall(client, p);
      case "bench":
        return await bench(client, p);
      case "flow":
        return await flow(client, p);
      default:
        throw new Error(`mode: unknown mode ${JSON.stringify(p.mode)}`);
    }
  } finally {
    client.close();
  }
}

main().then(
  () => process.exit(0),
  (error) => {
    process.stderr.write(`driver: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exit(1);
  },
);
