// Job worker: long-polls ClaimJob, does the work, AckJob (or FailJob, and dueq
// retries with backoff). Exits after --count jobs (0: until Ctrl-C).
//
//   node dist/worker.js --target localhost:50051 --namespace shop --queue emails --count 3

import * as grpc from "@grpc/grpc-js";

import { call, connect, isStatus, options, run } from "./client";
import type { ClaimedJob__Output } from "./generated/dueq/v1/ClaimedJob";
import type { ClaimJobResponse__Output } from "./generated/dueq/v1/ClaimJobResponse";

/** The actual work. Throw to fail the attempt. */
async function handle(job: ClaimedJob__Output): Promise<void> {
  console.log(`working on ${job.job_id} (${job.name}, attempt ${job.attempt}): ${job.payload.toString()}`);
  if (job.headers["fail"] === "yes") throw new Error("asked to fail");
}

run(async () => {
  const opts = options(0);
  const client = connect(opts.target);
  let stopping = false;
  let polling: grpc.ClientUnaryCall | undefined;
  // Ctrl-C (or SIGTERM from a supervisor): stop claiming, cancel the long-poll.
  // Jobs claimed and not acked go back to the queue when their lease ends.
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    process.on(signal, () => {
      stopping = true;
      polling?.cancel();
    });
  }

  let handled = 0;
  while (!stopping && (opts.count === 0 || handled < opts.count)) {
    let reply: ClaimJobResponse__Output;
    try {
      reply = await call<ClaimJobResponse__Output>(
        (o, cb) =>
          client.ClaimJob(
            {
              namespace: opts.namespace,
              queues: [opts.queue],
              worker_id: opts.workerId,
              wait: { seconds: 20 },
              lease: { seconds: 30 },
              // Jobs are handled one after another while every claimed lease runs:
              // claim only what gets done within one, and what fits one reply.
              max_jobs: Math.min(3, opts.count === 0 ? 3 : opts.count - handled),
            },
            o,
            cb,
          ),
        25,
        (pending) => (polling = pending),
      );
    } catch (error) {
      if (stopping && isStatus(error, grpc.status.CANCELLED)) break;
      if (isStatus(error, grpc.status.UNAVAILABLE)) {
        await new Promise((resolve) => setTimeout(resolve, 1000)); // back off, retry
        continue;
      }
      throw error;
    }
    for (const job of reply.jobs) {
      const ids = { namespace: opts.namespace, job_id: job.job_id, lease_token: job.lease_token };
      try {
        await handle(job);
        await call((o, cb) => client.AckJob(ids, o, cb), 10);
        console.log(`acked ${job.job_id}`);
      } catch (error) {
        if (isStatus(error, grpc.status.ABORTED)) {
          // The lease expired and the job went to another worker: drop it.
          console.log(`lost the lease on ${job.job_id}; dropping it`);
        } else if ((error as grpc.ServiceError).code !== undefined) {
          throw error;
        } else {
          await call((o, cb) => client.FailJob({ ...ids, error: String(error) }, o, cb), 10);
          console.log(`failed ${job.job_id}`);
        }
      }
      handled++;
    }
  }
  client.close();
});
