// Job worker over the Work stream: the server pushes jobs (at most CAPACITY held
// at once), the worker acks each on the same stream (or fails it, and dueq retries
// with backoff). Exits after --count jobs (0: until Ctrl-C); jobs pushed and not
// finished go back to the queue at once when it stops (their attempt counts).
//
//   node dist/worker.js --target localhost:50051 --namespace shop --queue emails --count 3

import * as grpc from "@grpc/grpc-js";

import { connect, isStatus, options, run } from "./client";
import type { ClaimedJob__Output } from "./generated/dueq/v1/ClaimedJob";
import type { WorkRequest } from "./generated/dueq/v1/WorkRequest";
import type { WorkResponse__Output } from "./generated/dueq/v1/WorkResponse";

// Jobs the server pushes ahead; a slot frees when the server answers the job's ack
// or fail. They are handled one after another here while all their leases run, so
// keep it to what gets done within one lease.
const CAPACITY = 3;

/** The actual work. Throw to fail the attempt. */
async function handle(job: ClaimedJob__Output): Promise<void> {
  console.log(`working on ${job.job_id} (${job.name}, attempt ${job.attempt}): ${job.payload.toString()}`);
  if (job.headers["fail"] === "yes") throw new Error("asked to fail");
}

run(async () => {
  const opts = options(0);
  const client = connect(opts.target);
  let stopping = false;
  let stream: grpc.ClientDuplexStream<WorkRequest, WorkResponse__Output> | undefined;
  // Ctrl-C (or SIGTERM from a supervisor): end the stream; the jobs it holds go back.
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    process.on(signal, () => {
      stopping = true;
      stream?.cancel();
    });
  }

  let handled = 0;
  // Acks and fails sent and not yet answered, by job id. If the server shuts down,
  // the stream ends UNAVAILABLE and these jobs keep their leases: they are sent
  // again on the next stream (a stream to any replica takes them).
  const unanswered = new Map<string, WorkRequest>();
  while (!stopping && (opts.count === 0 || handled < opts.count)) {
    stream = client.Work();
    // Errors reach the loop below through the iterator; this listener keeps the
    // CANCELLED that follows our own cancel() from being an unhandled 'error'.
    stream.on("error", () => {});
    stream.write({
      start: {
        namespace: opts.namespace,
        queues: [opts.queue],
        worker_id: opts.workerId,
        lease: { seconds: 30 },
        capacity: opts.count === 0 ? CAPACITY : Math.min(CAPACITY, opts.count - handled),
      },
    });
    for (const message of unanswered.values()) stream.write(message);
    try {
      for await (const reply of stream as AsyncIterable<WorkResponse__Output>) {
        if (reply.response === "job" && reply.job) {
          const job = reply.job;
          let message: WorkRequest;
          // Long work should write {extend: ...} before the lease ends.
          try {
            await handle(job);
            message = { ack: { job_id: job.job_id, lease_token: job.lease_token } };
          } catch (error) {
            message = { fail: { job_id: job.job_id, lease_token: job.lease_token, error: String(error) } };
          }
          unanswered.set(job.job_id, message);
          stream.write(message);
          continue;
        }
        // The answer to an ack or a fail: its slot is free again.
        const result = reply.response === "ack" ? reply.ack : reply.response === "fail" ? reply.fail : null;
        if (!result) continue; // an extend's answer: this worker sends none
        unanswered.delete(result.job_id);
        if (result.code === grpc.status.OK) {
          console.log(`${reply.response === "ack" ? "acked" : "failed"} ${result.job_id}`);
        } else if (result.code === grpc.status.ABORTED) {
          // The lease expired and the job went to another worker: drop it.
          console.log(`lost the lease on ${result.job_id}; dropping it`);
        } else {
          throw new Error(`${reply.response} of ${result.job_id} refused: ${result.code} ${result.message}`);
        }
        handled++;
        if (opts.count !== 0 && handled >= opts.count) break;
      }
    } catch (error) {
      if (stopping && isStatus(error, grpc.status.CANCELLED)) break;
      if (!isStatus(error, grpc.status.UNAVAILABLE)) throw error;
      // The server shut down or is unreachable: back off, open a new stream.
      await new Promise((resolve) => setTimeout(resolve, 1000));
    } finally {
      stream.cancel();
    }
  }
  client.close();
});
