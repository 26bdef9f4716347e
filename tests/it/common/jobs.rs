//! Job requests and the calls tests make most. Jobs live in namespace "ns" unless a
//! test says otherwise.

use dueq::proto;
use tonic::Status;

use super::{
    schedules::{dur, wait},
    service::Client,
};

pub fn job(queue: &str, name: &str) -> proto::EnqueueRequest {
    proto::EnqueueRequest {
        namespace: "ns".into(),
        queue: queue.into(),
        name: name.into(),
        ..Default::default()
    }
}

/// A queue of namespace "ns" as ListQueues shows it, or None when it is not listed.
pub async fn queue_info(client: &mut Client, queue: &str) -> Option<proto::QueueInfo> {
    client
        .list_queues(proto::ListQueuesRequest {
            namespace: "ns".into(),
            page_size: 1000,
            page_token: String::new(),
        })
        .await
        .expect("ListQueues")
        .into_inner()
        .queues
        .into_iter()
        .find(|q| q.queue == queue)
}

/// A queue of namespace "ns" that must be listed.
pub async fn listed_queue(client: &mut Client, queue: &str) -> proto::QueueInfo {
    queue_info(client, queue)
        .await
        .unwrap_or_else(|| panic!("queue {queue} is listed"))
}

pub async fn enqueue(client: &mut Client, req: proto::EnqueueRequest) -> proto::EnqueueResponse {
    client.enqueue(req).await.expect("enqueue").into_inner()
}

pub fn claim_req(queues: &[&str], wait_ms: u64, lease_ms: Option<u64>) -> proto::ClaimJobRequest {
    proto::ClaimJobRequest {
        namespace: "ns".into(),
        queues: queues.iter().map(|q| q.to_string()).collect(),
        worker_id: "test-worker".into(),
        wait: wait(wait_ms),
        lease: lease_ms.map(dur),
        max_jobs: 1,
        acks: vec![],
    }
}

/// Claims at most one job from `queues`.
pub async fn claim_job(
    client: &mut Client,
    queues: &[&str],
    wait_ms: u64,
    lease_ms: Option<u64>,
) -> Option<proto::ClaimedJob> {
    client
        .claim_job(claim_req(queues, wait_ms, lease_ms))
        .await
        .expect("claim job")
        .into_inner()
        .jobs
        .pop()
}

pub async fn ack_job(
    client: &mut Client,
    id: &str,
    token: &str,
) -> Result<proto::AckJobResponse, Status> {
    client
        .ack_job(proto::AckJobRequest {
            result: Vec::new(),
            namespace: "ns".into(),
            job_id: id.into(),
            lease_token: token.into(),
        })
        .await
        .map(|r| r.into_inner())
}

pub async fn fail_job(
    client: &mut Client,
    id: &str,
    token: &str,
    error: &str,
) -> Result<proto::FailJobResponse, Status> {
    client
        .fail_job(proto::FailJobRequest {
            namespace: "ns".into(),
            job_id: id.into(),
            lease_token: token.into(),
            error: error.into(),
            ..Default::default()
        })
        .await
        .map(|r| r.into_inner())
}

pub async fn get_job(client: &mut Client, id: &str) -> proto::Job {
    client
        .get_job(proto::GetJobRequest {
            namespace: "ns".into(),
            job_id: id.into(),
        })
        .await
        .expect("get job")
        .into_inner()
        .job
        .expect("job")
}

pub fn state(job: &proto::Job) -> proto::JobState {
    proto::JobState::try_from(job.state).expect("known state")
}

/// Every job of `queue` as ListJobs pages through it, `page_size` at a time.
pub async fn list_all_jobs(
    client: &mut Client,
    ns: &str,
    queue: &str,
    page_size: u32,
) -> Vec<proto::Job> {
    let mut jobs = Vec::new();
    let mut token = String::new();
    loop {
        let page = client
            .list_jobs(proto::ListJobsRequest {
                namespace: ns.into(),
                queue: queue.into(),
                state: 0,
                page_size,
                page_token: token,
                view: proto::JobView::Full as i32,
                filter: None,
            })
            .await
            .expect("ListJobs")
            .into_inner();
        jobs.extend(page.jobs);
        if page.next_page_token.is_empty() {
            return jobs;
        }
        token = page.next_page_token;
    }
}

/// A Work stream of "ns" on `queue` with capacity 1 and a lease no test outlasts
/// (so only the test gives its job back): the sender for the worker's further
/// messages (wrap each with [`work_request`]) and the server's side.
pub async fn open_work(
    client: &mut Client,
    queue: &str,
) -> (
    tokio::sync::mpsc::Sender<proto::WorkRequest>,
    tonic::Streaming<proto::WorkResponse>,
) {
    let (tx, rx) = tokio::sync::mpsc::channel(8);
    tx.send(work_request(proto::work_request::Request::Start(
        proto::WorkStart {
            namespace: "ns".into(),
            queues: vec![queue.into()],
            worker_id: "w".into(),
            lease: Some(dur(600_000)),
            capacity: 1,
        },
    )))
    .await
    .expect("start");
    let stream = tokio_stream::wrappers::ReceiverStream::new(rx);
    let work = super::patience::within_patience("opening a Work stream", client.work(stream))
        .await
        .expect("Work")
        .into_inner();
    (tx, work)
}

/// One message of a worker on its Work stream.
pub fn work_request(request: proto::work_request::Request) -> proto::WorkRequest {
    proto::WorkRequest {
        request: Some(request),
    }
}

/// The Work stream's next message (panics when it fails or ends).
pub async fn next_work(
    work: &mut tonic::Streaming<proto::WorkResponse>,
) -> proto::work_response::Response {
    super::patience::within_patience("the Work stream's next message", work.message())
        .await
        .expect("healthy")
        .expect("open")
        .response
        .expect("a response")
}
