// Schedule worker: upserts a schedule once (every --every-seconds, default 1), then
// claims its occurrences with a lease (ClaimDueSchedule) and acks each
// (AckOccurrence). Exits after --count occurrences (0: until Ctrl-C).
//
//   node dist/schedule_worker.js --target localhost:50051 --namespace shop --count 2

import * as grpc from "@grpc/grpc-js";

import { call, connect, isStatus, options, run } from "./client";
import type { ClaimDueScheduleResponse__Output } from "./generated/dueq/v1/ClaimDueScheduleResponse";
import type { UpsertScheduleResponse__Output } from "./generated/dueq/v1/UpsertScheduleResponse";

run(async () => {
  const opts = options(0);
  const client = connect(opts.target);
  const scheduleId = process.env.DUEQ_SCHEDULE_ID ?? "node-heartbeat";
  let stopping = false;
  let polling: grpc.ClientUnaryCall | undefined;
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    process.on(signal, () => {
      stopping = true;
      polling?.cancel();
    });
  }

  // Idempotent: a second run finds the schedule and keeps its next run.
  const upserted = await call<UpsertScheduleResponse__Output>(
    (o, cb) =>
      client.UpsertSchedule(
        {
          namespace: opts.namespace,
          schedule: {
            id: scheduleId,
            every: { seconds: 1 }, // a Duration object; "1s" is grpcurl's JSON form
            job_name: "heartbeat",
            payload: Buffer.from("from schedule_worker.ts"),
          },
        },
        o,
        cb,
      ),
    10,
  );
  console.log(`schedule ${upserted.schedule!.id} (created: ${upserted.created})`);

  let acked = 0;
  while (!stopping && (opts.count === 0 || acked < opts.count)) {
    let reply: ClaimDueScheduleResponse__Output;
    try {
      reply = await call<ClaimDueScheduleResponse__Output>(
        (o, cb) =>
          client.ClaimDueSchedule(
            {
              namespace: opts.namespace,
              worker_id: opts.workerId,
              wait: { seconds: 20 },
              // At-least-once: ack within the lease or the occurrence is handed out again.
              lease: { seconds: 30 },
            },
            o,
            cb,
          ),
        25,
        (pending) => (polling = pending),
      );
    } catch (error) {
      if (stopping && isStatus(error, grpc.status.CANCELLED)) break;
      throw error;
    }
    const occurrence = reply.occurrence;
    if (!occurrence) continue; // nothing came due within the wait
    // uint64 fields (run_number, Timestamp seconds) are strings: see LOAD_OPTIONS.longs.
    const due = new Date(Number(occurrence.due_time!.seconds) * 1000).toISOString();
    console.log(
      `occurrence ${occurrence.occurrence_id} of ${occurrence.schedule!.id}: run ${occurrence.run_number}, due ${due}`,
    );
    await call(
      (o, cb) =>
        client.AckOccurrence(
          {
            namespace: opts.namespace,
            occurrence_id: occurrence.occurrence_id,
            lease_token: occurrence.lease_token,
          },
          o,
          cb,
        ),
      10,
    );
    console.log(`acked ${occurrence.occurrence_id}`);
    acked++;
  }
  client.close();
});
