//! Certificates made for each test: a CA, server certificates for 127.0.0.1 and
//! localhost, client certificates, all written as PEM files a service reads.

use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose,
};

/// A certificate authority that signs server and client certificates.
pub(crate) struct Ca {
    issuer: CertifiedIssuer<'static, KeyPair>,
}

/// A certificate and its private key, in PEM.
pub(crate) struct Leaf {
    pub(crate) cert: String,
    pub(crate) key: String,
}

impl Ca {
    pub(crate) fn new(name: &str) -> Ca {
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let key = KeyPair::generate().expect("CA key");
        Ca {
            issuer: CertifiedIssuer::self_signed(params, key).expect("CA cert"),
        }
    }

    pub(crate) fn pem(&self) -> String {
        self.issuer.pem()
    }

    /// A server certificate for 127.0.0.1 and localhost, named `cn`.
    pub(crate) fn server(&self, cn: &str) -> Leaf {
        self.leaf(
            cn,
            &["127.0.0.1", "localhost"],
            ExtendedKeyUsagePurpose::ServerAuth,
        )
    }

    /// A server certificate like [`Ca::server`]'s whose validity ended in 2020.
    pub(crate) fn expired_server(&self, cn: &str) -> Leaf {
        let sans = ["127.0.0.1", "localhost"];
        self.leaf_with(cn, &sans, ExtendedKeyUsagePurpose::ServerAuth, |params| {
            params.not_before = rcgen::date_time_ymd(2019, 1, 1);
            params.not_after = rcgen::date_time_ymd(2020, 1, 1);
        })
    }

    /// A server certificate named `cn` with no subjectAltName: its host only in the CN.
    pub(crate) fn cn_only_server(&self, cn: &str) -> Leaf {
        self.leaf(cn, &[], ExtendedKeyUsagePurpose::ServerAuth)
    }

    /// A client certificate named `cn`, with `sans` as its DNS names.
    pub(crate) fn client(&self, cn: &str, sans: &[&str]) -> Leaf {
        self.leaf(cn, sans, ExtendedKeyUsagePurpose::ClientAuth)
    }

    fn leaf(&self, cn: &str, sans: &[&str], usage: ExtendedKeyUsagePurpose) -> Leaf {
        self.leaf_with(cn, sans, usage, |_| {})
    }

    fn leaf_with(
        &self,
        cn: &str,
        sans: &[&str],
        usage: ExtendedKeyUsagePurpose,
        adjust: impl FnOnce(&mut CertificateParams),
    ) -> Leaf {
        let sans: Vec<String> = sans.iter().map(|s| s.to_string()).collect();
        let mut params = CertificateParams::new(sans).expect("leaf params");
        params.distinguished_name.push(DnType::CommonName, cn);
        params.extended_key_usages = vec![usage];
        adjust(&mut params);
        let key = KeyPair::generate().expect("leaf key");
        let cert = params.signed_by(&key, &self.issuer).expect("sign leaf");
        Leaf {
            cert: cert.pem(),
            key: key.serialize_pem(),
        }
    }
}

/// The service's TLS files in a folder of their own: `server.pem`, `server-key.pem`
/// and, for mTLS, `client-ca.pem`.
pub(crate) struct ServerFiles {
    _dir: tempfile::TempDir,
    pub(crate) cert: PathBuf,
    pub(crate) key: PathBuf,
    pub(crate) client_ca: PathBuf,
}

impl ServerFiles {
    pub(crate) fn new(server: &Leaf, client_ca: Option<&Ca>) -> ServerFiles {
        let dir = tempfile::tempdir().expect("tempdir");
        let files = ServerFiles {
            cert: dir.path().join("server.pem"),
            key: dir.path().join("server-key.pem"),
            client_ca: dir.path().join("client-ca.pem"),
            _dir: dir,
        };
        files.replace(server);
        if let Some(ca) = client_ca {
            write(&files.client_ca, &ca.pem());
        }
        files
    }

    /// Puts `server` in place of the certificate and key, each file swapped whole
    /// (a rename), as a certificate manager does.
    pub(crate) fn replace(&self, server: &Leaf) {
        write(&self.key, &server.key);
        write(&self.cert, &server.cert);
    }
}

/// Writes `text` to `path` through a temporary file and a rename.
pub(crate) fn write(path: &Path, text: &str) {
    let temporary = path.with_extension("tmp");
    std::fs::write(&temporary, text).expect("write PEM");
    std::fs::rename(&temporary, path).expect("rename PEM");
}
