//! Assembles and runs the gRPC server: the queue service, health, reflection, and
//! the background tasks (Redis health and clock offset, finished-job pruning).

use std::{future::Future, sync::Arc, time::Duration};

use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tonic::transport::{server::TcpIncoming, Server};
use tonic_health::{server::HealthReporter, ServingStatus};

use crate::{
    api::{admin::AdminApi, validate, Limits, QueueApi},
    clock::Clock,
    config::ServeConfig,
    jobs::{Jobs, Retention},
    migrate::Migrator,
    monitor::NamespaceMonitor,
    proto::{
        self, admin_service_server::AdminServiceServer, queue_service_server::QueueServiceServer,
    },
    schedules::Schedules,
    store::{Store, StoreError},
    wake::Wakers,
};

/// Health names reported; all of them need Redis.
const SERVICE_NAMES: [&str; 3] = ["", "dueq.v1.QueueService", "dueq.v1.AdminService"];
/// Idle time before TCP probes a silent peer (a long-poll client that vanished).
const TCP_KEEPALIVE: Duration = Duration::from_secs(60);

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("invalid configuration: {0}")]
    Config(String),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("reflection: {0}")]
    Reflection(#[from] tonic_reflection::server::Error),
    #[error("transport: {0}")]
    Transport(#[from] tonic::transport::Error),
    #[error("io: {0}")]
    Io(#[from] std::io::Error),
}

/// Runs the service on `listener` until `shutdown` resolves, then drains: pending
/// long-polls answer empty at once, in-flight calls get `shutdown_grace` to finish.
pub async fn run(
    config: ServeConfig,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    validate::key_prefix(&config.key_prefix).map_err(ServeError::Config)?;
    let store = Arc::new(Store::new(
        &config.redis_url,
        &config.key_prefix,
        usize::from(config.pool_size),
        config.redis_timeout,
    )?);
    let clock = Arc::new(Clock::new());
    let cancel = CancellationToken::new();
    let wakers = Wakers::new(
        store.clone(),
        clock.clone(),
        config.recheck_interval,
        cancel.clone(),
    );
    let schedules = Arc::new(Schedules::new(store.clone(), clock.clone()));
    let admin = AdminServiceServer::new(AdminApi::new(Arc::new(Migrator::new(
        store.clone(),
        clock.clone(),
        config.migrate_lock_ttl,
    ))));
    let jobs = Arc::new(Jobs::new(
        store.clone(),
        Retention {
            max_age: config.job_retention,
            max_count: config.job_retention_count,
            interval: config.job_prune_interval,
        },
    ));
    tokio::spawn(jobs.clone().run_pruner(cancel.clone()));
    let monitor = NamespaceMonitor::new(store.clone());
    let api = QueueApi::new(
        schedules,
        jobs,
        wakers,
        Limits {
            max_payload_size: config.max_payload_size,
            max_wait: config.max_wait,
            address: advertised(listener.local_addr()?),
            max_batch: config.max_batch,
            max_lease: config.max_lease,
        },
        cancel.clone(),
        monitor.clone(),
    );
    tokio::spawn(monitor.run(config.check_interval, cancel.clone()));

    let (reporter, health_service) = tonic_health::server::health_reporter();
    set_status(&reporter, ServingStatus::NotServing).await;
    tokio::spawn(watch_redis(
        store.clone(),
        clock,
        reporter,
        config.health_interval,
        cancel.clone(),
    ));

    let reflection_v1 = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(proto::FILE_DESCRIPTOR_SET)
        .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
        .build_v1()?;
    let reflection_v1alpha = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(proto::FILE_DESCRIPTOR_SET)
        .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
        .build_v1alpha()?;

    let queue = QueueServiceServer::new(api)
        .max_decoding_message_size(config.max_message_size)
        .max_encoding_message_size(config.max_message_size);

    let addr = listener.local_addr()?;
    tracing::info!(%addr, redis = %store.display_url(), prefix = %config.key_prefix, "dueq listening");

    // On shutdown: wake every long-poll (they answer empty), then let tonic drain.
    let drain = cancel.clone();
    let signal = async move {
        shutdown.await;
        tracing::info!("shutting down: answering long-polls, draining in-flight calls");
        drain.cancel();
    };
    // serve_with_incoming ignores the builder's TCP settings, so they go on the
    // incoming stream. Without TCP_NODELAY small HTTP/2 frames wait for Nagle's timer
    // (a 40 ms tail on every RPC); keepalive notices long-poll clients that vanished.
    let incoming = TcpIncoming::from(listener)
        .with_nodelay(Some(true))
        .with_keepalive(Some(TCP_KEEPALIVE));
    let server = Server::builder()
        .add_service(health_service)
        .add_service(reflection_v1)
        .add_service(reflection_v1alpha)
        .add_service(queue)
        .add_service(admin)
        .serve_with_incoming_shutdown(incoming, signal);
    tokio::pin!(server);
    tokio::select! {
        result = &mut server => result?,
        _ = async {
            cancel.cancelled().await;
            tokio::time::sleep(config.shutdown_grace).await;
        } => {
            tracing::warn!(grace = ?config.shutdown_grace, "in-flight calls did not finish in time; exiting");
        }
    }
    tracing::info!("dueq stopped");
    Ok(())
}

/// The address to name in operator hints: a wildcard bind is reached via localhost.
fn advertised(addr: std::net::SocketAddr) -> String {
    if addr.ip().is_unspecified() {
        format!("localhost:{}", addr.port())
    } else {
        addr.to_string()
    }
}

async fn set_status(reporter: &HealthReporter, status: ServingStatus) {
    for name in SERVICE_NAMES {
        reporter.set_service_status(name, status).await;
    }
}

/// Warns about Redis settings that lose work or waste memory. Best effort: managed
/// Redis services often refuse CONFIG, and then there is nothing to check.
async fn check_redis_settings(store: &Store) {
    match store.config_value("maxmemory-policy").await {
        Ok(Some(policy)) if policy != "noeviction" => tracing::warn!(
            maxmemory_policy = %policy,
            "Redis may evict keys under memory pressure, and an evicted job or schedule \
             is lost silently; set maxmemory-policy noeviction"
        ),
        Ok(_) => {}
        Err(error) => {
            tracing::debug!(%error, "cannot read Redis settings (CONFIG GET refused?)")
        }
    }
}

/// Pings Redis (with `TIME`, which also calibrates the clock) every `interval`, keeps
/// the health status current, and reloads the scripts whenever Redis comes back.
async fn watch_redis(
    store: Arc<Store>,
    clock: Arc<Clock>,
    reporter: HealthReporter,
    interval: Duration,
    cancel: CancellationToken,
) {
    let mut serving = false;
    loop {
        let healthy = match store.time().await {
            Ok((redis_ms, rtt)) => {
                clock.observe(redis_ms, rtt);
                if serving {
                    true
                } else {
                    match store.load_scripts().await {
                        Ok(()) => true,
                        Err(error) => {
                            tracing::warn!(%error, "redis answers but scripts could not be loaded");
                            false
                        }
                    }
                }
            }
            Err(error) => {
                if serving {
                    tracing::error!(%error, "redis is unavailable; reporting NOT_SERVING");
                } else {
                    tracing::debug!(%error, "redis still unavailable");
                }
                false
            }
        };
        if healthy != serving {
            serving = healthy;
            if serving {
                tracing::info!(redis = %store.display_url(), offset_ms = clock.offset_ms(), "redis is available; SERVING");
                check_redis_settings(&store).await;
                set_status(&reporter, ServingStatus::Serving).await;
            } else {
                set_status(&reporter, ServingStatus::NotServing).await;
            }
        }
        tokio::select! {
            _ = tokio::time::sleep(interval) => {}
            _ = cancel.cancelled() => {
                set_status(&reporter, ServingStatus::NotServing).await;
                return;
            }
        }
    }
}
