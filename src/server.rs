//! Assembles and runs the service: the use cases over one store, the gRPC services
//! (queue, admin, health, reflection) behind the tower layers, the metrics endpoint,
//! and the background tasks (Redis health and clock, the namespace monitor,
//! finished-job pruning).

use std::{future::Future, sync::Arc, time::Duration};

use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tonic::{
    service::Routes,
    transport::{server::TcpIncoming, Server},
};
use tonic_health::{
    pb::health_server::{Health, HealthServer},
    ServingStatus,
};
use tower_layer::Layer;

use crate::auth::AuthFile;
use crate::{
    accept::BackoffIncoming,
    api::{heavy::HeavyReads, AdminApi, Audit, Limits, QueueApi, Quotas, Rescue},
    clock::Clock,
    config::ServeConfig,
    connections::{LimitedIncoming, Owners, PrefaceOn},
    console,
    context::Context,
    dispatch::Dispatcher,
    health,
    jobs::{Jobs, Pruner, Retention},
    layers::{Caps, Layers, Settings},
    longpoll::Wakers,
    metrics::{self, Metrics},
    migrate::Migrator,
    monitor::Monitor,
    namespaces::Namespaces,
    proto::{
        self, admin_service_server::AdminServiceServer, queue_service_server::QueueServiceServer,
    },
    schedules::Schedules,
    store::{keys::check_prefix, Store, StoreError},
    tls::{Tls, TlsFiles},
    watch::Hub,
    workers::Sessions,
};

/// Idle time before TCP probes a silent peer (a long-poll client that vanished).
const TCP_KEEPALIVE: Duration = Duration::from_secs(60);

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("invalid configuration: {0}")]
    Config(String),
    #[error("redis: {0}")]
    Store(String),
    #[error("reflection: {0}")]
    Reflection(#[from] tonic_reflection::server::Error),
    #[error("transport: {0}")]
    Transport(#[from] tonic::transport::Error),
    #[error("io: {0}")]
    Io(#[from] std::io::Error),
}

impl From<StoreError> for ServeError {
    fn from(error: StoreError) -> Self {
        ServeError::Store(error.to_string())
    }
}

/// Runs the service on `listener` until `shutdown` resolves, then drains: pending
/// long-polls answer empty at once, in-flight calls get `shutdown_grace` to finish.
pub async fn run(
    config: ServeConfig,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    run_until(config, listener, Box::pin(shutdown)).await
}

/// A shutdown signal, boxed: the service's code then takes no type parameter from
/// its caller, so it is compiled once, in this crate. (Generic over the signal, it
/// was compiled again in the binary's crate, and with it every service's handlers:
/// the console's in-process calls reach them from this crate, and a release build
/// shares no generic code between crates.)
type Signal = std::pin::Pin<Box<dyn Future<Output = ()> + Send>>;

async fn run_until(
    config: ServeConfig,
    listener: TcpListener,
    shutdown: Signal,
) -> Result<(), ServeError> {
    let guard = Guard::check(&config, listener.local_addr()?)?;
    let cancel = CancellationToken::new();
    // However this future ends (returned, or dropped mid-flight as a crash is
    // simulated in process), the background tasks it spawned stop with it.
    let _stop_background = cancel.clone().drop_guard();
    // Before anything is served: SIGHUP reloads from here on, in every mode.
    crate::hangup::Reloadable {
        auth: guard.principals.clone(),
        tls: guard.tls.clone(),
    }
    .on_sighup(cancel.clone());
    let metrics_listener = match &config.metrics_listen {
        Some(listen) => Some(metrics::bind(listen).await.map_err(ServeError::Config)?),
        None => None,
    };
    let console_listener = match &config.console_listen {
        Some(listen) => Some(console::bind(listen).await.map_err(ServeError::Config)?),
        None => None,
    };
    let metrics = Metrics::new(
        usize::try_from(config.metrics_max_series).unwrap_or(usize::MAX),
        config.overdue_after,
    );
    metrics.zero_rpcs(crate::api::rpcs());
    let address = advertised(listener.local_addr()?);
    let core = core(&config, &metrics, &cancel, &address)?;
    let (audit, audit_writer) = Audit::new(core.store.clone(), metrics.clone(), cancel.clone());
    tokio::spawn(audit_writer);
    let rescue = Arc::new(Rescue::new(address.clone(), core.namespaces.clone()).with_audit(audit));
    let admin = Arc::new(AdminApi::new(
        Arc::new(Migrator::new(
            core.store.clone(),
            core.clock.clone(),
            config.migrate_lock_ttl,
        )),
        rescue.clone(),
        address,
    ));
    let heavy = HeavyReads::new(config.heavy_read_rate, guard.principals.clone());
    let queue = queue_api(&core, &config, rescue, admin.clone(), heavy);
    spawn_background(&core, &config);
    let health = start_health(&core, &config).await;
    if let Some(listener) = metrics_listener {
        serve_metrics(listener, &core)?;
    }
    tracing::info!(
        addr = %listener.local_addr()?,
        tls = guard.tls.is_some(),
        redis = %core.store.display_url(),
        prefix = %config.key_prefix,
        "dueq listening"
    );
    let services = Services {
        queue: QueueServiceServer::new(queue)
            .max_decoding_message_size(config.max_message_size)
            .max_encoding_message_size(config.max_message_size),
        admin: AdminServiceServer::from_arc(admin),
        layers: layers(&config, &core, &guard),
    };
    let app = app(&config, services, health)?;
    if let Some(listener) = console_listener {
        serve_console(listener, &config, &guard, app.clone(), &core)?;
    }
    serve(&config, listener, guard, app, &core, shutdown).await?;
    tracing::info!("dueq stopped");
    Ok(())
}

/// What the configuration must pass before anything starts: a safe key prefix, sizes
/// that fit together, loadable TLS files, and an auth file (or a loopback address).
struct Guard {
    tls: Option<Arc<Tls>>,
    principals: Option<Arc<AuthFile>>,
    /// With an auth file: who each connection is charged to (`--max-connections`
    /// shares).
    owners: Option<Arc<Owners>>,
}

impl Guard {
    fn check(config: &ServeConfig, addr: std::net::SocketAddr) -> Result<Guard, ServeError> {
        check_prefix(&config.key_prefix).map_err(ServeError::Config)?;
        config.check_sizes().map_err(ServeError::Config)?;
        let tls = TlsFiles::from_flags(
            config.tls_cert.clone(),
            config.tls_key.clone(),
            config.tls_client_ca.clone(),
        )
        .and_then(|files| files.map(Tls::load).transpose())
        .map_err(ServeError::Config)?;
        let principals = crate::auth::principals_for(
            config.auth_file.as_deref(),
            config.allow_unauthenticated,
            addr,
        )
        .map_err(ServeError::Config)?;
        let owners = principals
            .as_ref()
            .map(|_| Owners::new(usize::try_from(config.max_connections).unwrap_or(usize::MAX)));
        Ok(Guard {
            tls,
            principals,
            owners,
        })
    }
}

/// The shared core of the use cases: one store, the clock, the wake-ups, the
/// namespace table and the metrics. Does not connect yet: the service starts
/// without Redis.
fn core(
    config: &ServeConfig,
    metrics: &Arc<Metrics>,
    cancel: &CancellationToken,
    address: &str,
) -> Result<Context, ServeError> {
    let topology = config.redis_topology().map_err(ServeError::Config)?;
    let store = Arc::new(
        Store::with_topology(
            &config.redis_url,
            &config.redis_tls(),
            &topology,
            &config.key_prefix,
            usize::from(config.pool_size),
            config.redis_timeout,
        )?
        .wait_for_replicas(config.redis_wait_replicas)
        .with_timings(metrics.redis_seconds()),
    );
    let clock = Arc::new(Clock::new());
    let namespaces = Namespaces::new(cancel.clone());
    let wakers = Wakers::new(
        store.clone(),
        clock.clone(),
        config.recheck_interval,
        namespaces.clone(),
    );
    let hub = Hub::new(
        store.clone(),
        metrics.clone(),
        cancel.clone(),
        usize::try_from(config.max_watches).unwrap_or(usize::MAX),
        wakers.clone(),
    );
    Ok(Context {
        hub,
        wakers,
        namespaces,
        metrics: metrics.clone(),
        sessions: Sessions::new(
            address.to_owned(),
            clock.clone(),
            config.worker_refresh_interval,
        ),
        store,
        clock,
        shutdown: cancel.clone(),
        dispatch: Default::default(),
        give_backs: Default::default(),
    })
}

/// The health service, NOT_SERVING until the Redis watch finds Redis answering.
async fn start_health(core: &Context, config: &ServeConfig) -> HealthServer<impl Health> {
    let (reporter, health_service) = tonic_health::server::health_reporter();
    health::set_status(&reporter, ServingStatus::NotServing).await;
    tokio::spawn(health::watch_redis(
        core.store.clone(),
        core.clock.clone(),
        reporter,
        config.health_interval,
        core.metrics.clone(),
        core.shutdown.clone(),
    ));
    health_service
}

/// The metrics endpoint, until shutdown.
fn serve_metrics(listener: TcpListener, core: &Context) -> Result<(), ServeError> {
    let sources = metrics::Sources {
        store: core.store.clone(),
        namespaces: core.namespaces.clone(),
    };
    tracing::info!(addr = %listener.local_addr()?, "serving metrics on /metrics");
    tokio::spawn(metrics::serve(
        listener,
        core.metrics.clone(),
        sources,
        core.shutdown.clone(),
    ));
    Ok(())
}

/// The web console until shutdown: its in-process gRPC client is the same services
/// behind the same layers.
fn serve_console(
    listener: TcpListener,
    config: &ServeConfig,
    guard: &Guard,
    app: App,
    core: &Context,
) -> Result<(), ServeError> {
    let grpc = console::Grpc::new(app, config.max_message_size);
    let addr = listener.local_addr()?;
    let scheme = if guard.tls.is_some() { "https" } else { "http" };
    tracing::info!(url = %format!("{scheme}://{}", advertised(addr)), "serving the web console");
    let console = console::Console::new(
        grpc,
        guard.principals.clone(),
        guard.tls.is_some(),
        core.shutdown.clone(),
    );
    tokio::spawn(console::serve(
        listener,
        console,
        guard.tls.clone(),
        core.shutdown.clone(),
    ));
    Ok(())
}

pub(crate) use crate::layers::App;

fn app(
    config: &ServeConfig,
    services: Services,
    health: HealthServer<impl Health>,
) -> Result<App, ServeError> {
    let mut routes = Routes::new(health);
    if config.reflection {
        let (reflection_v1, reflection_v1alpha) = reflection()?;
        routes = routes
            .add_service(reflection_v1)
            .add_service(reflection_v1alpha);
    }
    let routes = routes
        .add_service(services.queue)
        .add_service(services.admin)
        .prepare();
    Ok(services.layers.layer(routes))
}

/// dueq's gRPC services and the tower layers around them.
struct Services {
    queue: QueueServiceServer<QueueApi>,
    admin: AdminServiceServer<AdminApi>,
    layers: Layers,
}

/// The cross-cutting layers (`crate::layers`), as the flags configure them.
fn layers(config: &ServeConfig, core: &Context, guard: &Guard) -> Layers {
    let cap = |n: u64| usize::try_from(n).unwrap_or(usize::MAX);
    Layers::new(Settings {
        metrics: core.metrics.clone(),
        principals: guard.principals.clone(),
        owners: guard.owners.clone(),
        caps: Caps {
            unary: cap(config.max_in_flight),
            long: cap(config.max_long_polls),
            open: cap(config.max_open_calls),
            body_timeout: config.body_timeout,
            max_message: config.max_message_size,
        },
        request_timeout: config.request_timeout,
    })
}

/// Serves the gRPC services behind the tower layers until shutdown, then drains.
async fn serve(
    config: &ServeConfig,
    listener: TcpListener,
    guard: Guard,
    app: App,
    core: &Context,
    shutdown: Signal,
) -> Result<(), ServeError> {
    // On shutdown: wake every long-poll (they answer empty), then let tonic drain.
    let cancel = core.shutdown.clone();
    let drain = cancel.clone();
    let signal = async move {
        shutdown.await;
        tracing::info!("shutting down: answering long-polls, draining in-flight calls");
        drain.cancel();
    };
    // serve_with_incoming ignores the builder's TCP settings, so they go on the
    // incoming stream. Without TCP_NODELAY small HTTP/2 frames wait for Nagle's timer
    // (a 40 ms tail on every RPC); keepalive notices long-poll clients that vanished.
    let incoming = LimitedIncoming::new(
        BackoffIncoming::new(
            TcpIncoming::from(listener)
                .with_nodelay(Some(true))
                .with_keepalive(Some(TCP_KEEPALIVE)),
        ),
        usize::try_from(config.max_connections).unwrap_or(usize::MAX),
        config.http2_header_timeout,
        match guard.tls {
            // Over TLS the preface is read after decryption (`tls::TlsConn`).
            Some(_) => PrefaceOn::Decrypted,
            None => PrefaceOn::Wire,
        },
    )
    .with_owners(guard.owners.clone());
    // tonic serves the app as it is: its own routes (none) are left unused.
    let router = transport(config)
        .layer(tower::layer::layer_fn(move |_: Routes| app.clone()))
        .add_routes(Routes::default());
    let grace = config.shutdown_grace;
    match guard.tls {
        None => {
            let server = router.serve_with_incoming_shutdown(incoming, signal);
            drain_within(server, &cancel, grace).await
        }
        Some(tls) => {
            let server = router.serve_with_incoming_shutdown(tls.incoming(incoming), signal);
            drain_within(server, &cancel, grace).await
        }
    }
}

/// The HTTP/2 limits of every connection (`--max-concurrent-streams`, keepalive,
/// connection age).
fn transport(config: &ServeConfig) -> Server {
    let nonzero = |d: Duration| (!d.is_zero()).then_some(d);
    let server = Server::builder()
        .max_concurrent_streams(config.max_concurrent_streams)
        .http2_keepalive_interval(nonzero(config.http2_keepalive_interval))
        .http2_keepalive_timeout(Some(config.http2_keepalive_timeout));
    match nonzero(config.max_connection_age) {
        Some(age) => server
            .max_connection_age(age)
            .max_connection_age_grace(config.max_connection_age_grace),
        None => server,
    }
}

fn queue_api(
    core: &Context,
    config: &ServeConfig,
    rescue: Arc<Rescue>,
    admin: Arc<AdminApi>,
    heavy: HeavyReads,
) -> QueueApi {
    QueueApi::new(
        Arc::new(Schedules::new(core.clone()).with_quota(config.max_schedules_per_namespace)),
        Arc::new(
            Jobs::new(core.clone(), config.max_lease).with_quota(config.max_jobs_per_namespace),
        ),
        Limits {
            max_payload_size: config.max_payload_size,
            max_message_size: config.max_message_size,
            max_wait: config.max_wait,
            max_batch: config.max_batch,
            max_lease: config.max_lease,
            heavy: Arc::new(heavy),
        },
        rescue,
        admin,
        Arc::new(Quotas::new(core.store.clone())),
    )
}

/// The namespace monitor (which also sweeps the namespace table), the pruner and the
/// schedule dispatcher.
fn spawn_background(core: &Context, config: &ServeConfig) {
    // The subscription, the announcer and the safety net of the long-polls'
    // cross-replica wake-ups (crate::announce).
    core.hub.listen();
    tokio::spawn(core.wakers.clone().run_announcer(core.shutdown.clone()));
    tokio::spawn(core.wakers.clone().run_recheck(core.shutdown.clone()));
    let monitor = Monitor::new(core.store.clone(), core.namespaces.clone());
    tokio::spawn(monitor.run(config.check_interval, core.shutdown.clone()));
    let pruner = Pruner::new(
        core.store.clone(),
        core.clock.clone(),
        Retention {
            max_age: config.job_retention,
            max_count: config.job_retention_count,
            interval: config.job_prune_interval,
        },
    );
    tokio::spawn(pruner.run(core.shutdown.clone()));
    tokio::spawn(
        core.sessions
            .clone()
            .run(core.store.clone(), core.shutdown.clone()),
    );
    let dispatcher = Dispatcher::new(
        core.clone(),
        config.recheck_interval,
        config.max_jobs_per_namespace,
    );
    tokio::spawn(Arc::new(dispatcher).run());
}

type Reflection<T> = tonic_reflection::server::v1::ServerReflectionServer<T>;

/// gRPC reflection, v1 and v1alpha, of dueq's services and health.
fn reflection() -> Result<
    (
        Reflection<impl tonic_reflection::server::v1::ServerReflection>,
        tonic_reflection::server::v1alpha::ServerReflectionServer<
            impl tonic_reflection::server::v1alpha::ServerReflection,
        >,
    ),
    ServeError,
> {
    let v1 = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(proto::FILE_DESCRIPTOR_SET)
        .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
        .build_v1()?;
    let v1alpha = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(proto::FILE_DESCRIPTOR_SET)
        .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
        .build_v1alpha()?;
    Ok((v1, v1alpha))
}

/// Runs the server until it stops, or until `grace` after shutdown began.
async fn drain_within(
    server: impl Future<Output = Result<(), tonic::transport::Error>>,
    cancel: &CancellationToken,
    grace: Duration,
) -> Result<(), ServeError> {
    tokio::pin!(server);
    tokio::select! {
        result = &mut server => result?,
        _ = async {
            cancel.cancelled().await;
            // The drain grace: real time in-flight calls get to finish.
            #[allow(clippy::disallowed_methods)]
            tokio::time::sleep(grace).await;
        } => {
            tracing::warn!(?grace, "in-flight calls did not finish in time; exiting");
        }
    }
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
