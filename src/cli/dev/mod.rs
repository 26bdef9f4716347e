//! `dueq dev`: one command to a working service, like `temporal server start-dev`. A
//! private redis-server (from PATH) keeps its data in a local folder that later runs
//! reuse, and dueq serves against it through the same path as `dueq serve`. One run
//! per data folder: the folder is locked for the life of the run (`lock`).
//!
//! Stopping order matters: on Ctrl-C or SIGTERM dueq drains first (its calls still
//! reach Redis), then redis-server gets SHUTDOWN, so the AOF on disk is complete.

#[cfg(unix)]
mod lock;
#[cfg(not(unix))]
#[path = "lock_none.rs"]
mod lock;
mod orphan;
mod redis;

use std::{path::PathBuf, process::ExitCode};

use dueq::config::{DevConfig, ServeConfig};

use self::redis::DevRedis;

pub(crate) async fn run(dev: DevConfig) -> ExitCode {
    let Some(traces) = crate::start_traces(&dev.serve) else {
        return ExitCode::FAILURE;
    };
    dueq::logging::init(dev.serve.log_format, traces.as_ref());
    let code = serve(dev).await;
    crate::stop_traces(traces).await;
    code
}

/// Starts the private Redis, serves against it until told to stop, stops it.
async fn serve(dev: DevConfig) -> ExitCode {
    let Some(binary) = redis::find_on_path() else {
        eprintln!(
            "dueq dev: redis-server not found on PATH; {}",
            redis::INSTALL_HINT
        );
        return ExitCode::FAILURE;
    };
    // Every other setting as `dueq serve` takes it (flags, DUEQ_* variables).
    let mut config = dev.serve;
    if config.console_listen.is_none() && !dev.no_console {
        config.console_listen = Some(DevConfig::CONSOLE.to_owned());
    }
    let dir = match data_dir(&dev.data_dir) {
        Ok(dir) => dir,
        Err(error) => {
            eprintln!(
                "dueq dev: cannot use {} as the data folder: {error}",
                dev.data_dir.display()
            );
            return ExitCode::FAILURE;
        }
    };
    // Held until `run` returns: one run per data folder.
    let _lock = match lock::lock(&dir) {
        Ok(lock) => lock,
        Err(error) => {
            eprintln!("dueq dev: {error}");
            return ExitCode::FAILURE;
        }
    };
    let tls_dir = match dev.tls.then(|| dev_tls(&dir, &mut config)).transpose() {
        Ok(tls) => tls,
        Err(error) => {
            eprintln!("dueq dev: --tls: {error}");
            return ExitCode::FAILURE;
        }
    };
    let redis = match DevRedis::start(&binary, &dir).await {
        Ok(redis) => redis,
        Err(error) => {
            eprintln!("dueq dev: {error}");
            return ExitCode::FAILURE;
        }
    };
    config.redis_url = redis.url();
    let Some(listener) = crate::bind(&config.listen).await else {
        stop(redis).await;
        return ExitCode::FAILURE;
    };
    println!("dueq dev: serving on {} (Ctrl-C to stop)", config.listen);
    println!(
        "  redis:  redis-server pid {} on 127.0.0.1:{}, AOF on (everysec), noeviction",
        redis.pid, redis.port
    );
    println!(
        "  data:   {} (reused by the next run; its log: {})",
        dir.display(),
        redis::LOG_FILE
    );
    banner_urls(&config, tls_dir.as_deref());
    // Redis exiting under dueq stops it too: a dev service that answers UNAVAILABLE
    // to everything helps nobody.
    let redis_exit = redis.exit_signal();
    let shutdown = async move {
        tokio::select! {
            () = crate::shutdown_signal() => {}
            () = redis_exit => {}
        }
    };
    let served = crate::serve(config, listener, shutdown).await;
    if let Some(status) = redis.status() {
        tracing::error!(
            %status,
            log = %dir.join(redis::LOG_FILE).display(),
            "redis-server exited while dueq was serving; dueq stopped"
        );
        return ExitCode::FAILURE;
    }
    stop(redis).await;
    served
}

/// The banner's lines for what is served besides gRPC, each with its URL, and a
/// grpcurl command to try (last: tests read the banner up to it). `tls_dir`: the
/// certificates of `--tls`.
fn banner_urls(config: &ServeConfig, tls_dir: Option<&std::path::Path>) {
    let scheme = if config.tls_cert.is_some() {
        "https"
    } else {
        "http"
    };
    if let Some(console) = &config.console_listen {
        println!("  console: {scheme}://{console}/");
    }
    if let Some(metrics) = &config.metrics_listen {
        println!("  metrics: http://{metrics}/metrics");
    }
    if let Some(auth) = &config.auth_file {
        println!(
            "  auth:   {} (every call needs a token of it)",
            auth.display()
        );
    }
    if let Some(tls) = tls_dir {
        let [env, grpcurl] = crate::cli::certs::dev_lines(tls, &config.listen);
        println!("  tls:    certificates in {} (dueq certs)", tls.display());
        println!("  env:    {env}");
        println!("  try:    {grpcurl}");
    } else if config.tls_cert.is_some() {
        println!(
            "  try:    grpcurl -cacert CA.pem {} list  (the CA of --tls-cert)",
            config.listen
        );
    } else {
        println!("  try:    grpcurl -plaintext {} list", config.listen);
    }
}

/// `--tls`: serve with the certificates of the data folder's tls/ (made if missing);
/// their folder.
fn dev_tls(dir: &std::path::Path, config: &mut ServeConfig) -> Result<PathBuf, String> {
    let tls = crate::cli::certs::for_dev(dir)?;
    config.tls_cert = Some(tls.join("server.pem"));
    config.tls_key = Some(tls.join("server-key.pem"));
    Ok(tls)
}

/// The data folder, created if missing, as an absolute path (redis-server's working
/// directory is its own, and the path printed should work from anywhere).
fn data_dir(dir: &std::path::Path) -> std::io::Result<PathBuf> {
    std::fs::create_dir_all(dir)?;
    std::fs::canonicalize(dir)
}

/// Shuts redis-server down cleanly, logging how it went.
async fn stop(redis: DevRedis) {
    match redis.shutdown().await {
        Ok(status) if status.success() => {
            tracing::info!("redis-server stopped; its AOF is complete")
        }
        Ok(status) => tracing::warn!(%status, "redis-server exited with an error"),
        Err(error) => tracing::error!(%error, "redis-server did not stop cleanly"),
    }
}
