//! Authorisation of one call, once its request is decoded: the caller the auth layer
//! found (`crate::layers::AuthLayer`) against the method and the namespace in the
//! message. A denied call is answered PERMISSION_DENIED before its handler runs, so
//! nothing is written. Operator actions that change or remove data are logged with
//! the principal on the `dueq::audit` target.

use tonic::Request;

use super::ApiError;
use crate::{
    auth::{Caller, Scope},
    proto,
};

/// Methods whose allowed calls are logged with the principal.
const AUDITED: &[&str] = &[
    "Migrate",
    "DeleteSchedule",
    "CancelJob",
    "RetryJob",
    "PauseSchedule",
    "ResumeSchedule",
    "TriggerSchedule",
    "BackfillSchedule",
    "PauseQueue",
    "ResumeQueue",
    "RetryDeadJobs",
    "PurgeJobs",
];

/// The namespace (or every namespace) a request reaches.
pub(super) trait Scoped {
    fn scope(&self) -> Scope<'_>;
}

macro_rules! one_namespace {
    ($($req:ident),* $(,)?) => {
        $(impl Scoped for proto::$req {
            fn scope(&self) -> Scope<'_> {
                Scope::Namespace(&self.namespace)
            }
        })*
    };
}

one_namespace!(
    UpsertScheduleRequest,
    GetScheduleRequest,
    ListSchedulesRequest,
    DeleteScheduleRequest,
    PauseScheduleRequest,
    ResumeScheduleRequest,
    TriggerScheduleRequest,
    BackfillScheduleRequest,
    ClaimDueScheduleRequest,
    AckOccurrenceRequest,
    PreviewScheduleRequest,
    EnqueueRequest,
    EnqueueBatchRequest,
    ClaimJobRequest,
    AckJobRequest,
    FailJobRequest,
    ExtendLeaseRequest,
    AckJobsRequest,
    GetJobRequest,
    ListJobsRequest,
    CancelJobRequest,
    RetryJobRequest,
    GetNamespaceStatusRequest,
    ListQueuesRequest,
    PauseQueueRequest,
    ResumeQueueRequest,
    RetryDeadJobsRequest,
    PurgeJobsRequest,
);

impl Scoped for proto::ListNamespacesRequest {
    /// It names every namespace: reader (or more) on `*`.
    fn scope(&self) -> Scope<'_> {
        Scope::Everything
    }
}

impl Scoped for proto::MigrateRequest {
    /// Every namespace, or another application's keys (an import source), takes
    /// admin on `*`; any source but dueq's own counts as an import.
    fn scope(&self) -> Scope<'_> {
        let own_store = self.source == proto::MigrateSource::Unspecified as i32
            || self.source == proto::MigrateSource::Dueq as i32;
        if self.all_namespaces || !own_store {
            Scope::Everything
        } else {
            Scope::Namespace(&self.namespace)
        }
    }
}

/// `Ok` if the request's caller may call `method` on the request's scope. A request
/// without a caller did not pass the auth layer: refused, never let through.
pub(super) fn authorize<T: Scoped>(request: &Request<T>, method: &str) -> Result<(), ApiError> {
    authorize_scope(request.extensions(), method, request.get_ref().scope())
}

/// The same, for a call whose scope is known only after its first message (Work):
/// the caller the auth layer put in the call's extensions, against `scope`.
pub(super) fn authorize_scope(
    extensions: &tonic::Extensions,
    method: &str,
    scope: Scope<'_>,
) -> Result<(), ApiError> {
    let caller = extensions.get::<Caller>();
    let allowed = match caller {
        Some(Caller::Unrestricted) => true,
        Some(Caller::Principal(principal)) => principal.allows(method, scope),
        None => false,
    };
    let name = caller.map_or("(unknown)", Caller::name);
    if !allowed {
        return Err(ApiError::Denied(format!(
            "principal {name:?} may not call {method} on {scope}"
        )));
    }
    if AUDITED.contains(&method) {
        tracing::info!(target: "dueq::audit", principal = %name, %method, scope = %scope, "audit");
    }
    Ok(())
}

/// The proto method name of a request type's name: `EnqueueRequest` -> `Enqueue`.
pub(super) fn method_of(request_type: &'static str) -> &'static str {
    request_type.strip_suffix("Request").unwrap_or(request_type)
}
