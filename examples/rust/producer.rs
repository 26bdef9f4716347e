//! A dueq producer in Rust: enqueues three JSON jobs named "welcome" into queue
//! "emails", printing `enqueued <job_id>` for each. The connection comes from the
//! DUEQ_* environment (DUEQ_ADDR, DUEQ_TOKEN, DUEQ_NAMESPACE, DUEQ_TLS_*).
//!
//!     DUEQ_ADDR=http://127.0.0.1:50051 cargo run -p dueq-client --example producer

use dueq_client::{Client, Config, Job};
use serde_json::json;

#[tokio::main]
async fn main() -> dueq_client::Result<()> {
    let client = Client::connect(Config::from_env()?).await?;
    for n in 1..=3 {
        let job = Job::json(
            "emails",
            "welcome",
            &json!({"to": format!("user{n}@example.com")}),
        );
        let enqueued = client.enqueue(job).await?;
        println!("enqueued {}", enqueued.job_id);
    }
    Ok(())
}
