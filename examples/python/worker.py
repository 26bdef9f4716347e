"""A job worker: handles the jobs of queue "emails" until SIGTERM or Ctrl-C."""
import dueq


async def handle(job):
    # job.payload is bytes; job.json() parses it when the producer sent JSON.
    print(f"handled {job.id}", flush=True)


dueq.Worker(dueq.Client(), "emails", handle, concurrency=8).run()
