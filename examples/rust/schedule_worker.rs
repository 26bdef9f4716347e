//! A dueq schedule worker in Rust: runs each due occurrence until SIGTERM.
use dueq_client::{Client, Config, HandlerError, Occurrence, ScheduleWorker};

#[tokio::main]
async fn main() -> dueq_client::Result<()> {
    let client = Client::connect(Config::from_env()?).await?;
    let handler = |occurrence: Occurrence| async move {
        println!("occurrence {}", occurrence.occurrence_id());
        Ok::<_, HandlerError>(())
    };
    ScheduleWorker::new(client, handler).run().await
}
