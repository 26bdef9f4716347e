//! The redis-server each test starts for itself: its own port, its own directory.

use std::{
    net::TcpListener,
    path::PathBuf,
    process::{Child, Command, Stdio},
    sync::atomic::{AtomicU32, Ordering},
};

use deadpool_redis::redis::{self, aio::MultiplexedConnection};

use super::{
    certs::Certs,
    patience::{Patience, PATIENCE},
    raw::cmd,
};

/// A redis-server child process, killed on drop.
pub struct Redis {
    pub port: u16,
    child: Option<Child>,
    dir: tempfile::TempDir,
    tls: Option<ServerTls>,
    /// More redis-server arguments (cluster or replication settings).
    args: Vec<String>,
    /// The `requirepass` of the server, which the harness's own connections use.
    password: Option<String>,
    /// A sentinel's config file: redis-server runs `<file> --sentinel`.
    sentinel_conf: Option<String>,
}

/// The files of a TLS-only redis-server, and the client certificate the harness's
/// own connections present (so they pass `tls-auth-clients yes`).
#[derive(Clone)]
struct ServerTls {
    ca: PathBuf,
    cert: PathBuf,
    key: PathBuf,
    client_cert: PathBuf,
    client_key: PathBuf,
    auth_clients: &'static str,
}

impl ServerTls {
    fn of(certs: &Certs, auth_clients: &'static str) -> ServerTls {
        ServerTls {
            ca: certs.ca.clone(),
            cert: certs.server_cert.clone(),
            key: certs.server_key.clone(),
            client_cert: certs.client_cert.clone(),
            client_key: certs.client_key.clone(),
            auth_clients,
        }
    }
}

/// Ports handed out by `free_port`: below Linux's ephemeral range (32768 and up), so
/// no outgoing connection of a parallel test can be given one before its server
/// binds it.
const PORTS: std::ops::Range<u16> = 20_000..32_000;

/// A port nothing listens on right now, never the same twice in this process.
pub fn free_port() -> u16 {
    // Starts at a place of its own per process, so two test runs rarely meet.
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let span = u32::from(PORTS.end - PORTS.start);
    let offset = std::process::id().wrapping_mul(7919);
    for _ in 0..span {
        let n = NEXT.fetch_add(1, Ordering::Relaxed).wrapping_add(offset) % span;
        let port = PORTS.start + n as u16;
        if TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    panic!("no free port on 127.0.0.1 in {PORTS:?}");
}

/// A direct connection to the Redis at `url` that waits as long as a test does
/// (redis-rs gives up after 500 ms for a reply, which a loaded box can exceed).
pub async fn connect(url: &str) -> MultiplexedConnection {
    try_connect(url, PATIENCE)
        .await
        .expect("connect to test redis")
}

async fn try_connect(
    url: &str,
    patience: std::time::Duration,
) -> redis::RedisResult<MultiplexedConnection> {
    let patient = redis::AsyncConnectionConfig::new()
        .set_connection_timeout(Some(patience))
        .set_response_timeout(Some(patience));
    redis::Client::open(url)?
        .get_multiplexed_async_connection_with_config(&patient)
        .await
}

/// A direct connection over TLS, trusting `tls.ca` and presenting the client
/// certificate, waiting up to `patience` to connect and for each reply.
async fn try_connect_tls(
    url: &str,
    tls: &ServerTls,
    patience: std::time::Duration,
) -> redis::RedisResult<MultiplexedConnection> {
    // rustls's process-wide crypto provider (dueq installs the same one).
    let _ = rustls::crypto::ring::default_provider().install_default();
    let read = |path: &PathBuf| std::fs::read(path).expect("read a PEM file");
    let certificates = redis::TlsCertificates {
        client_tls: Some(redis::ClientTlsConfig {
            client_cert: read(&tls.client_cert),
            client_key: read(&tls.client_key),
        }),
        root_cert: Some(read(&tls.ca)),
    };
    let patient = redis::AsyncConnectionConfig::new()
        .set_connection_timeout(Some(patience))
        .set_response_timeout(Some(patience));
    redis::Client::build_with_tls(url, certificates)?
        .get_multiplexed_async_connection_with_config(&patient)
        .await
}

fn redis_server_binary() -> PathBuf {
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|p| p.join("redis-server"))
            .find(|p| p.is_file())
    });
    found.unwrap_or_else(|| {
        panic!(
            "redis-server not found on PATH: install it (Debian/Ubuntu: apt-get install -y redis-server; macOS: brew install redis)"
        )
    })
}

impl Redis {
    /// Starts redis-server on a free port.
    pub async fn start() -> Redis {
        Redis::start_set_up("redis-server", |_| {}).await
    }

    /// Starts a TLS-only redis-server (rediss://) with `certs`' server certificate,
    /// trusting their CA for client certificates; `auth_clients` is its
    /// `tls-auth-clients`: "no", "optional" or "yes" (a client certificate required).
    pub async fn start_tls(certs: &Certs, auth_clients: &'static str) -> Redis {
        Redis::start_tls_with_args(certs, auth_clients, &[], None).await
    }

    /// `start_tls` with more arguments (`--tls-cluster yes`, `--replicaof ...`), its
    /// own connections authenticating with `password` when given.
    pub async fn start_tls_with_args(
        certs: &Certs,
        auth_clients: &'static str,
        args: &[String],
        password: Option<&str>,
    ) -> Redis {
        let tls = ServerTls::of(certs, auth_clients);
        Redis::start_set_up("a TLS redis-server", |redis| {
            redis.tls = Some(tls.clone());
            redis.args = args.to_vec();
            redis.password = password.map(str::to_owned);
        })
        .await
    }

    /// Starts redis-server on a free port with more arguments (`--cluster-enabled yes`,
    /// `--replicaof ...`), its own connections authenticating with `password` when
    /// given (pass `--requirepass` in `args` too).
    pub async fn start_with_args(args: &[String], password: Option<&str>) -> Redis {
        Redis::start_set_up("redis-server", |redis| {
            redis.args = args.to_vec();
            redis.password = password.map(str::to_owned);
        })
        .await
    }

    /// Starts a sentinel (`redis-server <conf> --sentinel`) on a free port.
    pub async fn start_sentinel(conf: &str) -> Redis {
        Redis::start_set_up("redis-sentinel", |redis| {
            redis.sentinel_conf = Some(conf.to_owned());
        })
        .await
    }

    /// Starts a TLS-only sentinel that also speaks TLS to the Redis it watches
    /// (`tls-replication yes`), with `certs` as `start_tls` uses them.
    pub async fn start_sentinel_tls(conf: &str, certs: &Certs) -> Redis {
        let tls = ServerTls::of(certs, "optional");
        Redis::start_set_up("a TLS redis-sentinel", |redis| {
            redis.sentinel_conf = Some(conf.to_owned());
            redis.tls = Some(tls.clone());
            redis.args = vec!["--tls-replication".into(), "yes".into()];
        })
        .await
    }

    /// Starts a server `set_up` configures on a free port. Between probing a port and
    /// redis-server binding it, another process (or a parallel test's client
    /// connection) may take it: then it tries another.
    /// A cluster node also listens on its bus port, port + 10,000, which lies among the
    /// ephemeral ports the suite's own connections take: a port whose bus port is taken
    /// is passed over before redis-server is tried on it.
    async fn start_set_up(what: &str, set_up: impl Fn(&mut Redis)) -> Redis {
        const TRIES: usize = 20;
        for _ in 0..TRIES {
            let mut redis = Redis::unstarted(free_port());
            set_up(&mut redis);
            let cluster = redis.args.iter().any(|a| a == "--cluster-enabled");
            if cluster && TcpListener::bind(("127.0.0.1", redis.port + 10_000)).is_err() {
                continue;
            }
            if redis.spawn().await {
                return redis;
            }
        }
        panic!("{what} could not listen on any of {TRIES} free ports");
    }

    /// Starts redis-server on a given port, e.g. one a service was already pointed at.
    pub async fn start_on(port: u16) -> Redis {
        let mut redis = Redis::unstarted(port);
        assert!(
            redis.spawn().await,
            "redis-server could not listen on port {port}"
        );
        redis
    }

    fn unstarted(port: u16) -> Redis {
        Redis {
            port,
            child: None,
            dir: tempfile::tempdir().expect("temp dir"),
            tls: None,
            args: Vec::new(),
            password: None,
            sentinel_conf: None,
        }
    }

    /// Spawns redis-server and waits until it answers; false if it exited instead (its
    /// port was taken).
    async fn spawn(&mut self) -> bool {
        let mut command = Command::new(redis_server_binary());
        if let Some(conf) = &self.sentinel_conf {
            command.arg(conf).arg("--sentinel");
        }
        let port = self.port.to_string();
        match &self.tls {
            None => command.args(["--port", &port]),
            Some(tls) => command
                .args(["--port", "0", "--tls-port", &port])
                .arg("--tls-cert-file")
                .arg(&tls.cert)
                .arg("--tls-key-file")
                .arg(&tls.key)
                .arg("--tls-ca-cert-file")
                .arg(&tls.ca)
                // What it presents when it connects out (a replica to its master, a
                // cluster node to another, a sentinel to its Redis): the server
                // certificate is for server authentication only.
                .arg("--tls-client-cert-file")
                .arg(&tls.client_cert)
                .arg("--tls-client-key-file")
                .arg(&tls.client_key)
                .args(["--tls-auth-clients", tls.auth_clients]),
        };
        let child = command
            .args(["--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no", "--protected-mode", "no"])
            // DEBUG SLEEP hangs Redis for the fault tests (Redis 7 refuses DEBUG by default).
            .args(["--enable-debug-command", "local"])
            .arg("--dir")
            .arg(self.dir.path())
            .args(&self.args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start redis-server");
        let pid = child.id();
        self.child = Some(child);
        let patience = Patience::new(format!("redis-server to answer on port {}", self.port));
        loop {
            // Ours, not another test's that holds the port: it names our child's pid.
            if self.server_pid().await == Some(pid) {
                return true;
            }
            let exited = self
                .child
                .as_mut()
                .is_some_and(|c| c.try_wait().ok().flatten().is_some());
            if exited {
                self.child = None;
                return false;
            }
            patience.wait().await;
        }
    }

    /// The pid of the redis-server answering on our port, if one does.
    async fn server_pid(&self) -> Option<u32> {
        let mut conn = self.try_conn().await.ok()?;
        let info: String = cmd("INFO")
            .arg("server")
            .query_async(&mut conn)
            .await
            .ok()?;
        info.lines()
            .find_map(|l| l.strip_prefix("process_id:"))
            .and_then(|pid| pid.trim().parse().ok())
    }

    /// redis://127.0.0.1:port, or rediss:// for a TLS server.
    pub fn url(&self) -> String {
        let scheme = if self.tls.is_some() {
            "rediss"
        } else {
            "redis"
        };
        format!("{scheme}://127.0.0.1:{}", self.port)
    }

    /// redis[s]://[:password@]127.0.0.1:port: the URL the harness's own connections
    /// use.
    pub fn auth_url(&self) -> String {
        match &self.password {
            Some(password) => self.url().replace("://", &format!("://:{password}@")),
            None => self.url(),
        }
    }

    /// Whether the server process is running (not killed).
    pub fn is_running(&self) -> bool {
        self.child.is_some()
    }

    async fn try_conn(&self) -> redis::RedisResult<MultiplexedConnection> {
        self.try_conn_within(PATIENCE).await
    }

    /// A direct connection that waits up to `patience` to connect and for each reply
    /// (TLS with the harness's certificates to a TLS server).
    pub async fn try_conn_within(
        &self,
        patience: std::time::Duration,
    ) -> redis::RedisResult<MultiplexedConnection> {
        match &self.tls {
            None => try_connect(&self.auth_url(), patience).await,
            Some(tls) => try_connect_tls(&self.auth_url(), tls, patience).await,
        }
    }

    /// A direct connection, for tests that inspect or corrupt the store.
    pub async fn conn(&self) -> MultiplexedConnection {
        self.try_conn().await.expect("connect to test redis")
    }

    /// Sends `signal` to redis-server: SIGSTOP hangs it (connections are accepted by
    /// the kernel, nothing is answered), SIGCONT lets it go on.
    pub fn signal(&self, signal: libc::c_int) {
        let child = self.child.as_ref().expect("redis-server is running");
        let pid = libc::pid_t::try_from(child.id()).expect("pid");
        // SAFETY: kill(2) on our own child's pid; no memory is involved.
        let sent = unsafe { libc::kill(pid, signal) };
        assert_eq!(sent, 0, "kill({pid}, {signal})");
    }

    /// Kills redis-server (SIGKILL: nothing is saved).
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts redis-server again on the same port, empty.
    pub async fn restart(&mut self) {
        self.kill();
        assert!(
            self.spawn().await,
            "redis-server could not listen on port {} again",
            self.port
        );
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        self.kill();
    }
}
