//! A principal's `max_jobs` and `max_schedules` (issue 29 item 5): soft limits on
//! what all of its namespaces hold together, counted by each replica from the
//! namespaces' own counts (docs/security.md). Calls through one replica stop at the
//! limit exactly; another replica's first call reads the totals afresh; room freed by
//! deletes is seen once a replica reads again (at most a second later, so the tests
//! retry until it is, never sleep).

use std::path::Path;

use tonic::{transport::Channel, Code, Status};

use super::auth::{token_hash, with_token};
use crate::{common::*, tools::binary::Binary};

/// A producer on every namespace whose token is `t-<name>`, with `limits` (TOML
/// lines: `max_jobs = 3`).
fn principal(name: &str, limits: &str) -> String {
    format!(
        "[[principal]]\nname = \"{name}\"\nroles = [\"producer\"]\nnamespaces = [\"*\"]\n\
         token_sha256 = \"{}\"\nmax_namespaces = 10\n{limits}\n\n",
        token_hash(&format!("t-{name}"))
    )
}

/// An auth file holding `text`, in `dir`.
fn auth_file(dir: &Path, text: &str) -> std::path::PathBuf {
    let path = dir.join("auth.toml");
    let temporary = path.with_extension("tmp");
    std::fs::write(&temporary, text).expect("write auth file");
    std::fs::rename(&temporary, &path).expect("rename auth file");
    path
}

/// A lazy channel to `service`.
fn channel(service: &Service) -> Channel {
    Channel::from_shared(service.endpoint())
        .expect("endpoint")
        .connect_lazy()
}

/// An Enqueue of job `id` into `namespace` as `t-<name>`.
async fn enqueue(channel: &Channel, name: &str, namespace: &str, id: &str) -> Result<(), Status> {
    let mut request = job("q", "j");
    request.namespace = namespace.into();
    request.job_id = id.into();
    Client::new(channel.clone())
        .enqueue(with_token(request, Some(&format!("t-{name}"))))
        .await
        .map(|_| ())
}

/// An EnqueueBatch of jobs `ids` into `namespace` as `t-<name>`: each item's code.
async fn enqueue_batch(
    channel: &Channel,
    name: &str,
    namespace: &str,
    ids: &[&str],
) -> Result<Vec<(Code, String)>, Status> {
    let jobs = ids
        .iter()
        .map(|id| proto::EnqueueRequest {
            job_id: (*id).into(),
            ..job("q", "j")
        })
        .map(|job| proto::EnqueueRequest {
            namespace: String::new(),
            ..job
        })
        .collect();
    let request = proto::EnqueueBatchRequest {
        namespace: namespace.into(),
        jobs,
    };
    let response = Client::new(channel.clone())
        .enqueue_batch(with_token(request, Some(&format!("t-{name}"))))
        .await?
        .into_inner();
    Ok(response
        .results
        .into_iter()
        .map(|r| match r.result {
            Some(proto::enqueue_batch_result::Result::Error(e)) => (Code::from(e.code), e.message),
            _ => (Code::Ok, String::new()),
        })
        .collect())
}

/// An EnqueueFlow of `nodes` independent jobs into `namespace` as `t-<name>`.
async fn enqueue_flow(
    channel: &Channel,
    name: &str,
    namespace: &str,
    nodes: usize,
) -> Result<(), Status> {
    let nodes = (0..nodes)
        .map(|i| proto::FlowNode {
            r#ref: format!("n{i}"),
            job: Some(proto::EnqueueRequest {
                namespace: String::new(),
                ..job("q", "j")
            }),
            ..Default::default()
        })
        .collect();
    let request = proto::EnqueueFlowRequest {
        namespace: namespace.into(),
        nodes,
        ..Default::default()
    };
    Client::new(channel.clone())
        .enqueue_flow(with_token(request, Some(&format!("t-{name}"))))
        .await
        .map(|_| ())
}

/// Asserts `message` names principal `name` and its `limit` of `max`.
fn names_the_limit(message: &str, name: &str, limit: &str, max: u64) {
    assert!(
        message.contains(&format!("principal \"{name}\"")),
        "{message}"
    );
    assert!(message.contains(&format!("{limit} of {max}")), "{message}");
    assert!(message.contains("(auth file)"), "{message}");
}

/// Asserts `answer` is RESOURCE_EXHAUSTED naming `name`, its `limit` of `max`, and
/// that nothing was written.
fn over(answer: Result<(), Status>, name: &str, limit: &str, max: u64) {
    let status = answer.expect_err("refused by the principal's own limit");
    assert_eq!(status.code(), Code::ResourceExhausted, "{status:?}");
    names_the_limit(status.message(), name, limit, max);
    assert!(
        status.message().contains("nothing was written"),
        "{status:?}"
    );
}

/// Every job record stored under `namespace`.
async fn stored_jobs(redis: &Redis, namespace: &str) -> usize {
    let mut conn = redis.conn().await;
    let keys: Vec<String> =
        query(&mut conn, cmd("KEYS").arg(format!("*{{{namespace}}}:j:*"))).await;
    keys.len()
}

/// Pins (issue 29 item 5): `max_jobs` bounds the unfinished jobs of all of a
/// principal's namespaces together: through one replica, Enqueue, EnqueueBatch (the
/// items that fit go in, the rest are refused one by one) and EnqueueFlow (whole or
/// not at all) stop at 5 across ns-a and ns-b with nothing more stored; the other
/// replica's first call reads the totals and is refused too; a retry of a stored
/// job (its job_id) is let through; principal q, with its own limit, is let in.
/// Without `max_jobs` every call was let in.
#[tokio::test]
async fn max_jobs_holds_across_namespaces_and_replicas() {
    let dir = tempfile::tempdir().expect("tempdir");
    let text = principal("p", "max_jobs = 5") + &principal("q", "max_jobs = 1");
    let path = auth_file(dir.path(), &text);
    let redis = Redis::start().await;
    let start = || {
        let mut config = config(&redis.url());
        config.auth_file = Some(path.clone());
        Service::start_with(config)
    };
    let (one, two) = (start().await, start().await);
    let (one, two) = (channel(&one), channel(&two));
    enqueue(&one, "p", "ns-a", "a1").await.expect("1 of 5");
    enqueue_flow(&one, "p", "ns-b", 2)
        .await
        .expect("2 and 3 of 5");
    over(enqueue_flow(&one, "p", "ns-b", 3).await, "p", "max_jobs", 5);
    let items = enqueue_batch(&one, "p", "ns-a", &["a2", "a3", "a4"])
        .await
        .expect("the batch is answered item by item");
    assert_eq!(items[0].0, Code::Ok, "{items:?}");
    assert_eq!(items[1].0, Code::Ok, "{items:?}");
    assert_eq!(items[2].0, Code::ResourceExhausted, "{items:?}");
    names_the_limit(&items[2].1, "p", "max_jobs", 5);
    assert!(items[2].1.contains("this job was not written"), "{items:?}");
    over(enqueue(&one, "p", "ns-c", "c1").await, "p", "max_jobs", 5);
    enqueue(&one, "p", "ns-a", "a1")
        .await
        .expect("a retry of a stored job writes nothing: let through at the limit");
    let whole = enqueue_batch(&one, "p", "ns-a", &["a5"]).await.map(|_| ());
    over(whole, "p", "max_jobs", 5);
    over(enqueue(&two, "p", "ns-b", "b9").await, "p", "max_jobs", 5);
    let stored = stored_jobs(&redis, "ns-a").await
        + stored_jobs(&redis, "ns-b").await
        + stored_jobs(&redis, "ns-c").await;
    assert_eq!(stored, 5, "exactly max_jobs stored, nothing hidden");
    enqueue(&two, "q", "q-a", "x")
        .await
        .expect("q has its own limit");
    over(enqueue(&one, "q", "q-b", "y").await, "q", "max_jobs", 1);
}

/// Pins (issue 29 item 5): deleting a job frees room for another once the replica
/// reads the totals again; the room is one job, not more.
#[tokio::test]
async fn deleting_jobs_frees_room_for_more() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = auth_file(dir.path(), &principal("p", "max_jobs = 2"));
    let redis = Redis::start().await;
    let mut config = config(&redis.url());
    config.auth_file = Some(path);
    let service = Service::start_with(config).await;
    let one = channel(&service);
    enqueue(&one, "p", "ns-a", "a").await.expect("1 of 2");
    enqueue(&one, "p", "ns-b", "b").await.expect("2 of 2");
    over(enqueue(&one, "p", "ns-b", "c").await, "p", "max_jobs", 2);
    let delete = proto::DeleteJobRequest {
        namespace: "ns-a".into(),
        job_id: "a".into(),
    };
    Client::new(one.clone())
        .delete_job(with_token(delete, Some("t-p")))
        .await
        .expect("delete a");
    let patience = Patience::new("room for a job after the delete");
    loop {
        match enqueue(&one, "p", "ns-b", "c").await {
            Ok(()) => break,
            Err(status) => {
                assert_eq!(status.code(), Code::ResourceExhausted, "{status:?}");
                patience.wait().await;
            }
        }
    }
    over(enqueue(&one, "p", "ns-b", "d").await, "p", "max_jobs", 2);
}

/// An UpsertSchedule of schedule `id` into `namespace` as `t-<name>`.
async fn upsert(channel: &Channel, name: &str, namespace: &str, id: &str) -> Result<(), Status> {
    let request = proto::UpsertScheduleRequest {
        namespace: namespace.into(),
        schedule: Some(every(id, 3600)),
    };
    Client::new(channel.clone())
        .upsert_schedule(with_token(request, Some(&format!("t-{name}"))))
        .await
        .map(|_| ())
}

/// Pins (issue 29 item 5): `max_schedules` bounds the schedules of a principal's
/// namespaces together: with 2, a third new schedule is refused through either
/// replica and not stored; an update of a stored one at the limit passes; another
/// principal is let in; a deleted schedule's room is taken once it is read.
#[tokio::test]
async fn max_schedules_counts_new_schedules_not_updates() {
    let dir = tempfile::tempdir().expect("tempdir");
    let text = principal("p", "max_schedules = 2") + &principal("q", "max_schedules = 2");
    let path = auth_file(dir.path(), &text);
    let redis = Redis::start().await;
    let start = || {
        let mut config = config(&redis.url());
        config.auth_file = Some(path.clone());
        Service::start_with(config)
    };
    let (one, two) = (start().await, start().await);
    let (one, two) = (channel(&one), channel(&two));
    upsert(&one, "p", "ns-a", "s1").await.expect("1 of 2");
    upsert(&one, "p", "ns-b", "s2").await.expect("2 of 2");
    over(
        upsert(&one, "p", "ns-a", "s3").await,
        "p",
        "max_schedules",
        2,
    );
    over(
        upsert(&two, "p", "ns-c", "s3").await,
        "p",
        "max_schedules",
        2,
    );
    upsert(&one, "p", "ns-a", "s1")
        .await
        .expect("an update at the limit");
    upsert(&two, "p", "ns-b", "s2")
        .await
        .expect("an update at the limit, through the other");
    upsert(&two, "q", "q-a", "s1").await.expect("q is let in");
    let mut conn = redis.conn().await;
    let stored: Vec<String> = query(&mut conn, cmd("KEYS").arg("*:s:s3")).await;
    assert!(stored.is_empty(), "s3 was not stored: {stored:?}");
    let delete = proto::DeleteScheduleRequest {
        namespace: "ns-b".into(),
        id: "s2".into(),
    };
    Client::new(two.clone())
        .delete_schedule(with_token(delete, Some("t-p")))
        .await
        .expect("delete s2");
    let patience = Patience::new("room for a schedule after the delete");
    while let Err(status) = upsert(&one, "p", "ns-c", "s3").await {
        assert_eq!(status.code(), Code::ResourceExhausted, "{status:?}");
        patience.wait().await;
    }
    over(
        upsert(&one, "p", "ns-c", "s4").await,
        "p",
        "max_schedules",
        2,
    );
}

/// Pins (issue 29 item 5): a SIGHUP reload applies a changed `max_jobs` from the
/// next call on; one without `max_namespaces` keeps the limits in force and says why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sighup_reloads_max_jobs() {
    let redis = Redis::start().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let path = auth_file(dir.path(), &principal("p", "max_jobs = 1"));
    let addr = format!("127.0.0.1:{}", free_port());
    let file = path.to_str().expect("utf-8");
    let mut dueq = Binary::spawn_with(&addr, &redis.url(), "info", &["--auth-file", file]);
    dueq.line_with(&["dueq listening"]).await;
    let channel = Channel::from_shared(format!("http://{addr}"))
        .expect("endpoint")
        .connect_lazy();
    enqueue(&channel, "p", "ns-a", "a").await.expect("1 of 1");
    over(
        enqueue(&channel, "p", "ns-b", "b").await,
        "p",
        "max_jobs",
        1,
    );

    let unbounded = format!(
        "[[principal]]\nname = \"p\"\nroles = [\"producer\"]\nnamespaces = [\"*\"]\n\
         token_sha256 = \"{}\"\nmax_jobs = 2\n",
        token_hash("t-p")
    );
    auth_file(dir.path(), &unbounded);
    dueq.hangup();
    dueq.line_with(&["max_jobs", "needs max_namespaces"]).await;
    over(
        enqueue(&channel, "p", "ns-b", "b").await,
        "p",
        "max_jobs",
        1,
    );

    auth_file(dir.path(), &principal("p", "max_jobs = 2"));
    dueq.hangup();
    dueq.line_with(&["INFO", "auth file reloaded"]).await;
    enqueue(&channel, "p", "ns-b", "b")
        .await
        .expect("room after the reload");
    over(
        enqueue(&channel, "p", "ns-c", "c").await,
        "p",
        "max_jobs",
        2,
    );
}

/// Pins (issue 29 item 5): on a Redis Cluster a principal's totals are summed over
/// namespaces in different slots (on different masters): 6 namespaces with a job
/// each fill `max_jobs = 6` through one replica, and another replica's first call
/// reads all 6 and refuses a seventh.
#[tokio::test]
async fn max_jobs_sums_namespaces_across_cluster_slots() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = auth_file(dir.path(), &principal("p", "max_jobs = 6"));
    let cluster = Cluster::start().await;
    let start = || {
        let mut config = config(&cluster.url());
        config.redis_mode = dueq::config::RedisMode::Cluster;
        config.auth_file = Some(path.clone());
        Service::start_with(config)
    };
    let (one, two) = (start().await, start().await);
    let (one, two) = (channel(&one), channel(&two));
    for i in 0..6 {
        enqueue(&one, "p", &format!("tenant-{i}"), "j")
            .await
            .expect("within max_jobs");
    }
    over(
        enqueue(&two, "p", "tenant-6", "j").await,
        "p",
        "max_jobs",
        6,
    );
    let masters: std::collections::BTreeSet<u16> = cluster
        .keys_by_master()
        .await
        .into_iter()
        .filter(|(_, keys)| keys.iter().any(|key| key.contains(":j:")))
        .map(|(port, _)| port)
        .collect();
    assert!(
        masters.len() >= 2,
        "the jobs sit on one master: {masters:?}"
    );
}
