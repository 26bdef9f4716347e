//! A dueq schedule worker in Rust: upserts a schedule once (every second), then
//! claims its occurrences with a lease (ClaimDueSchedule) and acks each
//! (AckOccurrence). Exits after --count occurrences, or on Ctrl-C.
//!
//!     cargo run --example schedule_worker -- --target localhost:50051 --namespace shop --count 2

use std::time::Duration;

use clap::Parser;
use dueq::proto;

#[path = "common.rs"]
mod common;

#[derive(Parser, Debug)]
struct Args {
    #[command(flatten)]
    common: common::Common,
    /// The schedule this worker keeps (it takes any due schedule of the namespace).
    #[arg(long, default_value = "rust-heartbeat")]
    schedule_id: String,
    #[arg(long, default_value = "rust-schedule-worker")]
    worker_id: String,
}

async fn work(args: &Args, client: &mut common::Client) -> Result<(), tonic::Status> {
    let namespace = &args.common.namespace;
    // Idempotent: a second run finds the schedule and keeps its next run.
    let upserted = client
        .upsert_schedule(proto::UpsertScheduleRequest {
            namespace: namespace.clone(),
            schedule: Some(proto::Schedule {
                id: args.schedule_id.clone(),
                timing: common::seconds(1).map(proto::schedule::Timing::Every),
                job_name: "heartbeat".into(),
                payload: b"from schedule_worker.rs".to_vec(),
                ..Default::default()
            }),
        })
        .await?
        .into_inner();
    println!(
        "schedule {} (created: {})",
        args.schedule_id, upserted.created
    );

    let mut acked = 0;
    while args.common.count == 0 || acked < args.common.count {
        let mut claim = tonic::Request::new(proto::ClaimDueScheduleRequest {
            namespace: namespace.clone(),
            worker_id: args.worker_id.clone(),
            wait: common::seconds(20),
            // At-least-once: ack within the lease or the occurrence is handed out again.
            lease: common::seconds(30),
        });
        claim.set_timeout(Duration::from_secs(25));
        let Some(occurrence) = client
            .claim_due_schedule(claim)
            .await?
            .into_inner()
            .occurrence
        else {
            continue; // nothing came due within the wait
        };
        let id = occurrence.schedule.as_ref().map_or("", |s| s.id.as_str());
        let due = occurrence.due_time.map_or(0, |t| t.seconds);
        println!(
            "occurrence {} of {id}: run {}, due {due} (unix seconds)",
            occurrence.occurrence_id, occurrence.run_number
        );
        client
            .ack_occurrence(proto::AckOccurrenceRequest {
                namespace: namespace.clone(),
                occurrence_id: occurrence.occurrence_id.clone(),
                lease_token: occurrence.lease_token,
            })
            .await?;
        println!("acked {}", occurrence.occurrence_id);
        acked += 1;
    }
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    let mut client = common::connect(&args.common.target).await?;
    tokio::select! {
        done = work(&args, &mut client) => done?,
        _ = tokio::signal::ctrl_c() => eprintln!("schedule_worker: stopping"),
    }
    Ok(())
}
