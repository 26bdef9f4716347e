//! The audit of operator actions (issue 33): one record per call of an audited RPC
//! (the RPC table's `audited` column), made in one place once the call is answered
//! (`rpcs.rs` wraps every audited handler in [`Audit::begin`] and
//! [`AuditCall::finish`]), so it carries the outcome: the status code's name, or
//! `PERMISSION_DENIED` for a refused call. Each record is logged on the
//! `dueq::audit` target at once and appended to its namespace's audit log in Redis
//! (a capped stream, `store::ops::append_audit`) by one background task per
//! replica, off the call's path: the records of many calls go in one script call
//! per namespace, and a record that cannot be written (Redis down or full, the
//! buffer full) is logged and counted (`dueq_audit_dropped_total`), never turned
//! into the caller's error.

use std::{collections::BTreeMap, sync::Arc};

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tonic::{Code, Request, Response, Status};

use super::{
    audit_lines::{line, via},
    authorize::{Reach, Scoped},
};
use crate::{
    auth::{Caller, Scope},
    metrics::Metrics,
    proto,
    rpc::Rpc,
    store::{
        ops::append_audit::{AppendAudit, AuditRecord},
        Store,
    },
};

/// Records buffered for the writer; beyond it a record is dropped (and counted).
const BUFFER: usize = 10_000;
/// Most records one script call appends.
const MAX_PER_CALL: usize = 100;
/// Longest target kept in a record, bytes (a request's ids can be long).
const MAX_TARGET_LEN: usize = 512;

/// What an audited request names beyond its namespace, for its record's target:
/// `kind:value` pairs separated by spaces. Every request of an audited line of the
/// RPC table implements it (the table does not compile otherwise).
pub(super) trait Subject {
    fn subject(&self) -> String;
}

/// `impl Subject` for requests, each from its fields: `Request: kind = field, ...;`.
macro_rules! subjects {
    ($($req:ident: $($kind:literal = $field:ident),*;)*) => {
        $(impl Subject for proto::$req {
            fn subject(&self) -> String {
                subject_of(&[$(($kind, self.$field.as_str())),*])
            }
        })*
    };
}

subjects! {
    DeleteScheduleRequest: "schedule" = id;
    PauseScheduleRequest: "schedule" = id;
    ResumeScheduleRequest: "schedule" = id;
    TriggerScheduleRequest: "schedule" = id;
    BackfillScheduleRequest: "schedule" = id;
    SetScheduleNextRunRequest: "schedule" = id;
    CancelJobRequest: "job" = job_id;
    RetryJobRequest: "job" = job_id;
    DeleteJobRequest: "job" = job_id;
    ReleaseJobRequest: "job" = job_id;
    CancelFlowRequest: "flow" = flow_id;
    RetryFlowRequest: "flow" = flow_id;
    PauseQueueRequest: "queue" = queue;
    ResumeQueueRequest: "queue" = queue;
    SetQueuePolicyRequest: "queue" = queue;
    SetKeyLimitRequest: "queue" = queue, "key" = key;
    ThrottleKeyRequest: "queue" = queue, "key" = key;
    RetryDeadJobsRequest: "queue" = queue, "group" = error_fingerprint;
    PurgeJobsRequest: "queue" = queue, "group" = error_fingerprint;
}

/// A bulk action (RetryJobs, CancelJobs, DeleteJobs): its queue and what it selects.
impl Subject for proto::BulkJobsRequest {
    fn subject(&self) -> String {
        let selection = match &self.selection {
            Some(proto::bulk_jobs_request::Selection::JobIds(ids)) => {
                format!("{}-ids", ids.job_ids.len())
            }
            Some(proto::bulk_jobs_request::Selection::Query(_)) => "query".to_owned(),
            None => String::new(),
        };
        subject_of(&[("queue", self.queue.as_str()), ("selection", &selection)])
    }
}

impl Subject for proto::MigrateRequest {
    fn subject(&self) -> String {
        let mut parts = Vec::new();
        if self.all_namespaces {
            parts.push(("namespaces", "all"));
        }
        if !self.source_prefix.is_empty() {
            parts.push(("source", self.source_prefix.as_str()));
        }
        subject_of(&parts)
    }
}

/// The non-empty parts, `kind:value` each, bounded to [`MAX_TARGET_LEN`].
fn subject_of(parts: &[(&str, &str)]) -> String {
    let mut text = String::new();
    for (kind, value) in parts.iter().filter(|(_, value)| !value.is_empty()) {
        if !text.is_empty() {
            text.push(' ');
        }
        text.push_str(kind);
        text.push(':');
        text.push_str(value);
    }
    if text.len() > MAX_TARGET_LEN {
        let mut end = MAX_TARGET_LEN;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
    }
    text
}

/// The gRPC name of a status code, as audit records spell outcomes.
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

/// The writer's buffer: (namespace, record).
type Buffer = mpsc::Sender<(String, AuditRecord)>;

/// Where audit records go: the log line, and the writer's buffer (none in unit
/// tests that build a bare `Rescue`).
#[derive(Debug, Default)]
pub(crate) struct Audit {
    sink: Option<(Buffer, Arc<Metrics>)>,
}

impl Audit {
    /// The audit of a service, and its writer, to spawn (it runs until `stop`).
    pub(crate) fn new(
        store: Arc<Store>,
        metrics: Arc<Metrics>,
        stop: CancellationToken,
    ) -> (Audit, impl std::future::Future<Output = ()>) {
        let (sender, receiver) = mpsc::channel(BUFFER);
        let writer = write(store, metrics.clone(), receiver, stop);
        (
            Audit {
                sink: Some((sender, metrics)),
            },
            writer,
        )
    }

    /// Starts the record of one call of an audited RPC, before it is authorised.
    pub(super) fn begin<T: Scoped + Subject>(
        self: &Arc<Self>,
        rpc: &'static Rpc,
        request: &Request<T>,
    ) -> AuditCall {
        debug_assert!(rpc.audited, "{rpc} is audited on its line of the RPC table");
        let caller = request.extensions().get::<Caller>();
        let namespace = match request.get_ref().target() {
            Ok(target) => match target.scope() {
                Scope::Namespace(namespace) => namespace.to_owned(),
                Scope::Everything => String::new(),
            },
            Err(_) => String::new(),
        };
        let via = via(request.metadata().as_ref());
        AuditCall {
            audit: self.clone(),
            pending: Some((
                namespace,
                AuditRecord {
                    principal: caller.map_or("(unknown)", Caller::name).to_owned(),
                    method: rpc.method,
                    target: request.get_ref().subject(),
                    outcome: "CANCELLED",
                    via,
                },
            )),
        }
    }

    fn record(&self, namespace: String, record: AuditRecord) {
        line(
            &record.principal,
            record.method,
            &namespace,
            &record.target,
            record.outcome,
            record.via,
        );
        // A call that named no valid namespace (or every namespace) has no log to go to.
        if namespace.is_empty() {
            return;
        }
        let Some((sender, metrics)) = &self.sink else {
            return;
        };
        if sender.try_send((namespace, record)).is_err() {
            metrics.audit_dropped(1);
            tracing::warn!(target: "dueq::audit", "audit buffer full: a record was dropped");
        }
    }
}

/// One audited call in progress: recorded once answered ([`AuditCall::finish`]), or
/// as CANCELLED when the call is dropped first (the client went away).
pub(super) struct AuditCall {
    audit: Arc<Audit>,
    pending: Option<(String, AuditRecord)>,
}

impl AuditCall {
    /// Records the call with the outcome of its answer.
    pub(super) fn finish<R>(mut self, answer: &Result<Response<R>, Status>) {
        if let Some((namespace, mut record)) = self.pending.take() {
            record.outcome = match answer {
                Ok(_) => "OK",
                Err(status) => code_name(status.code()),
            };
            self.audit.record(namespace, record);
        }
    }
}

impl Drop for AuditCall {
    fn drop(&mut self) {
        if let Some((namespace, record)) = self.pending.take() {
            self.audit.record(namespace, record);
        }
    }
}

/// The writer: takes what the calls recorded, up to [`MAX_PER_CALL`] per namespace
/// per script call, until `stop` (records still buffered then are written first).
async fn write(
    store: Arc<Store>,
    metrics: Arc<Metrics>,
    mut receiver: mpsc::Receiver<(String, AuditRecord)>,
    stop: CancellationToken,
) {
    loop {
        let first = tokio::select! {
            first = receiver.recv() => first,
            () = stop.cancelled() => receiver.try_recv().ok(),
        };
        let Some(first) = first else {
            return;
        };
        let mut batch: BTreeMap<String, Vec<AuditRecord>> = BTreeMap::new();
        batch.entry(first.0).or_default().push(first.1);
        let mut taken = 1;
        while taken < BUFFER {
            let Ok((namespace, record)) = receiver.try_recv() else {
                break;
            };
            batch.entry(namespace).or_default().push(record);
            taken += 1;
        }
        for (namespace, records) in batch {
            for chunk in records.chunks(MAX_PER_CALL) {
                if let Err(error) = store.run(&namespace, &AppendAudit { records: chunk }).await {
                    let lost = u64::try_from(chunk.len()).unwrap_or(u64::MAX);
                    metrics.audit_dropped(lost);
                    tracing::warn!(target: "dueq::audit", %namespace, %error, lost, "could not append audit records");
                }
            }
        }
    }
}
