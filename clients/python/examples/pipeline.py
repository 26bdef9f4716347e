"""A pipeline as a flow: resize an image, then two thumbnails in parallel, then
notify with what they made. The worker runs each job once its dependencies have
finished, and a job reads their results by ref."""

import dueq


def main():
    client = dueq.Client()  # DUEQ_ADDR, DUEQ_NAMESPACE, ...
    flow = client.enqueue_flow([
        dueq.FlowNode("resize", dueq.JobSpec.json("images", "resize", {"file": "cat.png"})),
        dueq.FlowNode("thumb-small", dueq.JobSpec.json("images", "thumbnail", {"px": 64}), after=["resize"]),
        dueq.FlowNode("thumb-large", dueq.JobSpec.json("images", "thumbnail", {"px": 256}), after=["resize"]),
        # "run": notify even when a thumbnail failed (its dependencies say which).
        dueq.FlowNode("notify", dueq.JobSpec("mail", "notify"), after=["thumb-small", "thumb-large"],
                      on_dependency_failure="run"),
    ])
    print(f"enqueued flow {flow.flow_id}: {len(flow.job_ids)} jobs")

    async def handle(job):
        if job.name == "resize":
            return dueq.Json({"file": "cat-1024.png"})
        if job.name == "thumbnail":
            source = job.dependency_json("resize")["file"]
            return dueq.Json({"file": f"{source}@{job.json()['px']}px"})
        made = sorted(job.dependency_json(d.ref)["file"] for d in job.dependencies if d.state == "completed")
        print("notify:", ", ".join(made))
        worker.stop()  # this example ends here; a real worker runs on

    worker = dueq.Worker(client, ["images", "mail"], handle, concurrency=2)
    worker.run()
    print(f"flow {flow.flow_id}: {client.get_flow(flow.flow_id).state}")


if __name__ == "__main__":
    main()
