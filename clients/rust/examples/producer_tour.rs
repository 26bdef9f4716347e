//! The producer API in one pass: enqueue options, a deduplicated JSON job, a
//! batch, reading and cancelling a job, a schedule, and errors by kind.
use std::time::Duration;

use dueq_client::{Backoff, Client, Config, ErrorKind, Job, Schedule};
use serde_json::json;

#[tokio::main]
async fn main() -> dueq_client::Result<()> {
    let client = Client::connect(Config::from_env()?).await?;

    let job = Job::new("reports", "render", b"monthly".to_vec())
        .priority(5)
        .delay(Duration::from_secs(60))
        .job_id("report-2026-12") // an idempotency key: a second enqueue is a duplicate
        .header("tenant", "acme")
        .max_attempts(7)
        .backoff(Backoff::exponential(
            Duration::from_secs(2),
            Duration::from_secs(600),
        ));
    let enqueued = client.enqueue(job).await?;
    println!("{} {:?}", enqueued.job_id, enqueued.outcome);

    // JSON only when asked for; a dedup key makes a repeat within the hour a duplicate.
    let welcome = Job::json("emails", "welcome", &json!({"to": "ada@example.com"}));
    let first = client
        .enqueue(welcome.dedup("welcome:ada", Duration::from_secs(3600)))
        .await?;
    println!("duplicate: {}", first.is_duplicate());

    let batch = (1..=3).map(|n| Job::json("emails", "digest", &json!({"n": n})));
    for item in client.enqueue_batch(batch).await? {
        println!("batch item: {:?}", item.map(|e| e.job_id));
    }

    let stored = client.get_job("report-2026-12").await?;
    println!("{:?}, attempts {}", stored.state(), stored.attempts);
    let cancelled = client.cancel("report-2026-12").await?;
    println!("{:?}", cancelled.state());

    let nightly = Schedule::cron("nightly-report", "0 3 * * *")
        .timezone("Europe/Paris")
        .job_name("render");
    println!(
        "created: {}",
        client.upsert_schedule(nightly).await?.created
    );
    client.pause_schedule("nightly-report").await?;

    match client.retry("no-such-job").await {
        Err(e) if e.kind() == ErrorKind::NotFound => println!("not found: {}", e.message()),
        Err(e) => return Err(e), // e.g. PermissionDenied (code 7) for a reader's token
        Ok(job) => println!("retried {}", job.job_id),
    }
    Ok(())
}
