"""Enqueues three "welcome" jobs into queue "emails" (connection from DUEQ_*)."""
import dueq

with dueq.Client() as client:
    for to in ["ada@example.com", "grace@example.com", "alan@example.com"]:
        job = client.enqueue_json("emails", "welcome", {"to": to})
        print(f"enqueued {job.job_id}", flush=True)
