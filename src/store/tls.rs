//! TLS to Redis (`rediss://`): the CA to trust and the client certificate, read from
//! the files `--redis-tls-ca`, `--redis-tls-cert` and `--redis-tls-key` name.

use std::path::{Path, PathBuf};

use deadpool_redis::redis::{
    Client, ClientTlsConfig, ConnectionAddr, ConnectionInfo, IntoConnectionInfo, TlsCertificates,
};

/// The TLS files of the Redis connection; all empty means the system trust store and
/// no client certificate.
#[derive(Debug, Clone, Default)]
pub(crate) struct RedisTls {
    /// PEM CA certificate(s) to trust instead of the system's.
    pub(crate) ca: Option<PathBuf>,
    /// PEM client certificate (chain), for a Redis with `tls-auth-clients yes`.
    pub(crate) cert: Option<PathBuf>,
    /// PEM private key of `cert`.
    pub(crate) key: Option<PathBuf>,
}

impl RedisTls {
    fn is_empty(&self) -> bool {
        self.ca.is_none() && self.cert.is_none() && self.key.is_none()
    }

    /// The files' contents; the error names the flag and the file.
    fn certificates(&self) -> Result<TlsCertificates, String> {
        let client_tls = match (&self.cert, &self.key) {
            (Some(cert), Some(key)) => Some(ClientTlsConfig {
                client_cert: read("--redis-tls-cert", cert)?,
                client_key: read("--redis-tls-key", key)?,
            }),
            (None, None) => None,
            // One without the other would connect without a client certificate and
            // fail later, at Redis, with a less telling error.
            (Some(_), None) => return Err("--redis-tls-cert needs --redis-tls-key".into()),
            (None, Some(_)) => return Err("--redis-tls-key needs --redis-tls-cert".into()),
        };
        let root_cert = match &self.ca {
            Some(ca) => Some(read("--redis-tls-ca", ca)?),
            None => None,
        };
        Ok(TlsCertificates {
            client_tls,
            root_cert,
        })
    }
}

impl RedisTls {
    /// The files' contents, or `None` when no file is named.
    pub(super) fn certificates_if_any(&self) -> Result<Option<TlsCertificates>, String> {
        if self.is_empty() {
            return Ok(None);
        }
        self.certificates().map(Some)
    }
}

fn read(flag: &str, path: &Path) -> Result<Vec<u8>, String> {
    std::fs::read(path).map_err(|e| format!("{flag} {}: {e}", path.display()))
}

/// Where and how to connect: `url` with the TLS files applied. The error never
/// quotes the URL (it may hold a password).
pub(super) fn connection_info(url: &str, tls: &RedisTls) -> Result<ConnectionInfo, String> {
    let info = url
        .into_connection_info()
        .map_err(|e| format!("invalid Redis URL: {e}"))?;
    let is_tls = matches!(info.addr(), ConnectionAddr::TcpTls { .. });
    if is_tls {
        install_crypto_provider();
    }
    if tls.is_empty() {
        return Ok(info);
    }
    if !is_tls {
        return Err(
            "--redis-tls-ca, --redis-tls-cert and --redis-tls-key apply to a rediss:// \
             URL only; REDIS_URL is not one"
                .into(),
        );
    }
    let client = Client::build_with_tls(info, tls.certificates()?)
        .map_err(|e| format!("Redis TLS files: {e}"))?;
    Ok(client.get_connection_info().clone())
}

/// rustls needs a process-wide crypto provider; ours is ring (see Cargo.toml). Done
/// here rather than left to rustls's crate-feature default, which panics at the
/// first connection if another crate in the build ever enables a second provider.
pub(super) fn install_crypto_provider() {
    // An error means one is installed already, which is as good.
    let _ = rustls::crypto::ring::default_provider().install_default();
}
