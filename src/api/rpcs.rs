//! The one RPC table: a line per RPC the server answers, with the role it needs, its
//! call kind, whether its calls are audited, and (for dueq's own services) its
//! request, response and handler. From it come the tonic service impls, the
//! descriptors (`crate::rpc::Rpc`) the layers classify requests by (shedding,
//! timeout, metrics, spans, authentication), the role checks (`super::authorize`)
//! and the audit records (`super::audit`: an audited line's calls are recorded with
//! their outcome, and its request must name its target, `audit::Subject`).
//!
//! A new RPC is its proto, its Lua and operation, its use case and handler, and one
//! line here (the line also says what the request reaches: its `namespace` field, or
//! a target of its own in `authorize`). Leaving the line out does not compile: the tonic trait then lacks the
//! method. `tests::the_table_is_the_served_api` holds the table to the proto's
//! descriptors, so no served method is left unclassified.
//!
//! Unary and server-streaming handlers are called as `handler(api, target,
//! request)`, after `authorize` has validated the request's target (its namespace)
//! and checked the caller; the Work stream's namespace is in its first message, so
//! its handler is given its descriptor and authorises itself. A stream asks again,
//! before each message, whether its caller still belongs (`authorize::Recheck`).

#![allow(non_upper_case_globals)]

use tonic::{Request, Response, Status, Streaming};

use super::{
    admin::{self, MigrateStream},
    audit::AuditCall,
    authorize::{authorize, namespace, Reach, Recheck, Scoped},
    flow,
    jobs::{self, WatchJobStream},
    queues, schedules, AdminApi, ApiError, QueueApi,
};
use crate::{
    auth::{
        Caller,
        Role::{Admin, Producer, Reader, Worker},
    },
    domain::Namespace,
    proto::{self, admin_service_server::AdminService, queue_service_server::QueueService},
    rpc::{
        Access::{self, Open},
        CallKind::{Duplex, LongPoll, Stream, Unary},
        Rpc,
    },
};

/// Whether calls are recorded in the audit log and on `dueq::audit` (`super::audit`).
const audited: bool = true;
const quiet: bool = false;

/// One descriptor.
macro_rules! rpc {
    ($service:literal, $name:ident, $access:expr, $kind:expr, $audit:expr) => {
        Rpc {
            service: $service,
            method: stringify!($name),
            path: concat!("/", $service, "/", stringify!($name)),
            access: $access,
            kind: $kind,
            audited: $audit,
        }
    };
}

/// A tonic service impl from the table's lines, one method each: the lines are
/// turned into methods first and the impl is written last, so `async_trait` sees
/// every method.
macro_rules! methods {
    ($api:ty: $trait:ident [$($methods:tt)*]) => {
        #[tonic::async_trait]
        impl $trait for $api {
            $($methods)*
        }
    };
    // A unary call: authorised from its message, then handled; an audited one is
    // recorded with the answer's outcome (`audit`), refused or not.
    (
        $api:ty: $trait:ident [$($methods:tt)*]
        $audit:ident $rpc:path, $method:ident ($req:ident -> $resp:ident) = $handler:path;
        $($rest:tt)*
    ) => {
        methods!($api: $trait [$($methods)*
            async fn $method(
                &self,
                request: Request<proto::$req>,
            ) -> Result<Response<proto::$resp>, Status> {
                let audit = begin_audit!($audit, self, $rpc, request);
                let answer = match admitted!(self, request, $rpc) {
                    Ok(target) => self.rescue.respond($handler(self, &target, request).await),
                    Err(denied) => Err(self.rescue.status(denied)),
                };
                finish_audit(audit, &answer);
                answer
            }
        ] $($rest)*);
    };
    // A server stream: the same; its outcome is whether the stream started.
    (
        $api:ty: $trait:ident [$($methods:tt)*]
        $audit:ident $rpc:path, $method:ident ($req:ident -> stream $stream:ident) = $handler:path;
        $($rest:tt)*
    ) => {
        methods!($api: $trait [$($methods)*
            type $stream = $stream;

            async fn $method(
                &self,
                request: Request<proto::$req>,
            ) -> Result<Response<Self::$stream>, Status> {
                let audit = begin_audit!($audit, self, $rpc, request);
                let answer = match admitted!(self, request, $rpc) {
                    Ok(target) => {
                        // Asked again before each message (the auth file may reload).
                        let recheck = Recheck::of(&request, &$rpc, target.scope(), &self.rescue);
                        let stream = $handler(self, &target, request).await;
                        self.rescue.respond(stream.map(|stream| recheck.guard(stream)))
                    }
                    Err(denied) => Err(self.rescue.status(denied)),
                };
                finish_audit(audit, &answer);
                answer
            }
        ] $($rest)*);
    };
    // A bidirectional stream: its handler authorises once it has the first message.
    (
        $api:ty: $trait:ident [$($methods:tt)*]
        quiet $rpc:path, $method:ident (stream $req:ident -> stream $stream:ident) = $handler:path;
        $($rest:tt)*
    ) => {
        methods!($api: $trait [$($methods)*
            type $stream = jobs::$stream;

            async fn $method(
                &self,
                request: Request<Streaming<proto::$req>>,
            ) -> Result<Response<Self::$stream>, Status> {
                self.rescue.respond($handler(self, &$rpc, request).await)
            }
        ] $($rest)*);
    };
}

/// The request's validated target, if its caller may call the RPC on it
/// (`authorize`) and its principal's own limits let it (`quota`).
macro_rules! admitted {
    ($self:ident, $request:ident, $rpc:path) => {
        match authorize(&$request, &$rpc) {
            Ok(target) => $self
                .admit($request.extensions().get::<Caller>(), &$rpc, target.scope())
                .await
                .map(|()| target),
            Err(denied) => Err(denied),
        }
    };
}

/// The record of an audited call, begun before it is authorised (`audit::Audit`);
/// none for a quiet one.
macro_rules! begin_audit {
    (audited, $self:ident, $rpc:path, $request:ident) => {
        Some($self.rescue.audit().begin(&$rpc, &$request))
    };
    (quiet, $self:ident, $rpc:path, $request:ident) => {
        None
    };
}

/// Records an audited call with its answer's outcome.
fn finish_audit<R>(audit: Option<AuditCall>, answer: &Result<Response<R>, Status>) {
    if let Some(audit) = audit {
        audit.finish(answer);
    }
}

/// What a request reaches (`authorize::Scoped`). `ns`: its `namespace` field, the
/// impl written here; `own`: an impl of its own in `authorize` (every namespace, an
/// optional namespace, Migrate's choice, Work's first message), or the same request
/// on another line (another service's, or BulkJobsRequest's first line).
macro_rules! target {
    (own $sig:tt) => {};
    (ns ($req:ident -> $($response:tt)*)) => {
        impl Scoped for proto::$req {
            type Target = Namespace;

            fn target(&self) -> Result<Namespace, ApiError> {
                namespace("namespace", &self.namespace)
            }
        }
    };
}

/// A dueq service: its descriptors in module `$module`, and its tonic impl.
macro_rules! service {
    (
        $service:literal, $module:ident, $api:ty: $trait:ident {
            $([$role:ident $kind:ident $audit:ident $target:ident] $name:ident: $method:ident $sig:tt = $handler:path;)*
        }
    ) => {
        pub(crate) mod $module {
            use super::*;

            $(pub(crate) static $name: Rpc =
                rpc!($service, $name, Access::Role($role), $kind, $audit);)*

            pub(crate) static ALL: &[&Rpc] = &[$(&$name),*];
        }

        $(target!($target $sig);)*

        methods!($api: $trait [] $($audit $module::$name, $method $sig = $handler;)*);
    };
}

/// Services that are not dueq's own: open to every caller, served by tonic's crates.
macro_rules! open {
    ($service:literal, $module:ident { $([$kind:ident] $name:ident;)* }) => {
        pub(crate) mod $module {
            use super::*;

            $(pub(crate) static $name: Rpc = rpc!($service, $name, Open, $kind, quiet);)*

            pub(crate) static ALL: &[&Rpc] = &[$(&$name),*];
        }
    };
}

service!("dueq.v1.QueueService", queue, QueueApi: QueueService {
    // [role     kind     audit   target] RPC: method(request -> response) = handler;
    [Producer Unary    quiet   ns ] UpsertSchedule: upsert_schedule(UpsertScheduleRequest -> UpsertScheduleResponse) = schedules::upsert;
    [Reader   Unary    quiet   ns ] GetSchedule: get_schedule(GetScheduleRequest -> GetScheduleResponse) = schedules::get;
    [Reader   Unary    quiet   ns ] ListSchedules: list_schedules(ListSchedulesRequest -> ListSchedulesResponse) = schedules::list;
    [Producer Unary    audited ns ] DeleteSchedule: delete_schedule(DeleteScheduleRequest -> DeleteScheduleResponse) = schedules::delete;
    [Producer Unary    audited ns ] PauseSchedule: pause_schedule(PauseScheduleRequest -> PauseScheduleResponse) = schedules::pause;
    [Producer Unary    audited ns ] ResumeSchedule: resume_schedule(ResumeScheduleRequest -> ResumeScheduleResponse) = schedules::resume;
    [Worker   LongPoll quiet   ns ] ClaimDueSchedule: claim_due_schedule(ClaimDueScheduleRequest -> ClaimDueScheduleResponse) = schedules::claim;
    [Worker   Unary    quiet   ns ] AckOccurrence: ack_occurrence(AckOccurrenceRequest -> AckOccurrenceResponse) = schedules::ack_occurrence;
    [Reader   Unary    quiet   own] PreviewSchedule: preview_schedule(PreviewScheduleRequest -> PreviewScheduleResponse) = schedules::preview;
    [Producer Unary    audited ns ] TriggerSchedule: trigger_schedule(TriggerScheduleRequest -> TriggerScheduleResponse) = schedules::trigger;
    [Producer Unary    audited ns ] BackfillSchedule: backfill_schedule(BackfillScheduleRequest -> BackfillScheduleResponse) = schedules::backfill;
    [Producer Unary    audited ns ] SetScheduleNextRun: set_schedule_next_run(SetScheduleNextRunRequest -> SetScheduleNextRunResponse) = schedules::set_next_run;
    [Producer Unary    quiet   ns ] Enqueue: enqueue(EnqueueRequest -> EnqueueResponse) = jobs::enqueue;
    [Producer Unary    quiet   ns ] EnqueueBatch: enqueue_batch(EnqueueBatchRequest -> EnqueueBatchResponse) = jobs::enqueue_batch;
    [Worker   LongPoll quiet   ns ] ClaimJob: claim_job(ClaimJobRequest -> ClaimJobResponse) = jobs::claim;
    [Worker   Unary    quiet   ns ] AckJob: ack_job(AckJobRequest -> AckJobResponse) = jobs::ack;
    [Worker   Unary    quiet   ns ] AckJobs: ack_jobs(AckJobsRequest -> AckJobsResponse) = jobs::ack_jobs;
    [Worker   Duplex   quiet   own] Work: work(stream WorkRequest -> stream WorkStream) = jobs::work;
    [Worker   Unary    quiet   ns ] FailJob: fail_job(FailJobRequest -> FailJobResponse) = jobs::fail;
    [Worker   Unary    quiet   ns ] ExtendLease: extend_lease(ExtendLeaseRequest -> ExtendLeaseResponse) = jobs::extend_lease;
    [Reader   Unary    quiet   ns ] GetJob: get_job(GetJobRequest -> GetJobResponse) = jobs::get;
    [Reader   Unary    quiet   ns ] ListJobs: list_jobs(ListJobsRequest -> ListJobsResponse) = jobs::list;
    [Producer Unary    audited ns ] CancelJob: cancel_job(CancelJobRequest -> CancelJobResponse) = jobs::cancel;
    [Admin    Unary    audited ns ] RetryJob: retry_job(RetryJobRequest -> RetryJobResponse) = jobs::retry;
    [Producer Unary    audited ns ] DeleteJob: delete_job(DeleteJobRequest -> DeleteJobResponse) = jobs::delete;
    [Admin    Unary    audited ns ] RetryJobs: retry_jobs(BulkJobsRequest -> BulkJobsResponse) = jobs::retry_jobs;
    // The same request as RetryJobs' line: its `namespace` target is written there.
    [Producer Unary    audited own] CancelJobs: cancel_jobs(BulkJobsRequest -> BulkJobsResponse) = jobs::cancel_jobs;
    [Producer Unary    audited own] DeleteJobs: delete_jobs(BulkJobsRequest -> BulkJobsResponse) = jobs::delete_jobs;
    [Worker   Unary    audited ns ] ReleaseJob: release_job(ReleaseJobRequest -> ReleaseJobResponse) = jobs::release;
    [Reader   Stream   quiet   ns ] WatchJob: watch_job(WatchJobRequest -> stream WatchJobStream) = jobs::watch;
    [Producer Unary    quiet   ns ] EnqueueFlow: enqueue_flow(EnqueueFlowRequest -> EnqueueFlowResponse) = jobs::enqueue_flow;
    [Reader   Unary    quiet   ns ] GetFlow: get_flow(GetFlowRequest -> GetFlowResponse) = jobs::get_flow;
    [Producer Unary    audited ns ] CancelFlow: cancel_flow(CancelFlowRequest -> CancelFlowResponse) = jobs::cancel_flow;
    [Admin    Unary    audited ns ] RetryFlow: retry_flow(RetryFlowRequest -> RetryFlowResponse) = jobs::retry_flow;
    [Reader   Unary    quiet   own] ListNamespaces: list_namespaces(ListNamespacesRequest -> ListNamespacesResponse) = queues::list_namespaces;
    [Reader   Unary    quiet   ns ] ListQueues: list_queues(ListQueuesRequest -> ListQueuesResponse) = queues::list_queues;
    [Admin    Unary    audited ns ] PauseQueue: pause_queue(PauseQueueRequest -> PauseQueueResponse) = queues::pause;
    [Admin    Unary    audited ns ] ResumeQueue: resume_queue(ResumeQueueRequest -> ResumeQueueResponse) = queues::resume;
    [Admin    Unary    audited ns ] SetQueuePolicy: set_queue_policy(SetQueuePolicyRequest -> SetQueuePolicyResponse) = flow::set_policy;
    [Reader   Unary    quiet   ns ] GetQueuePolicy: get_queue_policy(GetQueuePolicyRequest -> GetQueuePolicyResponse) = flow::get_policy;
    [Admin    Unary    audited ns ] SetKeyLimit: set_key_limit(SetKeyLimitRequest -> SetKeyLimitResponse) = flow::set_key_limit;
    [Worker   Unary    audited ns ] ThrottleKey: throttle_key(ThrottleKeyRequest -> ThrottleKeyResponse) = flow::throttle_key;
    [Reader   Unary    quiet   ns ] ListFlowKeys: list_flow_keys(ListFlowKeysRequest -> ListFlowKeysResponse) = flow::list_keys;
    [Admin    Unary    audited ns ] RetryDeadJobs: retry_dead_jobs(RetryDeadJobsRequest -> RetryDeadJobsResponse) = queues::retry_dead;
    [Admin    Unary    audited ns ] PurgeJobs: purge_jobs(PurgeJobsRequest -> PurgeJobsResponse) = queues::purge;
    [Reader   Unary    quiet   ns ] ListDeadGroups: list_dead_groups(ListDeadGroupsRequest -> ListDeadGroupsResponse) = queues::list_dead_groups;
    [Reader   Unary    quiet   ns ] ListAuditEvents: list_audit_events(ListAuditEventsRequest -> ListAuditEventsResponse) = queues::list_audit;
    [Reader   Unary    quiet   ns ] ListWorkers: list_workers(ListWorkersRequest -> ListWorkersResponse) = queues::list_workers;
    [Admin    Stream   audited own] Migrate: migrate(MigrateRequest -> stream MigrateStream) = admin::migrate;
    [Reader   Unary    quiet   ns ] GetNamespaceStatus: get_namespace_status(GetNamespaceStatusRequest -> NamespaceStatus) = admin::status;
});

// The deprecated operators' service: the same two RPCs as on QueueService.
service!("dueq.v1.AdminService", admin_service, AdminApi: AdminService {
    [Admin    Stream   audited own] Migrate: migrate(MigrateRequest -> stream MigrateStream) = admin::migrate;
    [Reader   Unary    quiet   own] GetNamespaceStatus: get_namespace_status(GetNamespaceStatusRequest -> NamespaceStatus) = admin::status;
});

open!("grpc.health.v1.Health", health {
    [Unary ] Check;
    [Stream] Watch;
});

open!("grpc.reflection.v1.ServerReflection", reflection {
    [Duplex] ServerReflectionInfo;
});

open!("grpc.reflection.v1alpha.ServerReflection", reflection_v1alpha {
    [Duplex] ServerReflectionInfo;
});

/// Every line of the table.
pub(crate) fn all() -> impl Iterator<Item = &'static Rpc> {
    [
        queue::ALL,
        admin_service::ALL,
        health::ALL,
        reflection::ALL,
        reflection_v1alpha::ALL,
    ]
    .into_iter()
    .flatten()
    .copied()
}

/// The QueueService RPC named `method` (the console asks it which role an action
/// needs, to decide which buttons to show).
pub(crate) fn queue_rpc(method: &str) -> Option<&'static Rpc> {
    queue::ALL.iter().copied().find(|rpc| rpc.method == method)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use prost::Message;

    /// The path of every method the proto's descriptor sets (dueq's, health) declare,
    /// and whether its request streams.
    fn declared() -> impl Iterator<Item = (String, bool)> {
        let mut methods = Vec::new();
        for encoded in [
            crate::proto::FILE_DESCRIPTOR_SET,
            tonic_health::pb::FILE_DESCRIPTOR_SET,
        ] {
            let set = prost_types::FileDescriptorSet::decode(encoded).expect("descriptor set");
            for file in set.file {
                let package = file.package.unwrap_or_default();
                for service in file.service {
                    let name = service.name.unwrap_or_default();
                    for method in service.method {
                        let path = format!("/{package}.{name}/{}", method.name());
                        methods.push((path, method.client_streaming()));
                    }
                }
            }
        }
        methods.into_iter()
    }

    /// Every method of the proto's services (dueq's, health, reflection) has exactly
    /// one line, and every line is a method the proto declares.
    #[test]
    fn the_table_is_the_served_api() {
        let mut declared: BTreeSet<String> = declared().map(|(path, _)| path).collect();
        declared.insert("/grpc.reflection.v1.ServerReflection/ServerReflectionInfo".into());
        declared.insert("/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo".into());
        let lines: Vec<&str> = super::all().map(|rpc| rpc.path).collect();
        let table: BTreeSet<String> = lines.iter().map(|p| (*p).to_owned()).collect();
        assert_eq!(lines.len(), table.len(), "a path is in the table twice");
        assert_eq!(table, declared);
    }

    /// The Duplex lines are the methods whose request streams (the proto's
    /// client_streaming), so admission waits for the first message of those only and
    /// for the whole request of every other (`layers::shed`).
    #[test]
    fn duplex_lines_are_the_streamed_requests() {
        let mut streamed: BTreeSet<String> = declared()
            .filter(|(_, client_streaming)| *client_streaming)
            .map(|(path, _)| path)
            .collect();
        streamed.insert("/grpc.reflection.v1.ServerReflection/ServerReflectionInfo".into());
        streamed.insert("/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo".into());
        let duplex: BTreeSet<String> = super::all()
            .filter(|rpc| rpc.kind == crate::rpc::CallKind::Duplex)
            .map(|rpc| rpc.path.to_owned())
            .collect();
        assert_eq!(duplex, streamed);
    }

    /// docs/security.md's role table and audit list say what the table says: each
    /// RPC is named in the row of the role its line needs and in no row of a role
    /// that does not include it, and each audited RPC in the audit sentence.
    #[test]
    fn the_security_doc_says_what_the_table_says() {
        use crate::{auth::Role, rpc::Access};
        let doc = include_str!("../../docs/security.md");
        let row = |role: &str| -> Vec<&str> {
            let prefix = format!("| `{role}` |");
            let line = doc
                .lines()
                .find(|line| line.starts_with(&prefix))
                .unwrap_or_else(|| panic!("no row for {role}"));
            line.split(|c: char| !c.is_ascii_alphanumeric()).collect()
        };
        let roles = [
            ("reader", Role::Reader),
            ("producer", Role::Producer),
            ("worker", Role::Worker),
            ("admin", Role::Admin),
        ];
        for rpc in super::queue::ALL {
            let Access::Role(needed) = rpc.access else {
                continue;
            };
            for (name, role) in roles {
                let named = row(name).contains(&rpc.method);
                if role == needed {
                    // admin's row names what only admin may call.
                    assert!(named, "{} is missing from the {name} row", rpc.method);
                } else if !role.includes(needed) {
                    assert!(!named, "the {name} row names {}", rpc.method);
                }
            }
        }
        let audit = doc
            .split("log an audit line")
            .next()
            .and_then(|before| before.rsplit("\n\n").next())
            .unwrap_or_default();
        for rpc in super::queue::ALL.iter().filter(|rpc| rpc.audited) {
            assert!(
                audit.contains(rpc.method),
                "{} is audited: {audit}",
                rpc.method
            );
        }
    }

    /// The operators' RPCs answer alike on both services.
    #[test]
    fn both_services_classify_the_operators_rpcs_alike() {
        for (queue, admin) in [
            (&super::queue::Migrate, &super::admin_service::Migrate),
            (
                &super::queue::GetNamespaceStatus,
                &super::admin_service::GetNamespaceStatus,
            ),
        ] {
            assert_eq!(
                (queue.method, queue.access, queue.kind, queue.audited),
                (admin.method, admin.access, admin.kind, admin.audited)
            );
        }
    }
}
