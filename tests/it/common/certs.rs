//! Certificates made per test (rcgen): a CA, a server certificate for 127.0.0.1 and
//! localhost, and a client certificate, as PEM files in a directory of their own.

use std::path::PathBuf;

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};

/// PEM files, removed with the value.
pub struct Certs {
    pub ca: PathBuf,
    pub server_cert: PathBuf,
    pub server_key: PathBuf,
    pub client_cert: PathBuf,
    pub client_key: PathBuf,
    _dir: tempfile::TempDir,
}

impl Certs {
    /// The files `dueq certs --out DIR` writes, with `args` after it (the recipe
    /// docs/operations.md gives for docker-compose: `--host dueq`).
    pub fn by_dueq_certs(args: &[&str]) -> Certs {
        let dir = tempfile::tempdir().expect("temp dir");
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_dueq"))
            .arg("certs")
            .arg("--out")
            .arg(dir.path().join("tls"))
            .args(args)
            .output()
            .expect("run dueq certs");
        assert!(
            out.status.success(),
            "dueq certs {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        Certs::written_by_dueq_certs(dir, "tls")
    }

    /// The files `dueq certs --out DIR/out` wrote, kept until the value is dropped.
    pub fn written_by_dueq_certs(dir: tempfile::TempDir, out: &str) -> Certs {
        let path = |name: &str| dir.path().join(out).join(name);
        Certs {
            ca: path("ca.pem"),
            server_cert: path("server.pem"),
            server_key: path("server-key.pem"),
            client_cert: path("client.pem"),
            client_key: path("client-key.pem"),
            _dir: dir,
        }
    }

    /// The folder the files are in.
    pub fn dir(&self) -> &std::path::Path {
        self.ca.parent().expect("the CA's folder")
    }

    pub fn generate() -> Certs {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = |name: &str| dir.path().join(name);
        let write = |name: &str, pem: String| {
            std::fs::write(path(name), pem).expect("write a PEM file");
            path(name)
        };

        let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params
            .distinguished_name
            .push(DnType::CommonName, "dueq test CA");
        ca_params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let ca_key = KeyPair::generate().expect("CA key");
        let ca_cert = ca_params.self_signed(&ca_key).expect("CA certificate");
        let issuer = Issuer::new(ca_params, ca_key);

        let leaf = |names: Vec<String>, cn: &str, usage: ExtendedKeyUsagePurpose| {
            let mut params = CertificateParams::new(names).expect("leaf params");
            params.distinguished_name.push(DnType::CommonName, cn);
            params.use_authority_key_identifier_extension = true;
            params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
            params.extended_key_usages = vec![usage];
            let key = KeyPair::generate().expect("leaf key");
            let cert = params.signed_by(&key, &issuer).expect("leaf certificate");
            (cert.pem(), key.serialize_pem())
        };
        let (server_cert, server_key) = leaf(
            vec!["127.0.0.1".into(), "localhost".into()],
            "redis",
            ExtendedKeyUsagePurpose::ServerAuth,
        );
        let (client_cert, client_key) = leaf(
            vec!["dueq-client".into()],
            "dueq-client",
            ExtendedKeyUsagePurpose::ClientAuth,
        );
        Certs {
            ca: write("ca.pem", ca_cert.pem()),
            server_cert: write("server.pem", server_cert),
            server_key: write("server.key", server_key),
            client_cert: write("client.pem", client_cert),
            client_key: write("client.key", client_key),
            _dir: dir,
        }
    }
}
