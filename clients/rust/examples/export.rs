//! A worker that reports progress, resumes from its checkpoint, stops when its
//! job is cancelled, and refuses bad input for good: queue "exports", until SIGTERM.
use dueq_client::{
    ActiveJob, Client, Config, HandlerError, NonRetryable, Output, Progress, Worker,
};
use serde_json::{json, Value};

async fn export(job: ActiveJob) -> Result<Output, HandlerError> {
    let asks: Value = job.json()?; // not JSON: fails the attempt (retried)
    let Some(rows) = asks["rows"].as_u64() else {
        return Err(NonRetryable::new("rows: missing").into()); // dead at once
    };
    // A retry starts where the failed attempt's last checkpoint says.
    let mut row: u64 = std::str::from_utf8(job.checkpoint())
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    while row < rows {
        if job.is_cancelled() {
            return Err(HandlerError::msg("cancelled")); // the job ends CANCELLED
        }
        row += 100; // ... the real work ...
        let fraction = row as f64 / rows as f64;
        job.progress(
            Progress::new()
                .fraction(fraction)
                .checkpoint(row.to_string()),
        );
    }
    Output::json(&json!({"rows": rows})) // the job's result, kept with it
}

#[tokio::main]
async fn main() -> dueq_client::Result<()> {
    let client = Client::connect(Config::from_env()?.namespace("reports")).await?;
    Worker::new(client, ["exports"], export)
        .concurrency(2)
        .run()
        .await
}
