//! The `dueq` binary.

// The decisions clippy.toml keeps: short functions, the host clock only in the
// library's clock, raw Redis commands only in its store, no blocking or fixed sleep.
#![warn(clippy::too_many_lines, clippy::disallowed_methods)]

use std::{future::Future, process::ExitCode};

use clap::Parser;
use dueq::{
    config::{Cli, Command, ServeConfig},
    telemetry::Traces,
};

mod cli;

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    let config = match cli.command {
        Some(Command::Serve(config)) => config,
        Some(Command::Dev(dev)) => return cli::dev::run(dev).await,
        Some(Command::Certs(certs)) => return cli::certs::run(certs),
        Some(Command::Health(health)) => return cli::health::run(health).await,
        Some(Command::Operator(command)) => return cli::ctl::run(command).await,
        None => cli.serve,
    };
    let Some(traces) = start_traces(&config) else {
        return ExitCode::FAILURE;
    };
    dueq::logging::init(config.log_format, traces.as_ref());
    let code = match bind(&config.listen).await {
        Some(listener) => serve(config, listener, shutdown_signal()).await,
        None => ExitCode::FAILURE,
    };
    stop_traces(traces).await;
    code
}

/// The trace exporter `--otlp-endpoint` asks for: `Some(None)` without one, `None`
/// (and the reason on stderr: logging is not set up yet) if it cannot be built.
pub(crate) fn start_traces(config: &ServeConfig) -> Option<Option<Traces>> {
    let Some(endpoint) = &config.otlp_endpoint else {
        return Some(None);
    };
    match Traces::start(endpoint) {
        Ok(traces) => Some(Some(traces)),
        Err(error) => {
            eprintln!("dueq: {error}");
            None
        }
    }
}

/// Sends the spans still queued (bounded in time), once the service has stopped.
pub(crate) async fn stop_traces(traces: Option<Traces>) {
    if let Some(traces) = traces {
        traces.shutdown().await;
    }
}

/// The listener for `listen`; None (and the reason logged) if it cannot be had. A
/// host name resolves (`localhost:50052`); the first address that binds wins.
pub(crate) async fn bind(listen: &str) -> Option<tokio::net::TcpListener> {
    match tokio::net::TcpListener::bind(listen).await {
        Ok(listener) => Some(listener),
        Err(error) => {
            tracing::error!(%listen, %error, "cannot listen");
            None
        }
    }
}

/// Serves until `shutdown` resolves and the service has drained.
pub(crate) async fn serve(
    config: ServeConfig,
    listener: tokio::net::TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> ExitCode {
    match dueq::server::run(config, listener, shutdown).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            tracing::error!(%error, "dueq failed");
            ExitCode::FAILURE
        }
    }
}

/// Resolves on SIGINT or SIGTERM.
pub(crate) async fn shutdown_signal() {
    let ctrl_c = async {
        if let Err(error) = tokio::signal::ctrl_c().await {
            tracing::error!(%error, "cannot listen for SIGINT");
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(error) => {
                tracing::error!(%error, "cannot listen for SIGTERM");
                std::future::pending::<()>().await;
            }
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {}
        _ = terminate => {}
    }
}
