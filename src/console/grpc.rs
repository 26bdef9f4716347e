//! The console's gRPC client: dueq's services behind dueq's layers, called in
//! process. A call carries the viewer as an [`InProcess`] caller (the auth layer
//! takes it instead of a credential) and `x-dueq-via: console` for the audit.
//!
//! One untyped exchange (a framed message in, a framed message or a status out)
//! serves every RPC; what is typed per RPC is only the message's encoding and the
//! reply's decoding ([`Method`]), which the CLI's client links in anyway. A generated
//! tonic client builds its whole request and response machinery once per RPC: with
//! it the console cost about 0.3 MB more of the binary (docs/performance.md).

use std::marker::PhantomData;

use bytes::{BufMut, Bytes, BytesMut};
use http_body_util::{BodyExt, Full, Limited};
use prost::Message;
use tonic::{body::Body, codegen::http, Code, Status};
use tower::ServiceExt;

use crate::{
    auth::{Caller, InProcess},
    proto,
};

type Inner = crate::layers::App;

/// The service every console call goes to.
const SERVICE: &str = "dueq.v1.QueueService";

/// A gRPC message's frame header: a compression flag and a big-endian length.
const FRAME_HEADER: usize = 5;

/// An RPC the console calls: its method's name, typed by its request and reply.
pub(crate) struct Method<Request, Reply> {
    name: &'static str,
    types: PhantomData<fn(Request) -> Reply>,
}

impl<Request, Reply> Clone for Method<Request, Reply> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<Request, Reply> Copy for Method<Request, Reply> {}

/// The methods the console calls.
pub(crate) mod rpc {
    use super::{proto, Method, PhantomData};

    macro_rules! methods {
        ($($constant:ident $name:literal: $request:ident => $reply:ident;)*) => {
            $(pub(crate) const $constant: Method<proto::$request, proto::$reply> =
                Method { name: $name, types: PhantomData };)*
        };
    }

    methods! {
        LIST_NAMESPACES "ListNamespaces": ListNamespacesRequest => ListNamespacesResponse;
        LIST_QUEUES "ListQueues": ListQueuesRequest => ListQueuesResponse;
        PAUSE_QUEUE "PauseQueue": PauseQueueRequest => PauseQueueResponse;
        RESUME_QUEUE "ResumeQueue": ResumeQueueRequest => ResumeQueueResponse;
        RETRY_DEAD_JOBS "RetryDeadJobs": RetryDeadJobsRequest => RetryDeadJobsResponse;
        PURGE_JOBS "PurgeJobs": PurgeJobsRequest => PurgeJobsResponse;
        LIST_JOBS "ListJobs": ListJobsRequest => ListJobsResponse;
        GET_JOB "GetJob": GetJobRequest => GetJobResponse;
        ENQUEUE "Enqueue": EnqueueRequest => EnqueueResponse;
        RETRY_JOB "RetryJob": RetryJobRequest => RetryJobResponse;
        CANCEL_JOB "CancelJob": CancelJobRequest => CancelJobResponse;
        DELETE_JOB "DeleteJob": DeleteJobRequest => DeleteJobResponse;
        RETRY_JOBS "RetryJobs": BulkJobsRequest => BulkJobsResponse;
        CANCEL_JOBS "CancelJobs": BulkJobsRequest => BulkJobsResponse;
        DELETE_JOBS "DeleteJobs": BulkJobsRequest => BulkJobsResponse;
        LIST_DEAD_GROUPS "ListDeadGroups": ListDeadGroupsRequest => ListDeadGroupsResponse;
        GET_FLOW "GetFlow": GetFlowRequest => GetFlowResponse;
        CANCEL_FLOW "CancelFlow": CancelFlowRequest => CancelFlowResponse;
        RETRY_FLOW "RetryFlow": RetryFlowRequest => RetryFlowResponse;
        LIST_WORKERS "ListWorkers": ListWorkersRequest => ListWorkersResponse;
        LIST_AUDIT_EVENTS "ListAuditEvents": ListAuditEventsRequest => ListAuditEventsResponse;
        LIST_SCHEDULES "ListSchedules": ListSchedulesRequest => ListSchedulesResponse;
        GET_SCHEDULE "GetSchedule": GetScheduleRequest => GetScheduleResponse;
        PREVIEW_SCHEDULE "PreviewSchedule": PreviewScheduleRequest => PreviewScheduleResponse;
        PAUSE_SCHEDULE "PauseSchedule": PauseScheduleRequest => PauseScheduleResponse;
        RESUME_SCHEDULE "ResumeSchedule": ResumeScheduleRequest => ResumeScheduleResponse;
        TRIGGER_SCHEDULE "TriggerSchedule": TriggerScheduleRequest => TriggerScheduleResponse;
        BACKFILL_SCHEDULE "BackfillSchedule": BackfillScheduleRequest => BackfillScheduleResponse;
    }
}

/// A client of the layered services (cheap to clone).
#[derive(Clone)]
pub(crate) struct Grpc {
    inner: Inner,
    max_message: usize,
}

impl Grpc {
    pub(crate) fn new(app: Inner, max_message: usize) -> Grpc {
        Grpc {
            inner: app,
            max_message,
        }
    }

    /// `message` sent as `caller`, and its reply (or the RPC's refusal).
    pub(crate) async fn call<Request: Message, Reply: Message + Default>(
        &self,
        caller: &Caller,
        method: Method<Request, Reply>,
        message: Request,
    ) -> Result<Reply, Status> {
        let name = method.name;
        let mut frame = BytesMut::with_capacity(FRAME_HEADER + message.encoded_len());
        frame.put_u8(0);
        frame.put_u32(u32::try_from(message.encoded_len()).unwrap_or(u32::MAX));
        message
            .encode(&mut frame)
            .map_err(|e| Status::internal(format!("{name}: encoding the request: {e}")))?;
        let reply = self.exchange(caller, name, frame.freeze()).await?;
        Reply::decode(reply)
            .map_err(|e| Status::internal(format!("{name}: decoding the reply: {e}")))
    }

    /// One unary exchange: `frame` to `method`, the reply's message (unframed).
    async fn exchange(&self, caller: &Caller, method: &str, frame: Bytes) -> Result<Bytes, Status> {
        let mut request = http::Request::new(Body::new(Full::new(frame)));
        *request.method_mut() = http::Method::POST;
        *request.uri_mut() = format!("/{SERVICE}/{method}")
            .parse()
            .map_err(|e| Status::internal(format!("{method}: {e}")))?;
        let headers = request.headers_mut();
        headers.insert(
            http::header::CONTENT_TYPE,
            http::HeaderValue::from_static("application/grpc"),
        );
        headers.insert(http::header::TE, http::HeaderValue::from_static("trailers"));
        headers.insert("x-dueq-via", http::HeaderValue::from_static("console"));
        request.extensions_mut().insert(InProcess(caller.clone()));

        let Ok(response) = self.inner.clone().oneshot(request).await;
        let (parts, body) = response.into_parts();
        refused(&parts.headers)?;
        let body = Limited::new(body, FRAME_HEADER + self.max_message)
            .collect()
            .await
            .map_err(|e| Status::internal(format!("{method}: reading the reply: {e}")))?;
        if let Some(trailers) = body.trailers() {
            refused(trailers)?;
        }
        unframe(method, body.to_bytes())
    }
}

/// The status in `headers` when it is not OK.
fn refused(headers: &http::HeaderMap) -> Result<(), Status> {
    match Status::from_header_map(headers) {
        Some(status) if status.code() != Code::Ok => Err(status),
        _ => Ok(()),
    }
}

/// The one uncompressed message of a unary reply's body.
fn unframe(method: &str, mut body: Bytes) -> Result<Bytes, Status> {
    let bad = |what: &str| Status::internal(format!("{method}: the reply {what}"));
    if body.len() < FRAME_HEADER {
        return Err(bad("has no message"));
    }
    let header = body.split_to(FRAME_HEADER);
    if header[0] != 0 {
        return Err(bad("is compressed"));
    }
    let len = u32::from_be_bytes([header[1], header[2], header[3], header[4]]);
    if usize::try_from(len).ok() != Some(body.len()) {
        return Err(bad("is not one message"));
    }
    Ok(body)
}
