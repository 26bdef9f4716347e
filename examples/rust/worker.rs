//! A dueq job worker in Rust: long-polls ClaimJob, does the work, AckJob (or FailJob,
//! and dueq retries with backoff). Exits after --count jobs, or on Ctrl-C; jobs
//! claimed and not acked go back to the queue when their lease ends.
//!
//!     cargo run --example worker -- --target localhost:50051 --namespace shop --count 3

use std::time::Duration;

use clap::Parser;
use dueq::proto;
use tonic::Code;

#[path = "common.rs"]
mod common;

/// Claimed jobs are handled one after another while all their leases run: claim
/// only what gets done within one lease (and what fits one reply).
const MAX_JOBS: u64 = 3;

#[derive(Parser, Debug)]
struct Args {
    #[command(flatten)]
    common: common::Common,
    /// The queue to claim from.
    #[arg(long, default_value = "emails")]
    queue: String,
    /// Recorded on the job as the worker that claimed it.
    #[arg(long, default_value = "rust-worker")]
    worker_id: String,
}

/// The actual work. An error fails the attempt.
fn handle(job: &proto::ClaimedJob) -> Result<(), String> {
    println!(
        "working on {} ({}, attempt {}): {}",
        job.job_id,
        job.name,
        job.attempt,
        String::from_utf8_lossy(&job.payload)
    );
    match job.headers.get("fail").map(String::as_str) {
        Some("yes") => Err("asked to fail".into()),
        _ => Ok(()),
    }
}

async fn work(args: &Args, client: &mut common::Client) -> Result<(), tonic::Status> {
    let count = args.common.count;
    let mut handled = 0;
    while count == 0 || handled < count {
        let max_jobs = if count == 0 {
            MAX_JOBS
        } else {
            MAX_JOBS.min(count - handled)
        };
        let mut claim = tonic::Request::new(proto::ClaimJobRequest {
            namespace: args.common.namespace.clone(),
            queues: vec![args.queue.clone()],
            worker_id: args.worker_id.clone(),
            wait: common::seconds(20),
            lease: common::seconds(30),
            max_jobs: max_jobs as u32,
            acks: vec![],
        });
        // The server answers empty just before this deadline at the latest.
        claim.set_timeout(Duration::from_secs(25));
        let jobs = match client.claim_job(claim).await {
            Ok(reply) => reply.into_inner().jobs,
            Err(status) if status.code() == Code::Unavailable => {
                tokio::time::sleep(Duration::from_secs(1)).await; // back off, retry
                continue;
            }
            Err(status) => return Err(status),
        };
        for job in jobs {
            let outcome = match handle(&job) {
                Ok(()) => client
                    .ack_job(proto::AckJobRequest {
                        namespace: args.common.namespace.clone(),
                        job_id: job.job_id.clone(),
                        lease_token: job.lease_token.clone(),
                    })
                    .await
                    .map(|_| "acked"),
                Err(error) => client
                    .fail_job(proto::FailJobRequest {
                        namespace: args.common.namespace.clone(),
                        job_id: job.job_id.clone(),
                        lease_token: job.lease_token.clone(),
                        error,
                        ..Default::default()
                    })
                    .await
                    .map(|_| "failed"),
            };
            match outcome {
                Ok(what) => println!("{what} {}", job.job_id),
                // The lease expired and the job went to another worker: drop it.
                Err(status) if status.code() == Code::Aborted => {
                    println!("lost the lease on {}; dropping it", job.job_id)
                }
                Err(status) => return Err(status),
            }
            handled += 1;
        }
    }
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    let mut client = common::connect(&args.common.target).await?;
    tokio::select! {
        done = work(&args, &mut client) => done?,
        _ = tokio::signal::ctrl_c() => eprintln!("worker: stopping"),
    }
    Ok(())
}
