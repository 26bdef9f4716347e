//! `dueq-bench`: measures dueq against the Redis ceiling of its own scripts, and
//! against peers, in one run on one machine. See docs/performance.md.
//!
//! A tool beside the service, not a mode of it: it starts a `redis-server` and the
//! `dueq` binary (`dueq serve`) as child processes and drives the service over gRPC.
//! Of the library it uses only `dueq::proto` (the gRPC clients) and `dueq::probe`
//! (the scripts' exact calls and names); where it seeds or inspects Redis directly,
//! every key comes from `dueq::probe::Keys`.
//!
//! Every family lives in its own file and adds one section to the report:
//! `ceiling`, `grpc`, `consume`, `claim_scaling`, `peers`, `longpoll`, `memory`,
//! `migrate`, `security`, `cluster`, `metrics`, `dispatch` (target schedules: `dispatch`;
//! WatchJob: `watch`), `flow` (flow control: `flow` and its parts in `flow/`), `deps`, `console` (the web
//! console: `console` and `console_http`).

// The decisions clippy.toml keeps: short functions, the host clock read only where a
// measurement needs it, raw Redis commands only where the bench seeds or inspects
// Redis itself, no blocking sleep, a fixed one only where it waits out real time (a
// measurement window, a polling pause: local::pause).
#![warn(clippy::too_many_lines, clippy::disallowed_methods)]

mod binaries;
mod ceiling;
mod claim_scaling;
mod cli;
mod clients;
mod cluster;
mod console;
mod console_http;
mod consume;
mod cpu;
mod deps;
mod dispatch;
mod env;
mod floor;
mod flow;
mod grpc;
mod idle_cost;
mod load;
mod local;
mod longpoll;
mod memory;
mod metrics;
mod migrate;
mod own_redis;
mod peers;
mod plan;
mod procfs;
mod redis_info;
mod report;
mod rpc_floor;
mod script_rows;
mod script_time;
mod security;
mod seed;
mod service;
mod tenants;
mod watch;

use std::{process::ExitCode, time::Instant};

use clap::Parser;
use tracing_subscriber::EnvFilter;

use cli::{BenchArgs, Family};
use env::Env;
use plan::Plan;
use report::Report;

/// Errors of the bench: anything, with a message (the bench is a tool, not a server).
pub(crate) type BenchError = Box<dyn std::error::Error + Send + Sync>;
pub(crate) type Result<T> = std::result::Result<T, BenchError>;

#[tokio::main]
async fn main() -> ExitCode {
    let args = BenchArgs::parse();
    // Warnings only by default: stdout is the table, stderr the progress.
    let filter = EnvFilter::try_from_env("DUEQ_LOG").unwrap_or_else(|_| EnvFilter::new("warn"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
    let result = match args.serve_bare_health {
        Some(addr) => rpc_floor::serve_bare(addr).await,
        None => run(args).await,
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("dueq-bench failed: {error}");
            ExitCode::FAILURE
        }
    }
}

/// Runs the families asked for and prints the table; writes JSON when asked.
async fn run(args: BenchArgs) -> Result<()> {
    let plan = Plan::from_args(&args);
    // Before any child process starts: a missing service binary is the likeliest
    // mistake (`cargo run --bin dueq-bench` does not build it).
    let dueq = binaries::dueq(args.dueq_bin.as_deref())?;
    let started = Instant::now();
    let env = Env::start(args.redis_url.as_deref(), &dueq).await?;
    let mut report = Report::new(&plan, &env, std::env::args().collect()).await;
    let result = run_families(&plan, &env, &mut report).await;
    let wall = started.elapsed();
    env.stop();
    result?;
    report.set_wall(wall);
    print!("{}", report.table());
    if let Some(path) = &args.json {
        tokio::fs::write(path, report.json_text()?)
            .await
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    Ok(())
}

async fn run_families(plan: &Plan, env: &Env, report: &mut Report) -> Result<()> {
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
    if plan.runs(Family::Consume) {
        step("consume");
        consume::run(plan, env, report).await?;
        env.reset().await?;
    }
    if plan.runs(Family::Security) {
        step("security");
        security::run(plan, env, report).await?;
        env.reset().await?;
    }
    if plan.runs(Family::Cluster) {
        step("cluster");
        cluster::run(plan, env, report).await?;
        env.reset().await?;
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
    run_later_families(plan, env, report).await?;
    report.check_targets();
    Ok(())
}

/// The families of issue 30 on (run_families' second half).
async fn run_later_families(plan: &Plan, env: &Env, report: &mut Report) -> Result<()> {
    let step = |name: &str| eprintln!("bench: {name} ...");
    if plan.runs(Family::Dispatch) {
        step("dispatch");
        dispatch::run(plan, env, report).await?;
        env.reset().await?;
        watch::run(plan, env, report).await?;
        env.reset().await?;
    }
    if plan.runs(Family::Flow) {
        step("flow");
        flow::run(plan, env, report).await?;
        env.reset().await?;
    }
    if plan.runs(Family::Deps) {
        step("deps");
        deps::run(plan, env, report).await?;
        env.reset().await?;
    }
    if plan.runs(Family::Tenants) {
        step("tenants");
        tenants::run(plan, env, report).await?;
        env.reset().await?;
    }
    if plan.runs(Family::Console) {
        console::run(plan, env, report).await?;
    }
    if plan.runs(Family::Metrics) {
        step("metrics");
        metrics::run(env, report).await?;
        env.reset().await?;
    }
    if plan.runs(Family::Peers) {
        step("peers");
        peers::run(plan, env, report).await?;
    }
    Ok(())
}
