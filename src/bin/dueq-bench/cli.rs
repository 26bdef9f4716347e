//! The command line of `dueq-bench`.

use std::{path::PathBuf, time::Duration};

use clap::Parser;

/// dueq-bench: measures throughput, latency, scaling, memory and migration of the
/// dueq service on this machine (see docs/performance.md).
#[derive(Debug, Clone, Parser)]
#[command(name = "dueq-bench", version, long_about = None)]
pub(crate) struct BenchArgs {
    /// Tiny sizes and short phases: a few seconds in total (CI).
    #[arg(long)]
    pub(crate) smoke: bool,
    /// How long each throughput phase runs (default 5s; 300ms with --smoke).
    #[arg(long, value_parser = humantime::parse_duration)]
    pub(crate) duration: Option<Duration>,
    /// Concurrent callers in each throughput phase (default 32; 4 with --smoke).
    #[arg(long)]
    pub(crate) concurrency: Option<usize>,
    /// Stored-schedule counts for claim scaling, e.g. "1k,10k,100k,1m".
    #[arg(long, value_delimiter = ',', value_parser = parse_size)]
    pub(crate) sizes: Vec<u64>,
    /// Schedule counts for the @boringnode/queue claim peer (default 1k,10k,100k).
    #[arg(long, value_delimiter = ',', value_parser = parse_size)]
    pub(crate) peer_sizes: Vec<u64>,
    /// Also run the Node peers (BullMQ, @boringnode/queue 0.6); needs node and npm.
    #[arg(long)]
    pub(crate) peers: bool,
    /// Idle long-poll waiters, and the dispatch family's WatchJob streams (default
    /// 10000; 50 with --smoke).
    #[arg(long, value_parser = parse_size)]
    pub(crate) waiters: Option<u64>,
    /// Jobs per EnqueueBatch call in the grpc family (default 100).
    #[arg(long)]
    pub(crate) batch: Option<usize>,
    /// Jobs pre-filled for the consume family and the BullMQ Worker peer (default
    /// 50k; 200 with --smoke): both drain the same number.
    #[arg(long, value_parser = parse_size)]
    pub(crate) prefill: Option<u64>,
    /// Work streams of the consume family's fast-path drain, their capacities adding
    /// up to --concurrency (default 1: one worker, as the peer is one BullMQ Worker;
    /// more are spread over up to 8 HTTP/2 connections).
    #[arg(long)]
    pub(crate) work_streams: Option<usize>,
    /// Records for the memory measurement (default 100k; 1k with --smoke).
    #[arg(long, value_parser = parse_size)]
    pub(crate) records: Option<u64>,
    /// Pre-index schedules to migrate (default 1m; 1k with --smoke).
    #[arg(long, value_parser = parse_size)]
    pub(crate) migrate: Option<u64>,
    /// Jobs loaded for the console family (default 1m, the scale; 2k with
    /// --smoke): over 1,000 queues (fewer below 1,000 jobs), with jobs / 100
    /// schedules. Its targets say the scale when it is not the issue's.
    #[arg(long, value_parser = parse_size)]
    pub(crate) console_jobs: Option<u64>,
    /// Use this Redis instead of starting a redis-server (its data is NOT flushed;
    /// the bench writes under the key prefix "dueqbench").
    #[arg(long)]
    pub(crate) redis_url: Option<String>,
    /// Run only these families (comma-separated); `grpc` brings `ceiling` along,
    /// since its ratios divide by it. Default: all.
    #[arg(long, value_delimiter = ',', value_enum)]
    pub(crate) only: Vec<Family>,
    /// Also write the results as JSON to this file.
    #[arg(long)]
    pub(crate) json: Option<PathBuf>,
    /// The dueq binary to start as `dueq serve` (default: the `dueq` next to this
    /// executable, where cargo builds both).
    #[arg(long, env = "DUEQ_BIN")]
    pub(crate) dueq_bin: Option<PathBuf>,
    /// Hidden: serve a bare tonic health service (no dueq layers) on this address
    /// until killed; the consume family starts the bench itself this way for its
    /// `bare tonic health` row (rpc_floor.rs).
    #[arg(long, hide = true)]
    pub(crate) serve_bare_health: Option<std::net::SocketAddr>,
}

/// A group of measurements that `--only` can pick.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Family {
    Ceiling,
    Grpc,
    ClaimScaling,
    Memory,
    Migrate,
    Longpoll,
    Peers,
    Security,
    Consume,
    Cluster,
    /// The Redis cost of one /metrics scrape.
    Metrics,
    /// Issue 30: schedules that enqueue jobs (dispatch latency), WatchJob's latency
    /// and the memory of open watch streams.
    Dispatch,
    /// Issue 32: flow control's cost when its limits do not bind, slot-freed dispatch
    /// latency, fairness (Jain's index, weighted shares) and memory per key.
    Flow,
    /// Issue 34: job dependencies: a fan-in's script calls per job against plain
    /// jobs, a fan-out's readying, a chain's hop latency, EnqueueFlow of 1,000 nodes,
    /// and the longest graph script.
    Deps,
    /// Issue 33: the web console: page times with 1,000,000 jobs, the Redis
    /// commands/s of ten live tabs against one, the longest script meanwhile.
    Console,
    /// Issue 29: tenant B's GetJob p99 alone and while tenant A pages full-view
    /// ListJobs over 1 MiB jobs.
    Tenants,
}

/// `1000`, `1k`, `10k`, `1m` -> a count.
fn parse_size(text: &str) -> std::result::Result<u64, String> {
    let t = text.trim().to_ascii_lowercase();
    let (digits, mult) = match t.strip_suffix('k') {
        Some(d) => (d, 1_000),
        None => match t.strip_suffix('m') {
            Some(d) => (d, 1_000_000),
            None => (t.as_str(), 1),
        },
    };
    digits
        .parse::<u64>()
        .map(|n| n * mult)
        .map_err(|e| format!("bad size {text:?}: {e}"))
}
