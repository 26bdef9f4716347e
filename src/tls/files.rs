//! The PEM files named by `--tls-cert`, `--tls-key` and `--tls-client-ca`, read into
//! a rustls server config.

use std::{
    path::{Path, PathBuf},
    sync::Arc,
};

use rustls_pki_types::{pem::PemObject, CertificateDer, PrivateKeyDer};
use tokio_rustls::rustls::{
    crypto::ring, server::WebPkiClientVerifier, RootCertStore, ServerConfig,
};

/// Where the certificate, its key and (for mTLS) the client CA are read from.
#[derive(Debug, Clone)]
pub(crate) struct TlsFiles {
    pub(crate) cert: PathBuf,
    pub(crate) key: PathBuf,
    pub(crate) client_ca: Option<PathBuf>,
}

impl TlsFiles {
    /// The files the flags name; None without TLS flags, an error for a half set.
    pub(crate) fn from_flags(
        cert: Option<PathBuf>,
        key: Option<PathBuf>,
        client_ca: Option<PathBuf>,
    ) -> Result<Option<TlsFiles>, String> {
        match (cert, key) {
            (Some(cert), Some(key)) => Ok(Some(TlsFiles {
                cert,
                key,
                client_ca,
            })),
            (None, None) if client_ca.is_none() => Ok(None),
            (None, None) => Err("--tls-client-ca needs --tls-cert and --tls-key: client \
                                 certificates are only asked for over TLS"
                .into()),
            (Some(_), None) => {
                Err("--tls-cert needs --tls-key (the certificate's private key)".into())
            }
            (None, Some(_)) => {
                Err("--tls-key needs --tls-cert (the certificate chain it signs for)".into())
            }
        }
    }

    /// A server config from the files as they are now, speaking HTTP/2 only (gRPC).
    pub(crate) fn server_config(&self) -> Result<ServerConfig, String> {
        let chain = read_certs(&self.cert, "--tls-cert")?;
        in_date(&chain, &self.cert, crate::clock::local_ms() / 1000)?;
        let key = PrivateKeyDer::from_pem_file(&self.key)
            .map_err(|e| format!("--tls-key {}: {e}", self.key.display()))?;
        let provider = Arc::new(ring::default_provider());
        let builder = ServerConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| format!("TLS: {e}"))?;
        let builder = match &self.client_ca {
            None => builder.with_no_client_auth(),
            Some(path) => {
                let mut roots = RootCertStore::empty();
                for cert in read_certs(path, "--tls-client-ca")? {
                    roots
                        .add(cert)
                        .map_err(|e| format!("--tls-client-ca {}: {e}", path.display()))?;
                }
                let verifier =
                    WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                        .build()
                        .map_err(|e| format!("--tls-client-ca {}: {e}", path.display()))?;
                builder.with_client_cert_verifier(verifier)
            }
        };
        let mut config = builder.with_single_cert(chain, key).map_err(|e| {
            format!(
                "--tls-cert {} with --tls-key {}: {e}",
                self.cert.display(),
                self.key.display()
            )
        })?;
        config.alpn_protocols = vec![b"h2".to_vec()];
        Ok(config)
    }
}

/// Refuses a certificate (the chain's first, the server's own) that has expired, or
/// is not valid yet, at `now` (epoch seconds, this host's clock: the clients check it
/// against theirs): every client would refuse the handshake.
fn in_date(chain: &[CertificateDer<'_>], path: &Path, now: i64) -> Result<(), String> {
    use x509_parser::prelude::{FromDer, X509Certificate};
    let Some(leaf) = chain.first() else {
        return Ok(());
    };
    let (_, cert) = X509Certificate::from_der(leaf).map_err(|e| {
        format!(
            "--tls-cert {}: not an X.509 certificate: {e}",
            path.display()
        )
    })?;
    let validity = cert.validity();
    if validity.not_after.timestamp() < now {
        return Err(format!(
            "--tls-cert {}: the certificate expired on {}; clients refuse it: renew it",
            path.display(),
            validity.not_after
        ));
    }
    if validity.not_before.timestamp() > now {
        return Err(format!(
            "--tls-cert {}: the certificate is not valid before {}; clients refuse it until \
             then",
            path.display(),
            validity.not_before
        ));
    }
    Ok(())
}

/// Every certificate in a PEM file; an error if there is none.
fn read_certs(path: &PathBuf, flag: &str) -> Result<Vec<CertificateDer<'static>>, String> {
    let certs = CertificateDer::pem_file_iter(path)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .map_err(|e| format!("{flag} {}: {e}", path.display()))?;
    if certs.is_empty() {
        return Err(format!(
            "{flag} {}: no PEM certificate in it",
            path.display()
        ));
    }
    Ok(certs)
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use rcgen::{date_time_ymd, CertificateParams, KeyPair};
    use rustls_pki_types::CertificateDer;

    use super::in_date;

    /// A self-signed certificate valid from 2020 through 2021.
    fn cert() -> CertificateDer<'static> {
        let mut params = CertificateParams::new(vec!["localhost".to_owned()]).expect("params");
        params.not_before = date_time_ymd(2020, 1, 1);
        params.not_after = date_time_ymd(2021, 12, 31);
        let key = KeyPair::generate().expect("key");
        params.self_signed(&key).expect("certificate").der().clone()
    }

    #[test]
    fn a_certificate_out_of_its_dates_is_refused() {
        let chain = [cert()];
        let path = Path::new("server.pem");
        let at = |year: i32| {
            let day = date_time_ymd(year, 6, 1).unix_timestamp();
            in_date(&chain, path, day)
        };
        assert_eq!(at(2021), Ok(()));
        let expired = at(2022).expect_err("expired");
        assert!(
            expired.contains("--tls-cert server.pem: the certificate expired on"),
            "{expired}"
        );
        let early = at(2019).expect_err("not valid yet");
        assert!(early.contains("not valid before"), "{early}");
    }
}
