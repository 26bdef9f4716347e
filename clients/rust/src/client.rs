//! The connection and the producer API: enqueue, jobs and schedules.

use std::{future::Future, sync::Arc, time::Duration};

use tonic::{
    metadata::{Ascii, MetadataValue},
    service::{interceptor::InterceptedService, Interceptor},
    transport::{Certificate, Channel, ClientTlsConfig, Endpoint, Identity},
    Request, Status,
};

use crate::{
    config::Config,
    error::{Error, ErrorKind, Result},
    flow::{flow_request, EnqueuedFlow, FlowNode},
    job::{check_name, Enqueued, Job},
    proto::{self, queue_service_client::QueueServiceClient},
    schedule::{Schedule, Triggered, Upserted},
    time::system_time,
};

/// Room for the largest messages the service may send (a page of full jobs).
const MAX_MESSAGE: usize = 64 * 1024 * 1024;

/// The generated tonic client, with the bearer token on every call: what
/// [`Client::grpc`] hands out for calls this library does not wrap.
pub type GrpcClient = QueueServiceClient<InterceptedService<Channel, Bearer>>;

/// Adds `authorization: Bearer <token>` to every call, when there is a token.
#[derive(Clone)]
pub struct Bearer(Option<MetadataValue<Ascii>>);

impl Interceptor for Bearer {
    fn call(&mut self, mut request: Request<()>) -> Result<Request<()>, Status> {
        if let Some(value) = &self.0 {
            request
                .metadata_mut()
                .insert("authorization", value.clone());
        }
        Ok(request)
    }
}

/// A connection to a dueq service, in one namespace: the producer API, and what
/// [`Worker`](crate::Worker) and [`ScheduleWorker`](crate::ScheduleWorker) run on.
///
/// Cloning is cheap and clones share the connection (one HTTP/2 connection,
/// opened at the first call and reopened when it breaks).
///
/// ```no_run
/// # async fn f() -> dueq_client::Result<()> {
/// use dueq_client::{Client, Config, Job};
/// let client = Client::connect(Config::from_env()?).await?;
/// let job = client.enqueue(Job::json("emails", "welcome", &serde_json::json!({"to": "a@b.c"}))).await?;
/// println!("enqueued {}", job.job_id);
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Client {
    grpc: GrpcClient,
    inner: Arc<Inner>,
}

struct Inner {
    namespace: String,
    timeout: Duration,
    max_payload_size: usize,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("namespace", &self.inner.namespace)
            .finish_non_exhaustive()
    }
}

impl Client {
    /// Checks `config` and prepares the connection. Nothing is sent yet: the
    /// connection opens at the first call (so a service that is down is
    /// `Unavailable` from that call, and bad input is refused before it). Fails
    /// with InvalidArgument naming the setting for a bad address, a TLS file that
    /// cannot be read, or a token that cannot be an HTTP header.
    pub async fn connect(config: Config) -> Result<Client> {
        config.validate()?;
        let url = config.url()?;
        let token = match &config.token {
            None => None,
            Some(token) => {
                let mut value = format!("Bearer {token}")
                    .parse::<MetadataValue<Ascii>>()
                    // The token itself is not repeated.
                    .map_err(|_| Error::invalid("token", "is not valid in an HTTP header"))?;
                value.set_sensitive(true);
                Some(value)
            }
        };
        let mut endpoint = Endpoint::from_shared(url.clone())
            .map_err(|e| Error::invalid("addr", format!("{url} is not a valid address: {e}")))?
            .connect_timeout(config.connect_timeout)
            // A connection that died without a word (a partition) is noticed, and a
            // Work stream on it reconnects.
            .http2_keep_alive_interval(Duration::from_secs(20))
            .keep_alive_timeout(Duration::from_secs(10))
            .keep_alive_while_idle(true);
        if url.starts_with("https://") {
            endpoint = endpoint
                .tls_config(tls(&config).await?)
                .map_err(|e| Error::invalid("tls", sources(&e)))?;
        }
        let channel = endpoint.connect_lazy();
        let grpc = QueueServiceClient::with_interceptor(channel, Bearer(token))
            .max_decoding_message_size(MAX_MESSAGE)
            .max_encoding_message_size(MAX_MESSAGE);
        Ok(Client {
            grpc,
            inner: Arc::new(Inner {
                namespace: config.namespace,
                timeout: config.timeout,
                max_payload_size: config.max_payload_size,
            }),
        })
    }

    /// The namespace every call works in.
    pub fn namespace(&self) -> &str {
        &self.inner.namespace
    }

    /// The generated tonic client on this connection (token included), for the
    /// calls this library does not wrap. Requests carry their own namespace.
    pub fn grpc(&self) -> GrpcClient {
        self.grpc.clone()
    }

    /// Runs one unary call under the configured timeout (also sent to the service
    /// as the call's deadline).
    pub(crate) async fn unary<T, F, Fut>(&self, message: T, call: F) -> Result<Fut::Output>
    where
        F: FnOnce(GrpcClient, Request<T>) -> Fut,
        Fut: Future,
    {
        self.call_within(self.inner.timeout, message, call).await
    }

    /// As [`unary`](Client::unary), with `timeout` instead of the configured one.
    pub(crate) async fn call_within<T, F, Fut>(
        &self,
        timeout: Duration,
        message: T,
        call: F,
    ) -> Result<Fut::Output>
    where
        F: FnOnce(GrpcClient, Request<T>) -> Fut,
        Fut: Future,
    {
        let mut request = Request::new(message);
        request.set_timeout(timeout);
        tokio::time::timeout(timeout, call(self.grpc.clone(), request))
            .await
            .map_err(|_| {
                Error::new(
                    ErrorKind::DeadlineExceeded,
                    format!("no answer within {timeout:?}"),
                )
            })
    }

    /// Enqueues one job. The queue and name must be 1-256 bytes and the payload at
    /// most the client's `max_payload_size`: otherwise InvalidArgument naming the
    /// field, and nothing is sent.
    pub async fn enqueue(&self, job: Job) -> Result<Enqueued> {
        let request = job.into_request(self.namespace(), self.inner.max_payload_size, "")?;
        let reply = self
            .unary(request, |mut g, r| async move { g.enqueue(r).await })
            .await?
            .map_err(Error::from)?;
        Ok(Enqueued::from_proto(reply.into_inner()))
    }

    /// Enqueues jobs in one call (at most the service's batch limit, 1000 by
    /// default). Every job is checked first: one bad job is InvalidArgument naming
    /// it (`jobs[3].queue`) and nothing is sent. The service answers each item on
    /// its own: an item it refuses is an `Err` in its place, the others are stored.
    pub async fn enqueue_batch(
        &self,
        jobs: impl IntoIterator<Item = Job>,
    ) -> Result<Vec<Result<Enqueued>>> {
        let max = self.inner.max_payload_size;
        let jobs = jobs
            .into_iter()
            .enumerate()
            .map(|(i, job)| job.into_request(self.namespace(), max, &format!("jobs[{i}].")))
            .collect::<Result<Vec<_>>>()?;
        let count = jobs.len();
        let request = proto::EnqueueBatchRequest {
            namespace: self.namespace().to_owned(),
            jobs,
        };
        let reply = self
            .unary(request, |mut g, r| async move { g.enqueue_batch(r).await })
            .await?
            .map_err(Error::from)?
            .into_inner();
        let mut out: Vec<Result<Enqueued>> = (0..count)
            .map(|i| {
                Err(Error::new(
                    ErrorKind::Internal,
                    format!("jobs[{i}]: no answer"),
                ))
            })
            .collect();
        for item in reply.results {
            let Some(slot) = out.get_mut(item.index as usize) else {
                continue;
            };
            *slot = match item.result {
                Some(proto::enqueue_batch_result::Result::Ok(ok)) => Ok(Enqueued::from_proto(ok)),
                Some(proto::enqueue_batch_result::Result::Error(e)) => {
                    Err(Error::from_code(e.code, e.message))
                }
                None => continue,
            };
        }
        Ok(out)
    }

    /// The whole stored job (payload, headers, result, progress, errors).
    pub async fn get_job(&self, job_id: &str) -> Result<proto::Job> {
        check_name("job_id", job_id)?;
        let request = proto::GetJobRequest {
            namespace: self.namespace().to_owned(),
            job_id: job_id.to_owned(),
        };
        let reply = self
            .unary(request, |mut g, r| async move { g.get_job(r).await })
            .await?;
        job_of(reply.map(|r| r.into_inner().job))
    }

    /// Cancels a job: a pending or delayed one is CANCELLED at once; an active one
    /// stays ACTIVE with `cancel_requested` set, and its worker is told. Returns
    /// the job as it is after the call.
    pub async fn cancel(&self, job_id: &str) -> Result<proto::Job> {
        check_name("job_id", job_id)?;
        let request = proto::CancelJobRequest {
            namespace: self.namespace().to_owned(),
            job_id: job_id.to_owned(),
        };
        let reply = self
            .unary(request, |mut g, r| async move { g.cancel_job(r).await })
            .await?;
        job_of(reply.map(|r| r.into_inner().job))
    }

    /// Retries a dead or cancelled job: PENDING again, its attempts reset.
    pub async fn retry(&self, job_id: &str) -> Result<proto::Job> {
        check_name("job_id", job_id)?;
        let request = proto::RetryJobRequest {
            namespace: self.namespace().to_owned(),
            job_id: job_id.to_owned(),
        };
        let reply = self
            .unary(request, |mut g, r| async move { g.retry_job(r).await })
            .await?;
        job_of(reply.map(|r| r.into_inner().job))
    }

    /// Enqueues a flow: `nodes` form a graph without cycles (up to 1,000), stored
    /// all or nothing; a node runs once every ref of its `after` has finished.
    /// `flow_id` makes the call idempotent (a stored flow with it answers a
    /// duplicate). Every node is checked first (InvalidArgument naming it,
    /// `nodes[2].job.queue`, nothing sent); the service's own checks (an unknown
    /// ref, a cycle) are InvalidArgument naming the node too.
    pub async fn enqueue_flow(
        &self,
        nodes: impl IntoIterator<Item = FlowNode>,
        flow_id: Option<&str>,
    ) -> Result<EnqueuedFlow> {
        let request = flow_request(
            self.namespace(),
            nodes,
            flow_id,
            self.inner.max_payload_size,
        )?;
        let reply = self
            .unary(request, |mut g, r| async move { g.enqueue_flow(r).await })
            .await?
            .map_err(Error::from)?;
        Ok(EnqueuedFlow::from_proto(reply.into_inner()))
    }

    /// The flow: its state, counts, and every node (all pages, in one answer
    /// whose `next_page_token` is empty), each after its dependencies.
    pub async fn get_flow(&self, flow_id: &str) -> Result<proto::GetFlowResponse> {
        check_name("flow_id", flow_id)?;
        let mut all: Option<proto::GetFlowResponse> = None;
        let mut page_token = String::new();
        loop {
            let request = proto::GetFlowRequest {
                namespace: self.namespace().to_owned(),
                flow_id: flow_id.to_owned(),
                page_size: 0,
                page_token,
            };
            let mut page = self
                .unary(request, |mut g, r| async move { g.get_flow(r).await })
                .await?
                .map_err(Error::from)?
                .into_inner();
            page_token = std::mem::take(&mut page.next_page_token);
            match &mut all {
                None => all = Some(page),
                Some(all) => all.nodes.append(&mut page.nodes),
            }
            if page_token.is_empty() {
                return all.ok_or_else(|| Error::new(ErrorKind::Internal, "no page"));
            }
        }
    }

    /// Cancels every unfinished node of the flow (an active one's worker is asked
    /// to stop; a node readied later is cancelled). The flow's counts after.
    pub async fn cancel_flow(&self, flow_id: &str) -> Result<proto::CancelFlowResponse> {
        check_name("flow_id", flow_id)?;
        let request = proto::CancelFlowRequest {
            namespace: self.namespace().to_owned(),
            flow_id: flow_id.to_owned(),
        };
        let reply = self
            .unary(request, |mut g, r| async move { g.cancel_flow(r).await })
            .await?
            .map_err(Error::from)?;
        Ok(reply.into_inner())
    }

    /// Re-arms the flow's dead, cancelled and skipped nodes (completed ones keep
    /// their results) and lifts its cancel. The flow's counts after.
    pub async fn retry_flow(&self, flow_id: &str) -> Result<proto::RetryFlowResponse> {
        check_name("flow_id", flow_id)?;
        let request = proto::RetryFlowRequest {
            namespace: self.namespace().to_owned(),
            flow_id: flow_id.to_owned(),
        };
        let reply = self
            .unary(request, |mut g, r| async move { g.retry_flow(r).await })
            .await?
            .map_err(Error::from)?;
        Ok(reply.into_inner())
    }

    /// Creates or updates a schedule.
    pub async fn upsert_schedule(&self, schedule: Schedule) -> Result<Upserted> {
        let request = proto::UpsertScheduleRequest {
            namespace: self.namespace().to_owned(),
            schedule: Some(schedule.into_proto()?),
        };
        let reply = self
            .unary(
                request,
                |mut g, r| async move { g.upsert_schedule(r).await },
            )
            .await?
            .map_err(Error::from)?
            .into_inner();
        Ok(Upserted {
            schedule: reply.schedule.unwrap_or_default(),
            created: reply.created,
        })
    }

    /// A schedule, whole (payload and headers included).
    pub async fn get_schedule(&self, id: &str) -> Result<proto::Schedule> {
        check_name("id", id)?;
        let request = proto::GetScheduleRequest {
            namespace: self.namespace().to_owned(),
            id: id.to_owned(),
        };
        let reply = self
            .unary(request, |mut g, r| async move { g.get_schedule(r).await })
            .await?;
        schedule_of(reply.map(|r| r.into_inner().schedule))
    }

    /// Every schedule of the namespace, in id order (all pages; payloads and
    /// headers left out).
    pub async fn list_schedules(&self) -> Result<Vec<proto::Schedule>> {
        let mut all = Vec::new();
        let mut page_token = String::new();
        loop {
            let request = proto::ListSchedulesRequest {
                namespace: self.namespace().to_owned(),
                page_size: 1000,
                page_token: std::mem::take(&mut page_token),
                ..Default::default()
            };
            let page = self
                .unary(request, |mut g, r| async move { g.list_schedules(r).await })
                .await?
                .map_err(Error::from)?
                .into_inner();
            all.extend(page.schedules);
            if page.next_page_token.is_empty() {
                return Ok(all);
            }
            page_token = page.next_page_token;
        }
    }

    /// Pauses a schedule: it does not fire until resumed.
    pub async fn pause_schedule(&self, id: &str) -> Result<proto::Schedule> {
        check_name("id", id)?;
        let request = proto::PauseScheduleRequest {
            namespace: self.namespace().to_owned(),
            id: id.to_owned(),
            note: String::new(),
        };
        let reply = self
            .unary(request, |mut g, r| async move { g.pause_schedule(r).await })
            .await?;
        schedule_of(reply.map(|r| r.into_inner().schedule))
    }

    /// Resumes a paused schedule.
    pub async fn resume_schedule(&self, id: &str) -> Result<proto::Schedule> {
        check_name("id", id)?;
        let request = proto::ResumeScheduleRequest {
            namespace: self.namespace().to_owned(),
            id: id.to_owned(),
        };
        let reply = self
            .unary(
                request,
                |mut g, r| async move { g.resume_schedule(r).await },
            )
            .await?;
        schedule_of(reply.map(|r| r.into_inner().schedule))
    }

    /// Queues one occurrence of a schedule now, beside its timing.
    pub async fn trigger_schedule(&self, id: &str) -> Result<Triggered> {
        check_name("id", id)?;
        let request = proto::TriggerScheduleRequest {
            namespace: self.namespace().to_owned(),
            id: id.to_owned(),
            ignore_overlap: false,
        };
        let reply = self
            .unary(
                request,
                |mut g, r| async move { g.trigger_schedule(r).await },
            )
            .await?
            .map_err(Error::from)?
            .into_inner();
        Ok(Triggered {
            due_time: system_time(reply.due_time.as_ref()),
            occurrence_id: reply.occurrence_id,
        })
    }

    /// Deletes a schedule.
    pub async fn delete_schedule(&self, id: &str) -> Result<()> {
        check_name("id", id)?;
        let request = proto::DeleteScheduleRequest {
            namespace: self.namespace().to_owned(),
            id: id.to_owned(),
        };
        self.unary(
            request,
            |mut g, r| async move { g.delete_schedule(r).await },
        )
        .await?
        .map_err(Error::from)?;
        Ok(())
    }
}

fn job_of(reply: Result<Option<proto::Job>, Status>) -> Result<proto::Job> {
    reply?.ok_or_else(|| Error::new(ErrorKind::Internal, "the answer carries no job"))
}

fn schedule_of(reply: Result<Option<proto::Schedule>, Status>) -> Result<proto::Schedule> {
    reply?.ok_or_else(|| Error::new(ErrorKind::Internal, "the answer carries no schedule"))
}

/// The TLS settings: the CA file or the system trust store, a client
/// certificate for mTLS, the server name.
async fn tls(config: &Config) -> Result<ClientTlsConfig> {
    let mut tls = ClientTlsConfig::new();
    tls = match &config.tls_ca {
        Some(ca) => tls.ca_certificate(Certificate::from_pem(read(ca, "tls_ca").await?)),
        None => tls.with_native_roots(),
    };
    if let (Some(cert), Some(key)) = (&config.tls_client_cert, &config.tls_client_key) {
        tls = tls.identity(Identity::from_pem(
            read(cert, "tls_client_cert").await?,
            read(key, "tls_client_key").await?,
        ));
    }
    if let Some(name) = &config.tls_server_name {
        tls = tls.domain_name(name.clone());
    }
    Ok(tls)
}

/// A small PEM file, read once at connect.
async fn read(path: &std::path::Path, field: &str) -> Result<Vec<u8>> {
    std::fs::read(path)
        .map_err(|e| Error::invalid(field, format!("cannot read {}: {e}", path.display())))
}

/// An error with its causes, on one line.
fn sources(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(inner) = cause {
        let next = inner.to_string();
        if !text.contains(&next) {
            text = format!("{text}: {next}");
        }
        cause = inner.source();
    }
    text
}
