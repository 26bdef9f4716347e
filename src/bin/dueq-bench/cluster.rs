//! What Redis Cluster and `--redis-wait-replicas` cost: Enqueue and ClaimDueSchedule
//! through the service on the bench's standalone Redis (the one every family uses),
//! through a second `dueq serve --redis-mode cluster` on a 3-master, 3-replica
//! cluster the bench starts (redis-server --cluster-enabled yes, redis-cli --cluster
//! create), and through a third one on that cluster with `--redis-wait-replicas 1`,
//! in one run, at the grpc family's concurrency. Callers spread over namespaces (one
//! namespace lives in one slot, so on one master): the cluster row's ratio is its
//! ops/s over standalone's, the WAIT row's over the cluster row's.

use std::{
    ffi::OsString,
    net::SocketAddr,
    path::PathBuf,
    process::{Child, Command, Stdio},
    time::Duration,
};

use deadpool_redis::redis;
use dueq::proto::{self, queue_service_client::QueueServiceClient};
use tonic::transport::Channel;
use tonic_health::pb::{
    health_check_response::ServingStatus, health_client::HealthClient, HealthCheckRequest,
};

use crate::{
    binaries,
    env::{free_port, Client, Env},
    grpc::spread,
    load::{drive, Stats},
    plan::Plan,
    report::{Report, Row},
    seed,
    service::Service,
    Result,
};

const S: &str = "cluster";
/// Namespaces the callers spread over (each caller keeps to one).
const NAMESPACES: usize = 16;

pub(crate) async fn run(plan: &Plan, env: &Env, report: &mut Report) -> Result<()> {
    let cluster = LocalCluster::start().await?;
    let result = measure(plan, env, &cluster, report).await;
    cluster.stop();
    result
}

async fn measure(
    plan: &Plan,
    env: &Env,
    cluster: &LocalCluster,
    report: &mut Report,
) -> Result<()> {
    let seeds = cluster.seeds();
    let mut services = Vec::new();
    let result = async {
        let mut sides = vec![Side {
            callers: spread(plan.concurrency, env.client().await?, || env.client()).await?,
        }];
        for wait in [None, Some("1")] {
            let addr: SocketAddr = format!("127.0.0.1:{}", free_port()?).parse()?;
            let mut extra: Vec<OsString> = vec!["--redis-mode".into(), "cluster".into()];
            if let Some(n) = wait {
                extra.extend(["--redis-wait-replicas".into(), n.into()]);
            }
            let mut service = Service::start_with(&env.dueq_bin, addr, &seeds, &extra)?;
            let served = wait_serving(&mut service, addr).await;
            services.push(service);
            served?;
            let first = client(addr).await?;
            sides.push(Side {
                callers: spread(plan.concurrency, first, || client(addr)).await?,
            });
        }
        for side in &sides {
            let mut c = side.callers[0].clone();
            for ns in 0..NAMESPACES {
                c.upsert_schedule(proto::UpsertScheduleRequest {
                    namespace: namespace(ns),
                    schedule: Some(seed::every_1h("anchor")),
                })
                .await?;
            }
        }
        // Each call on every side in turn, so all see the same machine moment.
        let mut stats = Vec::new();
        for side in &sides {
            stats.push(enqueue(plan, side).await?);
        }
        push(report, "Enqueue", &stats);
        let mut stats = Vec::new();
        for side in &sides {
            stats.push(claim_due(plan, side).await?);
        }
        push(report, "ClaimDueSchedule", &stats);
        Ok(())
    }
    .await;
    for service in services {
        service.stop();
    }
    report.note(
        S,
        format!(
            "concurrency {}, callers spread over {NAMESPACES} namespaces; cluster = 3 masters \
             + 3 replicas (redis-server --cluster-enabled yes) on this machine, so the masters \
             share its cores with dueq and the bench: more cores or hosts, not the cluster \
             itself, would scale it; ratio of cluster = cluster ops/s / standalone ops/s, of \
             WAIT = cluster --redis-wait-replicas 1 ops/s / cluster ops/s",
            plan.concurrency
        ),
    );
    result
}

fn namespace(i: usize) -> String {
    format!("cl{i}")
}

#[derive(Clone)]
struct Side {
    callers: Vec<Client>,
}

async fn enqueue(plan: &Plan, side: &Side) -> Result<Stats> {
    drive(plan.concurrency, plan.duration, |i| {
        let c = side.callers[i].clone();
        move || {
            let mut c = c.clone();
            let request = proto::EnqueueRequest {
                namespace: namespace(i % NAMESPACES),
                queue: "work".into(),
                name: "bench".into(),
                payload: b"{\"n\":1}".to_vec(),
                ..Default::default()
            };
            async move {
                c.enqueue(request).await?;
                Ok(1)
            }
        }
    })
    .await
}

async fn claim_due(plan: &Plan, side: &Side) -> Result<Stats> {
    drive(plan.concurrency, plan.duration, |i| {
        let c = side.callers[i].clone();
        move || {
            let mut c = c.clone();
            let request = proto::ClaimDueScheduleRequest {
                namespace: namespace(i % NAMESPACES),
                worker_id: "bench".into(),
                wait: None,
                lease: None,
            };
            async move {
                c.claim_due_schedule(request).await?;
                Ok(1)
            }
        }
    })
    .await
}

/// Rows: standalone, cluster (ratio to standalone), cluster + WAIT (ratio to cluster).
fn push(report: &mut Report, call: &str, stats: &[Stats]) {
    let [standalone, cluster, wait] = stats else {
        return;
    };
    let ratio = |a: &Stats, b: &Stats| (b.ops_s() > 0.0).then(|| a.ops_s() / b.ops_s());
    report.push(
        Row::stats(S, format!("{call} standalone"), standalone)
            .note("one redis-server, --redis-mode standalone"),
    );
    let r = ratio(cluster, standalone);
    let mut row = Row::stats(S, format!("{call} cluster"), cluster);
    row.ratio = r;
    report.push(
        row.with("ratio_to_standalone", r)
            .note("--redis-mode cluster, 3 masters; ratio to standalone"),
    );
    let r = ratio(wait, cluster);
    let mut row = Row::stats(S, format!("{call} cluster+WAIT"), wait);
    row.ratio = r;
    report.push(
        row.with("ratio_to_cluster", r)
            .note("--redis-wait-replicas 1 on the cluster; ratio to cluster without"),
    );
}

async fn client(addr: SocketAddr) -> Result<Client> {
    let channel = Channel::from_shared(format!("http://{addr}"))?
        .connect()
        .await?;
    Ok(QueueServiceClient::new(channel))
}

async fn wait_serving(service: &mut Service, addr: SocketAddr) -> Result<()> {
    let pid = service.pid();
    let mut last = String::new();
    for _ in 0..1000 {
        if let Ok(channel) = Channel::from_shared(format!("http://{addr}"))?
            .connect()
            .await
        {
            let check = HealthClient::new(channel)
                .check(HealthCheckRequest {
                    service: "dueq.v1.QueueService".into(),
                })
                .await;
            match check {
                Ok(r) if r.get_ref().status == ServingStatus::Serving as i32 => return Ok(()),
                Ok(r) => last = format!("status {}", r.get_ref().status),
                Err(e) => last = e.to_string(),
            }
        }
        if let Some(status) = service.exited() {
            return Err(format!("dueq serve on the cluster (pid {pid}) exited: {status}").into());
        }
        crate::local::pause(Duration::from_millis(20)).await;
    }
    Err(format!("dueq serve on the cluster (pid {pid}) never became SERVING: {last}").into())
}

/// Six redis-servers made into a cluster of 3 masters with a replica each.
struct LocalCluster {
    nodes: Vec<Child>,
    ports: Vec<u16>,
    dirs: Vec<PathBuf>,
}

impl LocalCluster {
    async fn start() -> Result<LocalCluster> {
        let binary = binaries::on_path("redis-server")
            .ok_or("redis-server not found on PATH (the cluster family starts a cluster)")?;
        let cli = binaries::on_path("redis-cli")
            .ok_or("redis-cli not found on PATH (the cluster family creates a cluster with it)")?;
        let mut cluster = LocalCluster {
            nodes: Vec::new(),
            ports: Vec::new(),
            dirs: Vec::new(),
        };
        for i in 0..6 {
            let port = free_port()?;
            let dir =
                std::env::temp_dir().join(format!("dueq-bench-cluster-{}-{i}", std::process::id()));
            std::fs::create_dir_all(&dir)?;
            let child = Command::new(&binary)
                .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
                .args(["--save", "", "--appendonly", "no", "--protected-mode", "no"])
                .args(["--cluster-enabled", "yes", "--cluster-node-timeout", "5000"])
                .arg("--dir")
                .arg(&dir)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .map_err(|e| format!("cannot start redis-server: {e}"))?;
            cluster.nodes.push(child);
            cluster.ports.push(port);
            cluster.dirs.push(dir);
        }
        for port in &cluster.ports {
            cluster.wait(*port, |_| true, "PING").await?;
        }
        let out = Command::new(cli)
            .arg("--cluster")
            .arg("create")
            .args(cluster.ports.iter().map(|p| format!("127.0.0.1:{p}")))
            .args(["--cluster-replicas", "1", "--cluster-yes"])
            .output()?;
        if !out.status.success() {
            return Err(format!(
                "redis-cli --cluster create failed: {}",
                String::from_utf8_lossy(&out.stdout)
            )
            .into());
        }
        for port in cluster.ports.clone() {
            cluster
                .wait(
                    port,
                    |info| info.contains("cluster_state:ok"),
                    "CLUSTER INFO",
                )
                .await?;
            // Replicas in sync (a master sees its replica connect before its first
            // sync ends), or the WAIT side would measure that sync.
            cluster
                .wait(
                    port,
                    |info| {
                        info.contains("slave0:") && info.contains("state=online")
                            || info.contains("master_link_status:up")
                    },
                    "INFO replication",
                )
                .await?;
        }
        Ok(cluster)
    }

    /// Waits until the node on `port` answers `command` with what `ok` accepts.
    // Asks a cluster node the bench started about its own state until it is ready.
    #[allow(clippy::disallowed_methods)]
    async fn wait(&self, port: u16, ok: impl Fn(&str) -> bool, command: &str) -> Result<()> {
        let url = format!("redis://127.0.0.1:{port}");
        for _ in 0..1500 {
            if let Ok(mut conn) = redis::Client::open(url.as_str())?
                .get_multiplexed_async_connection()
                .await
            {
                let mut cmd = redis::Cmd::new();
                for part in command.split(' ') {
                    cmd.arg(part);
                }
                let reply: redis::RedisResult<String> = cmd.query_async(&mut conn).await;
                if reply.is_ok_and(|r| ok(&r)) {
                    return Ok(());
                }
            }
            crate::local::pause(Duration::from_millis(20)).await;
        }
        Err(format!("cluster node {port} never answered {command} as expected").into())
    }

    fn seeds(&self) -> String {
        self.ports
            .iter()
            .map(|p| format!("redis://127.0.0.1:{p}"))
            .collect::<Vec<_>>()
            .join(",")
    }

    fn stop(mut self) {
        self.kill();
    }

    fn kill(&mut self) {
        for mut child in self.nodes.drain(..) {
            let _ = child.kill();
            let _ = child.wait();
        }
        for dir in self.dirs.drain(..) {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

impl Drop for LocalCluster {
    fn drop(&mut self) {
        self.kill();
    }
}
