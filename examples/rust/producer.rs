//! A dueq job producer in Rust: enqueues --count jobs and exits.
//!
//!     cargo run --example producer -- --target localhost:50051 --namespace shop --count 3

use clap::Parser;
use dueq::proto::{self, BackoffKind, EnqueueOutcome};

#[path = "common.rs"]
mod common;

#[derive(Parser, Debug)]
struct Args {
    #[command(flatten)]
    common: common::Common,
    /// The queue to put the jobs in.
    #[arg(long, default_value = "emails")]
    queue: String,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    let mut client = common::connect(&args.common.target).await?;
    for i in 0..args.common.count {
        let reply = client
            .enqueue(proto::EnqueueRequest {
                namespace: args.common.namespace.clone(),
                queue: args.queue.clone(),
                name: "demo.greet".into(),
                payload: format!("{{\"hello\": {i}}}").into_bytes(),
                headers: [("source".to_owned(), "producer.rs".to_owned())].into(),
                max_attempts: Some(5),
                backoff: Some(proto::Backoff {
                    kind: BackoffKind::Exponential as i32,
                    base: common::seconds(1),
                    cap: common::seconds(60),
                    jitter: 0.0,
                }),
                ..Default::default()
            })
            .await?
            .into_inner();
        let outcome = EnqueueOutcome::try_from(reply.outcome).unwrap_or_default();
        println!("enqueued {} {}", reply.job_id, outcome.as_str_name());
    }
    Ok(())
}
