//! The bench's environment: a redis-server of its own on a free port (or the one
//! given by --redis-url) and the dueq service in-process on another free port.

use std::{
    net::TcpListener as StdListener,
    path::PathBuf,
    process::{Child, Command, Stdio},
    sync::Mutex,
    time::Duration,
};

use deadpool_redis::redis::{self, aio::MultiplexedConnection};
use tokio::{net::TcpListener, sync::oneshot, task::JoinHandle};
use tonic::transport::Channel;

use super::Result;
use crate::{
    config::ServeConfig,
    proto::{admin_service_client::AdminServiceClient, queue_service_client::QueueServiceClient},
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
    stop: Mutex<Option<oneshot::Sender<()>>>,
    handle: Mutex<Option<JoinHandle<()>>>,
    pub redis_version: String,
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
            stop: Mutex::new(None),
            handle: Mutex::new(None),
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
        env.start_service().await?;
        Ok(env)
    }

    async fn start_service(&mut self) -> Result<()> {
        let mut config = ServeConfig::for_redis(&self.redis_url);
        config.key_prefix = PREFIX.into();
        config.health_interval = Duration::from_millis(200);
        config.max_batch = 100_000;
        config.shutdown_grace = Duration::from_secs(2);
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        self.addr = listener.local_addr()?;
        let (stop, stopped) = oneshot::channel::<()>();
        let handle = tokio::spawn(async move {
            let shutdown = async {
                let _ = stopped.await;
            };
            if let Err(e) = crate::server::run(config, listener, shutdown).await {
                eprintln!("bench: service failed: {e}");
            }
        });
        *lock(&self.stop) = Some(stop);
        *lock(&self.handle) = Some(handle);
        for _ in 0..250 {
            if self.serving().await {
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        Err("the in-process service never became SERVING".into())
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
        let stop = lock(&self.stop).take();
        if let Some(stop) = stop {
            let _ = stop.send(());
        }
        let handle = lock(&self.handle).take();
        if let Some(handle) = handle {
            let _ = tokio::time::timeout(Duration::from_secs(5), handle).await;
        }
        self.kill_redis();
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
        if let Some(handle) = lock(&self.handle).take() {
            handle.abort();
        }
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
