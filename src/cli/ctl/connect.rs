//! A QueueService client for the operator commands: plaintext or TLS (a CA file or
//! the system trust store, a client certificate for mTLS), and a bearer token on
//! every call. Nothing here prints the token.

use dueq::{config::ctl::ClientArgs, proto::queue_service_client::QueueServiceClient};
use tonic::{
    metadata::{Ascii, MetadataValue},
    service::{interceptor::InterceptedService, Interceptor},
    transport::{Certificate, Channel, ClientTlsConfig, Endpoint, Identity},
    Request, Status,
};

use super::Failure;

/// Room for the largest messages the service may send (a page of full jobs).
const MAX_MESSAGE: usize = 64 * 1024 * 1024;

pub(crate) type Client = QueueServiceClient<InterceptedService<Channel, Bearer>>;

/// Adds `authorization: Bearer <token>` to every call, when there is a token.
#[derive(Clone)]
pub(crate) struct Bearer(Option<MetadataValue<Ascii>>);

impl Interceptor for Bearer {
    fn call(&mut self, mut request: Request<()>) -> Result<Request<()>, Status> {
        if let Some(value) = &self.0 {
            request
                .metadata_mut()
                .insert("authorization", value.clone());
        }
        Ok(request)
    }
}

/// Whether `args` ask for TLS: an https:// address or any TLS file.
fn wants_tls(args: &ClientArgs) -> bool {
    args.tls_ca.is_some() || args.tls_cert.is_some() || args.tls_server_name.is_some()
}

/// The address with its scheme: a bare host:port is https:// with TLS flags and
/// http:// without.
fn address(args: &ClientArgs) -> Result<String, Failure> {
    let tls = wants_tls(args);
    if args.addr.contains("://") {
        if tls && args.addr.starts_with("http://") {
            return Err(Failure::Usage(format!(
                "--addr {} is plaintext but TLS flags are given: use https://",
                args.addr
            )));
        }
        return Ok(args.addr.clone());
    }
    let scheme = if tls { "https" } else { "http" };
    Ok(format!("{scheme}://{}", args.addr))
}

fn read(path: &std::path::Path, what: &str) -> Result<Vec<u8>, Failure> {
    std::fs::read(path)
        .map_err(|e| Failure::Usage(format!("cannot read {what} {}: {e}", path.display())))
}

/// Connects; `per_call_timeout` cuts each call at --timeout (not for streams).
pub(crate) async fn connect(args: &ClientArgs, per_call_timeout: bool) -> Result<Client, Failure> {
    let addr = address(args)?;
    let token = match &args.token {
        None => None,
        Some(token) => Some(
            format!("Bearer {token}")
                .parse::<MetadataValue<Ascii>>()
                // The token itself is not repeated.
                .map_err(|_| Failure::Usage("the token is not valid in an HTTP header".into()))?,
        ),
    };
    let mut endpoint = Endpoint::from_shared(addr.clone())
        .map_err(|e| {
            Failure::Usage(format!(
                "--addr {addr} is not a valid address (e.g. http://127.0.0.1:50051): {e}"
            ))
        })?
        .connect_timeout(args.timeout);
    if per_call_timeout {
        endpoint = endpoint.timeout(args.timeout);
    }
    if addr.starts_with("https://") {
        let mut tls = ClientTlsConfig::new();
        tls = match &args.tls_ca {
            Some(ca) => tls.ca_certificate(Certificate::from_pem(read(ca, "--tls-ca")?)),
            None => tls.with_native_roots(),
        };
        if let (Some(cert), Some(key)) = (&args.tls_cert, &args.tls_key) {
            tls = tls.identity(Identity::from_pem(
                read(cert, "--tls-cert")?,
                read(key, "--tls-key")?,
            ));
        }
        if let Some(name) = &args.tls_server_name {
            tls = tls.domain_name(name.clone());
        }
        endpoint = endpoint
            .tls_config(tls)
            .map_err(|e| Failure::Usage(format!("TLS: {}", super::super::health::sources(&e))))?;
    }
    let channel = endpoint.connect().await.map_err(|e| {
        Failure::Unreachable(format!(
            "{addr}: cannot connect: {}",
            super::super::health::sources(&e)
        ))
    })?;
    Ok(QueueServiceClient::with_interceptor(channel, Bearer(token))
        .max_decoding_message_size(MAX_MESSAGE)
        .max_encoding_message_size(MAX_MESSAGE))
}
