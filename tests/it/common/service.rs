//! The dueq service, in-process on a port of its own, talked to over real gRPC.

use std::{net::SocketAddr, time::Duration};

use dueq::{config::ServeConfig, proto::queue_service_client::QueueServiceClient};
use tokio::{net::TcpListener, sync::oneshot, task::JoinHandle};
use tonic::transport::Channel;
use tonic_health::pb::{
    health_check_response::ServingStatus, health_client::HealthClient, HealthCheckRequest,
};

use super::patience::{within_patience, Patience};

pub type Client = QueueServiceClient<Channel>;

/// The health-service name the service reports its readiness under.
const QUEUE_SERVICE: &str = "dueq.v1.QueueService";

/// The service's defaults for `redis_url`, with health checked often so tests that
/// take Redis away see the change soon.
pub fn config(redis_url: &str) -> ServeConfig {
    let mut config = ServeConfig::for_redis(redis_url);
    config.health_interval = Duration::from_millis(200);
    config
}

/// `config`, with the service's periodic background work (namespace checks, job
/// pruning, publishing worker sessions) put off beyond any test, so the script calls
/// a test counts are its own.
pub fn config_without_background_work(redis_url: &str) -> ServeConfig {
    let mut config = config(redis_url);
    config.check_interval = Duration::from_secs(3600);
    config.job_prune_interval = Duration::from_secs(3600);
    config.worker_refresh_interval = Duration::from_secs(3600);
    config
}

/// A running service; aborted on drop.
pub struct Service {
    pub addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    handle: Option<JoinHandle<()>>,
}

impl Service {
    /// Starts the service on `redis_url` with `config`'s defaults, once SERVING.
    pub async fn start(redis_url: &str) -> Service {
        Service::start_with(config(redis_url)).await
    }

    /// Starts the service once SERVING (Redis reachable, scripts loaded).
    pub async fn start_with(config: ServeConfig) -> Service {
        let service = Service::start_unready(config).await;
        service.wait_serving().await;
        service
    }

    /// Starts the service without waiting for SERVING (Redis may be unreachable).
    pub async fn start_unready(config: ServeConfig) -> Service {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("local addr");
        let (stop, stopped) = oneshot::channel::<()>();
        let handle = tokio::spawn(async move {
            let shutdown = async {
                let _ = stopped.await;
            };
            if let Err(e) = dueq::server::run(config, listener, shutdown).await {
                panic!("service failed: {e}");
            }
        });
        Service {
            addr,
            stop: Some(stop),
            handle: Some(handle),
        }
    }

    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    async fn channel(&self) -> Option<Channel> {
        Channel::from_shared(self.endpoint())
            .expect("endpoint")
            .connect()
            .await
            .ok()
    }

    /// A QueueService client with room for the largest messages tests send.
    pub async fn client(&self) -> Client {
        let channel = self.channel().await.expect("connect to service");
        QueueServiceClient::new(channel)
            .max_decoding_message_size(64 * 1024 * 1024)
            .max_encoding_message_size(64 * 1024 * 1024)
    }

    /// The health status of QueueService (-1: no answer).
    pub async fn health(&self) -> i32 {
        self.health_of(QUEUE_SERVICE).await
    }

    /// The health status of one health-service name ("" is the whole server; -1: no
    /// answer).
    pub async fn health_of(&self, service: &str) -> i32 {
        let Some(channel) = self.channel().await else {
            return -1;
        };
        let request = HealthCheckRequest {
            service: service.into(),
        };
        match HealthClient::new(channel).check(request).await {
            Ok(r) => r.into_inner().status,
            Err(_) => -1,
        }
    }

    /// Waits until the service reports SERVING.
    pub async fn wait_serving(&self) {
        let patience = Patience::new(format!("the service on {} to be SERVING", self.addr));
        while self.health().await != ServingStatus::Serving as i32 {
            patience.wait().await;
        }
    }

    /// Graceful shutdown, as on SIGTERM: returns once the server task has ended.
    pub async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(handle) = self.handle.take() {
            within_patience("stopping the service", handle)
                .await
                .expect("the server task ended cleanly");
        }
    }

    /// Simulates a crash: the task is aborted mid-flight, nothing drains.
    pub fn kill(mut self) {
        if let Some(handle) = self.handle.take() {
            handle.abort();
        }
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        if let Some(handle) = self.handle.take() {
            handle.abort();
        }
    }
}
