// A pipeline as a flow: resize an image, then two thumbnails in parallel, then
// notify with what they made. The worker runs each job once its dependencies have
// finished, and a job reads their results by ref. (In an application, import from
// "@dueq/client".)

import { Client, json, Worker, type Job } from "../index";

async function main(): Promise<void> {
  const client = new Client(); // DUEQ_ADDR, DUEQ_NAMESPACE, ...
  const flow = await client.enqueueFlow([
    { ref: "resize", job: { queue: "images", name: "resize", payload: JSON.stringify({ file: "cat.png" }) } },
    { ref: "thumb-small", job: { queue: "images", name: "thumbnail", payload: JSON.stringify({ px: 64 }) }, after: ["resize"] },
    { ref: "thumb-large", job: { queue: "images", name: "thumbnail", payload: JSON.stringify({ px: 256 }) }, after: ["resize"] },
    // "run": notify even when a thumbnail failed (its dependencies say which).
    { ref: "notify", job: { queue: "mail", name: "notify" }, after: ["thumb-small", "thumb-large"], onDependencyFailure: "run" },
  ]);
  console.log(`enqueued flow ${flow.flowId}: ${Object.keys(flow.jobIds).length} jobs`);

  const worker: Worker = new Worker(client, ["images", "mail"], async (job: Job) => {
    if (job.name === "resize") return json({ file: "cat-1024.png" });
    if (job.name === "thumbnail") {
      const source = job.dependencyJson<{ file: string }>("resize")!.file;
      return json({ file: `${source}@${job.json<{ px: number }>().px}px` });
    }
    const made = job.dependencies
      .filter((d) => d.state === "COMPLETED")
      .map((d) => job.dependencyJson<{ file: string }>(d.ref)!.file)
      .sort();
    console.log(`notify: ${made.join(", ")}`);
    void worker.stop(); // this example ends here; a real worker runs on
  }, { concurrency: 2 });
  await worker.run();
  console.log(`flow ${flow.flowId}: ${(await client.getFlow(flow.flowId)).state}`);
  client.close();
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
