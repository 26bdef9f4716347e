//! Flags of the operator commands (`dueq jobs`, `dueq job`, `dueq schedules`, …):
//! clients of a running service over gRPC, with the connection flags every one of
//! them shares (`ClientArgs`). The commands themselves live in the binary
//! (src/cli/ctl).

use std::{fmt, path::PathBuf, time::Duration};

use clap::{Subcommand, ValueEnum};

/// Shown after each operator command's flags.
pub const CLIENT_HELP: &str = "Exit codes: 0 done; 1 the service answered an error (its gRPC \
code and message are printed on stderr); 2 bad command line or an unreadable local file; 3 \
the service could not be reached (connection refused, TLS handshake failed, timeout); 4 \
migrate finished but reported records it could not use. Output: \
a table on stdout, or with --output json one JSON document. Prefer DUEQ_TOKEN to --token: \
a flag shows in the process list.";

/// The operator commands: each a client of a running service.
#[derive(Debug, Clone, Subcommand)]
pub enum OperatorCommand {
    /// Operator: the namespaces that hold (or held) jobs or schedules.
    #[command(after_help = CLIENT_HELP)]
    Namespaces(NamespacesArgs),
    /// Operator: a namespace's queues with their job counts by state, the oldest
    /// pending job's age and whether each is paused.
    #[command(after_help = CLIENT_HELP)]
    Queues(QueuesArgs),
    /// Operator: pause or resume one queue (claims skip a paused queue; enqueues
    /// still land); its flow policy, key limits, throttles and active keys.
    Queue(QueueArgs),
    /// Operator: the jobs of a queue, optionally in one state.
    #[command(after_help = CLIENT_HELP)]
    Jobs(JobsArgs),
    /// Operator: one job, with its error history; `delete` or `release` it.
    #[command(after_help = CLIENT_HELP)]
    Job(JobArgs),
    /// Operator: retry, cancel or delete many jobs of a queue: listed ids, or every
    /// job matching a state and filter, in bounded batches with a progress bar.
    Bulk(BulkArgs),
    /// Operator: make a queue's dead jobs pending again (attempts reset, error
    /// history kept), the longest dead first.
    #[command(name = "retry-dead", after_help = CLIENT_HELP)]
    RetryDead(RetryDeadArgs),
    /// Operator: delete a queue's pending, delayed or dead jobs (needs --yes).
    #[command(after_help = CLIENT_HELP)]
    Purge(PurgeArgs),
    /// Operator: a namespace's schedules.
    #[command(after_help = CLIENT_HELP)]
    Schedules(SchedulesArgs),
    /// Operator: show, pause or resume one schedule.
    Schedule(ScheduleArgs),
    /// Operator: the next fire times of a cron, an interval or a stored schedule.
    #[command(after_help = CLIENT_HELP)]
    Preview(PreviewArgs),
    /// Operator: run Migrate on a namespace (or all), with a progress bar.
    #[command(after_help = CLIENT_HELP)]
    Migrate(MigrateArgs),
    /// Operator: flows of jobs (job dependencies, docs/dependencies.md): enqueue one
    /// from a JSON file, show its nodes, cancel or retry it.
    Flow(FlowArgs),
    /// Operator: a namespace's open Work streams and waiting long-polls, on every
    /// replica, and the leases that end soonest.
    #[command(after_help = CLIENT_HELP)]
    Workers(WorkersArgs),
    /// Operator: a namespace's audit log, newest first: who called which audited
    /// RPC on what, when, and its outcome.
    #[command(after_help = CLIENT_HELP)]
    Audit(AuditArgs),
}

/// How a command prints its answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Output {
    /// Human-readable tables.
    Table,
    /// One JSON document on stdout, with snake_case fields that do not change between
    /// releases (docs/cli.md).
    Json,
}

/// How to reach the service: shared by every operator command.
#[derive(Clone, clap::Args)]
pub struct ClientArgs {
    /// The service: http://host:port, or https://host:port for TLS.
    #[arg(long, env = "DUEQ_ADDR", default_value = "http://127.0.0.1:50051")]
    pub addr: String,

    #[command(flatten)]
    pub tls: TlsArgs,

    /// Bearer token sent with every call (a service with --auth-file). Never printed.
    // The env value is hidden from --help: it is a secret.
    #[arg(long, env = "DUEQ_TOKEN", hide_env_values = true)]
    pub token: Option<String>,

    /// How long to wait for a connection and for each answer (Migrate's stream is
    /// not cut by it).
    #[arg(long, default_value = "10s", value_parser = humantime::parse_duration)]
    pub timeout: Duration,

    /// Output format.
    #[arg(long, short = 'o', value_enum, default_value_t = Output::Table)]
    pub output: Output,
}

// By hand: the token must not show in a Debug print.
impl fmt::Debug for ClientArgs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientArgs")
            .field("addr", &self.addr)
            .field("tls", &self.tls)
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .field("timeout", &self.timeout)
            .field("output", &self.output)
            .finish()
    }
}

/// TLS to the service: shared by the operator commands and `dueq health`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct TlsArgs {
    /// PEM CA certificate(s) to trust for the service's certificate, instead of the
    /// system trust store. Implies TLS.
    #[arg(long, env = "DUEQ_TLS_CA", value_name = "FILE")]
    pub tls_ca: Option<PathBuf>,

    /// PEM client certificate to present (a service with --tls-client-ca, mTLS);
    /// needs --tls-key. Implies TLS.
    #[arg(
        long,
        env = "DUEQ_TLS_CLIENT_CERT",
        value_name = "FILE",
        requires = "tls_key"
    )]
    pub tls_cert: Option<PathBuf>,

    /// PEM private key of --tls-cert.
    #[arg(
        long,
        env = "DUEQ_TLS_CLIENT_KEY",
        value_name = "FILE",
        requires = "tls_cert"
    )]
    pub tls_key: Option<PathBuf>,

    /// The name to check the service's certificate against, when it is not the host
    /// of --addr.
    #[arg(long, env = "DUEQ_TLS_SERVER_NAME", value_name = "NAME")]
    pub tls_server_name: Option<String>,
}

impl TlsArgs {
    /// Whether any TLS flag is given.
    pub fn any(&self) -> bool {
        self.tls_ca.is_some() || self.tls_cert.is_some() || self.tls_server_name.is_some()
    }
}

/// A job state, as the operator commands name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum JobStateArg {
    Pending,
    Delayed,
    Active,
    Completed,
    Dead,
    Cancelled,
    /// A flow's node waiting for its dependencies.
    Waiting,
    /// A flow's node not run because a dependency failed (its skip rule).
    Skipped,
}

/// A schedule status, as the operator commands name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ScheduleStatusArg {
    Active,
    Paused,
    Completed,
}

/// `dueq namespaces`.
#[derive(Debug, Clone, clap::Args)]
pub struct NamespacesArgs {
    /// Most namespaces to show, in name order (1-100000).
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub limit: u32,
    #[command(flatten)]
    pub client: ClientArgs,
}

/// `dueq workers`.
#[derive(Debug, Clone, clap::Args)]
pub struct WorkersArgs {
    /// The namespace.
    #[arg(long, short = 'n', env = "DUEQ_NAMESPACE")]
    pub namespace: String,
    /// Most workers to show (1-100000).
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub limit: u32,
    #[command(flatten)]
    pub client: ClientArgs,
}

/// `dueq audit`.
#[derive(Debug, Clone, clap::Args)]
pub struct AuditArgs {
    /// The namespace.
    #[arg(long, short = 'n', env = "DUEQ_NAMESPACE")]
    pub namespace: String,
    /// Most records to show, newest first (1-10000).
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub limit: u32,
    #[command(flatten)]
    pub client: ClientArgs,
}

/// `dueq queues`.
#[derive(Debug, Clone, clap::Args)]
pub struct QueuesArgs {
    /// The namespace.
    #[arg(long, short = 'n', env = "DUEQ_NAMESPACE")]
    pub namespace: String,
    /// Most queues to show, in name order (1-100000).
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub limit: u32,
    #[command(flatten)]
    pub client: ClientArgs,
}

/// `dueq queue …`: one queue.
#[derive(Debug, Clone, clap::Args)]
pub struct QueueArgs {
    #[command(subcommand)]
    pub action: QueueAction,
}

#[derive(Debug, Clone, Subcommand)]
pub enum QueueAction {
    /// Pause a queue: claims skip it until it is resumed; enqueues still land.
    #[command(after_help = CLIENT_HELP)]
    Pause(QueueTarget),
    /// Resume a paused queue; waiting workers are woken.
    #[command(after_help = CLIENT_HELP)]
    Resume(QueueTarget),
    /// A queue's flow policy (docs/flow.md): set it or show it.
    Policy(PolicyArgs),
    /// Give one key of a queue its own max-running and/or rate (neither: remove
    /// them, back to the policy's per-key limits).
    #[command(after_help = CLIENT_HELP)]
    KeyLimit(KeyLimitArgs),
    /// Stop a key's jobs from starting for a while (0s lifts it).
    #[command(after_help = CLIENT_HELP)]
    Throttle(ThrottleArgs),
    /// A queue's active flow keys: ready jobs, leased jobs, throttle and own limits.
    #[command(after_help = CLIENT_HELP)]
    Keys(KeysArgs),
}

/// `dueq queue policy …`.
#[derive(Debug, Clone, clap::Args)]
pub struct PolicyArgs {
    #[command(subcommand)]
    pub action: PolicyAction,
}

#[derive(Debug, Clone, Subcommand)]
pub enum PolicyAction {
    /// Set a queue's flow policy, replacing the one before (no flags: no policy).
    #[command(after_help = CLIENT_HELP)]
    Set(PolicySetArgs),
    /// Show a queue's flow policy.
    #[command(after_help = CLIENT_HELP)]
    Get(QueueTarget),
}

/// A rate on the command line: `N/PERIOD` (`100/1s`, `5/1m`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateArg {
    pub limit: u32,
    pub period: Duration,
}

fn parse_rate(text: &str) -> Result<RateArg, String> {
    let (limit, period) = text
        .split_once('/')
        .ok_or_else(|| format!("{text:?} is not N/PERIOD (for example 100/1s)"))?;
    let limit = limit
        .trim()
        .parse()
        .map_err(|_| format!("{limit:?} is not a whole number of starts"))?;
    let period = humantime::parse_duration(period.trim()).map_err(|e| e.to_string())?;
    Ok(RateArg { limit, period })
}

/// How a queue takes turns between lanes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FairnessArg {
    Fifo,
    RoundRobin,
    Weighted,
}

fn parse_weight(text: &str) -> Result<(String, u32), String> {
    let (key, weight) = text
        .rsplit_once('=')
        .ok_or_else(|| format!("{text:?} is not KEY=WEIGHT"))?;
    let weight = weight
        .parse()
        .map_err(|_| format!("{weight:?} is not a whole number"))?;
    Ok((key.to_owned(), weight))
}

/// `dueq queue policy set`.
#[derive(Debug, Clone, clap::Args)]
pub struct PolicySetArgs {
    /// The namespace.
    #[arg(long, short = 'n', env = "DUEQ_NAMESPACE")]
    pub namespace: String,
    /// The queue.
    pub queue: String,
    /// Most jobs of the queue leased at once.
    #[arg(long, value_name = "N")]
    pub max_running: Option<u32>,
    /// Starts of the queue as a whole, N/PERIOD (100/1s).
    #[arg(long, value_name = "N/PERIOD", value_parser = parse_rate)]
    pub rate: Option<RateArg>,
    /// Extra starts --rate allows at once after an idle spell.
    #[arg(long, value_name = "N", requires = "rate")]
    pub burst: Option<u32>,
    /// Most jobs leased at once per concurrency key.
    #[arg(long, value_name = "N")]
    pub per_key_max_running: Option<u32>,
    /// Starts per rate key, N/PERIOD.
    #[arg(long, value_name = "N/PERIOD", value_parser = parse_rate)]
    pub per_key_rate: Option<RateArg>,
    /// Extra starts --per-key-rate allows at once after an idle spell.
    #[arg(long, value_name = "N", requires = "per_key_rate")]
    pub per_key_burst: Option<u32>,
    /// How the queue takes turns between lanes (fifo by default).
    #[arg(long, value_enum)]
    pub fairness: Option<FairnessArg>,
    /// A fairness key's weight under --fairness weighted, KEY=N (repeat it).
    #[arg(long, value_name = "KEY=N", value_parser = parse_weight)]
    pub weight: Vec<(String, u32)>,
    /// The weight of a key without --weight (1 by default).
    #[arg(long, value_name = "N")]
    pub default_weight: Option<u32>,
    #[command(flatten)]
    pub client: ClientArgs,
}

/// `dueq queue key-limit`.
#[derive(Debug, Clone, clap::Args)]
pub struct KeyLimitArgs {
    /// The namespace.
    #[arg(long, short = 'n', env = "DUEQ_NAMESPACE")]
    pub namespace: String,
    /// The queue.
    pub queue: String,
    /// The key (a concurrency key for --max-running, a rate key for --rate).
    pub key: String,
    /// Most jobs with this concurrency key leased at once (0: no limit for it).
    #[arg(long, value_name = "N")]
    pub max_running: Option<u32>,
    /// Starts of this rate key, N/PERIOD.
    #[arg(long, value_name = "N/PERIOD", value_parser = parse_rate)]
    pub rate: Option<RateArg>,
    /// Extra starts --rate allows at once after an idle spell.
    #[arg(long, value_name = "N", requires = "rate")]
    pub burst: Option<u32>,
    #[command(flatten)]
    pub client: ClientArgs,
}

/// `dueq queue throttle`.
#[derive(Debug, Clone, clap::Args)]
pub struct ThrottleArgs {
    /// The namespace.
    #[arg(long, short = 'n', env = "DUEQ_NAMESPACE")]
    pub namespace: String,
    /// The queue.
    pub queue: String,
    /// The key (a fairness, concurrency or rate key of the queue's jobs).
    pub key: String,
    /// How long (at most 1d); 0s lifts the throttle.
    #[arg(value_name = "DURATION", value_parser = humantime::parse_duration)]
    pub duration: Duration,
    #[command(flatten)]
    pub client: ClientArgs,
}

/// What `dueq queue keys` orders by (most first).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FlowKeyOrderArg {
    Backlog,
    Running,
    Throttled,
}

/// `dueq queue keys`.
#[derive(Debug, Clone, clap::Args)]
pub struct KeysArgs {
    /// The namespace.
    #[arg(long, short = 'n', env = "DUEQ_NAMESPACE")]
    pub namespace: String,
    /// The queue.
    pub queue: String,
    /// What to order by, most first.
    #[arg(long, value_enum, default_value = "backlog")]
    pub order_by: FlowKeyOrderArg,
    /// Most keys to show (1-100000).
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub limit: u32,
    #[command(flatten)]
    pub client: ClientArgs,
}

/// One queue of one namespace.
#[derive(Debug, Clone, clap::Args)]
pub struct QueueTarget {
    /// The namespace.
    #[arg(long, short = 'n', env = "DUEQ_NAMESPACE")]
    pub namespace: String,
    /// The queue.
    pub queue: String,
    #[command(flatten)]
    pub client: ClientArgs,
}

/// `dueq retry-dead`.
#[derive(Debug, Clone, clap::Args)]
pub struct RetryDeadArgs {
    /// The namespace.
    #[arg(long, short = 'n', env = "DUEQ_NAMESPACE")]
    pub namespace: String,
    /// The queue.
    pub queue: String,
    /// Most jobs to retry in all (default: every dead job); the service is called in
    /// batches of at most 500.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub limit: Option<u64>,
    /// Only the dead jobs of this error group (a fingerprint `dueq jobs dead-groups`
    /// shows).
    #[arg(long)]
    pub fingerprint: Option<String>,
    #[command(flatten)]
    pub client: ClientArgs,
}

/// The states `dueq purge` can delete.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PurgeStateArg {
    Pending,
    Delayed,
    Dead,
}

/// `dueq purge`.
#[derive(Debug, Clone, clap::Args)]
pub struct PurgeArgs {
    /// The namespace.
    #[arg(long, short = 'n', env = "DUEQ_NAMESPACE")]
    pub namespace: String,
    /// The queue.
    pub queue: String,
    /// Which jobs to delete (active jobs are leased and cannot be purged; completed
    /// and cancelled ones go with retention).
    #[arg(long, value_enum)]
    pub state: PurgeStateArg,
    /// Most jobs to delete in all (default: every one in that state); the service is
    /// called in batches of at most 500.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub limit: Option<u64>,
    /// Only the dead jobs of this error group (a fingerprint `dueq jobs dead-groups`
    /// shows; needs --state dead).
    #[arg(long)]
    pub fingerprint: Option<String>,
    /// Really delete: without it nothing is sent and the command exits 2.
    #[arg(long)]
    pub yes: bool,
    #[command(flatten)]
    pub client: ClientArgs,
}

/// `dueq jobs`: the jobs of one queue (`dueq jobs -n NS QUEUE`), or the dead jobs
/// grouped by error (`dueq jobs dead-groups -n NS`, issue 33).
#[derive(Debug, Clone, clap::Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct JobsArgs {
    #[command(subcommand)]
    pub action: Option<JobsCommand>,
    /// The namespace.
    #[arg(long, short = 'n', env = "DUEQ_NAMESPACE", required = true)]
    pub namespace: Option<String>,
    /// The queue.
    #[arg(required = true)]
    pub queue: Option<String>,
    /// Only jobs in this state (default: all).
    #[arg(long, value_enum)]
    pub state: Option<JobStateArg>,
    /// Most jobs to show, in enqueue order (1-10000).
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub limit: u32,
    #[command(flatten)]
    pub filter: JobFilterArgs,
    #[command(flatten)]
    pub client: ClientArgs,
}

/// Which jobs of a queue (ListJobs' filter, issue 33): every flag given must match.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct JobFilterArgs {
    /// Only jobs with this name.
    #[arg(long)]
    pub name: Option<String>,
    /// Only jobs with this dedup key.
    #[arg(long)]
    pub dedup_key: Option<String>,
    /// Only jobs with this header: KEY (any value) or KEY=VALUE.
    #[arg(long, value_name = "KEY[=VALUE]")]
    pub header: Option<String>,
    /// Only jobs with an error message containing TEXT (ignoring ASCII case).
    #[arg(long, value_name = "TEXT")]
    pub error: Option<String>,
    /// Only jobs created at or after this RFC 3339 time (2026-01-31T12:00:00Z).
    #[arg(long, value_name = "TIME", value_parser = humantime::parse_rfc3339_weak)]
    pub since: Option<std::time::SystemTime>,
    /// Only jobs created before this RFC 3339 time.
    #[arg(long, value_name = "TIME", value_parser = humantime::parse_rfc3339_weak)]
    pub until: Option<std::time::SystemTime>,
}

impl JobFilterArgs {
    /// Whether no flag is given.
    pub fn is_empty(&self) -> bool {
        self.name.is_none()
            && self.dedup_key.is_none()
            && self.header.is_none()
            && self.error.is_none()
            && self.since.is_none()
            && self.until.is_none()
    }
}

/// `dueq bulk`: RetryJobs, CancelJobs or DeleteJobs (issue 33).
#[derive(Debug, Clone, clap::Args)]
pub struct BulkArgs {
    #[command(subcommand)]
    pub action: BulkCommand,
}

/// What `dueq bulk` does to each selected job (as `RetryJob`, `CancelJob` and
/// `DeleteJob` would; a job that one would refuse is a skip, with its reason).
#[derive(Debug, Clone, Subcommand)]
pub enum BulkCommand {
    /// Make dead jobs pending again (RetryJobs).
    #[command(after_help = CLIENT_HELP)]
    Retry(BulkTarget),
    /// Cancel pending, delayed or waiting jobs; ask active ones to stop (CancelJobs).
    #[command(after_help = CLIENT_HELP)]
    Cancel(BulkTarget),
    /// Delete jobs no worker holds (DeleteJobs; needs --yes).
    #[command(after_help = CLIENT_HELP)]
    Delete(BulkTarget),
}

/// The jobs of one queue a bulk action takes.
#[derive(Debug, Clone, clap::Args)]
pub struct BulkTarget {
    /// The namespace.
    #[arg(long, short = 'n', env = "DUEQ_NAMESPACE")]
    pub namespace: String,
    /// The queue.
    pub queue: String,
    /// These jobs (repeat the flag or separate ids with commas; at most 1000).
    #[arg(
        long = "id",
        value_name = "JOB_ID",
        value_delimiter = ',',
        required_unless_present = "all_matching",
        conflicts_with = "all_matching"
    )]
    pub ids: Vec<String>,
    /// Every job of the queue matching --state and the filter flags, called in
    /// batches until none is left.
    #[arg(long)]
    pub all_matching: bool,
    /// With --all-matching: only jobs in this state.
    #[arg(long, value_enum, requires = "all_matching")]
    pub state: Option<JobStateArg>,
    #[command(flatten)]
    pub filter: JobFilterArgs,
    /// Really delete (`dueq bulk delete` only): without it nothing is sent and the
    /// command exits 2.
    #[arg(long)]
    pub yes: bool,
    /// No progress bar (it is drawn on stderr, only on a terminal).
    #[arg(long)]
    pub no_progress: bool,
    #[command(flatten)]
    pub client: ClientArgs,
}

/// What `dueq jobs` shows besides a queue's jobs.
#[derive(Debug, Clone, Subcommand)]
pub enum JobsCommand {
    /// A namespace's dead jobs grouped by error (ListDeadGroups): jobs of one queue
    /// whose last error messages match once numbers, ids and quoted strings are
    /// normalised; the largest group first. Retry or delete a group with
    /// `dueq retry-dead --fingerprint` / `dueq purge --state dead --fingerprint`.
    #[command(name = "dead-groups", after_help = CLIENT_HELP)]
    DeadGroups(DeadGroupsArgs),
}

/// `dueq jobs dead-groups`.
#[derive(Debug, Clone, clap::Args)]
pub struct DeadGroupsArgs {
    /// The namespace.
    #[arg(long, short = 'n', env = "DUEQ_NAMESPACE")]
    pub namespace: String,
    /// Only this queue's groups (default: every queue).
    #[arg(long, short = 'q')]
    pub queue: Option<String>,
    /// Most groups to show, largest first (1-10000).
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub limit: u32,
    #[command(flatten)]
    pub client: ClientArgs,
}

/// `dueq job`: one job with its error history (`dueq job -n NS ID`), or an action on
/// it (`dueq job delete|release -n NS ID`, issue 36).
#[derive(Debug, Clone, clap::Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct JobArgs {
    #[command(subcommand)]
    pub action: Option<JobCommand>,
    /// The namespace.
    #[arg(long, short = 'n', env = "DUEQ_NAMESPACE", required = true)]
    pub namespace: Option<String>,
    /// The job id.
    #[arg(required = true)]
    pub job_id: Option<String>,
    #[command(flatten)]
    pub client: ClientArgs,
}

/// What `dueq job` does to one job.
#[derive(Debug, Clone, Subcommand)]
pub enum JobCommand {
    /// Delete a job no worker holds (DeleteJob): pending, delayed, completed, dead or
    /// cancelled. Its id and dedup key are free again at once.
    #[command(after_help = CLIENT_HELP)]
    Delete(JobTarget),
    /// Take an active job back from its worker now (ReleaseJob): pending again at the
    /// head of its queue; the worker's next ack, fail or extend is refused (ABORTED).
    #[command(after_help = CLIENT_HELP)]
    Release(ReleaseJobTarget),
}

/// One job of one namespace.
#[derive(Debug, Clone, clap::Args)]
pub struct JobTarget {
    /// The namespace.
    #[arg(long, short = 'n', env = "DUEQ_NAMESPACE")]
    pub namespace: String,
    /// The job id.
    pub job_id: String,
    #[command(flatten)]
    pub client: ClientArgs,
}

/// The job to release, and how.
#[derive(Debug, Clone, clap::Args)]
pub struct ReleaseJobTarget {
    #[command(flatten)]
    pub target: JobTarget,
    /// Count the released attempt, as a lease expiry would (the job goes dead if it
    /// has used max_attempts); by default the attempt is given back.
    #[arg(long)]
    pub count_attempt: bool,
    /// Why (at most 4096 bytes), recorded in the job's error history; default
    /// "released by an operator".
    #[arg(long, default_value = "")]
    pub reason: String,
}

/// `dueq schedules`: a namespace's schedules.
#[derive(Debug, Clone, clap::Args)]
pub struct SchedulesArgs {
    /// The namespace.
    #[arg(long, short = 'n', env = "DUEQ_NAMESPACE")]
    pub namespace: String,
    /// Only schedules with this status (default: all).
    #[arg(long, value_enum)]
    pub status: Option<ScheduleStatusArg>,
    /// Only overdue schedules: active, not yet claimed, due at least this long ago
    /// (Redis clock); "--overdue" alone means every one past due. Lists the most
    /// overdue first.
    #[arg(long, value_name = "AGE", num_args = 0..=1, default_missing_value = "0s", value_parser = humantime::parse_duration)]
    pub overdue: Option<Duration>,
    /// The order: by id (every schedule), or by next run (active schedules only,
    /// soonest first).
    #[arg(long, value_enum, default_value_t = ScheduleOrderArg::Id)]
    pub order: ScheduleOrderArg,
    /// Most schedules to show (1-10000).
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub limit: u32,
    #[command(flatten)]
    pub client: ClientArgs,
}

/// The order of `dueq schedules`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ScheduleOrderArg {
    /// By id.
    Id,
    /// By next run time, soonest first (active schedules only).
    NextRun,
}

/// `dueq schedule …`: one schedule.
#[derive(Debug, Clone, clap::Args)]
pub struct ScheduleArgs {
    #[command(subcommand)]
    pub action: ScheduleAction,
}

#[derive(Debug, Clone, Subcommand)]
pub enum ScheduleAction {
    /// Show one schedule.
    #[command(after_help = CLIENT_HELP)]
    Show(ScheduleTarget),
    /// Pause a schedule: it is never claimed until resumed.
    #[command(after_help = CLIENT_HELP)]
    Pause(PauseScheduleTarget),
    /// Resume a paused schedule; its next run is computed from now.
    #[command(after_help = CLIENT_HELP)]
    Resume(ScheduleTarget),
    /// Trigger an occurrence now, outside the timing (TriggerSchedule); the next run
    /// does not move. Prints the occurrence id workers will get.
    #[command(after_help = CLIENT_HELP)]
    Trigger(TriggerScheduleTarget),
    /// Set or postpone the next run without touching the timing (SetScheduleNextRun):
    /// the next run is handed out at TIME, then the timing goes on with its first slot
    /// after TIME.
    #[command(after_help = CLIENT_HELP)]
    NextRun(NextRunScheduleTarget),
    /// Delete a schedule (DeleteSchedule): it is never claimed again; occurrences
    /// already handed out stay with their workers. NOT_FOUND if there is none.
    #[command(after_help = CLIENT_HELP)]
    Delete(ScheduleTarget),
}

/// The schedule whose next run moves, and where to.
#[derive(Debug, Clone, clap::Args)]
pub struct NextRunScheduleTarget {
    #[command(flatten)]
    pub target: ScheduleTarget,
    /// The new next run, RFC 3339 (e.g. 2026-12-24T05:00:00Z or
    /// 2026-12-24T06:00:00+01:00).
    #[arg(value_name = "TIME", value_parser = parse_rfc3339)]
    pub time: chrono::DateTime<chrono::Utc>,
    /// Refuse (ABORTED) unless the schedule is still at this revision (its timing did
    /// not change since you looked); 0 or unset: not checked.
    #[arg(long, default_value_t = 0)]
    pub expected_revision: u64,
}

fn parse_rfc3339(text: &str) -> Result<chrono::DateTime<chrono::Utc>, String> {
    chrono::DateTime::parse_from_rfc3339(text)
        .map(|t| t.with_timezone(&chrono::Utc))
        .map_err(|e| format!("not an RFC 3339 time ({e}), e.g. 2026-12-24T05:00:00Z"))
}

/// The schedule to trigger.
#[derive(Debug, Clone, clap::Args)]
pub struct TriggerScheduleTarget {
    #[command(flatten)]
    pub target: ScheduleTarget,
    /// Trigger even while an earlier leased occurrence is outstanding under
    /// OVERLAP_POLICY_SKIP or BUFFER_ONE.
    #[arg(long)]
    pub ignore_overlap: bool,
}

/// The schedule to pause, and why.
#[derive(Debug, Clone, clap::Args)]
pub struct PauseScheduleTarget {
    #[command(flatten)]
    pub target: ScheduleTarget,
    /// Why it is paused (at most 1 KiB), shown with the schedule until it is resumed.
    #[arg(long, default_value = "")]
    pub note: String,
}

/// One schedule of one namespace.
#[derive(Debug, Clone, clap::Args)]
pub struct ScheduleTarget {
    /// The namespace.
    #[arg(long, short = 'n', env = "DUEQ_NAMESPACE")]
    pub namespace: String,
    /// The schedule id.
    pub id: String,
    #[command(flatten)]
    pub client: ClientArgs,
}

/// `dueq preview`: the next fire times of a cron, an interval or a stored schedule.
#[derive(Debug, Clone, clap::Args)]
pub struct PreviewArgs {
    /// A cron expression (5 fields, or 6 with seconds first).
    #[arg(conflicts_with_all = ["every", "id"], required_unless_present_any = ["every", "id"])]
    pub cron: Option<String>,
    /// A fixed interval instead of a cron (e.g. "90s", "1h").
    #[arg(long, value_parser = humantime::parse_duration, conflicts_with = "id")]
    pub every: Option<Duration>,
    /// A stored schedule of --namespace instead.
    #[arg(long)]
    pub id: Option<String>,
    /// The IANA time zone the cron is evaluated in (default UTC).
    #[arg(long = "tz", value_name = "ZONE", conflicts_with = "id")]
    pub timezone: Option<String>,
    /// How many fire times (1-1000).
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub count: u32,
    /// List fire times at or after this instant (RFC 3339; default now, or the stored
    /// schedule's next run).
    #[arg(long, value_parser = humantime::parse_rfc3339_weak)]
    pub from: Option<std::time::SystemTime>,
    /// The namespace (required with --id; any valid name otherwise).
    #[arg(long, short = 'n', env = "DUEQ_NAMESPACE", default_value = "default")]
    pub namespace: String,
    #[command(flatten)]
    pub client: ClientArgs,
}

/// `dueq migrate`: Migrate, following its progress.
#[derive(Debug, Clone, clap::Args)]
pub struct MigrateArgs {
    /// The namespace to migrate.
    #[arg(
        long,
        short = 'n',
        env = "DUEQ_NAMESPACE",
        required_unless_present = "all",
        conflicts_with = "all"
    )]
    pub namespace: Option<String>,
    /// Every namespace under the service's key prefix, one after the other.
    #[arg(long)]
    pub all: bool,
    /// Report what would change and write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Records per batch (1-5000; the service's default without it).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=5000))]
    pub batch_size: Option<u32>,
    /// No progress bar (it is drawn on stderr, and only on a terminal).
    #[arg(long)]
    pub no_progress: bool,
    #[command(flatten)]
    pub client: ClientArgs,
}

/// `dueq flow …`: a flow of jobs (issue 34).
#[derive(Debug, Clone, clap::Args)]
pub struct FlowArgs {
    #[command(subcommand)]
    pub action: FlowAction,
}

#[derive(Debug, Clone, Subcommand)]
pub enum FlowAction {
    /// Enqueue a flow described in a JSON file (EnqueueFlow): {"flow_id"?, "nodes":
    /// [{"ref", "queue", "name", "payload"? (text), "after"? [refs],
    /// "on_dependency_failure"? cancel|run|skip, "job_id"?, "headers"? {k: v}}]}.
    /// Prints the flow id and each node's job id.
    #[command(after_help = CLIENT_HELP)]
    Enqueue(FlowEnqueueArgs),
    /// Show a flow (GetFlow): its state and every node with its state, queue,
    /// dependencies, attempts and the dependency that failed it.
    #[command(after_help = CLIENT_HELP)]
    Get(FlowTarget),
    /// Cancel a flow (CancelFlow): every node not finished ends cancelled (active
    /// ones are asked to stop).
    #[command(after_help = CLIENT_HELP)]
    Cancel(FlowTarget),
    /// Retry a flow (RetryFlow): its dead, cancelled and skipped nodes run again,
    /// completed ones are kept.
    #[command(after_help = CLIENT_HELP)]
    Retry(FlowTarget),
}

/// `dueq flow enqueue`.
#[derive(Debug, Clone, clap::Args)]
pub struct FlowEnqueueArgs {
    /// The namespace.
    #[arg(long, short = 'n', env = "DUEQ_NAMESPACE")]
    pub namespace: String,
    /// The flow as JSON ("-": standard input).
    #[arg(long, value_name = "FLOW.json")]
    pub file: PathBuf,
    #[command(flatten)]
    pub client: ClientArgs,
}

/// One flow of one namespace.
#[derive(Debug, Clone, clap::Args)]
pub struct FlowTarget {
    /// The namespace.
    #[arg(long, short = 'n', env = "DUEQ_NAMESPACE")]
    pub namespace: String,
    /// The flow id.
    pub flow_id: String,
    #[command(flatten)]
    pub client: ClientArgs,
}
