"""A schedule worker: runs each due occurrence of the namespace's schedules."""
import dueq


async def handle(occurrence):
    # occurrence_id is the idempotency key: a retried occurrence keeps it.
    print(f"occurrence {occurrence.occurrence_id}", flush=True)


dueq.ScheduleWorker(dueq.Client(), handle).run()
