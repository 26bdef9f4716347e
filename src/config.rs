//! Command-line flags and environment variables of `dueq serve`, and the flags of
//! the other subcommands (`dev`, `health`, and the operator commands in `ctl`).

pub mod ctl;

use std::{path::PathBuf, time::Duration};

use clap::{Parser, Subcommand, ValueEnum};

/// Shown after the flags: the one setting that is not a flag.
const LOG_HELP: &str = "Logging: DUEQ_LOG sets what is logged. A bare level is about dueq \
(DUEQ_LOG=debug means dueq=debug,warn: dependencies stay at warn); anything else is a \
tracing EnvFilter directive list taken as written (DUEQ_LOG=dueq=debug,h2=trace). \
Default: info. Logs go to stdout, coloured only on a terminal.";

/// dueq: a gRPC job-queue and recurring-schedule service backed by Redis.
#[derive(Debug, Parser)]
#[command(name = "dueq", version, about, long_about = None, args_conflicts_with_subcommands = true, after_help = LOG_HELP)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    /// Flags for `serve`, also accepted without the subcommand (`dueq` alone serves).
    #[command(flatten)]
    pub serve: ServeConfig,
}

// Parsed once at startup; boxing ServeConfig would buy nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the gRPC service (the default).
    #[command(after_help = LOG_HELP)]
    Serve(ServeConfig),
    /// Run the service for development: a private redis-server (from PATH) with its
    /// data in a local folder, and dueq against it. Not for production.
    Dev(DevConfig),
    /// Make a local CA, a server certificate (SANs localhost, 127.0.0.1, ::1 and each
    /// --host) and a client certificate, and print the serve flags, DUEQ_* variables
    /// and grpcurl line that use them (docs/security.md).
    Certs(CertsConfig),
    /// Ask a running service whether it is SERVING (exit 0) or not (exit 1); for
    /// container health checks.
    Health(HealthConfig),
    /// The operator commands: clients of a running service.
    #[command(flatten)]
    Operator(ctl::OperatorCommand),
}

/// Flags of `dueq dev`: its own, then every flag of `dueq serve` (metrics, auth
/// file, TLS, limits…), read from the same DUEQ_* variables too. `--redis-url` and
/// REDIS_URL are not used: dev brings its own Redis.
#[derive(Debug, Clone, clap::Args)]
pub struct DevConfig {
    /// Folder of the private Redis's data (its AOF and log); created if missing and
    /// reused across runs, so schedules and jobs survive a restart.
    #[arg(long, default_value = ".dueq-dev")]
    pub data_dir: PathBuf,

    /// Serve no web console (dev serves one on 127.0.0.1:50052 unless
    /// --console-listen names another address).
    #[arg(long, conflicts_with = "console_listen")]
    pub no_console: bool,

    /// Serve gRPC and the console over TLS with certificates `dueq certs` makes in
    /// the data folder's tls/ on first use (reused after; delete it for new ones);
    /// the banner prints the DUEQ_* variables and grpcurl line that trust its CA.
    #[arg(long, conflicts_with_all = ["tls_cert", "tls_key", "tls_client_ca"])]
    pub tls: bool,

    #[command(flatten)]
    pub serve: ServeConfig,
}

impl DevConfig {
    /// Where dev serves its console when --console-listen does not say.
    pub const CONSOLE: &'static str = "127.0.0.1:50052";
}

/// Flags of `dueq certs`.
#[derive(Debug, Clone, clap::Args)]
pub struct CertsConfig {
    /// Folder to write ca.pem, server.pem, server-key.pem, client.pem and
    /// client-key.pem to (created if missing; keys are mode 0600).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,

    /// Another name or IP address clients reach the service by, for the server
    /// certificate's subjectAltName (repeatable); localhost, 127.0.0.1 and ::1 are
    /// always in it.
    #[arg(long = "host", value_name = "NAME")]
    pub hosts: Vec<String>,

    /// The client certificate's name (its CN and DNS SAN): what an auth file's
    /// client_cert_subject names.
    #[arg(long, default_value = "dueq-client", value_name = "NAME")]
    pub client: String,

    /// How many days the certificates are valid, from today.
    #[arg(long, default_value_t = 365, value_parser = clap::value_parser!(u32).range(1..=3650))]
    pub days: u32,

    /// Replace files already in --out (refused otherwise).
    #[arg(long)]
    pub force: bool,
}

/// Flags of `dueq health`.
#[derive(Debug, Clone, clap::Args)]
pub struct HealthConfig {
    /// The service to ask, at its gRPC health endpoint: http://host:port, or
    /// https://host:port for TLS.
    #[arg(long, env = "DUEQ_ADDR", default_value = "http://127.0.0.1:50051")]
    pub addr: String,

    #[command(flatten)]
    pub tls: ctl::TlsArgs,

    /// How long to wait for a connection and an answer.
    #[arg(long, default_value = "5s", value_parser = humantime::parse_duration)]
    pub timeout: Duration,
}

/// Log output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line, for log shippers.
    Json,
}

/// What kind of Redis deployment `--redis-url` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RedisMode {
    /// One Redis.
    Standalone,
    /// A Redis Cluster: --redis-url lists seed nodes, comma-separated.
    Cluster,
    /// The master Redis Sentinels watch: --redis-url lists the sentinels,
    /// comma-separated, and --redis-sentinel-master names the master.
    Sentinel,
}

/// Everything `dueq serve` can be configured with. Every flag has an env var.
#[derive(Debug, Clone, clap::Args)]
pub struct ServeConfig {
    /// Address the gRPC server listens on: host:port, where host is an IP address or
    /// a name that resolves (localhost:50051).
    #[arg(long, env = "DUEQ_LISTEN", default_value = "127.0.0.1:50051")]
    pub listen: String,

    /// Redis URL: redis://[user:password@]host:port[/db], rediss://… for TLS, or
    /// unix:///path/redis.sock[?db=N&user=U&pass=P]. Its password is never shown.
    // The env value is hidden from --help: it may hold the password.
    #[arg(
        long,
        env = "REDIS_URL",
        default_value = "redis://127.0.0.1:6379",
        hide_env_values = true
    )]
    pub redis_url: String,

    /// standalone: one Redis at --redis-url; cluster: a Redis Cluster, --redis-url
    /// lists seed nodes (comma-separated); sentinel: the master Redis Sentinels name,
    /// --redis-url lists the sentinels (comma-separated).
    #[arg(long, env = "DUEQ_REDIS_MODE", value_enum, default_value_t = RedisMode::Standalone)]
    pub redis_mode: RedisMode,

    /// With --redis-mode sentinel: the name the sentinels monitor the master under.
    #[arg(long, env = "DUEQ_REDIS_SENTINEL_MASTER")]
    pub redis_sentinel_master: Option<String>,

    /// Replicas that must acknowledge (Redis WAIT) each write that hands out or
    /// accepts work (enqueue, claims, acks, fails, schedule writes) before the call
    /// succeeds; fewer within half of --redis-timeout fail the call UNAVAILABLE (the
    /// write may still have happened). 0: no WAIT.
    #[arg(long, env = "DUEQ_REDIS_WAIT_REPLICAS", default_value_t = 0)]
    pub redis_wait_replicas: u32,

    /// For a rediss:// URL: PEM file of the CA(s) to trust for Redis's certificate,
    /// instead of the system trust store.
    #[arg(long, env = "DUEQ_REDIS_TLS_CA")]
    pub redis_tls_ca: Option<PathBuf>,

    /// For a rediss:// URL: PEM client certificate to present (Redis with
    /// tls-auth-clients); needs --redis-tls-key.
    #[arg(long, env = "DUEQ_REDIS_TLS_CERT", requires = "redis_tls_key")]
    pub redis_tls_cert: Option<PathBuf>,

    /// PEM private key of --redis-tls-cert.
    #[arg(long, env = "DUEQ_REDIS_TLS_KEY", requires = "redis_tls_cert")]
    pub redis_tls_key: Option<PathBuf>,

    /// Long-lived multiplexed Redis connections shared by all requests.
    #[arg(long, env = "DUEQ_POOL_SIZE", default_value_t = 4, value_parser = clap::value_parser!(u16).range(1..=256))]
    pub pool_size: u16,

    /// Prefix of every Redis key dueq writes ([A-Za-z0-9_.:-], 1-64 characters).
    #[arg(long, env = "DUEQ_KEY_PREFIX", default_value = "dueq")]
    pub key_prefix: String,

    /// Largest gRPC message accepted or sent, in bytes.
    #[arg(long, env = "DUEQ_MAX_MESSAGE_SIZE", default_value_t = 4 * 1024 * 1024)]
    pub max_message_size: usize,

    /// Largest schedule or job payload accepted, in bytes (RESOURCE_EXHAUSTED above it).
    #[arg(long, env = "DUEQ_MAX_PAYLOAD_SIZE", default_value_t = 1024 * 1024)]
    pub max_payload_size: usize,

    /// Longest a claim may long-poll, whatever the request asks (e.g. "60s").
    #[arg(long, env = "DUEQ_MAX_WAIT", default_value = "60s", value_parser = humantime::parse_duration)]
    pub max_wait: Duration,

    /// How often the replica's safety net re-reads a few of the namespaces its
    /// long-polls wait on (8 per interval, in turn). Waiters learn of work written
    /// through other replicas from their announcements; this catches one never sent.
    #[arg(long, env = "DUEQ_RECHECK_INTERVAL", default_value = "1s", value_parser = humantime::parse_duration)]
    pub recheck_interval: Duration,

    /// How often Redis is pinged for the health status and the clock offset.
    #[arg(long, env = "DUEQ_HEALTH_INTERVAL", default_value = "1s", value_parser = humantime::parse_duration)]
    pub health_interval: Duration,

    /// Longest a single Redis command may take before the call fails UNAVAILABLE.
    #[arg(long, env = "DUEQ_REDIS_TIMEOUT", default_value = "5s", value_parser = humantime::parse_duration)]
    pub redis_timeout: Duration,

    /// Ttl of Migrate's lock in Redis: a Migrate that dies frees its namespace after
    /// this long; a live one renews it as it goes.
    #[arg(long, env = "DUEQ_MIGRATE_LOCK_TTL", default_value = "30s", value_parser = humantime::parse_duration)]
    pub migrate_lock_ttl: Duration,

    /// How often the namespaces this instance serves are checked (O(1) each) for a due
    /// index that lost entries or a layout that needs Migrate; findings are logged.
    #[arg(long, env = "DUEQ_CHECK_INTERVAL", default_value = "10s", value_parser = humantime::parse_duration)]
    pub check_interval: Duration,

    /// How often each replica publishes its Work streams and waiting long-polls to
    /// Redis for ListWorkers (one script call per namespace that has any); a session
    /// not published for three intervals (its replica died) is dropped by readers.
    #[arg(long, env = "DUEQ_WORKER_REFRESH_INTERVAL", default_value = "5s", value_parser = humantime::parse_duration)]
    pub worker_refresh_interval: Duration,

    /// How long shutdown waits for in-flight calls before exiting anyway.
    #[arg(long, env = "DUEQ_SHUTDOWN_GRACE", default_value = "10s", value_parser = humantime::parse_duration)]
    pub shutdown_grace: Duration,

    /// Most jobs one EnqueueBatch may carry (INVALID_ARGUMENT above it); at most
    /// 10000 (a batch is stored 32 jobs per script call, one call after another, so
    /// its time grows with its size).
    #[arg(long, env = "DUEQ_MAX_BATCH", default_value_t = 1000, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub max_batch: u32,

    /// Longest lease a job claim (or an Enqueue's default lease) may ask for.
    #[arg(long, env = "DUEQ_MAX_LEASE", default_value = "1h", value_parser = humantime::parse_duration)]
    pub max_lease: Duration,

    /// How long completed, dead and cancelled jobs are kept before they are pruned.
    #[arg(long, env = "DUEQ_JOB_RETENTION", default_value = "24h", value_parser = humantime::parse_duration)]
    pub job_retention: Duration,

    /// Most completed, dead and cancelled jobs kept per namespace; the oldest beyond
    /// it are pruned.
    #[arg(long, env = "DUEQ_JOB_RETENTION_COUNT", default_value_t = 100_000)]
    pub job_retention_count: u64,

    /// How often each instance prunes finished jobs (in bounded batches, off the
    /// request path) in the namespaces the prune due-set in Redis says are due.
    #[arg(long, env = "DUEQ_JOB_PRUNE_INTERVAL", default_value = "5s", value_parser = humantime::parse_duration)]
    pub job_prune_interval: Duration,

    /// PEM certificate chain to serve gRPC over TLS with (needs --tls-key). Re-read,
    /// with the key and client CA, on SIGHUP; a bad file keeps the old ones.
    #[arg(long, env = "DUEQ_TLS_CERT", value_name = "FILE")]
    pub tls_cert: Option<PathBuf>,

    /// PEM private key of --tls-cert.
    #[arg(long, env = "DUEQ_TLS_KEY", value_name = "FILE")]
    pub tls_key: Option<PathBuf>,

    /// PEM CA certificate(s): with it, clients must present a certificate signed by
    /// one of them (mTLS). Needs --tls-cert.
    #[arg(long, env = "DUEQ_TLS_CLIENT_CA", value_name = "FILE")]
    pub tls_client_ca: Option<PathBuf>,

    /// Principals allowed to call, with their roles and namespaces (TOML;
    /// docs/security.md); re-read on SIGHUP. Without it every caller may do
    /// everything.
    #[arg(long, env = "DUEQ_AUTH_FILE")]
    pub auth_file: Option<PathBuf>,

    /// Listen on a non-loopback address without --auth-file (refused otherwise).
    #[arg(long, env = "DUEQ_ALLOW_UNAUTHENTICATED")]
    pub allow_unauthenticated: bool,

    /// Serve gRPC reflection (grpcurl describe/list); --reflection=false closes it.
    #[arg(long, env = "DUEQ_REFLECTION", default_value_t = true, action = clap::ArgAction::Set)]
    pub reflection: bool,

    /// Most concurrent calls (HTTP/2 streams) one connection may open; the client
    /// is told in the HTTP/2 SETTINGS, and its calls beyond it wait on its side.
    #[arg(long, env = "DUEQ_MAX_CONCURRENT_STREAMS", default_value_t = 1000, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_concurrent_streams: u32,

    /// Most unary calls in flight in the whole server; beyond it a call is answered
    /// RESOURCE_EXHAUSTED at once (load shedding) instead of queueing.
    #[arg(long, env = "DUEQ_MAX_IN_FLIGHT", default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_in_flight: u64,

    /// Most long-polls (ClaimJob, ClaimDueSchedule) in flight in the whole server, a
    /// cap of their own since each holds its slot up to --max-wait (dueq's streams
    /// such as Work and Migrate count here until their response starts; health
    /// Watch does not, see --max-open-calls); beyond it RESOURCE_EXHAUSTED at once.
    #[arg(long, env = "DUEQ_MAX_LONG_POLLS", default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_long_polls: u64,

    /// Most calls in flight, at once, of the RPCs anyone may call without a
    /// credential (health Check and Watch, reflection): a cap of their own, shared
    /// with no tenant's call; beyond it RESOURCE_EXHAUSTED at once.
    #[arg(long, env = "DUEQ_MAX_OPEN_CALLS", default_value_t = 256, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_open_calls: u64,

    /// Bytes a second of GetJob and full-view ListJobs replies each principal may
    /// read, while the auth file names more than one (0: no limit). A read is
    /// charged what its reply carried; a principal over its budget waits before its
    /// next such read, or is answered RESOURCE_EXHAUSTED if that wait is longer than
    /// its call may take (docs/security.md).
    #[arg(long, env = "DUEQ_HEAVY_READ_RATE", default_value_t = 8 * 1024 * 1024, value_name = "BYTES")]
    pub heavy_read_rate: u64,

    /// How long a call's request may take to arrive after its headers (the whole
    /// message; a request stream's first message) before the call is answered
    /// DEADLINE_EXCEEDED. A call takes its --max-in-flight / --max-long-polls /
    /// --max-open-calls slot only once its request is in.
    #[arg(long, env = "DUEQ_BODY_TIMEOUT", default_value = "10s", value_parser = positive_duration)]
    pub body_timeout: Duration,

    /// Most WatchJob streams open at once on this server; beyond it a WatchJob is
    /// answered RESOURCE_EXHAUSTED at once. Each costs a few KiB (measured:
    /// docs/performance.md), however fast its job changes.
    #[arg(long, env = "DUEQ_MAX_WATCHES", default_value_t = 20_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_watches: u64,

    /// Longest a unary call may take before it is answered DEADLINE_EXCEEDED;
    /// long-polls and streams are not cut by it (a claim waits up to --max-wait).
    #[arg(long, env = "DUEQ_REQUEST_TIMEOUT", default_value = "30s", value_parser = humantime::parse_duration)]
    pub request_timeout: Duration,

    /// How often an HTTP/2 PING is sent on each connection to notice a peer that
    /// vanished (0s: never).
    #[arg(long, env = "DUEQ_HTTP2_KEEPALIVE_INTERVAL", default_value = "60s", value_parser = humantime::parse_duration)]
    pub http2_keepalive_interval: Duration,

    /// How long a keepalive PING may go unanswered before the connection is closed.
    #[arg(long, env = "DUEQ_HTTP2_KEEPALIVE_TIMEOUT", default_value = "20s", value_parser = humantime::parse_duration)]
    pub http2_keepalive_timeout: Duration,

    /// Age after which a connection is asked to go away (HTTP/2 GOAWAY; clients
    /// reconnect, which spreads them over replicas behind a load balancer); 0s: never.
    #[arg(long, env = "DUEQ_MAX_CONNECTION_AGE", default_value = "1h", value_parser = humantime::parse_duration)]
    pub max_connection_age: Duration,

    /// How long calls in flight on a connection past --max-connection-age may take to
    /// finish before it is closed; longer than --max-wait, so long-polls end normally.
    #[arg(long, env = "DUEQ_MAX_CONNECTION_AGE_GRACE", default_value = "90s", value_parser = humantime::parse_duration)]
    pub max_connection_age_grace: Duration,

    /// Most client connections open at once; a connection beyond it is closed as
    /// soon as it is accepted.
    #[arg(long, env = "DUEQ_MAX_CONNECTIONS", default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_connections: u64,

    /// How long a new connection may take to send the HTTP/2 connection preface
    /// before it is closed (a client that connects and sends nothing).
    #[arg(long, env = "DUEQ_HTTP2_HEADER_TIMEOUT", default_value = "10s", value_parser = humantime::parse_duration)]
    pub http2_header_timeout: Duration,

    /// Most schedules one namespace may hold (0: no limit); a create beyond it is
    /// answered RESOURCE_EXHAUSTED and writes nothing. Updates always pass.
    #[arg(long, env = "DUEQ_MAX_SCHEDULES_PER_NAMESPACE", default_value_t = 0)]
    pub max_schedules_per_namespace: u64,

    /// Most unfinished (pending, delayed, leased) jobs one namespace may hold (0: no
    /// limit); an Enqueue that would create one more is answered RESOURCE_EXHAUSTED
    /// and writes nothing (in EnqueueBatch, per item). Duplicates still answer.
    #[arg(long, env = "DUEQ_MAX_JOBS_PER_NAMESPACE", default_value_t = 0)]
    pub max_jobs_per_namespace: u64,
    /// Address to serve Prometheus metrics on, as GET /metrics over HTTP (host:port;
    /// a host name resolves). Off when unset.
    #[arg(long, env = "DUEQ_METRICS_LISTEN")]
    pub metrics_listen: Option<String>,

    /// Address to serve the web console on (host:port; a host name resolves), over
    /// HTTP/1.1, with TLS when --tls-cert is set. Sign-in takes a bearer token of
    /// --auth-file; without an auth file (loopback) it is open, as gRPC is. Off when unset.
    #[arg(long, env = "DUEQ_CONSOLE_LISTEN")]
    pub console_listen: Option<String>,

    /// Most namespaces, and most (namespace, queue) pairs, that get label values of
    /// their own in the metrics; the rest are counted under `_other`.
    #[arg(long, env = "DUEQ_METRICS_MAX_SERIES", default_value_t = 1000, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub metrics_max_series: u32,

    /// An active schedule due more than this long ago and not yet claimed counts in
    /// dueq_schedules_overdue.
    #[arg(long, env = "DUEQ_OVERDUE_AFTER", default_value = "60s", value_parser = humantime::parse_duration)]
    pub overdue_after: Duration,

    /// Export the per-RPC spans as OpenTelemetry traces to this OTLP/HTTP receiver
    /// (protobuf; http://host:port, the traces path /v1/traces is added unless the
    /// URL ends in it). A caller's W3C trace context in the gRPC metadata
    /// (traceparent) continues through dueq. Off when unset.
    #[arg(long, env = "DUEQ_OTLP_ENDPOINT", value_name = "URL", value_parser = crate::telemetry::endpoint)]
    pub otlp_endpoint: Option<String>,

    /// Log format.
    #[arg(long, env = "DUEQ_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
}

impl ServeConfig {
    /// Refuses a payload limit that cannot fit in one message: a claim of one job
    /// (or one schedule occurrence) carries the payload plus up to
    /// `MAX_RECORD_OVERHEAD` bytes of headers and fields, and its reply must still fit
    /// in `--max-message-size`, or the job is leased and never delivered.
    pub fn check_sizes(&self) -> Result<(), String> {
        let overhead = crate::domain::limits::MAX_RECORD_OVERHEAD;
        let room = self.max_message_size.saturating_sub(overhead);
        if self.max_payload_size > room {
            return Err(format!(
                "--max-payload-size {} does not fit in one message: a job or schedule \
                 carries up to {overhead} bytes besides its payload, so with \
                 --max-message-size {} the payload limit can be at most {room}; lower \
                 --max-payload-size or raise --max-message-size",
                self.max_payload_size, self.max_message_size
            ));
        }
        Ok(())
    }

    /// The TLS files of the Redis connection.
    pub(crate) fn redis_tls(&self) -> crate::store::RedisTls {
        crate::store::RedisTls {
            ca: self.redis_tls_ca.clone(),
            cert: self.redis_tls_cert.clone(),
            key: self.redis_tls_key.clone(),
        }
    }

    /// The Redis deployment the flags describe; the error names the flag.
    pub(crate) fn redis_topology(&self) -> Result<crate::store::Topology, String> {
        use crate::store::Topology;
        match (self.redis_mode, &self.redis_sentinel_master) {
            (RedisMode::Sentinel, Some(master)) if !master.is_empty() => Ok(Topology::Sentinel {
                master: master.clone(),
            }),
            (RedisMode::Sentinel, _) => {
                Err("--redis-mode sentinel needs --redis-sentinel-master NAME".into())
            }
            (_, Some(_)) => {
                Err("--redis-sentinel-master applies to --redis-mode sentinel only".into())
            }
            (RedisMode::Standalone, None) if self.redis_url.contains(',') => Err(
                "--redis-url lists several addresses: that takes --redis-mode cluster or \
                 sentinel"
                    .into(),
            ),
            (RedisMode::Standalone, None) => Ok(Topology::Standalone),
            (RedisMode::Cluster, None) => Ok(Topology::Cluster),
        }
    }

    /// Defaults for everything, pointing at `redis_url`; used by tests and tools.
    pub fn for_redis(redis_url: impl Into<String>) -> Self {
        let mut config = Cli::parse_from(["dueq"]).serve;
        config.redis_url = redis_url.into();
        config
    }
}

/// A duration above zero (`--body-timeout`: at 0s no request could arrive in time).
fn positive_duration(text: &str) -> Result<Duration, String> {
    match humantime::parse_duration(text) {
        Ok(d) if d.is_zero() => Err("must be more than 0s".to_owned()),
        Ok(d) => Ok(d),
        Err(e) => Err(e.to_string()),
    }
}

#[cfg(test)]
mod positive_duration_tests {
    use clap::Parser;

    use super::Cli;

    /// Pins: --body-timeout 0s is refused naming the flag (no request could arrive
    /// in time); a positive one is taken.
    #[test]
    fn a_zero_body_timeout_is_refused() {
        let zero = Cli::try_parse_from(["dueq", "--body-timeout", "0s"]).map(|c| c.serve);
        let error = zero.expect_err("refused").to_string();
        assert!(error.contains("--body-timeout"), "{error}");
        assert!(error.contains("more than 0s"), "{error}");
        let cli = Cli::try_parse_from(["dueq", "--body-timeout", "250ms"]).expect("parsed");
        assert_eq!(
            cli.serve.body_timeout,
            std::time::Duration::from_millis(250)
        );
    }
}
