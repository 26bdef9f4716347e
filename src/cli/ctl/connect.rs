//! A QueueService client for the operator commands: plaintext or TLS (a CA file or
//! the system trust store, a client certificate for mTLS), and a bearer token on
//! every call. Nothing here prints the token.

use dueq::{
    config::ctl::{ClientArgs, TlsArgs},
    proto::queue_service_client::QueueServiceClient,
};
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

/// The address with its scheme: a bare host:port is https:// with TLS flags and
/// http:// without.
pub(crate) fn address(addr: &str, tls: &TlsArgs) -> Result<String, Failure> {
    if addr.contains("://") {
        if tls.any() && addr.starts_with("http://") {
            return Err(Failure::Usage(format!(
                "--addr {addr} is plaintext but TLS flags are given: use https://"
            )));
        }
        return Ok(addr.to_string());
    }
    let scheme = if tls.any() { "https" } else { "http" };
    Ok(format!("{scheme}://{addr}"))
}

/// `endpoint` with TLS when `addr` is https://: trusting --tls-ca or the system
/// store, showing the client certificate if given.
pub(crate) fn secure(endpoint: Endpoint, addr: &str, args: &TlsArgs) -> Result<Endpoint, Failure> {
    if !addr.starts_with("https://") {
        return Ok(endpoint);
    }
    let mut tls = ClientTlsConfig::new();
    tls = match &args.tls_ca {
        Some(ca) => tls.ca_certificate(Certificate::from_pem(read(ca, "--tls-ca")?)),
        None => tls.with_native_roots(),
    };
    if args.tls_cert.is_none() {
        super::TLS_WITHOUT_CERT.store(true, std::sync::atomic::Ordering::Relaxed);
    }
    if let (Some(cert), Some(key)) = (&args.tls_cert, &args.tls_key) {
        tls = tls.identity(Identity::from_pem(
            read(cert, "--tls-cert")?,
            read(key, "--tls-key")?,
        ));
    }
    if let Some(name) = &args.tls_server_name {
        tls = tls.domain_name(name.clone());
    }
    endpoint
        .tls_config(tls)
        .map_err(|e| Failure::Usage(format!("TLS: {}", sources(&e))))
}

fn read(path: &std::path::Path, what: &str) -> Result<Vec<u8>, Failure> {
    std::fs::read(path)
        .map_err(|e| Failure::Usage(format!("cannot read {what} {}: {e}", path.display())))
}

/// Connects; `per_call_timeout` cuts each call at --timeout (not for streams).
pub(crate) async fn connect(args: &ClientArgs, per_call_timeout: bool) -> Result<Client, Failure> {
    let addr = address(&args.addr, &args.tls)?;
    let token = match &args.token {
        None => None,
        Some(token) => {
            let mut value = format!("Bearer {token}")
                .parse::<MetadataValue<Ascii>>()
                // The token itself is not repeated.
                .map_err(|_| Failure::Usage("the token is not valid in an HTTP header".into()))?;
            // Kept out of Debug prints and of HPACK's shared table.
            value.set_sensitive(true);
            Some(value)
        }
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
    endpoint = secure(endpoint, &addr, &args.tls)?;
    let channel = endpoint.connect().await.map_err(|e| {
        let cause = sources(&e);
        let hint = super::tls_hint(&cause);
        Failure::Unreachable(format!("{addr}: cannot connect: {cause}{hint}"))
    })?;
    Ok(QueueServiceClient::with_interceptor(channel, Bearer(token))
        .max_decoding_message_size(MAX_MESSAGE)
        .max_encoding_message_size(MAX_MESSAGE))
}

/// An error with its causes, on one line: tonic's top-level "transport error" alone
/// does not say that the connection was refused. Causes that repeat their inner text
/// are said once.
pub(crate) fn sources(error: &dyn std::error::Error) -> String {
    let mut parts = vec![error.to_string()];
    let mut cause = error.source();
    while let Some(inner) = cause {
        let text = inner.to_string();
        if parts.last() != Some(&text) {
            parts.push(text);
        }
        cause = inner.source();
    }
    parts.join(": ")
}
