//! A dueq job worker in Rust over the Work stream: the server pushes jobs (at most
//! CAPACITY held at once), the worker acks each on the same stream (or fails it, and
//! dueq retries with backoff). Exits after --count jobs, or on Ctrl-C; jobs pushed
//! and not finished go back to the queue at once when it stops (attempt counted).
//!
//!     cargo run --example worker -- --target localhost:50051 --namespace shop --count 3

use std::{collections::HashMap, time::Duration};

use clap::Parser;
use dueq::proto::{self, work_request::Request as In, work_response::Response as Out};
use tokio::sync::mpsc;
use tokio_stream::wrappers::UnboundedReceiverStream;
use tonic::Code;

#[path = "common.rs"]
mod common;

/// Jobs the server pushes ahead; a slot frees when the server answers the job's
/// ack or fail. They are handled one after another here while all their leases
/// run: keep it to what gets done within one lease.
const CAPACITY: u64 = 3;

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
    // Acks and fails sent and not yet answered, by job id. If the server shuts down,
    // the stream ends UNAVAILABLE and these jobs keep their leases: they are sent
    // again on the next stream (a stream to any replica takes them).
    let mut unanswered: HashMap<String, In> = HashMap::new();
    while count == 0 || handled < count {
        let capacity = if count == 0 {
            CAPACITY
        } else {
            CAPACITY.min(count - handled)
        };
        let (tx, rx) = mpsc::unbounded_channel();
        let send = |message: In| {
            // The receiver lives as long as the call: a failed send means it ended,
            // which the reply loop reports.
            let _ = tx.send(proto::WorkRequest {
                request: Some(message),
            });
        };
        send(In::Start(proto::WorkStart {
            namespace: args.common.namespace.clone(),
            queues: vec![args.queue.clone()],
            worker_id: args.worker_id.clone(),
            lease: common::seconds(30),
            capacity: capacity as u32,
        }));
        for message in unanswered.values() {
            send(message.clone());
        }
        let requests = UnboundedReceiverStream::new(rx);
        let mut replies = match client.work(requests).await {
            Ok(replies) => replies.into_inner(),
            Err(status) if status.code() == Code::Unavailable => {
                tokio::time::sleep(Duration::from_secs(1)).await; // back off, retry
                continue;
            }
            Err(status) => return Err(status),
        };
        loop {
            let reply = match replies.message().await {
                Ok(Some(reply)) => reply,
                Ok(None) => break,
                Err(status) if status.code() == Code::Unavailable => {
                    // The server shut down: back off, open a new stream.
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    break;
                }
                Err(status) => return Err(status),
            };
            let (what, result) = match reply.response {
                Some(Out::Job(job)) => {
                    // Long work should send In::Extend before the lease ends.
                    let message = match handle(&job) {
                        Ok(()) => In::Ack(proto::JobLease {
                            result: Vec::new(),
                            job_id: job.job_id.clone(),
                            lease_token: job.lease_token.clone(),
                        }),
                        Err(error) => In::Fail(proto::FailJobRequest {
                            job_id: job.job_id.clone(),
                            lease_token: job.lease_token.clone(),
                            error,
                            ..Default::default()
                        }),
                    };
                    unanswered.insert(job.job_id, message.clone());
                    send(message);
                    continue;
                }
                // The answer to an ack or a fail: its slot is free again.
                Some(Out::Ack(r)) => ("acked", (r.job_id, r.code, r.message)),
                Some(Out::Fail(r)) => ("failed", (r.job_id, r.code, r.message)),
                // An extension's answer (this worker sends none), or a newer kind.
                _ => continue,
            };
            let (job_id, code, message) = result;
            unanswered.remove(&job_id);
            match Code::from(code) {
                Code::Ok => println!("{what} {job_id}"),
                // The lease expired and the job went to another worker: drop it.
                Code::Aborted => println!("lost the lease on {job_id}; dropping it"),
                code => return Err(tonic::Status::new(code, message)),
            }
            handled += 1;
            if count != 0 && handled >= count {
                break;
            }
        }
        // Dropping the replies and the sender ends this stream.
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
