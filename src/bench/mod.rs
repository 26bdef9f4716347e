//! `dueq bench`: measures dueq against the Redis ceiling of its own scripts, and
//! against peers, in one run on one machine. See README "Performance".
//!
//! Every family lives in its own file and adds one section to the report:
//! `ceiling`, `grpc`, `claim_scaling`, `peers`, `longpoll`, `memory`, `migrate`.

pub mod ceiling;
pub mod claim_scaling;
pub mod env;
pub mod grpc;
pub mod load;
pub mod longpoll;
pub mod memory;
pub mod migrate;
pub mod peers;
pub mod report;
pub mod seed;

use std::{path::PathBuf, time::Duration};

use report::Report;

/// Errors of the bench: anything, with a message (the bench is a tool, not a server).
pub type BenchError = Box<dyn std::error::Error + Send + Sync>;
pub type Result<T> = std::result::Result<T, BenchError>;

/// Flags of `dueq bench`.
#[derive(Debug, Clone, clap::Args)]
pub struct BenchArgs {
    /// Tiny sizes and short phases: a few seconds in total (CI).
    #[arg(long)]
    pub smoke: bool,
    /// How long each throughput phase runs (default 5s; 300ms with --smoke).
    #[arg(long, value_parser = humantime::parse_duration)]
    pub duration: Option<Duration>,
    /// Concurrent callers in each throughput phase (default 32; 4 with --smoke).
    #[arg(long)]
    pub concurrency: Option<usize>,
    /// Stored-schedule counts for claim scaling, e.g. "1k,10k,100k,1m".
    #[arg(long, value_delimiter = ',', value_parser = parse_size)]
    pub sizes: Vec<u64>,
    /// Schedule counts for the @boringnode/queue claim peer (default 1k,10k,100k).
    #[arg(long, value_delimiter = ',', value_parser = parse_size)]
    pub peer_sizes: Vec<u64>,
    /// Also run the Node peers (BullMQ, @boringnode/queue 0.6); needs node and npm.
    #[arg(long)]
    pub peers: bool,
    /// Idle long-poll waiters (default 10000; 50 with --smoke).
    #[arg(long, value_parser = parse_size)]
    pub waiters: Option<u64>,
    /// Records for the memory measurement (default 100k; 1k with --smoke).
    #[arg(long, value_parser = parse_size)]
    pub records: Option<u64>,
    /// Pre-index schedules to migrate (default 1m, the size; 1k with --smoke).
    #[arg(long, value_parser = parse_size)]
    pub migrate: Option<u64>,
    /// Use this Redis instead of starting a redis-server (its data is NOT flushed;
    /// the bench writes under the key prefix "dueqbench").
    #[arg(long)]
    pub redis_url: Option<String>,
    /// Run only these families (comma-separated); `grpc` brings `ceiling` along,
    /// since its ratios divide by it. Default: all.
    #[arg(long, value_delimiter = ',', value_enum)]
    pub only: Vec<Family>,
    /// Also write the results as JSON to this file.
    #[arg(long)]
    pub json: Option<PathBuf>,
}

/// A group of measurements that `--only` can pick.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Family {
    Ceiling,
    Grpc,
    ClaimScaling,
    Memory,
    Migrate,
    Longpoll,
    Peers,
}

/// `1000`, `1k`, `10k`, `1m` -> a count.
pub fn parse_size(text: &str) -> std::result::Result<u64, String> {
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

/// The sizes every family runs with, from the flags.
#[derive(Debug, Clone)]
pub struct Plan {
    pub smoke: bool,
    pub duration: Duration,
    pub concurrency: usize,
    pub sizes: Vec<u64>,
    pub peer_sizes: Vec<u64>,
    pub peers: bool,
    pub waiters: u64,
    pub records: u64,
    pub migrate: u64,
    /// Samples per latency point in claim scaling.
    pub samples: usize,
    /// Jobs per EnqueueBatch call (and per pipeline in the ceiling).
    pub batch: usize,
    /// Families to run; empty: all.
    pub only: Vec<Family>,
}

impl Plan {
    pub fn runs(&self, family: Family) -> bool {
        self.only.is_empty()
            || self.only.contains(&family)
            || (family == Family::Ceiling && self.only.contains(&Family::Grpc))
    }
}

impl Plan {
    pub fn from_args(args: &BenchArgs) -> Plan {
        let smoke = args.smoke;
        let pick = |v: &Vec<u64>, smoke_v: &[u64], full: &[u64]| {
            if !v.is_empty() {
                v.clone()
            } else if smoke {
                smoke_v.to_vec()
            } else {
                full.to_vec()
            }
        };
        Plan {
            smoke,
            duration: args.duration.unwrap_or(if smoke {
                Duration::from_millis(300)
            } else {
                Duration::from_secs(5)
            }),
            concurrency: args
                .concurrency
                .unwrap_or(if smoke { 4 } else { 32 })
                .max(1),
            sizes: pick(
                &args.sizes,
                &[100, 1_000],
                &[1_000, 10_000, 100_000, 1_000_000],
            ),
            peer_sizes: pick(&args.peer_sizes, &[100, 1_000], &[1_000, 10_000, 100_000]),
            peers: args.peers,
            waiters: args.waiters.unwrap_or(if smoke { 50 } else { 10_000 }),
            records: args
                .records
                .unwrap_or(if smoke { 1_000 } else { 100_000 })
                .max(1),
            migrate: args
                .migrate
                .unwrap_or(if smoke { 1_000 } else { 1_000_000 })
                .max(1),
            samples: if smoke { 30 } else { 500 },
            batch: 100,
            only: args.only.clone(),
        }
    }
}

/// Runs every family and prints the table; writes JSON when asked.
pub async fn run(args: BenchArgs) -> Result<Report> {
    let plan = Plan::from_args(&args);
    let started = std::time::Instant::now();
    let env = env::Env::start(args.redis_url.as_deref()).await?;
    let mut report = Report::new(&plan, &env, std::env::args().collect());
    let result = run_all(&plan, &env, &mut report).await;
    let wall = started.elapsed();
    env.stop().await;
    result?;
    report.set_wall(wall);
    print!("{}", report.table());
    if let Some(path) = &args.json {
        std::fs::write(path, report.json_text()?)
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    Ok(report)
}

async fn run_all(plan: &Plan, env: &env::Env, report: &mut Report) -> Result<()> {
    let step = |name: &str| eprintln!("bench: {name} ...");
    if plan.runs(Family::Ceiling) {
        step("ceiling");
        let ceiling = ceiling::run(plan, env, report).await?;
        env.reset().await?;
        if plan.runs(Family::Grpc) {
            step("grpc");
            grpc::run(plan, env, &ceiling, report).await?;
            env.reset().await?;
        }
    }
    if plan.runs(Family::ClaimScaling) {
        step("claim scaling");
        claim_scaling::run(plan, env, report).await?;
        env.reset().await?;
    }
    if plan.runs(Family::Memory) {
        step("memory");
        memory::run(plan, env, report).await?;
        env.reset().await?;
    }
    if plan.runs(Family::Migrate) {
        step("migrate");
        migrate::run(plan, env, report).await?;
        env.reset().await?;
    }
    if plan.runs(Family::Longpoll) {
        step("long-poll");
        longpoll::run(plan, env, report).await?;
        env.reset().await?;
    }
    if plan.runs(Family::Peers) {
        step("peers");
        peers::run(plan, env, report).await?;
    }
    report.check_targets();
    Ok(())
}
