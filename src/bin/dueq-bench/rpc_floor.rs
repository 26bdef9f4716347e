//! What the unary path pays before it does any work, and what tonic alone pays.
//!
//! - `empty RPC`: the consume family's callers, over the same connections, call an
//!   RPC that does nothing (grpc.health.v1 Check, answered from memory behind
//!   dueq's tower layers) as many times as the ClaimJob+AckJob drain made calls.
//!   Its service and client CPU per call is the floor of the unary path's CPU per
//!   RPC, whatever the scripts cost.
//! - `bare tonic health`: the same callers, connections and calls against a tonic
//!   health service with none of dueq's layers, in a process of its own (this
//!   bench re-executed in a hidden mode, `--serve-bare-health ADDR`), its CPU read
//!   from /proc as the service's is: what dueq's layers add is the difference
//!   (target `empty RPC service CPU <= 1.25x bare tonic`).

use std::{
    net::SocketAddr,
    process::{Child, Command, Stdio},
    sync::{
        atomic::{AtomicU64, Ordering},
        Arc,
    },
    time::{Duration, Instant},
};

use tonic::transport::Channel;
use tonic_health::pb::{health_client::HealthClient, HealthCheckRequest};

use crate::{
    consume::drain_cap,
    env::{free_port, Env},
    grpc::{spread, with_cpu},
    load::{drive, Stats},
    plan::Plan,
    procfs::process_cpu_s,
    report::{Report, Row},
    Result,
};

const S: &str = "consume";
/// The row of the bare service.
pub(crate) const BARE_ROW: &str = "bare tonic health";

/// The hidden mode: serves tonic_health alone on `addr` ("" reports SERVING) until
/// killed. tonic's default server, no layers, no other service.
pub(crate) async fn serve_bare(addr: SocketAddr) -> Result<()> {
    let (_reporter, health) = tonic_health::server::health_reporter();
    tonic::transport::Server::builder()
        .add_service(health)
        .serve(addr)
        .await?;
    Ok(())
}

/// Both rows: dueq's empty RPC, then the bare service's.
pub(crate) async fn run(plan: &Plan, env: &Env, report: &mut Report) -> Result<()> {
    let total = plan.prefill * 2;
    let dueq = env.channel().await?;
    let callers = spread(plan.concurrency, HealthClient::new(dueq), || async {
        Ok(HealthClient::new(env.channel().await?))
    })
    .await?;
    let (s, cpu) = with_cpu(env, checks(plan, callers, total)).await?;
    report.push(
        Row::stats(S, "empty RPC", &s)
            .note(format!(
                "{} callers, grpc.health.v1 Check (no Redis, the same tower layers), {} calls: the unary path's floor per RPC",
                plan.concurrency, s.items
            ))
            .with("service_cpu_us_per_call", cpu.service_us)
            .with("bench_cpu_us_per_call", cpu.bench_us)
            .and_note(format!(
                "CPU/call: service {:.0} us, bench client {:.0} us",
                cpu.service_us, cpu.bench_us
            )),
    );
    bare(plan, report, total).await
}

/// `total` Health/Check calls spread over `callers`, as many at once as there are
/// callers.
async fn checks(plan: &Plan, callers: Vec<HealthClient<Channel>>, total: u64) -> Result<Stats> {
    let started = Arc::new(AtomicU64::new(0));
    drive(plan.concurrency, drain_cap(plan), |i| {
        let c = callers[i].clone();
        let started = started.clone();
        move || {
            let mut c = c.clone();
            let started = started.clone();
            async move {
                if started.fetch_add(1, Ordering::Relaxed) >= total {
                    return Ok(0);
                }
                c.check(HealthCheckRequest::default()).await?;
                Ok(1)
            }
        }
    })
    .await
}

/// The bare service as a child process, killed when dropped.
struct Bare {
    child: Child,
    addr: SocketAddr,
}

impl Drop for Bare {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Bare {
    /// Starts this executable in the hidden mode on a free port and waits until it
    /// answers a Check.
    async fn start() -> Result<Bare> {
        let addr: SocketAddr = format!("127.0.0.1:{}", free_port()?).parse()?;
        let child = Command::new(std::env::current_exe()?)
            .arg("--serve-bare-health")
            .arg(addr.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("cannot start the bare health service: {e}"))?;
        let bare = Bare { child, addr };
        for _ in 0..500 {
            if let Ok(mut c) = bare.client().await {
                if c.check(HealthCheckRequest::default()).await.is_ok() {
                    return Ok(bare);
                }
            }
            crate::local::pause(Duration::from_millis(20)).await;
        }
        Err("the bare health service never answered".into())
    }

    async fn client(&self) -> Result<HealthClient<Channel>> {
        let channel = Channel::from_shared(format!("http://{}", self.addr))?
            .connect()
            .await?;
        Ok(HealthClient::new(channel))
    }
}

/// The `bare tonic health` row: the same calls as `empty RPC` against the bare
/// service, its CPU and the bench's per call.
async fn bare(plan: &Plan, report: &mut Report, total: u64) -> Result<()> {
    let bare = Bare::start().await?;
    let callers = spread(plan.concurrency, bare.client().await?, || bare.client()).await?;
    let pid = bare.child.id();
    let (service0, bench0) = (process_cpu_s(Some(pid)).await, process_cpu_s(None).await);
    let t = Instant::now();
    let s = checks(plan, callers, total).await?;
    let (service1, bench1) = (process_cpu_s(Some(pid)).await, process_cpu_s(None).await);
    let per = |a: f64, b: f64| (b - a).max(0.0) * 1e6 / s.items.max(1) as f64;
    let (service_us, bench_us) = (per(service0, service1), per(bench0, bench1));
    report.push(
        Row::stats(S, BARE_ROW, &s)
            .note(format!(
                "the same {} callers, connections and {} calls against tonic_health alone (no dueq layers) in its own process, {:.1}s",
                plan.concurrency,
                s.items,
                t.elapsed().as_secs_f64()
            ))
            .with("service_cpu_us_per_call", service_us)
            .with("bench_cpu_us_per_call", bench_us)
            .and_note(format!(
                "CPU/call: service {service_us:.0} us, bench client {bench_us:.0} us"
            )),
    );
    Ok(())
}
