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
use x509_parser::prelude::{FromDer, GeneralName, X509Certificate};

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
        check_leaf(&chain, &self.cert, crate::clock::local_ms() / 1000)?;
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

/// Refuses a certificate (the chain's first, the server's own) that every client
/// would refuse the handshake with: one out of its dates ([`in_date`]) or naming its
/// host only in its CN ([`names_its_hosts`]).
fn check_leaf(chain: &[CertificateDer<'_>], path: &Path, now: i64) -> Result<(), String> {
    let Some(leaf) = chain.first() else {
        return Ok(());
    };
    let (_, cert) = X509Certificate::from_der(leaf).map_err(|e| {
        format!(
            "--tls-cert {}: not an X.509 certificate: {e}",
            path.display()
        )
    })?;
    in_date(&cert, path, now)?;
    names_its_hosts(&cert, path)
}

/// Refuses a certificate with no DNS name or IP address in a subjectAltName: clients
/// (rustls, Go's grpcurl, gRPC's C core, browsers) match the host they dial against
/// those alone and ignore the subject's CN (RFC 6125, RFC 9525), so every handshake
/// would fail with an error about the name, far from its cause.
fn names_its_hosts(cert: &X509Certificate<'_>, path: &Path) -> Result<(), String> {
    let san = cert.subject_alternative_name().ok().flatten();
    let names_a_host = san.is_some_and(|san| {
        san.value
            .general_names
            .iter()
            .any(|name| matches!(name, GeneralName::DNSName(_) | GeneralName::IPAddress(_)))
    });
    if names_a_host {
        return Ok(());
    }
    let cn = cert
        .subject()
        .iter_common_name()
        .filter_map(|cn| cn.as_str().ok())
        .collect::<Vec<_>>()
        .join(", ");
    Err(format!(
        "--tls-cert {}: the certificate has no subjectAltName DNS name or IP address \
         (its CN is {cn:?}); clients ignore the CN and refuse a certificate whose \
         subjectAltName does not name the host they dial: make one that lists every host \
         name and address clients use (`dueq certs --out DIR --host NAME`, or openssl's \
         -addext \"subjectAltName=DNS:NAME\")",
        path.display()
    ))
}

/// Refuses a certificate that has expired, or is not valid yet, at `now` (epoch
/// seconds, this host's clock: the clients check it against theirs).
fn in_date(cert: &X509Certificate<'_>, path: &Path, now: i64) -> Result<(), String> {
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

    use rcgen::{date_time_ymd, CertificateParams, DnType, KeyPair};
    use rustls_pki_types::CertificateDer;

    use super::check_leaf;

    /// A self-signed certificate for `sans`, named `cn`, valid from 2020 through 2021.
    fn cert(sans: &[&str], cn: &str) -> CertificateDer<'static> {
        let sans: Vec<String> = sans.iter().map(|s| s.to_string()).collect();
        let mut params = CertificateParams::new(sans).expect("params");
        params.distinguished_name.push(DnType::CommonName, cn);
        params.not_before = date_time_ymd(2020, 1, 1);
        params.not_after = date_time_ymd(2021, 12, 31);
        let key = KeyPair::generate().expect("key");
        params.self_signed(&key).expect("certificate").der().clone()
    }

    fn in_2021(chain: &[CertificateDer<'_>]) -> Result<(), String> {
        let day = date_time_ymd(2021, 6, 1).unix_timestamp();
        check_leaf(chain, Path::new("server.pem"), day)
    }

    #[test]
    fn a_certificate_that_names_its_host_only_in_its_cn_is_refused() {
        let refused = in_2021(&[cert(&[], "localhost")]).expect_err("CN only");
        for needle in [
            "--tls-cert server.pem: the certificate has no subjectAltName DNS name or IP",
            "its CN is \"localhost\"",
            "clients ignore the CN",
            "dueq certs --out DIR --host NAME",
        ] {
            assert!(refused.contains(needle), "{needle:?} in {refused}");
        }
        assert_eq!(in_2021(&[cert(&["localhost"], "x")]), Ok(()));
        assert_eq!(in_2021(&[cert(&["10.1.2.3"], "x")]), Ok(()));
    }

    #[test]
    fn a_certificate_out_of_its_dates_is_refused() {
        let chain = [cert(&["localhost"], "localhost")];
        let path = Path::new("server.pem");
        let at = |year: i32| {
            let day = date_time_ymd(year, 6, 1).unix_timestamp();
            check_leaf(&chain, path, day)
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
