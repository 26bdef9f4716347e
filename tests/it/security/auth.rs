//! Authentication and authorisation (`--auth-file`): every RPC × role, namespace
//! patterns, unknown callers, Migrate over every namespace, what stays open (health,
//! reflection), and the refusal to serve a public address without an auth file.

#![allow(deprecated)] // AdminService (deprecated) must be guarded like QueueService.

use std::{
    path::Path,
    process::{Command, Stdio},
};

use dueq::proto::admin_service_client::AdminServiceClient;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{transport::Channel, Code, Request, Status};

use crate::{common::*, doc_examples, tools::binary::Binary};

/// One principal per role, on `shop-*`; `root` is admin on `*`, `billing` a producer
/// on exactly `billing`. Each one's token is `t-<name>`.
const PRINCIPALS: &[(&str, &str, &str)] = &[
    ("producer", "producer", "shop-*"),
    ("worker", "worker", "shop-*"),
    ("reader", "reader", "shop-*"),
    ("admin", "admin", "shop-*"),
    ("root", "admin", "*"),
    ("billing", "producer", "billing"),
    ("reader-star", "reader", "*"),
];

const READS: &[&str] = &[
    "GetSchedule",
    "ListSchedules",
    "GetJob",
    "ListJobs",
    "WatchJob",
    "PreviewSchedule",
    "GetNamespaceStatus",
    "ListNamespaces",
    "ListQueues",
    "GetQueuePolicy",
    "ListFlowKeys",
    "GetFlow",
    "ListDeadGroups",
    "ListAuditEvents",
    "ListWorkers",
];

/// RPCs over every namespace at once: a principal needs the pattern `*` for them.
const EVERY_NAMESPACE: &[&str] = &["ListNamespaces"];

/// The role table, written out here independently of the server's.
fn allowed(role: &str, method: &str) -> bool {
    let producer = [
        "Enqueue",
        "EnqueueBatch",
        "UpsertSchedule",
        "PauseSchedule",
        "ResumeSchedule",
        "DeleteSchedule",
        "TriggerSchedule",
        "BackfillSchedule",
        "SetScheduleNextRun",
        "CancelJob",
        "DeleteJob",
        "CancelJobs",
        "DeleteJobs",
        "PreviewSchedule",
        "EnqueueFlow",
        "CancelFlow",
    ];
    let worker = [
        "ClaimJob",
        "AckJob",
        "AckJobs",
        "Work",
        "FailJob",
        "ExtendLease",
        "ClaimDueSchedule",
        "AckOccurrence",
        "ReleaseJob",
        "ThrottleKey",
    ];
    match role {
        "admin" => true,
        "reader" => READS.contains(&method),
        "producer" => READS.contains(&method) || producer.contains(&method),
        "worker" => READS.contains(&method) || worker.contains(&method),
        other => panic!("no role {other}"),
    }
}

/// Every RPC of QueueService and AdminService, `Service/Method`.
const RPCS: &[&str] = &[
    "QueueService/UpsertSchedule",
    "QueueService/GetSchedule",
    "QueueService/ListSchedules",
    "QueueService/DeleteSchedule",
    "QueueService/PauseSchedule",
    "QueueService/ResumeSchedule",
    "QueueService/ClaimDueSchedule",
    "QueueService/AckOccurrence",
    "QueueService/PreviewSchedule",
    "QueueService/TriggerSchedule",
    "QueueService/BackfillSchedule",
    "QueueService/SetScheduleNextRun",
    "QueueService/Enqueue",
    "QueueService/EnqueueBatch",
    "QueueService/ClaimJob",
    "QueueService/AckJob",
    "QueueService/AckJobs",
    "QueueService/Work",
    "QueueService/FailJob",
    "QueueService/ExtendLease",
    "QueueService/GetJob",
    "QueueService/ListJobs",
    "QueueService/CancelJob",
    "QueueService/RetryJob",
    "QueueService/DeleteJob",
    "QueueService/RetryJobs",
    "QueueService/CancelJobs",
    "QueueService/DeleteJobs",
    "QueueService/ReleaseJob",
    "QueueService/WatchJob",
    "QueueService/EnqueueFlow",
    "QueueService/GetFlow",
    "QueueService/CancelFlow",
    "QueueService/RetryFlow",
    "QueueService/ListNamespaces",
    "QueueService/ListQueues",
    "QueueService/PauseQueue",
    "QueueService/ResumeQueue",
    "QueueService/SetQueuePolicy",
    "QueueService/GetQueuePolicy",
    "QueueService/SetKeyLimit",
    "QueueService/ThrottleKey",
    "QueueService/ListFlowKeys",
    "QueueService/RetryDeadJobs",
    "QueueService/PurgeJobs",
    "QueueService/ListDeadGroups",
    "QueueService/ListAuditEvents",
    "QueueService/ListWorkers",
    "QueueService/Migrate",
    "QueueService/GetNamespaceStatus",
    "AdminService/Migrate",
    "AdminService/GetNamespaceStatus",
];

/// The lists above are this file's own oracle, so they must cover the whole API: an
/// RPC added to the proto without a line here would go untested for authorisation.
#[test]
fn the_oracle_lists_every_rpc_of_the_proto() {
    use prost::Message;
    let set = prost_types::FileDescriptorSet::decode(dueq::proto::FILE_DESCRIPTOR_SET)
        .expect("descriptor set");
    let mut declared: Vec<String> = set
        .file
        .iter()
        .flat_map(|file| &file.service)
        .flat_map(|service| {
            let name = service.name().to_owned();
            service
                .method
                .iter()
                .map(move |method| format!("{name}/{}", method.name()))
        })
        .collect();
    declared.sort();
    let mut listed: Vec<String> = RPCS.iter().map(|rpc| (*rpc).to_owned()).collect();
    listed.sort();
    assert_eq!(listed, declared);
}

pub(crate) fn token_hash(token: &str) -> String {
    let out = Command::new("sha256sum")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write;
            child
                .stdin
                .take()
                .expect("stdin")
                .write_all(token.as_bytes())?;
            child.wait_with_output()
        })
        .expect("sha256sum");
    String::from_utf8_lossy(&out.stdout)[..64].to_owned()
}

pub(crate) fn write_auth_file(dir: &Path) -> std::path::PathBuf {
    let mut text = String::new();
    for (name, role, pattern) in PRINCIPALS {
        text.push_str(&format!(
            "[[principal]]\nname = \"{name}\"\nroles = [\"{role}\"]\nnamespaces = [\"{pattern}\"]\n\
             token_sha256 = \"{}\"\n\n",
            token_hash(&format!("t-{name}"))
        ));
    }
    let path = dir.join("auth.toml");
    std::fs::write(&path, text).expect("write auth file");
    path
}

pub(crate) async fn start(redis: &Redis, dir: &Path, reflection: bool) -> Service {
    let mut config = config(&redis.url());
    config.auth_file = Some(write_auth_file(dir));
    config.reflection = reflection;
    Service::start_with(config).await
}

/// A bulk action's selection of one (unknown) job.
fn bulk_ids() -> proto::bulk_jobs_request::Selection {
    proto::bulk_jobs_request::Selection::JobIds(proto::JobIds {
        job_ids: vec!["j".into()],
    })
}

pub(crate) fn with_token<T>(message: T, token: Option<&str>) -> Request<T> {
    let mut request = Request::new(message);
    if let Some(token) = token {
        let value = format!("Bearer {token}").parse().expect("header value");
        request.metadata_mut().insert("authorization", value);
    }
    request
}

/// Calls `rpc` on `namespace` with a request that names only the namespace (a
/// Migrate is a dry run); the status, or Ok if the call was answered.
// Some requests have no field but the namespace, so `..Default::default()` is moot.
#[allow(clippy::needless_update)]
async fn call(
    channel: &Channel,
    rpc: &str,
    namespace: &str,
    token: Option<&str>,
) -> Result<(), Status> {
    let ns = namespace.to_owned();
    let mut queue = Client::new(channel.clone());
    let mut admin = AdminServiceClient::new(channel.clone());
    macro_rules! send {
        ($client:ident.$method:ident($req:ident { $($field:ident: $value:expr),* })) => {
            $client
                .$method(with_token(
                    proto::$req { namespace: ns, $($field: $value,)* ..Default::default() },
                    token,
                ))
                .await
                .map(|_| ())
        };
    }
    match rpc {
        "QueueService/UpsertSchedule" => send!(queue.upsert_schedule(UpsertScheduleRequest {
            schedule: Some(every("s", 60))
        })),
        "QueueService/GetSchedule" => send!(queue.get_schedule(GetScheduleRequest {})),
        "QueueService/ListSchedules" => send!(queue.list_schedules(ListSchedulesRequest {})),
        "QueueService/DeleteSchedule" => send!(queue.delete_schedule(DeleteScheduleRequest {})),
        "QueueService/PauseSchedule" => send!(queue.pause_schedule(PauseScheduleRequest {})),
        "QueueService/ResumeSchedule" => send!(queue.resume_schedule(ResumeScheduleRequest {})),
        "QueueService/ClaimDueSchedule" => {
            send!(queue.claim_due_schedule(ClaimDueScheduleRequest {}))
        }
        "QueueService/AckOccurrence" => send!(queue.ack_occurrence(AckOccurrenceRequest {})),
        "QueueService/PreviewSchedule" => send!(queue.preview_schedule(PreviewScheduleRequest {})),
        "QueueService/TriggerSchedule" => send!(queue.trigger_schedule(TriggerScheduleRequest {})),
        "QueueService/BackfillSchedule" => {
            send!(queue.backfill_schedule(BackfillScheduleRequest {}))
        }
        "QueueService/SetScheduleNextRun" => {
            send!(queue.set_schedule_next_run(SetScheduleNextRunRequest {}))
        }
        "QueueService/Enqueue" => send!(queue.enqueue(EnqueueRequest {
            queue: "q".into(),
            name: "j".into()
        })),
        "QueueService/EnqueueBatch" => send!(queue.enqueue_batch(EnqueueBatchRequest {})),
        "QueueService/ClaimJob" => send!(queue.claim_job(ClaimJobRequest {})),
        "QueueService/AckJob" => send!(queue.ack_job(AckJobRequest {})),
        "QueueService/AckJobs" => send!(queue.ack_jobs(AckJobsRequest {})),
        "QueueService/Work" => {
            // The namespace is in the stream's first message, its start.
            let start = proto::WorkRequest {
                request: Some(proto::work_request::Request::Start(proto::WorkStart {
                    namespace: ns,
                    ..Default::default()
                })),
            };
            let requests = tokio_stream::iter([start]);
            queue.work(with_token(requests, token)).await.map(|_| ())
        }
        "QueueService/FailJob" => send!(queue.fail_job(FailJobRequest {})),
        "QueueService/ExtendLease" => send!(queue.extend_lease(ExtendLeaseRequest {})),
        "QueueService/GetJob" => send!(queue.get_job(GetJobRequest {})),
        "QueueService/ListJobs" => send!(queue.list_jobs(ListJobsRequest {})),
        "QueueService/CancelJob" => send!(queue.cancel_job(CancelJobRequest {})),
        "QueueService/RetryJob" => send!(queue.retry_job(RetryJobRequest {})),
        "QueueService/DeleteJob" => send!(queue.delete_job(DeleteJobRequest {})),
        "QueueService/RetryJobs" => send!(queue.retry_jobs(BulkJobsRequest {
            queue: "q".into(),
            selection: Some(bulk_ids())
        })),
        "QueueService/CancelJobs" => send!(queue.cancel_jobs(BulkJobsRequest {
            queue: "q".into(),
            selection: Some(bulk_ids())
        })),
        "QueueService/DeleteJobs" => send!(queue.delete_jobs(BulkJobsRequest {
            queue: "q".into(),
            selection: Some(bulk_ids())
        })),
        "QueueService/ReleaseJob" => send!(queue.release_job(ReleaseJobRequest {})),
        "QueueService/WatchJob" => send!(queue.watch_job(WatchJobRequest {})),
        "QueueService/EnqueueFlow" => send!(queue.enqueue_flow(EnqueueFlowRequest {})),
        "QueueService/GetFlow" => send!(queue.get_flow(GetFlowRequest {})),
        "QueueService/CancelFlow" => send!(queue.cancel_flow(CancelFlowRequest {})),
        "QueueService/RetryFlow" => send!(queue.retry_flow(RetryFlowRequest {})),
        "QueueService/ListNamespaces" => queue
            .list_namespaces(with_token(proto::ListNamespacesRequest::default(), token))
            .await
            .map(|_| ()),
        "QueueService/ListQueues" => send!(queue.list_queues(ListQueuesRequest {})),
        "QueueService/PauseQueue" => {
            send!(queue.pause_queue(PauseQueueRequest { queue: "q".into() }))
        }
        "QueueService/ResumeQueue" => {
            send!(queue.resume_queue(ResumeQueueRequest { queue: "q".into() }))
        }
        "QueueService/SetQueuePolicy" => {
            send!(queue.set_queue_policy(SetQueuePolicyRequest { queue: "q".into() }))
        }
        "QueueService/GetQueuePolicy" => {
            send!(queue.get_queue_policy(GetQueuePolicyRequest { queue: "q".into() }))
        }
        "QueueService/SetKeyLimit" => send!(queue.set_key_limit(SetKeyLimitRequest {
            queue: "q".into(),
            key: "k".into()
        })),
        "QueueService/ThrottleKey" => send!(queue.throttle_key(ThrottleKeyRequest {
            queue: "q".into(),
            key: "k".into(),
            r#for: Some(prost_types::Duration::default())
        })),
        "QueueService/ListFlowKeys" => {
            send!(queue.list_flow_keys(ListFlowKeysRequest { queue: "q".into() }))
        }
        "QueueService/RetryDeadJobs" => {
            send!(queue.retry_dead_jobs(RetryDeadJobsRequest { queue: "q".into() }))
        }
        "QueueService/PurgeJobs" => send!(queue.purge_jobs(PurgeJobsRequest {
            queue: "q".into(),
            state: proto::JobState::Dead as i32
        })),
        "QueueService/ListDeadGroups" => {
            send!(queue.list_dead_groups(ListDeadGroupsRequest {}))
        }
        "QueueService/ListAuditEvents" => {
            send!(queue.list_audit_events(ListAuditEventsRequest {}))
        }
        "QueueService/ListWorkers" => send!(queue.list_workers(ListWorkersRequest {})),
        "QueueService/Migrate" => send!(queue.migrate(MigrateRequest { dry_run: true })),
        "QueueService/GetNamespaceStatus" => {
            send!(queue.get_namespace_status(GetNamespaceStatusRequest {}))
        }
        "AdminService/Migrate" => send!(admin.migrate(MigrateRequest { dry_run: true })),
        "AdminService/GetNamespaceStatus" => {
            send!(admin.get_namespace_status(GetNamespaceStatusRequest {}))
        }
        other => panic!("no rpc {other}"),
    }
}

fn assert_denied(result: Result<(), Status>, principal: &str, method: &str, namespace: &str) {
    let status = result.expect_err("denied");
    assert_eq!(
        status.code(),
        Code::PermissionDenied,
        "{principal} {method}: {status:?}"
    );
    for needle in [&format!("\"{principal}\""), method, namespace] {
        assert!(
            status.message().contains(needle),
            "{principal} {method}: {:?} lacks {needle}",
            status.message()
        );
    }
}

fn assert_let_through(result: Result<(), Status>, principal: &str, rpc: &str) {
    if let Err(status) = result {
        assert!(
            ![Code::PermissionDenied, Code::Unauthenticated].contains(&status.code()),
            "{principal} may call {rpc}: {status:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_rpc_by_every_role_in_and_outside_its_namespaces() {
    let redis = Redis::start().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let service = start(&redis, dir.path(), true).await;
    let channel = Channel::from_shared(service.endpoint())
        .expect("endpoint")
        .connect()
        .await
        .expect("connect");
    for (name, role, _) in &PRINCIPALS[..4] {
        let token = format!("t-{name}");
        for rpc in RPCS {
            let method = rpc.split_once('/').expect("rpc").1;
            let inside = call(&channel, rpc, "shop-a", Some(&token)).await;
            if EVERY_NAMESPACE.contains(&method) {
                // Not on `*`: denied whatever the role; allowed ones are checked in
                // every_namespace_rpcs_need_a_role_on_star.
                assert_denied(inside, name, method, "all namespaces");
                continue;
            }
            if allowed(role, method) {
                assert_let_through(inside, name, rpc);
            } else {
                assert_denied(inside, name, method, "\"shop-a\"");
            }
            // Outside its namespaces every call is denied, whatever the role.
            let outside = call(&channel, rpc, "billing", Some(&token)).await;
            assert_denied(outside, name, method, "\"billing\"");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn namespace_patterns_exact_prefix_and_all() {
    let redis = Redis::start().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let service = start(&redis, dir.path(), true).await;
    let channel = Channel::from_shared(service.endpoint())
        .expect("endpoint")
        .connect()
        .await
        .expect("connect");
    let enqueue = "QueueService/Enqueue";
    for (principal, namespace, ok) in [
        ("billing", "billing", true),
        ("billing", "billing-2", false),
        ("billing", "billin", false),
        ("producer", "shop-a", true),
        ("producer", "shop-", true),
        ("producer", "shop", false),
        ("producer", "shopping", false),
        ("root", "shop-a", true),
        ("root", "anything.else", true),
    ] {
        let result = call(
            &channel,
            enqueue,
            namespace,
            Some(&format!("t-{principal}")),
        )
        .await;
        if ok {
            result.unwrap_or_else(|s| panic!("{principal} enqueues in {namespace}: {s:?}"));
        } else {
            assert_denied(result, principal, "Enqueue", &format!("\"{namespace}\""));
        }
    }
}

/// The namespace is validated once, before the role check reads it: a malformed one
/// is INVALID_ARGUMENT naming the field for every RPC that names a namespace, also for
/// a caller who may not touch it (it learns the name is malformed, not whether it may).
/// A caller that holds no role granting the RPC at all is refused first,
/// PERMISSION_DENIED naming it and the method, whatever the message says (issue 29
/// item 9: Work answered INVALID_ARGUMENT).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_namespace_is_refused_before_the_role_check() {
    let redis = Redis::start().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let service = start(&redis, dir.path(), true).await;
    let channel = Channel::from_shared(service.endpoint())
        .expect("endpoint")
        .connect()
        .await
        .expect("connect");
    let named = RPCS.iter().filter(|rpc| {
        !EVERY_NAMESPACE
            .iter()
            .any(|m| rpc.ends_with(&format!("/{m}")))
    });
    for rpc in named {
        let method = rpc.split_once('/').expect("rpc").1;
        // billing is a producer (on `billing` only); root an admin on `*`.
        for (principal, role) in [("billing", "producer"), ("root", "admin")] {
            let status = call(&channel, rpc, "bad{ns}", Some(&format!("t-{principal}")))
                .await
                .expect_err(rpc);
            if !allowed(role, method) {
                assert_eq!(
                    status.code(),
                    Code::PermissionDenied,
                    "{principal} {rpc}: {status:?}"
                );
                for needle in [&format!("\"{principal}\""), method] {
                    assert!(
                        status.message().contains(needle),
                        "{status:?} lacks {needle}"
                    );
                }
                continue;
            }
            assert_eq!(
                status.code(),
                Code::InvalidArgument,
                "{principal} {rpc}: {status:?}"
            );
            assert!(
                status.message().contains("namespace"),
                "{principal} {rpc}: {:?} names the field",
                status.message()
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_or_unknown_token_is_unauthenticated_and_health_stays_open() {
    let redis = Redis::start().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let service = start(&redis, dir.path(), true).await;
    let channel = Channel::from_shared(service.endpoint())
        .expect("endpoint")
        .connect()
        .await
        .expect("connect");
    for token in [None, Some("t-nobody"), Some("")] {
        for rpc in [
            "QueueService/Enqueue",
            "QueueService/GetJob",
            "AdminService/Migrate",
        ] {
            let status = call(&channel, rpc, "shop-a", token)
                .await
                .expect_err("refused");
            assert_eq!(
                status.code(),
                Code::Unauthenticated,
                "{token:?} {rpc}: {status:?}"
            );
            assert!(
                status.message().contains("authorization: Bearer"),
                "{status:?}"
            );
        }
    }
    // Health answers without a credential.
    assert_eq!(service.health().await, 1, "SERVING without a token");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_denied_write_writes_nothing() {
    let redis = Redis::start().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let service = start(&redis, dir.path(), true).await;
    let channel = Channel::from_shared(service.endpoint())
        .expect("endpoint")
        .connect()
        .await
        .expect("connect");
    let mut client = Client::new(channel.clone());
    let upsert = |token: &str| {
        with_token(
            proto::UpsertScheduleRequest {
                namespace: "shop-a".into(),
                schedule: Some(every("kept", 60)),
            },
            Some(token),
        )
    };
    client
        .upsert_schedule(upsert("t-producer"))
        .await
        .expect("producer upserts");
    let mut job = job("q", "j");
    job.namespace = "shop-a".into();
    let denied = client
        .enqueue(with_token(job, Some("t-reader")))
        .await
        .map(|_| ());
    assert_denied(denied, "reader", "Enqueue", "\"shop-a\"");
    let delete = proto::DeleteScheduleRequest {
        namespace: "shop-a".into(),
        id: "kept".into(),
    };
    let denied = client
        .delete_schedule(with_token(delete, Some("t-worker")))
        .await
        .map(|_| ());
    assert_denied(denied, "worker", "DeleteSchedule", "\"shop-a\"");
    let denied = client.upsert_schedule(upsert("t-reader")).await.map(|_| ());
    assert_denied(denied, "reader", "UpsertSchedule", "\"shop-a\"");

    let jobs = client
        .list_jobs(with_token(
            proto::ListJobsRequest {
                namespace: "shop-a".into(),
                queue: "q".into(),
                ..Default::default()
            },
            Some("t-root"),
        ))
        .await
        .expect("list jobs")
        .into_inner();
    assert!(
        jobs.jobs.is_empty(),
        "a denied Enqueue stored a job: {jobs:?}"
    );
    let schedules = client
        .list_schedules(with_token(
            proto::ListSchedulesRequest {
                namespace: "shop-a".into(),
                ..Default::default()
            },
            Some("t-root"),
        ))
        .await
        .expect("list schedules")
        .into_inner();
    let ids: Vec<_> = schedules.schedules.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(
        ids,
        ["kept"],
        "a denied delete removed it, or a denied upsert wrote"
    );
}

/// Pins the worker fast path's authorisation: a Work stream is authorised on its
/// start's namespace (the call itself names none), a reader is refused before any job
/// is handed out, a worker works; AckJobs likewise.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn work_and_ack_jobs_need_the_worker_role() {
    let redis = Redis::start().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let service = start(&redis, dir.path(), false).await;
    let channel = Channel::from_shared(service.endpoint())
        .expect("endpoint")
        .connect()
        .await
        .expect("connect");
    let mut client = Client::new(channel);
    let mut job = job("q", "j");
    job.namespace = "shop-a".into();
    client
        .enqueue(with_token(job, Some("t-producer")))
        .await
        .expect("enqueue");
    let start = || proto::WorkRequest {
        request: Some(proto::work_request::Request::Start(proto::WorkStart {
            namespace: "shop-a".into(),
            queues: vec!["q".into()],
            capacity: 1,
            ..Default::default()
        })),
    };
    // The worker keeps its side open: the stream lives until the test drops it.
    let (_keep, open) = tokio::sync::mpsc::channel::<proto::WorkRequest>(1);
    let requests = |open| {
        tokio_stream::StreamExt::chain(tokio_stream::iter([start()]), ReceiverStream::new(open))
    };

    let denied = client
        .work(with_token(
            requests(tokio::sync::mpsc::channel(1).1),
            Some("t-reader"),
        ))
        .await
        .map(|_| ());
    assert_denied(denied, "reader", "Work", "\"shop-a\"");
    let mut stream = client
        .work(with_token(requests(open), Some("t-worker")))
        .await
        .expect("a worker opens a Work stream")
        .into_inner();
    let claimed = match within_patience("the job", stream.message()).await {
        Ok(Some(proto::WorkResponse {
            response: Some(proto::work_response::Response::Job(job)),
        })) => job,
        other => panic!("expected the job: {other:?}"),
    };

    let ack = |token: &str| {
        with_token(
            proto::AckJobsRequest {
                namespace: "shop-a".into(),
                acks: vec![proto::JobLease {
                    result: Vec::new(),
                    job_id: claimed.job_id.clone(),
                    lease_token: claimed.lease_token.clone(),
                }],
            },
            Some(token),
        )
    };
    let denied = client.ack_jobs(ack("t-reader")).await.map(|_| ());
    assert_denied(denied, "reader", "AckJobs", "\"shop-a\"");
    let results = client
        .ack_jobs(ack("t-worker"))
        .await
        .expect("a worker acks")
        .into_inner()
        .results;
    assert_eq!(results[0].code, Code::Ok as i32, "{results:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migrate_over_every_namespace_or_an_import_needs_admin_on_star() {
    let redis = Redis::start().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let service = start(&redis, dir.path(), true).await;
    let channel = Channel::from_shared(service.endpoint())
        .expect("endpoint")
        .connect()
        .await
        .expect("connect");
    let all = proto::MigrateRequest {
        all_namespaces: true,
        dry_run: true,
        ..Default::default()
    };
    let import = proto::MigrateRequest {
        namespace: "shop-a".into(),
        source: proto::MigrateSource::BoringnodeQueue as i32,
        dry_run: true,
        ..Default::default()
    };
    for request in [all, import] {
        let mut queue = Client::new(channel.clone());
        let denied = queue
            .migrate(with_token(request.clone(), Some("t-admin")))
            .await
            .map(|_| ());
        assert_denied(denied, "admin", "Migrate", "all namespaces");
        let mut admin = AdminServiceClient::new(channel.clone());
        let denied = admin
            .migrate(with_token(request.clone(), Some("t-admin")))
            .await
            .map(|_| ());
        assert_denied(denied, "admin", "Migrate", "all namespaces");
        let allowed = queue
            .migrate(with_token(request, Some("t-root")))
            .await
            .map(|_| ());
        assert_let_through(allowed, "root", "Migrate");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_namespace_rpcs_need_a_role_on_star() {
    let redis = Redis::start().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let service = start(&redis, dir.path(), true).await;
    let channel = Channel::from_shared(service.endpoint())
        .expect("endpoint")
        .connect()
        .await
        .expect("connect");
    for rpc in ["QueueService/ListNamespaces"] {
        let method = rpc.split_once('/').expect("rpc").1;
        // root is admin on `*`; reader-star reads on `*`; admin is admin on shop-*.
        for (name, allowed) in [("root", true), ("reader-star", true), ("admin", false)] {
            let token = format!("t-{name}");
            let result = call(&channel, rpc, "", Some(&token)).await;
            if allowed {
                assert_let_through(result, name, rpc);
            } else {
                assert_denied(result, name, method, "all namespaces");
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs grpcurl"]
async fn reflection_stays_open_with_auth_and_can_be_closed() {
    tools::require("grpcurl");
    let redis = Redis::start().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let open = start(&redis, dir.path(), true).await;
    let (ok, text) = doc_examples::run(
        "grpcurl -plaintext localhost:50051 list",
        &open.addr.to_string(),
    );
    assert!(ok && text.contains("dueq.v1.QueueService"), "{text}");
    let closed = start(&redis, dir.path(), false).await;
    let (ok, text) = doc_examples::run(
        "grpcurl -plaintext localhost:50051 list",
        &closed.addr.to_string(),
    );
    assert!(!ok && !text.contains("dueq.v1.QueueService"), "{text}");
}

/// Runs `dueq serve` with `args` and a Redis nobody listens on; waits for it to exit
/// or for `within` of output.
fn dueq(args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_dueq"));
    command
        .arg("serve")
        .args(["--redis-url", &format!("redis://127.0.0.1:{}", free_port())])
        .args(args)
        .env_remove("DUEQ_AUTH_FILE")
        .env_remove("DUEQ_ALLOW_UNAUTHENTICATED");
    command
}

#[test]
fn a_public_address_without_an_auth_file_is_refused_in_one_line() {
    let out = dueq(&["--listen", "0.0.0.0:0"]).output().expect("run dueq");
    assert!(!out.status.success());
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<_> = text.lines().collect();
    assert_eq!(lines.len(), 1, "{text}");
    for needle in [
        "refusing to listen on 0.0.0.0",
        "--auth-file",
        "--allow-unauthenticated",
    ] {
        assert!(text.contains(needle), "{text} lacks {needle}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_public_address_is_served_with_allow_unauthenticated() {
    let mut child = dueq(&["--listen", "0.0.0.0:0", "--allow-unauthenticated"])
        .env("DUEQ_LOG", "info")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start dueq");
    let stdout = child.stdout.take().expect("stdout");
    let listening = tokio::task::spawn_blocking(move || {
        use std::io::BufRead;
        std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
            .find(|line| line.contains("dueq listening"))
    });
    let line = within_patience("dueq to listen", listening)
        .await
        .expect("reader");
    let _ = child.kill();
    let _ = child.wait();
    assert!(
        line.is_some_and(|l| l.contains("0.0.0.0")),
        "no listening line"
    );
}

#[test]
fn a_bad_auth_file_stops_startup_naming_the_principal_and_field() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("auth.toml");
    std::fs::write(
        &path,
        "[[principal]]\nname = \"shop\"\nroles = [\"producer\"]\nnamespaces = [\"shop-*\"]\n\
         token_sha256 = \"not-hex\"\n",
    )
    .expect("write");
    let out = dueq(&[
        "--listen",
        "127.0.0.1:0",
        "--auth-file",
        path.to_str().expect("utf-8"),
    ])
    .output()
    .expect("run dueq");
    assert!(!out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    for needle in ["auth file", "\"shop\"", "token_sha256"] {
        assert!(text.contains(needle), "{text} lacks {needle}");
    }
}

/// Pins (issue 29 item 7): two principals with the same client_cert_subject stop
/// startup naming the second and the field: a certificate must name one principal.
/// (Watched through its output: a service that starts would not exit.)
#[tokio::test]
async fn a_client_cert_subject_of_two_principals_stops_startup() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("auth.toml");
    std::fs::write(
        &path,
        "[[principal]]\nname = \"ops\"\nroles = [\"admin\"]\nnamespaces = [\"*\"]\n\
         client_cert_subject = \"worker.internal\"\n\n\
         [[principal]]\nname = \"workers\"\nroles = [\"worker\"]\nnamespaces = [\"shop-*\"]\n\
         client_cert_subject = \"worker.internal\"\n",
    )
    .expect("write");
    let listen = format!("127.0.0.1:{}", free_port());
    let auth = ["--auth-file", path.to_str().expect("utf-8")];
    let mut dueq = Binary::spawn_with(&listen, "redis://127.0.0.1:1", "info", &auth);
    let line = dueq.line_with(&["dueq failed", "auth file"]).await;
    for needle in [
        "\"workers\" (#2)",
        "client_cert_subject",
        "\"worker.internal\"",
    ] {
        assert!(line.contains(needle), "{line} lacks {needle}");
    }
}

/// `dueq serve` on a free loopback port, serving the example auth file of docs/security.md with
/// the `ops` principal's hash (from the environment) made from `ops-token`; its
/// stdout lines come through the receiver.
pub(super) struct ReadmeService {
    child: std::process::Child,
    pub(super) addr: String,
    /// The service's stdout, a line at a time.
    pub(super) lines: std::sync::mpsc::Receiver<String>,
    _dir: tempfile::TempDir,
}

impl Drop for ReadmeService {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The example auth file of docs/security.md (its block `auth-file`).
fn readme_auth_file() -> &'static str {
    doc_examples::fenced("auth-file")
}

async fn start_readme_service(redis: &Redis) -> ReadmeService {
    start_logging_service(redis, "json", "info").await
}

/// The docs' secured service (`ops-token` is its admin's token), logging in `format`
/// at `level` on the stdout the returned `lines` read.
pub(super) async fn start_logging_service(
    redis: &Redis,
    format: &str,
    level: &str,
) -> ReadmeService {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("auth.toml");
    std::fs::write(&path, readme_auth_file()).expect("write auth file");
    let addr = format!("127.0.0.1:{}", free_port());
    let mut child = Command::new(env!("CARGO_BIN_EXE_dueq"))
        .args(["serve", "--listen", &addr, "--redis-url", &redis.url()])
        .args(["--auth-file", path.to_str().expect("utf-8")])
        .args(["--log-format", format])
        .env("DUEQ_LOG", level)
        .env("DUEQ_OPS_TOKEN_SHA256", token_hash("ops-token"))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start dueq");
    let stdout = child.stdout.take().expect("stdout");
    let (tx, lines) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    let patience = Patience::new(format!("dueq on {addr} to be SERVING"));
    loop {
        let channel = Channel::from_shared(format!("http://{addr}"))
            .expect("endpoint")
            .connect()
            .await;
        if let Ok(channel) = channel {
            let request = tonic_health::pb::HealthCheckRequest {
                service: "dueq.v1.QueueService".into(),
            };
            let health = tonic_health::pb::health_client::HealthClient::new(channel)
                .check(request)
                .await;
            if health.is_ok_and(|r| r.into_inner().status == 1) {
                break;
            }
        }
        patience.wait().await;
    }
    ReadmeService {
        child,
        addr,
        lines,
        _dir: dir,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs grpcurl"]
async fn the_security_doc_examples_run() {
    tools::require("grpcurl");
    let redis = Redis::start().await;
    let service = start_readme_service(&redis).await;
    let commands = doc_examples::commands_between("auth-examples");
    assert_eq!(commands.len(), 3, "{commands:?}");
    let mut outputs = Vec::new();
    for command in &commands {
        let (ok, text) = tokio::task::block_in_place(|| doc_examples::run(command, &service.addr));
        assert!(ok, "docs/security.md example failed:\n{command}\n{text}");
        outputs.push(text);
    }
    assert!(outputs[0].contains("jobId"), "{}", outputs[0]);
    for needle in [
        "PermissionDenied",
        "principal \"shop-producer\" may not call Enqueue on namespace \"billing\"",
    ] {
        assert!(outputs[1].contains(needle), "{} lacks {needle}", outputs[1]);
    }
    assert!(outputs[2].contains("SERVING"), "{}", outputs[2]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn operator_actions_are_audited_with_the_principal() {
    let redis = Redis::start().await;
    let service = start_readme_service(&redis).await;
    let channel = Channel::from_shared(format!("http://{}", service.addr))
        .expect("endpoint")
        .connect()
        .await
        .expect("connect");
    let mut client = Client::new(channel);
    let delete = proto::DeleteScheduleRequest {
        namespace: "shop-eu".into(),
        id: "gone".into(),
    };
    // Allowed or not found, the call was let through, so it is audited.
    let _ = client
        .delete_schedule(with_token(delete, Some("ops-token")))
        .await;
    let patience = Patience::new("an audit line");
    let audit = loop {
        match service.lines.try_recv() {
            Ok(line) if line.contains("dueq::audit") => break line,
            Ok(_) => continue,
            Err(_) => patience.wait().await,
        }
    };
    for needle in ["\"principal\":\"ops\"", "DeleteSchedule", "shop-eu"] {
        assert!(audit.contains(needle), "{audit} lacks {needle}");
    }
}

/// Pins (issue 36): DeleteJob and ReleaseJob are audited with the principal, let
/// through (here to NOT_FOUND) or not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_and_release_job_are_audited() {
    let redis = Redis::start().await;
    let service = start_readme_service(&redis).await;
    let channel = Channel::from_shared(format!("http://{}", service.addr))
        .expect("endpoint")
        .connect()
        .await
        .expect("connect");
    let mut client = Client::new(channel);
    for method in ["DeleteJob", "ReleaseJob"] {
        let answer = if method == "DeleteJob" {
            let delete = proto::DeleteJobRequest {
                namespace: "shop-eu".into(),
                job_id: "gone".into(),
            };
            client
                .delete_job(with_token(delete, Some("ops-token")))
                .await
                .map(|_| ())
        } else {
            let release = proto::ReleaseJobRequest {
                namespace: "shop-eu".into(),
                job_id: "gone".into(),
                ..Default::default()
            };
            client
                .release_job(with_token(release, Some("ops-token")))
                .await
                .map(|_| ())
        };
        assert_eq!(answer.expect_err("no such job").code(), Code::NotFound);
        let patience = Patience::new(format!("the audit line of {method}"));
        let audit = loop {
            match service.lines.try_recv() {
                Ok(line) if line.contains("dueq::audit") && line.contains(method) => break line,
                Ok(_) => continue,
                Err(_) => patience.wait().await,
            }
        };
        for needle in ["\"principal\":\"ops\"", "shop-eu"] {
            assert!(audit.contains(needle), "{audit} lacks {needle}");
        }
    }
}
