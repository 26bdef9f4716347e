//! The tonic service traits, one line per RPC: each calls its handler and answers
//! through [`Rescue::respond`](super::Rescue::respond). Handlers return
//! `Result<Message, ApiError>` and never build a status, so none can bypass the
//! mapping. Each call is authorised (`authorize`) before its handler runs, so a
//! denied call writes nothing. The operators' RPCs (Migrate, GetNamespaceStatus) are
//! served by QueueService and by the deprecated AdminService through the same lines.

use tonic::{Request, Response, Status};

use super::{
    admin,
    authorize::{authorize, method_of},
    jobs, queues, schedules, AdminApi, QueueApi,
};
use crate::proto::{self, admin_service_server::AdminService, queue_service_server::QueueService};

/// `method(Request) -> Response = handler;` for each unary RPC of a service, then
/// `operators: |api| <the AdminApi of api>` for Migrate and GetNamespaceStatus.
macro_rules! rpcs {
    (
        $api:ty: $service:ident { $($method:ident($req:ident) -> $resp:ident = $handler:path;)* }
        operators: |$op:ident| $admin:expr
        $(, streams: { $($stream:item)* })?
    ) => {
        #[tonic::async_trait]
        impl $service for $api {
            $($($stream)*)?

            $(
                async fn $method(
                    &self,
                    request: Request<proto::$req>,
                ) -> Result<Response<proto::$resp>, Status> {
                    authorize(&request, method_of(stringify!($req)))
                        .map_err(|denied| self.rescue.status(denied))?;
                    self.rescue.respond($handler(self, request).await)
                }
            )*

            type MigrateStream = admin::ProgressStream;

            async fn migrate(
                &self,
                request: Request<proto::MigrateRequest>,
            ) -> Result<Response<Self::MigrateStream>, Status> {
                let $op = self;
                let api: &AdminApi = $admin;
                authorize(&request, "Migrate").map_err(|denied| api.rescue.status(denied))?;
                api.rescue.respond(admin::migrate(api, request))
            }

            async fn get_namespace_status(
                &self,
                request: Request<proto::GetNamespaceStatusRequest>,
            ) -> Result<Response<proto::NamespaceStatus>, Status> {
                let $op = self;
                let api: &AdminApi = $admin;
                authorize(&request, "GetNamespaceStatus")
                    .map_err(|denied| api.rescue.status(denied))?;
                api.rescue.respond(admin::status(api, request).await)
            }
        }
    };
}

rpcs!(QueueApi: QueueService {
    upsert_schedule(UpsertScheduleRequest) -> UpsertScheduleResponse = schedules::upsert;
    get_schedule(GetScheduleRequest) -> GetScheduleResponse = schedules::get;
    list_schedules(ListSchedulesRequest) -> ListSchedulesResponse = schedules::list;
    delete_schedule(DeleteScheduleRequest) -> DeleteScheduleResponse = schedules::delete;
    pause_schedule(PauseScheduleRequest) -> PauseScheduleResponse = schedules::pause;
    resume_schedule(ResumeScheduleRequest) -> ResumeScheduleResponse = schedules::resume;
    claim_due_schedule(ClaimDueScheduleRequest) -> ClaimDueScheduleResponse = schedules::claim;
    ack_occurrence(AckOccurrenceRequest) -> AckOccurrenceResponse = schedules::ack_occurrence;
    preview_schedule(PreviewScheduleRequest) -> PreviewScheduleResponse = schedules::preview;
    trigger_schedule(TriggerScheduleRequest) -> TriggerScheduleResponse = schedules::trigger;
    backfill_schedule(BackfillScheduleRequest) -> BackfillScheduleResponse = schedules::backfill;
    enqueue(EnqueueRequest) -> EnqueueResponse = jobs::enqueue;
    enqueue_batch(EnqueueBatchRequest) -> EnqueueBatchResponse = jobs::enqueue_batch;
    claim_job(ClaimJobRequest) -> ClaimJobResponse = jobs::claim;
    ack_job(AckJobRequest) -> AckJobResponse = jobs::ack;
    ack_jobs(AckJobsRequest) -> AckJobsResponse = jobs::ack_jobs;
    fail_job(FailJobRequest) -> FailJobResponse = jobs::fail;
    extend_lease(ExtendLeaseRequest) -> ExtendLeaseResponse = jobs::extend_lease;
    get_job(GetJobRequest) -> GetJobResponse = jobs::get;
    list_jobs(ListJobsRequest) -> ListJobsResponse = jobs::list;
    cancel_job(CancelJobRequest) -> CancelJobResponse = jobs::cancel;
    retry_job(RetryJobRequest) -> RetryJobResponse = jobs::retry;
    list_namespaces(ListNamespacesRequest) -> ListNamespacesResponse = queues::list_namespaces;
    list_queues(ListQueuesRequest) -> ListQueuesResponse = queues::list_queues;
    pause_queue(PauseQueueRequest) -> PauseQueueResponse = queues::pause;
    resume_queue(ResumeQueueRequest) -> ResumeQueueResponse = queues::resume;
    retry_dead_jobs(RetryDeadJobsRequest) -> RetryDeadJobsResponse = queues::retry_dead;
    purge_jobs(PurgeJobsRequest) -> PurgeJobsResponse = queues::purge;
} operators: |queue| &queue.admin, streams: {
    type WorkStream = jobs::WorkStream;

    /// Authorised inside the handler: the namespace is in the stream's first message.
    async fn work(
        &self,
        request: Request<tonic::Streaming<proto::WorkRequest>>,
    ) -> Result<Response<Self::WorkStream>, Status> {
        self.rescue.respond(jobs::work(self, request).await)
    }
});

rpcs!(AdminApi: AdminService {} operators: |admin| admin);
