import { Client, DueqError } from "@dueq/client";

// Enqueues three "welcome" jobs into queue "emails", each a JSON payload.
async function main(): Promise<void> {
  const client = new Client(); // DUEQ_ADDR, DUEQ_TOKEN, DUEQ_NAMESPACE, DUEQ_TLS_*
  try {
    for (const to of ["ada@example.com", "grace@example.com", "linus@example.com"]) {
      const { jobId } = await client.enqueueJson("emails", "welcome", { to }, { maxAttempts: 5 });
      console.log(`enqueued ${jobId}`);
    }
  } finally {
    client.close();
  }
}

main().catch((error: unknown) => {
  // A DueqError subclass names the gRPC code: PermissionDenied, Unavailable, ...
  console.error(error instanceof DueqError ? `${error.name}: ${error.details}` : error);
  process.exit(1);
});
