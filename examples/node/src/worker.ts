import { Client, Worker } from "@dueq/client";

// Connects from DUEQ_ADDR, DUEQ_TOKEN, DUEQ_NAMESPACE and DUEQ_TLS_*.
const client = new Client();
const worker = new Worker(client, "emails", async (job) => {
  console.log(`handled ${job.id}`);
});
// Runs until SIGINT/SIGTERM: running jobs finish and are acked, then it returns.
worker.run().finally(() => client.close());
