//! The bench's environment: a redis-server of its own on a free port (or the one
//! given by --redis-url) and the dueq service as a child process on another, with
//! the connections and clients every family uses.

use std::{
    net::SocketAddr,
    path::{Path, PathBuf},
    time::Duration,
};

use deadpool_redis::redis::{self, aio::MultiplexedConnection};
use dueq::proto::queue_service_client::QueueServiceClient;
use tonic::transport::Channel;
use tonic_health::pb::{
    health_check_response::ServingStatus, health_client::HealthClient, HealthCheckRequest,
};

use crate::{
    cpu::CpuSnapshot,
    own_redis::OwnRedis,
    redis_info::{info, info_field},
    service::Service,
    Result,
};

pub(crate) use crate::local::{free_port, PREFIX};

pub(crate) type Client = QueueServiceClient<Channel>;
/// The client the migrate measurement calls Migrate on (QueueService serves it).
pub(crate) type AdminClient = QueueServiceClient<Channel>;

pub(crate) struct Env {
    pub(crate) redis_url: String,
    addr: SocketAddr,
    own: Option<OwnRedis>,
    service: Option<Service>,
    pub(crate) redis_version: String,
    /// The binary `dueq serve` runs from.
    pub(crate) dueq_bin: PathBuf,
}

/// A port nobody listens on right now.
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
    /// Starts Redis (unless `redis_url` is given) and `dueq serve` from `dueq`; once
    /// it returns, the service answers SERVING. On an error, whatever started is
    /// stopped again (Drop).
    pub(crate) async fn start(redis_url: Option<&str>, dueq: &Path) -> Result<Env> {
        let (redis_url, own) = match redis_url {
            Some(url) => (url.to_owned(), None),
            None => {
                let own = OwnRedis::start()?;
                (own.url.clone(), Some(own))
            }
        };
        let mut env = Env {
            redis_url,
            addr: format!("127.0.0.1:{}", free_port()?).parse()?,
            own,
            service: None,
            redis_version: String::new(),
            dueq_bin: dueq.to_owned(),
        };
        env.wait_for_redis().await?;
        let server = info(&mut env.conn().await?, "server").await?;
        env.redis_version = info_field(&server, "redis_version").unwrap_or_default();
        env.start_service(dueq).await?;
        Ok(env)
    }

    // PINGs the bench's own redis-server until it is up.
    #[allow(clippy::disallowed_methods)]
    async fn wait_for_redis(&self) -> Result<()> {
        for _ in 0..250 {
            if let Ok(mut conn) = self.conn().await {
                let pong: redis::RedisResult<String> =
                    redis::cmd("PING").query_async(&mut conn).await;
                if pong.is_ok() {
                    return Ok(());
                }
            }
            crate::local::pause(Duration::from_millis(20)).await;
        }
        Err(format!("redis at {} never answered PING", self.redis_url).into())
    }

    async fn start_service(&mut self, dueq: &Path) -> Result<()> {
        let service = self
            .service
            .insert(Service::start(dueq, self.addr, &self.redis_url)?);
        let pid = service.pid();
        for _ in 0..500 {
            if self.serving().await {
                return Ok(());
            }
            if let Some(status) = self.service.as_mut().and_then(Service::exited) {
                return Err(
                    format!("dueq serve (pid {pid}) exited before serving: {status}").into(),
                );
            }
            crate::local::pause(Duration::from_millis(20)).await;
        }
        Err(format!("dueq serve (pid {pid}) never became SERVING").into())
    }

    async fn serving(&self) -> bool {
        let Ok(channel) = self.channel().await else {
            return false;
        };
        let check = HealthClient::new(channel)
            .check(HealthCheckRequest {
                service: "dueq.v1.QueueService".into(),
            })
            .await;
        check.is_ok_and(|r| r.into_inner().status == ServingStatus::Serving as i32)
    }

    /// The service's process id (for its CPU and RSS).
    /// Where the service listens.
    pub(crate) fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub(crate) fn service_pid(&self) -> u32 {
        self.service.as_ref().map_or(0, Service::pid)
    }

    /// CPU spent so far by the service, Redis and the bench.
    pub(crate) async fn cpu(&self) -> Result<CpuSnapshot> {
        CpuSnapshot::take(&mut self.conn().await?, self.service_pid()).await
    }

    /// True when the bench started its own redis-server (it may flush it).
    pub(crate) fn own_redis(&self) -> bool {
        self.own.is_some()
    }

    pub(crate) async fn conn(&self) -> Result<MultiplexedConnection> {
        connect(&self.redis_url).await
    }

    pub(crate) async fn channel(&self) -> Result<Channel> {
        Ok(Channel::from_shared(format!("http://{}", self.addr))?
            .connect()
            .await?)
    }

    pub(crate) async fn client(&self) -> Result<Client> {
        Ok(QueueServiceClient::new(self.channel().await?)
            .max_decoding_message_size(64 * 1024 * 1024)
            .max_encoding_message_size(64 * 1024 * 1024))
    }

    pub(crate) async fn admin(&self) -> Result<AdminClient> {
        Ok(QueueServiceClient::new(self.channel().await?))
    }

    /// Empties the bench's own Redis (a given Redis is left alone), so the next
    /// measurement grows the keyspace from nothing.
    // FLUSHALL of the bench's own Redis between measurements.
    #[allow(clippy::disallowed_methods)]
    pub(crate) async fn reset(&self) -> Result<()> {
        if !self.own_redis() {
            return Ok(());
        }
        let mut conn = self.conn().await?;
        // ASYNC: freeing millions of records must not block Redis (or the service);
        // a synchronous flush of hundreds of MB also makes the allocator purge on the
        // main thread for a while after, which showed up as a 38 ms Migrate script.
        let _: () = redis::cmd("FLUSHALL")
            .arg("ASYNC")
            .query_async(&mut conn)
            .await?;
        crate::local::count_reset();
        // Wait for the background free, so memory deltas start from a quiet heap.
        for _ in 0..600 {
            let memory = info(&mut conn, "memory").await?;
            if info_field(&memory, "lazyfree_pending_objects").is_none_or(|v| v == "0") {
                break;
            }
            crate::local::pause(Duration::from_millis(50)).await;
        }
        Ok(())
    }

    /// Stops the service and the bench's own Redis.
    pub(crate) fn stop(self) {
        drop(self);
    }
}

impl Drop for Env {
    fn drop(&mut self) {
        if let Some(service) = self.service.take() {
            service.stop();
        }
        if let Some(own) = self.own.take() {
            own.stop();
        }
    }
}
