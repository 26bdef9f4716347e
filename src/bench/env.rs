//! The bench's environment: a redis-server of its own on a free port (or the one
//! given by --redis-url) and the dueq service as a child process (`dueq serve`, this
//! same binary) on another free port, so its RSS and CPU are its own, apart from the
//! bench's client side, as they would be in production.

use std::{
    net::TcpListener as StdListener,
    path::PathBuf,
    process::{Child, Command, Stdio},
    sync::Mutex,
    time::Duration,
};

use deadpool_redis::redis::{self, aio::MultiplexedConnection};
use tonic::transport::Channel;

use super::Result;
use crate::proto::{
    admin_service_client::AdminServiceClient, queue_service_client::QueueServiceClient,
};

/// Key prefix of everything the bench writes through dueq.
pub const PREFIX: &str = "dueqbench";

pub type Client = QueueServiceClient<Channel>;

struct OwnRedis {
    child: Child,
    dir: PathBuf,
}

pub struct Env {
    pub redis_url: String,
    pub addr: std::net::SocketAddr,
    own: Mutex<Option<OwnRedis>>,
    service: Mutex<Option<Child>>,
    service_pid: u32,
    pub redis_version: String,
}

/// `/proc/<pid>/<name>` (or this process's), if readable.
fn proc_file(pid: Option<u32>, name: &str) -> Option<String> {
    let path = match pid {
        Some(pid) => format!("/proc/{pid}/{name}"),
        None => format!("/proc/self/{name}"),
    };
    std::fs::read_to_string(path).ok()
}

/// CPU seconds (user + system) of a process; `None`: this one. Clock ticks are
/// 100 Hz on Linux.
pub fn process_cpu_s(pid: Option<u32>) -> f64 {
    proc_file(pid, "stat")
        .and_then(|t| {
            let rest = t.rsplit_once(')')?.1.to_owned();
            let f: Vec<&str> = rest.split_whitespace().collect();
            let u = f.get(11)?.parse::<f64>().ok()?;
            let s = f.get(12)?.parse::<f64>().ok()?;
            Some((u + s) / 100.0)
        })
        .unwrap_or(0.0)
}

/// Resident set size of a process in MB; `None`: this one.
pub fn process_rss_mb(pid: Option<u32>) -> f64 {
    proc_file(pid, "status")
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<f64>().ok())
        })
        .map(|kb| kb / 1024.0)
        .unwrap_or(0.0)
}

/// CPU spent so far by the service, Redis and the bench itself, in seconds.
#[derive(Debug, Clone, Copy)]
pub struct CpuSnapshot {
    service: f64,
    redis: f64,
    bench: f64,
    /// Script calls Redis has run (EVALSHA and EVAL in INFO commandstats).
    script_calls: u64,
}

/// CPU per operation between two snapshots, in microseconds.
#[derive(Debug, Clone, Copy)]
pub struct CpuPerOp {
    pub service_us: f64,
    pub redis_us: f64,
    pub bench_us: f64,
    /// Script calls per operation: below 1 for Enqueue when concurrent calls share
    /// script calls.
    pub script_calls: f64,
}

impl CpuSnapshot {
    pub fn per_op(&self, later: &CpuSnapshot, ops: u64) -> CpuPerOp {
        let per = |a: f64, b: f64| (b - a).max(0.0) * 1e6 / ops.max(1) as f64;
        CpuPerOp {
            service_us: per(self.service, later.service),
            redis_us: per(self.redis, later.redis),
            bench_us: per(self.bench, later.bench),
            script_calls: later.script_calls.saturating_sub(self.script_calls) as f64
                / ops.max(1) as f64,
        }
    }
}

fn free_port() -> Result<u16> {
    Ok(StdListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

fn redis_server_binary() -> Result<PathBuf> {
    std::env::var_os("PATH")
        .and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|p| p.join("redis-server"))
                .find(|p| p.is_file())
        })
        .ok_or_else(|| "redis-server not found on PATH (or pass --redis-url)".into())
}

/// A direct connection with a long response timeout (the client's default, 500 ms,
/// is shorter than a big seeding pipeline can take).
async fn connect(url: &str) -> Result<MultiplexedConnection> {
    let mut conn = redis::Client::open(url)?
        .get_multiplexed_async_connection()
        .await?;
    conn.set_response_timeout(Duration::from_secs(120));
    Ok(conn)
}

impl Env {
    pub async fn start(redis_url: Option<&str>) -> Result<Env> {
        let (url, own) = match redis_url {
            Some(url) => (url.to_owned(), None),
            None => {
                let port = free_port()?;
                let dir =
                    std::env::temp_dir().join(format!("dueq-bench-{}-{port}", std::process::id()));
                std::fs::create_dir_all(&dir)?;
                let child = Command::new(redis_server_binary()?)
                    .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
                    .args(["--save", "", "--appendonly", "no", "--protected-mode", "no"])
                    .arg("--dir")
                    .arg(&dir)
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()
                    .map_err(|e| format!("cannot start redis-server: {e}"))?;
                (
                    format!("redis://127.0.0.1:{port}"),
                    Some(OwnRedis { child, dir }),
                )
            }
        };
        let mut env = Env {
            redis_url: url,
            addr: "127.0.0.1:0".parse()?,
            own: Mutex::new(own),
            service: Mutex::new(None),
            service_pid: 0,
            redis_version: String::new(),
        };
        let mut ready = false;
        for _ in 0..250 {
            if let Ok(mut conn) = connect(&env.redis_url).await {
                let pong: redis::RedisResult<String> =
                    redis::cmd("PING").query_async(&mut conn).await;
                if pong.is_ok() {
                    ready = true;
                    break;
                }
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        if !ready {
            env.kill_redis();
            return Err(format!("redis at {} never answered PING", env.redis_url).into());
        }
        let mut conn = env.conn().await?;
        let info: String = redis::cmd("INFO")
            .arg("server")
            .query_async(&mut conn)
            .await?;
        env.redis_version = info_field(&info, "redis_version").unwrap_or_default();
        if let Err(e) = env.start_service().await {
            env.kill_redis();
            return Err(e);
        }
        Ok(env)
    }

    /// Starts `dueq serve` (this binary) with the bench's settings; every setting is
    /// passed as a flag, so DUEQ_* variables in the environment cannot change it.
    async fn start_service(&mut self) -> Result<()> {
        let exe = std::env::current_exe()
            .map_err(|e| format!("cannot find the dueq binary to serve from: {e}"))?;
        let port = free_port()?;
        self.addr = format!("127.0.0.1:{port}").parse()?;
        let child = Command::new(exe)
            .arg("serve")
            .args(["--listen", &self.addr.to_string()])
            .args(["--redis-url", &self.redis_url])
            .args(["--key-prefix", PREFIX])
            .args(["--health-interval", "200ms", "--max-batch", "100000"])
            .args(["--shutdown-grace", "2s", "--pool-size", "4"])
            .env("DUEQ_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("cannot start dueq serve: {e}"))?;
        self.service_pid = child.id();
        *lock(&self.service) = Some(child);
        for _ in 0..500 {
            if self.serving().await {
                return Ok(());
            }
            let exited = lock(&self.service)
                .as_mut()
                .and_then(|c| c.try_wait().ok().flatten());
            if let Some(status) = exited {
                return Err(format!("dueq serve exited before serving: {status}").into());
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        self.kill_service();
        Err("dueq serve never became SERVING".into())
    }

    /// The service's process id (for its CPU and RSS).
    pub fn service_pid(&self) -> u32 {
        self.service_pid
    }

    /// CPU spent so far by the service, Redis (INFO cpu) and the bench.
    pub async fn cpu(&self) -> Result<CpuSnapshot> {
        let mut conn = self.conn().await?;
        let info: String = redis::cmd("INFO").arg("cpu").query_async(&mut conn).await?;
        let stats: String = redis::cmd("INFO")
            .arg("commandstats")
            .query_async(&mut conn)
            .await?;
        let script_calls = stats
            .lines()
            .filter(|l| l.starts_with("cmdstat_evalsha:") || l.starts_with("cmdstat_eval:"))
            .filter_map(|l| l.split_once(":calls="))
            .filter_map(|(_, rest)| rest.split(',').next()?.parse::<u64>().ok())
            .sum();
        let field = |name: &str| {
            info_field(&info, name)
                .and_then(|v| v.parse::<f64>().ok())
                .unwrap_or(0.0)
        };
        Ok(CpuSnapshot {
            service: process_cpu_s(Some(self.service_pid)),
            redis: field("used_cpu_user") + field("used_cpu_sys"),
            bench: process_cpu_s(None),
            script_calls,
        })
    }

    async fn serving(&self) -> bool {
        let Ok(channel) = self.channel().await else {
            return false;
        };
        let mut health = tonic_health::pb::health_client::HealthClient::new(channel);
        match health
            .check(tonic_health::pb::HealthCheckRequest {
                service: "dueq.v1.QueueService".into(),
            })
            .await
        {
            Ok(r) => {
                r.into_inner().status
                    == tonic_health::pb::health_check_response::ServingStatus::Serving as i32
            }
            Err(_) => false,
        }
    }

    /// True when the bench started its own redis-server (it may flush it).
    pub fn own_redis(&self) -> bool {
        lock(&self.own).is_some()
    }

    pub async fn conn(&self) -> Result<MultiplexedConnection> {
        connect(&self.redis_url).await
    }

    pub async fn channel(&self) -> Result<Channel> {
        Ok(Channel::from_shared(format!("http://{}", self.addr))?
            .connect()
            .await?)
    }

    pub async fn client(&self) -> Result<Client> {
        Ok(QueueServiceClient::new(self.channel().await?)
            .max_decoding_message_size(64 * 1024 * 1024)
            .max_encoding_message_size(64 * 1024 * 1024))
    }

    pub async fn admin(&self) -> Result<AdminServiceClient<Channel>> {
        Ok(AdminServiceClient::new(self.channel().await?))
    }

    /// Empties the bench's own Redis between families (a given Redis is left alone).
    pub async fn reset(&self) -> Result<()> {
        if self.own_redis() {
            let mut conn = self.conn().await?;
            // ASYNC: freeing millions of records must not block Redis (or the service).
            let _: () = redis::cmd("FLUSHALL")
                .arg("ASYNC")
                .query_async(&mut conn)
                .await?;
            // Wait for the background free, so memory deltas start from a quiet heap.
            for _ in 0..600 {
                let info: String = redis::cmd("INFO")
                    .arg("memory")
                    .query_async(&mut conn)
                    .await?;
                if info_field(&info, "lazyfree_pending_objects").as_deref() == Some("0") {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
        Ok(())
    }

    pub async fn stop(&self) {
        self.kill_service();
        self.kill_redis();
    }

    fn kill_service(&self) {
        if let Some(mut child) = lock(&self.service).take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    fn kill_redis(&self) {
        if let Some(mut own) = lock(&self.own).take() {
            let _ = own.child.kill();
            let _ = own.child.wait();
            let _ = std::fs::remove_dir_all(&own.dir);
        }
    }
}

impl Drop for Env {
    fn drop(&mut self) {
        self.kill_service();
        self.kill_redis();
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// One `field:value` line of an INFO reply.
pub fn info_field(info: &str, field: &str) -> Option<String> {
    info.lines().find_map(|line| {
        line.strip_prefix(field)
            .and_then(|rest| rest.strip_prefix(':'))
            .map(|v| v.trim().to_owned())
    })
}

/// Redis's clock, in epoch ms.
pub async fn redis_now(conn: &mut MultiplexedConnection) -> Result<i64> {
    let (s, us): (i64, i64) = redis::cmd("TIME").query_async(conn).await?;
    Ok(s * 1000 + us / 1000)
}
