// Job producer: enqueues --count jobs (one Enqueue each, or one EnqueueBatch with
// --batch) and exits.
//
//   node dist/producer.js --target localhost:50051 --namespace shop --queue emails --count 3

import { call, connect, options, run } from "./client";
import type { EnqueueRequest } from "./generated/dueq/v1/EnqueueRequest";
import type { EnqueueResponse__Output } from "./generated/dueq/v1/EnqueueResponse";
import type { EnqueueBatchResponse__Output } from "./generated/dueq/v1/EnqueueBatchResponse";

run(async () => {
  const opts = options(3);
  const client = connect(opts.target);
  const jobs: EnqueueRequest[] = [];
  for (let i = 0; i < opts.count; i++) {
    jobs.push({
      namespace: opts.namespace,
      queue: opts.queue,
      name: "demo.greet",
      payload: Buffer.from(JSON.stringify({ hello: i })),
      headers: { source: "producer.ts" },
      max_attempts: 5,
      // An enum by name, a Duration as an object ({seconds, nanos}), not "1s".
      backoff: { kind: "BACKOFF_KIND_EXPONENTIAL", base: { seconds: 1 }, cap: { seconds: 60 } },
    });
  }
  if (opts.batch) {
    const reply = await call<EnqueueBatchResponse__Output>(
      (o, cb) => client.EnqueueBatch({ namespace: opts.namespace, jobs }, o, cb),
      10,
    );
    for (const result of reply.results) {
      // A bad item fails only itself: each result is `ok` or `error` (a oneof).
      if (result.error) throw new Error(`jobs[${result.index}]: ${result.error.message}`);
      console.log(`enqueued ${result.ok!.job_id} ${result.ok!.outcome}`);
    }
  } else {
    for (const job of jobs) {
      const reply = await call<EnqueueResponse__Output>((o, cb) => client.Enqueue(job, o, cb), 10);
      console.log(`enqueued ${reply.job_id} ${reply.outcome}`);
    }
  }
  client.close();
});
