//! A pipeline as a flow: resize an image, then two thumbnails in parallel, then
//! notify with what they made. The worker runs each job once its dependencies have
//! finished, and a job reads their results by ref.
use dueq_client::{
    ActiveJob, Client, Config, DependencyFailure, FlowNode, HandlerError, Job, JobState, Output,
    Worker,
};
use serde_json::{json, Value};
use tokio::sync::mpsc;

#[tokio::main]
async fn main() -> dueq_client::Result<()> {
    let client = Client::connect(Config::from_env()?).await?;
    let nodes = [
        FlowNode::new(
            "resize",
            Job::json("images", "resize", &json!({"file": "cat.png"})),
        ),
        FlowNode::new(
            "thumb-small",
            Job::json("images", "thumbnail", &json!({"px": 64})),
        )
        .after(["resize"]),
        FlowNode::new(
            "thumb-large",
            Job::json("images", "thumbnail", &json!({"px": 256})),
        )
        .after(["resize"]),
        // Run: notify even when a thumbnail failed (its dependencies say which).
        FlowNode::new("notify", Job::new("mail", "notify", Vec::new()))
            .after(["thumb-small", "thumb-large"])
            .on_dependency_failure(DependencyFailure::Run),
    ];
    let flow = client.enqueue_flow(nodes, None).await?;
    println!(
        "enqueued flow {}: {} jobs",
        flow.flow_id,
        flow.job_ids.len()
    );

    let (notified, mut done) = mpsc::unbounded_channel();
    let worker = Worker::new(client.clone(), ["images", "mail"], move |job| {
        handle(job, notified.clone())
    })
    .concurrency(2);
    let stop = worker.stop_handle();
    let (ran, _) = tokio::join!(worker.run(), async {
        done.recv().await;
        stop.stop(); // this example ends here; a real worker runs on
    });
    ran?;
    let state = client.get_flow(&flow.flow_id).await?.state();
    println!("flow {}: {state:?}", flow.flow_id);
    Ok(())
}

async fn handle(
    job: ActiveJob,
    notified: mpsc::UnboundedSender<()>,
) -> Result<Output, HandlerError> {
    let file = |reference: &str| -> Result<String, HandlerError> {
        let result: Value = job
            .dependency_json(reference)
            .ok_or_else(|| HandlerError::msg("no result"))??;
        Ok(result["file"].as_str().unwrap_or_default().to_owned())
    };
    match job.name() {
        "resize" => Output::json(&json!({"file": "cat-1024.png"})),
        "thumbnail" => {
            let px = job.json::<Value>()?["px"].clone();
            Output::json(&json!({"file": format!("{}@{px}px", file("resize")?)}))
        }
        _ => {
            let mut made = Vec::new();
            for d in job.dependencies() {
                if d.state() == JobState::Completed {
                    made.push(file(&d.r#ref)?);
                }
            }
            made.sort();
            println!("notify: {}", made.join(", "));
            let _ = notified.send(());
            Ok(Output::none())
        }
    }
}
