//! The Work stream's edge: its first message (validated and authorised before any
//! work is handed out), the worker's later messages into domain inputs, and the
//! loop's outputs into messages. The loop itself is `crate::jobs::work`.

use std::{
    pin::Pin,
    sync::{Arc, Mutex},
    time::Duration,
};

use tokio::sync::mpsc;
use tokio_stream::{wrappers::ReceiverStream, Stream, StreamExt};
use tonic::{Request, Status, Streaming};
use tracing::Span;

use super::{
    check, claim_queues, extended_to_proto, extension_of, failed_to_proto, failure_of,
    outcome_code, validate, ApiError, QueueApi,
};
use crate::{
    api::authorize::{self, authorize_caller, may_call, Reach, Recheck},
    auth::{Caller, Scope},
    domain::Namespace,
    jobs::{WorkInput, WorkOptions, WorkOutput},
    proto::{self, work_request::Request as In, work_response::Response as Out},
    rpc::Rpc,
    sync::lock,
    telemetry,
    wire::undecodable,
};

pub(in crate::api) type WorkStream =
    Pin<Box<dyn Stream<Item = Result<proto::WorkResponse, Status>> + Send + 'static>>;

/// How long a new stream may take to send its `start`, once its first message is
/// in: a backstop, as the stream takes its long-poll slot (`--max-long-polls`) only
/// once its first message has come within `--body-timeout` (`layers::ShedLayer`).
const START_TIMEOUT: Duration = Duration::from_secs(10);
/// Most jobs a stream may hold.
const MAX_CAPACITY: u32 = 1000;
/// Worker messages buffered ahead of the loop; beyond it HTTP/2 flow control holds
/// the worker back.
const INPUT_BUFFER: usize = 256;

/// Opens a Work stream: reads and checks `start`, then runs the loop in its own task
/// (it must outlive the response when the worker goes away, to release the jobs).
pub(in crate::api) async fn work(
    api: &QueueApi,
    rpc: &'static Rpc,
    request: Request<Streaming<proto::WorkRequest>>,
) -> Result<WorkStream, ApiError> {
    let caller = request.extensions().get::<Caller>().cloned();
    // The target is in the start: set once it is read.
    let recheck = Recheck::of(&request, rpc, Scope::Everything, &api.rescue);
    let mut inbound = request.into_inner();
    // The role before the message: a caller that may not Work anywhere is refused
    // whatever its start says (or whether it sends one).
    let checked = first_message(&mut inbound, rpc).await.and_then(|start| {
        authorize::namespace("start.namespace", &start.namespace).map(|ns| (start, ns))
    });
    let (start, namespace) = match checked {
        Ok(checked) => checked,
        Err(invalid) => {
            may_call(caller.as_ref(), rpc, recheck.via)?;
            return Err(invalid);
        }
    };
    authorize_caller(caller.as_ref(), rpc, namespace.scope(), recheck.via)?;
    let recheck = recheck.on(namespace.scope());
    let options = options(api, &start)?;
    let (input, inputs) = mpsc::channel(INPUT_BUFFER);
    let (outputs, output) = mpsc::channel(options.capacity + INPUT_BUFFER);
    // A malformed message ends the stream with INVALID_ARGUMENT naming its field (a
    // revoked caller with its refusal), after the loop has released the worker's jobs.
    let refusal: Arc<Mutex<Option<Status>>> = Arc::default();
    tokio::spawn(read(
        api.clone(),
        namespace.clone(),
        inbound,
        input,
        refusal.clone(),
        recheck,
    ));
    tokio::spawn(api.jobs.clone().work(namespace, options, inputs, outputs));
    let api = api.clone();
    // The stream's span: each job handed out gets a span under it (`telemetry`).
    let span = tracing::Span::current();
    let replies = ReceiverStream::new(output).map(move |out| reply(&api, &span, out));
    let ending = tokio_stream::once(()).filter_map(move |()| lock(&refusal).take().map(Err));
    Ok(Box::pin(replies.chain(ending)))
}

/// The stream's first message, which must be its `start`, within [`START_TIMEOUT`].
async fn first_message(
    inbound: &mut Streaming<proto::WorkRequest>,
    rpc: &'static Rpc,
) -> Result<proto::WorkStart, ApiError> {
    match tokio::time::timeout(START_TIMEOUT, inbound.message()).await {
        Ok(Ok(Some(proto::WorkRequest {
            request: Some(In::Start(start)),
        }))) => Ok(start),
        Ok(Err(status)) => {
            let reason = match undecodable(rpc.method, status.code(), status.message()) {
                Some(_) => format!("could not be decoded ({})", status.message()),
                None => format!("the stream failed: {}", status.message()),
            };
            Err(ApiError::invalid("start", reason))
        }
        Err(_) => Err(ApiError::invalid(
            "start",
            format!("the first message must be `start`, within {START_TIMEOUT:?}"),
        )),
        Ok(_) => Err(ApiError::invalid(
            "start",
            "the first message must be `start`",
        )),
    }
}

fn options(api: &QueueApi, start: &proto::WorkStart) -> Result<WorkOptions, ApiError> {
    let field = |f: &str| format!("start.{f}");
    check::max_len(&field("worker_id"), &start.worker_id, check::MAX_ID_LEN)?;
    let queues = claim_queues(&start.queues).map_err(|e| prefixed(e, "start."))?;
    let lease_ms = start
        .lease
        .as_ref()
        .map(|d| api.limits.lease_ms(&field("lease"), d))
        .transpose()?;
    let capacity = match start.capacity {
        0 => 1,
        n if n > MAX_CAPACITY => {
            return Err(ApiError::invalid(
                field("capacity"),
                format!("must be at most {MAX_CAPACITY}"),
            ))
        }
        n => n,
    };
    Ok(WorkOptions {
        queues,
        worker: start.worker_id.clone(),
        lease_ms,
        capacity: capacity as usize,
        max_bytes: api.limits.max_message_size,
    })
}

/// The field of an error from a shared check, under `start.`.
fn prefixed(error: ApiError, prefix: &str) -> ApiError {
    match error {
        ApiError::Invalid { field, reason } => ApiError::Invalid {
            field: format!("{prefix}{field}"),
            reason,
        },
        other => other,
    }
}

/// Reads the worker's messages into the loop's input until the worker's side ends or
/// sends something malformed or undecodable, or its credential is revoked; either way
/// the input closes, and the loop releases.
async fn read(
    api: QueueApi,
    namespace: Namespace,
    mut inbound: Streaming<proto::WorkRequest>,
    input: mpsc::Sender<WorkInput>,
    refusal: Arc<Mutex<Option<Status>>>,
    recheck: Recheck,
) {
    loop {
        let message = tokio::select! {
            message = inbound.message() => message,
            // The loop ended (shutdown, worker unreachable): stop reading.
            _ = input.closed() => return,
        };
        let request = match message {
            Ok(Some(proto::WorkRequest { request })) => request,
            Ok(None) => return,
            Err(status) => {
                *lock(&refusal) = undecodable("Work", status.code(), status.message());
                return;
            }
        };
        if let Some(refused) = recheck.refusal() {
            *lock(&refusal) = Some(refused);
            return;
        }
        match parse(&api, &namespace, request) {
            Ok(parsed) => {
                if input.send(parsed).await.is_err() {
                    return;
                }
            }
            Err(error) => {
                *lock(&refusal) = Some(api.rescue.status(error));
                return;
            }
        }
    }
}

/// One worker message as a loop input.
fn parse(
    api: &QueueApi,
    namespace: &Namespace,
    request: Option<In>,
) -> Result<WorkInput, ApiError> {
    let same_namespace = |field: &str, ns: &str| {
        if ns.is_empty() || ns == namespace.as_str() {
            Ok(())
        } else {
            Err(ApiError::invalid(
                field,
                "must be empty or the stream's namespace",
            ))
        }
    };
    match request {
        None => Err(ApiError::invalid("request", "is required")),
        Some(In::Start(_)) => Err(ApiError::invalid("start", "is sent once, first")),
        Some(In::Ack(lease)) => {
            check::id("ack.job_id", &lease.job_id)?;
            check::id("ack.lease_token", &lease.lease_token)?;
            validate::result("ack.result", &lease.result)?;
            Ok(WorkInput::Ack {
                id: lease.job_id,
                token: lease.lease_token,
                result: lease.result,
            })
        }
        Some(In::Fail(req)) => {
            same_namespace("fail.namespace", &req.namespace)?;
            let (id, token, failure) = failure_of(api, req).map_err(|e| prefixed(e, "fail."))?;
            Ok(WorkInput::Fail { id, token, failure })
        }
        Some(In::Extend(req)) => {
            same_namespace("extend.namespace", &req.namespace)?;
            let (lease_ms, progress) =
                extension_of(api, &req).map_err(|e| prefixed(e, "extend."))?;
            Ok(WorkInput::Extend {
                id: req.job_id,
                token: req.lease_token,
                lease_ms,
                progress,
            })
        }
    }
}

/// One loop output as a message (or the stream's end, on shutdown).
fn reply(api: &QueueApi, span: &Span, out: WorkOutput) -> Result<proto::WorkResponse, Status> {
    let response = match out {
        WorkOutput::Job(job) => {
            telemetry::handed_out(span, &job.id, &job.headers);
            Out::Job(super::convert::claimed_to_proto(*job))
        }
        WorkOutput::Acked { id, result } => {
            let (code, message) = outcome_code(api, result.map_err(ApiError::from));
            Out::Ack(proto::AckResult {
                job_id: id,
                code,
                message,
            })
        }
        WorkOutput::Failed { id, result } => {
            let (result, code, message) = match result {
                Ok(failed) => (Some(failed_to_proto(failed)), 0, String::new()),
                Err(error) => {
                    let (code, message) = outcome_code(api, Err::<(), _>(error.into()));
                    (None, code, message)
                }
            };
            Out::Fail(proto::FailResult {
                job_id: id,
                code,
                message,
                result,
            })
        }
        WorkOutput::Extended { id, result } => {
            let (result, code, message) = match result {
                Ok(extended) => (Some(extended_to_proto(extended)), 0, String::new()),
                Err(error) => {
                    let (code, message) = outcome_code(api, Err::<(), _>(error.into()));
                    (None, code, message)
                }
            };
            Out::Extend(proto::ExtendResult {
                job_id: id,
                code,
                message,
                result,
            })
        }
        WorkOutput::Cancel { id, token } => Out::Cancel(proto::JobLease {
            job_id: id,
            lease_token: token,
            result: Vec::new(),
        }),
        WorkOutput::ShuttingDown => {
            return Err(Status::unavailable(
                "the server is shutting down; open a new stream (the jobs this one held \
                 keep their leases: ack them there, or by AckJob)",
            ))
        }
    };
    Ok(proto::WorkResponse {
        response: Some(response),
    })
}
