import { Client, ScheduleWorker } from "@dueq/client";

// Connects from DUEQ_ADDR, DUEQ_TOKEN, DUEQ_NAMESPACE and DUEQ_TLS_*.
const client = new Client();
const worker = new ScheduleWorker(client, async (occurrence) => {
  // The same id for every hand-out of this slot: use it as an idempotency key.
  console.log(`occurrence ${occurrence.occurrenceId}`);
});
// Runs until SIGINT/SIGTERM, then lets running handlers finish.
worker.run().finally(() => client.close());
