//! The service as a client library meets it: `dueq serve` as a child process on a
//! port of its own (so a case can kill it with SIGKILL and start it again on the same
//! port), plaintext, TLS or mTLS, with or without an auth file; and the runner's own
//! gRPC client to set a case up and check what was stored.

use std::{
    path::PathBuf,
    process::{Child, Command, Stdio},
};

use sha2::{Digest, Sha256};
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Identity};

use crate::common::*;

/// The token of the auth file's admin (every namespace).
pub const ADMIN_TOKEN: &str = "conformance-admin";
/// The token of the auth file's reader (every namespace).
pub const READER_TOKEN: &str = "conformance-reader";

/// How a case's service is reached.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Transport {
    Plain,
    Tls,
    /// TLS with client certificates required (`--tls-client-ca`).
    Mtls,
}

/// What a case's service is started with.
#[derive(Clone, Copy, Debug)]
pub struct Setup {
    pub transport: Transport,
    /// An auth file with ADMIN_TOKEN and READER_TOKEN.
    pub auth: bool,
}

impl Setup {
    pub const PLAIN: Setup = Setup {
        transport: Transport::Plain,
        auth: false,
    };
}

/// A Redis, a `dueq serve` on it, and what a driver needs to reach it.
pub struct Server {
    pub redis: Redis,
    pub port: u16,
    pub setup: Setup,
    pub certs: Certs,
    dir: tempfile::TempDir,
    child: Option<Child>,
    /// docker-compose.yml's environment for dueq, mapped (`Server::start_compose`).
    compose_env: Option<Vec<(String, String)>>,
}

impl Server {
    pub async fn start(setup: Setup) -> Server {
        let redis = Redis::start().await;
        let mut server = Server {
            redis,
            port: free_port(),
            setup,
            certs: Certs::generate(),
            dir: tempfile::tempdir().expect("temp dir"),
            child: None,
            compose_env: None,
        };
        server.spawn().await;
        server
    }

    /// The secured service as docker-compose.yml runs it (TLS and a bearer token): its
    /// dueq service's environment, read from the file, with the container paths of its
    /// volumes mapped to what they mount: deploy/auth.toml as it is, deploy/tls as
    /// `dueq certs --out deploy/tls --host dueq` writes it (the recipe the file gives).
    /// ADMIN_TOKEN is the token, its hash DUEQ_TOKEN_SHA256; the Redis and the ports
    /// (gRPC, metrics) are the test's own.
    pub async fn start_compose() -> Server {
        Server::start_compose_with(Certs::by_dueq_certs(&["--host", "dueq"]), ADMIN_TOKEN).await
    }

    /// `start_compose` with the certificates `dueq certs` wrote in deploy/tls's place
    /// and `token` (the runner's own `client` then has the wrong token: wait on
    /// health, which needs none).
    pub async fn start_compose_with(certs: Certs, token: &str) -> Server {
        let hash = hex(&Sha256::digest(token.as_bytes()));
        let env = compose::dueq_env(certs.dir(), &hash);
        let mut server = Server {
            redis: Redis::start().await,
            port: free_port(),
            setup: Setup {
                transport: Transport::Tls,
                auth: true,
            },
            certs,
            dir: tempfile::tempdir().expect("temp dir"),
            child: None,
            compose_env: Some(env),
        };
        server.spawn().await;
        server
    }

    /// docker-compose.yml's environment for dueq as this service has it (None for a
    /// service not started from it), DUEQ_ADDR on this service's port: what the
    /// image's HEALTHCHECK (`dueq health`) runs with.
    pub fn compose_env(&self) -> Option<Vec<(String, String)>> {
        let mut env = self.compose_env.clone()?;
        for (k, v) in &mut env {
            if k == "DUEQ_ADDR" {
                *v = v.replace(":50051", &format!(":{}", self.port));
            }
        }
        Some(env)
    }

    /// `DUEQ_ADDR` for this service.
    pub fn addr(&self) -> String {
        let scheme = match self.setup.transport {
            Transport::Plain => "http",
            Transport::Tls | Transport::Mtls => "https",
        };
        format!("{scheme}://127.0.0.1:{}", self.port)
    }

    /// The environment a driver reaches this service with (namespace aside): the
    /// address, and for TLS the CA, for mTLS the client certificate too.
    pub fn env(&self) -> Vec<(&'static str, String)> {
        let mut env = vec![("DUEQ_ADDR", self.addr())];
        let path = |p: &PathBuf| p.display().to_string();
        if self.setup.transport != Transport::Plain {
            env.push(("DUEQ_TLS_CA", path(&self.certs.ca)));
        }
        if self.setup.transport == Transport::Mtls {
            env.push(("DUEQ_TLS_CLIENT_CERT", path(&self.certs.client_cert)));
            env.push(("DUEQ_TLS_CLIENT_KEY", path(&self.certs.client_key)));
        }
        env
    }

    async fn spawn(&mut self) {
        let mut command = Command::new(env!("CARGO_BIN_EXE_dueq"));
        command
            .args(["serve", "--listen", &format!("127.0.0.1:{}", self.port)])
            .args(["--redis-url", &self.redis.url()])
            .args(["--health-interval", "200ms", "--shutdown-grace", "1s"])
            .env("DUEQ_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit());
        for (k, _) in std::env::vars() {
            if k.starts_with("DUEQ_") && k != "DUEQ_LOG" {
                command.env_remove(k);
            }
        }
        let certs = &self.certs;
        if let Some(env) = &self.compose_env {
            // The flags above take the place of DUEQ_LISTEN and REDIS_URL.
            command.envs(env.iter().map(|(k, v)| (k, v)));
            command.env("DUEQ_METRICS_LISTEN", format!("127.0.0.1:{}", free_port()));
        } else if self.setup.transport != Transport::Plain {
            command.arg("--tls-cert").arg(&certs.server_cert);
            command.arg("--tls-key").arg(&certs.server_key);
        }
        if self.setup.transport == Transport::Mtls {
            command.arg("--tls-client-ca").arg(&certs.ca);
        }
        if self.setup.auth && self.compose_env.is_none() {
            command.arg("--auth-file").arg(self.auth_file());
        }
        self.child = Some(command.spawn().expect("start dueq serve"));
        self.wait_serving().await;
    }

    fn auth_file(&self) -> PathBuf {
        let principal = |name: &str, role: &str, token: &str| {
            format!(
                "[[principal]]\nname = \"{name}\"\nroles = [\"{role}\"]\nnamespaces = [\"*\"]\n\
                 token_sha256 = \"{}\"\n\n",
                hex(&Sha256::digest(token.as_bytes()))
            )
        };
        let path = self.dir.path().join("auth.toml");
        let text = principal("conformance-admin", "admin", ADMIN_TOKEN)
            + &principal("conformance-reader", "reader", READER_TOKEN);
        std::fs::write(&path, text).expect("write the auth file");
        path
    }

    async fn wait_serving(&self) {
        let patience = Patience::new(format!("dueq serve on port {} to serve", self.port));
        loop {
            if let Some(channel) = self.try_channel().await {
                let mut health = tonic_health::pb::health_client::HealthClient::new(channel);
                let request = tonic_health::pb::HealthCheckRequest {
                    service: "dueq.v1.QueueService".into(),
                };
                if let Ok(r) = health.check(request).await {
                    if r.into_inner().status == 1 {
                        return;
                    }
                }
            }
            patience.wait().await;
        }
    }

    async fn try_channel(&self) -> Option<Channel> {
        let mut endpoint = Channel::from_shared(self.addr()).expect("endpoint");
        if self.setup.transport != Transport::Plain {
            let ca = std::fs::read(&self.certs.ca).expect("read the CA");
            let mut tls = ClientTlsConfig::new()
                .ca_certificate(Certificate::from_pem(ca))
                .domain_name("localhost");
            if self.setup.transport == Transport::Mtls {
                let cert = std::fs::read(&self.certs.client_cert).expect("client cert");
                let key = std::fs::read(&self.certs.client_key).expect("client key");
                tls = tls.identity(Identity::from_pem(cert, key));
            }
            endpoint = endpoint.tls_config(tls).expect("TLS config");
        }
        endpoint.connect().await.ok()
    }

    /// The runner's own client: the admin's token rides on every call when the
    /// service has an auth file.
    pub async fn client(&self) -> Runner {
        let channel = self.try_channel().await.expect("connect to dueq serve");
        let token = self.setup.auth.then(|| ADMIN_TOKEN.to_owned());
        proto::queue_service_client::QueueServiceClient::with_interceptor(channel, Bearer(token))
    }

    /// SIGKILL: nothing drains, leases stay as they were.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts the service again on the same port and Redis.
    pub async fn restart(&mut self) {
        self.kill();
        self.spawn().await;
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The runner's client type.
pub type Runner = proto::queue_service_client::QueueServiceClient<
    tonic::codegen::InterceptedService<Channel, Bearer>,
>;

/// Adds `authorization: Bearer <token>` when there is a token.
#[derive(Clone)]
pub struct Bearer(Option<String>);

impl tonic::service::Interceptor for Bearer {
    fn call(
        &mut self,
        mut request: tonic::Request<()>,
    ) -> Result<tonic::Request<()>, tonic::Status> {
        if let Some(token) = &self.0 {
            let value = format!("Bearer {token}").parse().expect("ascii token");
            request.metadata_mut().insert("authorization", value);
        }
        Ok(request)
    }
}

/// Reading docker-compose.yml (no YAML crate: the file is plain block style).
mod compose {
    use std::path::{Path, PathBuf};

    /// The `dueq` service's `environment:` entries, container paths mapped to the
    /// host paths of its `volumes:` (`./deploy/tls` to `tls_dir`), and
    /// `${DUEQ_TOKEN_SHA256:?…}` to `token_hash`.
    pub fn dueq_env(tls_dir: &Path, token_hash: &str) -> Vec<(String, String)> {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
        let text = std::fs::read_to_string(root.join("docker-compose.yml"))
            .expect("read docker-compose.yml");
        let env = block(&text, "environment:");
        let mounts: Vec<(PathBuf, String)> = block(&text, "volumes:")
            .iter()
            .map(|line| {
                let mount = line.trim_start_matches("- ");
                let mut parts = mount.split(':');
                let (from, to) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
                let from = match from {
                    "./deploy/tls" => tls_dir.to_path_buf(),
                    other => root.join(other),
                };
                (from, to.to_owned())
            })
            .collect();
        assert!(
            mounts.iter().any(|(_, to)| to == "/etc/dueq/tls"),
            "the compose file mounts deploy/tls: {mounts:?}"
        );
        env.iter()
            .map(|line| {
                let (key, value) = line.split_once(": ").expect("KEY: value");
                let mut value = value.trim_matches('"').to_owned();
                if value.starts_with("${DUEQ_TOKEN_SHA256:?") {
                    value = token_hash.to_owned();
                }
                for (from, to) in &mounts {
                    if let Some(rest) = value.strip_prefix(to.as_str()) {
                        value = format!("{}{rest}", from.display());
                    }
                }
                (key.to_owned(), value)
            })
            .collect()
    }

    /// The entries (comments dropped) of the `dueq` service's block `name`.
    fn block<'a>(text: &'a str, name: &str) -> Vec<&'a str> {
        let service = text
            .split("\n  dueq:\n")
            .nth(1)
            .expect("a dueq service in docker-compose.yml");
        let mut lines = service.lines().skip_while(|l| l.trim() != name).skip(1);
        let mut entries = Vec::new();
        for line in lines.by_ref() {
            if !line.starts_with("      ") {
                break;
            }
            if !line.trim().starts_with('#') {
                entries.push(line.trim());
            }
        }
        assert!(!entries.is_empty(), "no {name} under dueq in\n{text}");
        entries
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
