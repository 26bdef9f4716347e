//! WatchJob (issue 30), in the `dispatch` family: how soon a watcher sees a change
//! its job's worker made, and what open watch streams cost the service.
//!
//! - "WatchJob progress": a claimed job, one watcher; each sample is an ExtendLease
//!   of the job (each write is a new version) timed from sending the call to the
//!   watcher receiving the version it made, so it includes the extend's own round
//!   trip. (With progress reports on ExtendLease, a progress report is such a write.)
//! - "10k WatchJob streams": the service's RSS growth for `--waiters` streams (10,000
//!   unless set), one job each, all open and each past its first message.

use std::time::Instant;

use dueq::proto;
use futures_util::{stream::FuturesUnordered, StreamExt};
use tonic::Streaming;

use crate::{
    env::{Client, Env},
    load::Stats,
    plan::Plan,
    procfs::process_rss_mb,
    report::{Report, Row},
    seed, Result,
};

pub(crate) const S: &str = "dispatch";
const NS: &str = "watch";
const QUEUE: &str = "watched";
/// Streams per HTTP/2 connection (under the service's --max-concurrent-streams).
const STREAMS_PER_CONNECTION: usize = 500;
/// Streams opened at once.
const OPENING: usize = 256;
/// Jobs per EnqueueBatch call while seeding.
const BATCH: usize = 100;

type Watch = Streaming<proto::WatchJobResponse>;

pub(crate) async fn run(plan: &Plan, env: &Env, report: &mut Report) -> Result<()> {
    for row in rows(plan, env).await? {
        report.push(row);
    }
    Ok(())
}

/// The family's WatchJob rows.
pub(crate) async fn rows(plan: &Plan, env: &Env) -> Result<Vec<Row>> {
    let mut client = env.client().await?;
    seed::ensure_namespace(&mut client, NS).await?;
    let progress = progress(plan, &mut client).await?;
    let streams = streams(plan, env).await?;
    Ok(vec![progress, streams])
}

fn watch_request(job_id: String) -> proto::WatchJobRequest {
    proto::WatchJobRequest {
        namespace: NS.into(),
        job_id,
        after_version: 0,
        view: 0,
    }
}

async fn next_version(stream: &mut Watch) -> Result<u64> {
    let message = stream.message().await?.ok_or("the watch stream ended")?;
    Ok(message.job.ok_or("a watch message without a job")?.version)
}

/// Extend -> watcher latency over `plan.samples` extensions of one claimed job.
async fn progress(plan: &Plan, client: &mut Client) -> Result<Row> {
    let id = enqueue(client, 1).await?.remove(0);
    let claimed = client
        .claim_job(proto::ClaimJobRequest {
            namespace: NS.into(),
            queues: vec![QUEUE.into()],
            worker_id: "bench".into(),
            max_jobs: 1,
            ..Default::default()
        })
        .await?
        .into_inner()
        .jobs
        .pop()
        .ok_or("the watched job was not claimed")?;
    let mut stream = client
        .watch_job(watch_request(id.clone()))
        .await?
        .into_inner();
    let mut version = next_version(&mut stream).await?;
    let samples = plan.samples.max(1);
    let mut latencies = Vec::with_capacity(samples);
    let started = Instant::now();
    for _ in 0..samples {
        let sent = Instant::now();
        client
            .extend_lease(proto::ExtendLeaseRequest {
                namespace: NS.into(),
                job_id: id.clone(),
                lease_token: claimed.lease_token.clone(),
                lease: Some(prost_types::Duration {
                    seconds: 300,
                    nanos: 0,
                }),
                progress: None,
            })
            .await?;
        let seen = next_version(&mut stream).await?;
        if seen <= version {
            return Err(format!("the watcher saw version {seen} after {version}").into());
        }
        version = seen;
        latencies.push(sent.elapsed().as_nanos() as u64);
    }
    let secs = started.elapsed().as_secs_f64();
    let stats = Stats::from_latencies(latencies, samples as u64, secs);
    Ok(Row::latency(S, "WatchJob progress", &stats).note(format!(
        "{samples} ExtendLease writes of a watched job, each timed from sending the call \
         to the watcher receiving its version"
    )))
}

/// Enqueues `n` jobs of QUEUE; their ids.
async fn enqueue(client: &mut Client, n: usize) -> Result<Vec<String>> {
    let mut ids = Vec::with_capacity(n);
    while ids.len() < n {
        let k = BATCH.min(n - ids.len());
        let results = client
            .enqueue_batch(proto::EnqueueBatchRequest {
                namespace: NS.into(),
                jobs: (0..k)
                    .map(|_| proto::EnqueueRequest {
                        queue: QUEUE.into(),
                        name: "watched".into(),
                        ..Default::default()
                    })
                    .collect(),
            })
            .await?
            .into_inner()
            .results;
        for result in results {
            match result.result {
                Some(proto::enqueue_batch_result::Result::Ok(ok)) => ids.push(ok.job_id),
                other => return Err(format!("enqueue failed: {other:?}").into()),
            }
        }
    }
    Ok(ids)
}

/// The service's RSS growth for `plan.waiters` open streams, one job each.
async fn streams(plan: &Plan, env: &Env) -> Result<Row> {
    let n = plan.waiters as usize;
    let mut client = env.client().await?;
    let ids = enqueue(&mut client, n).await?;
    let mut clients = Vec::new();
    for _ in 0..n.div_ceil(STREAMS_PER_CONNECTION).max(1) {
        clients.push(env.client().await?);
    }
    let pid = env.service_pid();
    let before = process_rss_mb(Some(pid)).await;
    let started = Instant::now();
    let mut open: Vec<Watch> = Vec::with_capacity(n);
    let mut pending = FuturesUnordered::new();
    for (i, id) in ids.into_iter().enumerate() {
        let mut c = clients[i % clients.len()].clone();
        pending.push(async move {
            let mut stream = c.watch_job(watch_request(id)).await?.into_inner();
            next_version(&mut stream).await?;
            Ok::<_, crate::BenchError>(stream)
        });
        if pending.len() >= OPENING {
            if let Some(stream) = pending.next().await {
                open.push(stream?);
            }
        }
    }
    while let Some(stream) = pending.next().await {
        open.push(stream?);
    }
    let opened = started.elapsed();
    let after = process_rss_mb(Some(pid)).await;
    drop(open);
    let growth = after - before;
    Ok(Row::new(S, "10k WatchJob streams")
        .with("streams", n as u64)
        .with("rss_growth_mb", growth)
        .with("rss_mb", after)
        .note(format!(
            "{n} streams on {n} jobs over {} HTTP/2 connections: service RSS {before:.1} -> \
             {after:.1} MB ({:.1} KiB a stream), all open in {:.1} s",
            clients.len(),
            growth * 1024.0 / n.max(1) as f64,
            opened.as_secs_f64()
        )))
}
