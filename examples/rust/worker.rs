//! A dueq job worker in Rust: handles the jobs of queue "emails" until SIGTERM.
use dueq_client::{ActiveJob, Client, Config, HandlerError, Output, Worker};

#[tokio::main]
async fn main() -> dueq_client::Result<()> {
    let client = Client::connect(Config::from_env()?).await?;
    let handler = |job: ActiveJob| async move {
        println!("handled {}", job.id());
        Ok::<_, HandlerError>(Output::none())
    };
    Worker::new(client, ["emails"], handler).run().await
}
