//! The operator commands (`dueq namespaces`, `dueq queues`, `dueq queue` (with the
//! flow-control subcommands of `flow`), `dueq
//! retry-dead`, `dueq purge`, `dueq jobs`, `dueq job`, `dueq schedules`, `dueq
//! schedule`, `dueq preview`, `dueq migrate`, `dueq flow` (flows of jobs), `dueq
//! workers`, `dueq audit`): clients of a running service over the generated
//! tonic client, with TLS and a bearer token (`connect`), printing a table or one
//! JSON document (`render`), and exiting with a code that says what failed (`Failure`).

mod bulk;
pub(crate) mod connect;
mod console;
mod flow;
mod flows;
mod jobs;
mod migrate;
mod queues;
mod render;
mod schedules;

use std::process::ExitCode;

use dueq::config::ctl::OperatorCommand;
use tonic::Code;

/// Why a command failed; each kind has its own exit code (config::ctl::CLIENT_HELP).
#[derive(Debug)]
pub(crate) enum Failure {
    /// The service answered an error status: exit 1.
    Status(tonic::Status),
    /// A bad command line or an unreadable local file: exit 2.
    Usage(String),
    /// The service could not be reached: exit 3.
    Unreachable(String),
    /// Migrate finished but reported records it could not use: exit 4.
    Problems(String),
}

impl Failure {
    fn exit_code(&self) -> u8 {
        match self {
            Failure::Status(_) => 1,
            Failure::Usage(_) => 2,
            Failure::Unreachable(_) => 3,
            Failure::Problems(_) => 4,
        }
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Status(status) => {
                write!(f, "{}: {}", code_name(status.code()), status.message())
            }
            Failure::Usage(why) | Failure::Unreachable(why) | Failure::Problems(why) => {
                f.write_str(why)
            }
        }
    }
}

impl From<tonic::Status> for Failure {
    fn from(status: tonic::Status) -> Self {
        // A call that could not reach the service (or timed out) comes back as a
        // status too, made on this side, with the transport error as its source (a
        // status the service sent has none).
        use std::error::Error;
        if let Some(cause) = status.source() {
            // The cause alone: the status's own Display is a dump of its fields.
            let cause = connect::sources(cause);
            let hint = tls_hint(&cause);
            return Failure::Unreachable(format!("{}: {cause}{hint}", code_name(status.code())));
        }
        Failure::Status(status)
    }
}

/// Set by `connect` when this command talks TLS without a client certificate: a
/// transport failure may then be the service refusing a client without one (one
/// command per process, so a flag for the process serves).
pub(super) static TLS_WITHOUT_CERT: std::sync::atomic::AtomicBool =
    std::sync::atomic::AtomicBool::new(false);

/// What a transport failure says about the client certificate, when it is about
/// one: the service's TLS alert, or any failure of a TLS connection that showed
/// none (unless the cause already names a certificate: the service's own, say). A TLS 1.3 server refuses a certificate, or the lack of one, after the
/// handshake, so the client sees the connection closed, reset or not ready rather
/// than an alert, depending on when it wrote.
pub(super) fn tls_hint(cause: &str) -> &'static str {
    if cause.contains("CertificateRequired") {
        "; the service requires a client certificate (--tls-cert, --tls-key)"
    } else if [
        "BadCertificate",
        "UnknownCA",
        "UnknownCa",
        "CertificateUnknown",
    ]
    .iter()
    .any(|alert| cause.contains(alert))
    {
        "; the service did not accept the client certificate (--tls-cert, --tls-key)"
    } else if TLS_WITHOUT_CERT.load(std::sync::atomic::Ordering::Relaxed)
        && !cause.contains("certificate")
    {
        "; no client certificate was shown: if the service requires one (mTLS), give \
         --tls-cert and --tls-key"
    } else {
        ""
    }
}

/// Runs one operator command and turns its outcome into the process's exit code.
pub(crate) async fn run(command: OperatorCommand) -> ExitCode {
    let name = command_name(&command);
    let outcome = match command {
        OperatorCommand::Namespaces(args) => queues::namespaces(args).await,
        OperatorCommand::Queues(args) => queues::queues(args).await,
        OperatorCommand::Queue(args) => queues::queue(args).await,
        OperatorCommand::RetryDead(args) => queues::retry_dead(args).await,
        OperatorCommand::Purge(args) => queues::purge(args).await,
        OperatorCommand::Jobs(args) => jobs::jobs(args).await,
        OperatorCommand::Job(args) => jobs::job(args).await,
        OperatorCommand::Bulk(args) => bulk::run(args).await,
        OperatorCommand::Schedules(args) => schedules::list(args).await,
        OperatorCommand::Schedule(args) => schedules::act(args).await,
        OperatorCommand::Preview(args) => schedules::preview(args).await,
        OperatorCommand::Migrate(args) => migrate::run(args).await,
        OperatorCommand::Flow(args) => flows::run(args).await,
        OperatorCommand::Workers(args) => console::workers(args).await,
        OperatorCommand::Audit(args) => console::audit(args).await,
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => {
            eprintln!("dueq {name}: {failure}");
            ExitCode::from(failure.exit_code())
        }
    }
}

fn command_name(command: &OperatorCommand) -> &'static str {
    use dueq::config::ctl::{
        BulkCommand, FlowAction, JobCommand, JobsCommand, PolicyAction, PolicyArgs, QueueAction,
        ScheduleAction,
    };
    match command {
        OperatorCommand::Namespaces(_) => "namespaces",
        OperatorCommand::Queues(_) => "queues",
        OperatorCommand::Queue(args) => match args.action {
            QueueAction::Pause(_) => "queue pause",
            QueueAction::Resume(_) => "queue resume",
            QueueAction::Policy(PolicyArgs {
                action: PolicyAction::Set(_),
            }) => "queue policy set",
            QueueAction::Policy(PolicyArgs {
                action: PolicyAction::Get(_),
            }) => "queue policy get",
            QueueAction::KeyLimit(_) => "queue key-limit",
            QueueAction::Throttle(_) => "queue throttle",
            QueueAction::Keys(_) => "queue keys",
        },
        OperatorCommand::RetryDead(_) => "retry-dead",
        OperatorCommand::Purge(_) => "purge",
        OperatorCommand::Jobs(args) => match args.action {
            None => "jobs",
            Some(JobsCommand::DeadGroups(_)) => "jobs dead-groups",
        },
        OperatorCommand::Job(args) => match args.action {
            None => "job",
            Some(JobCommand::Delete(_)) => "job delete",
            Some(JobCommand::Release(_)) => "job release",
        },
        OperatorCommand::Bulk(args) => match args.action {
            BulkCommand::Retry(_) => "bulk retry",
            BulkCommand::Cancel(_) => "bulk cancel",
            BulkCommand::Delete(_) => "bulk delete",
        },
        OperatorCommand::Schedules(_) => "schedules",
        OperatorCommand::Schedule(args) => match args.action {
            ScheduleAction::Show(_) => "schedule show",
            ScheduleAction::Pause(_) => "schedule pause",
            ScheduleAction::Resume(_) => "schedule resume",
            ScheduleAction::Trigger(_) => "schedule trigger",
            ScheduleAction::NextRun(_) => "schedule next-run",
            ScheduleAction::Delete(_) => "schedule delete",
        },
        OperatorCommand::Preview(_) => "preview",
        OperatorCommand::Migrate(_) => "migrate",
        OperatorCommand::Flow(args) => match args.action {
            FlowAction::Enqueue(_) => "flow enqueue",
            FlowAction::Get(_) => "flow get",
            FlowAction::Cancel(_) => "flow cancel",
            FlowAction::Retry(_) => "flow retry",
        },
        OperatorCommand::Workers(_) => "workers",
        OperatorCommand::Audit(_) => "audit",
    }
}

/// The canonical name of a gRPC code, as grpcurl and the gRPC docs spell it.
pub(crate) fn code_name(code: Code) -> &'static str {
    match code {
        Code::Ok => "OK",
        Code::Cancelled => "CANCELLED",
        Code::Unknown => "UNKNOWN",
        Code::InvalidArgument => "INVALID_ARGUMENT",
        Code::DeadlineExceeded => "DEADLINE_EXCEEDED",
        Code::NotFound => "NOT_FOUND",
        Code::AlreadyExists => "ALREADY_EXISTS",
        Code::PermissionDenied => "PERMISSION_DENIED",
        Code::ResourceExhausted => "RESOURCE_EXHAUSTED",
        Code::FailedPrecondition => "FAILED_PRECONDITION",
        Code::Aborted => "ABORTED",
        Code::OutOfRange => "OUT_OF_RANGE",
        Code::Unimplemented => "UNIMPLEMENTED",
        Code::Internal => "INTERNAL",
        Code::Unavailable => "UNAVAILABLE",
        Code::DataLoss => "DATA_LOSS",
        Code::Unauthenticated => "UNAUTHENTICATED",
    }
}
