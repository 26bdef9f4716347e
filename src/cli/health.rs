//! `dueq health`: one gRPC health check of a running service, for a container's
//! HEALTHCHECK (which needs no grpcurl or grpc_health_probe in the image); over TLS
//! with the operator commands' TLS flags.

use std::process::ExitCode;

use dueq::config::HealthConfig;

use super::ctl::connect::{address, secure, sources};
use tonic::transport::Endpoint;
use tonic_health::pb::{
    health_check_response::ServingStatus, health_client::HealthClient, HealthCheckRequest,
};

/// Exits 0 when the service answers SERVING; otherwise prints one line saying why
/// and exits 1.
pub(crate) async fn run(config: HealthConfig) -> ExitCode {
    match check(&config).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(why) => {
            eprintln!("dueq health: {}: {why}", config.addr);
            ExitCode::FAILURE
        }
    }
}

async fn check(config: &HealthConfig) -> Result<(), String> {
    let addr = address(&config.addr, &config.tls).map_err(|f| f.to_string())?;
    let endpoint = Endpoint::from_shared(addr.clone())
        .map_err(|e| format!("not a valid address (e.g. http://127.0.0.1:50051): {e}"))?
        .connect_timeout(config.timeout)
        .timeout(config.timeout);
    let endpoint = secure(endpoint, &addr, &config.tls).map_err(|f| f.to_string())?;
    let channel = endpoint
        .connect()
        .await
        .map_err(|e| format!("cannot connect: {}", sources(&e)))?;
    // The empty name is the whole server; dueq reports it with its services.
    let answer = HealthClient::new(channel)
        .check(HealthCheckRequest {
            service: String::new(),
        })
        .await
        .map_err(|status| format!("health check failed: {status}"))?;
    let status = answer.into_inner().status;
    if status == ServingStatus::Serving as i32 {
        return Ok(());
    }
    let name = ServingStatus::try_from(status)
        .map(|s| s.as_str_name().to_string())
        .unwrap_or_else(|_| status.to_string());
    Err(format!(
        "{name} (its Redis does not answer, or it is shutting down)"
    ))
}
