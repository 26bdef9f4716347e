//! SIGHUP in every mode (issue 29 item 7): the auth file is reloaded whole or not at
//! all, a revoked token is refused on its next call and an open Work stream ends at
//! its next message, refusals are audit lines, and a plaintext service without an
//! auth file keeps serving.

use std::path::Path;

use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{transport::Channel, Code, Status, Streaming};

use super::auth::{token_hash, with_token};
use crate::{common::*, tools::binary::Binary};

/// A principal on `shop-*` whose token is `t-<name>`.
fn principal(name: &str, role: &str) -> String {
    format!(
        "[[principal]]\nname = \"{name}\"\nroles = [\"{role}\"]\nnamespaces = [\"shop-*\"]\n\
         token_sha256 = \"{}\"\n\n",
        token_hash(&format!("t-{name}"))
    )
}

/// Replaces the file whole (a rename), as a deployment tool does.
fn replace(path: &Path, text: &str) {
    let temporary = path.with_extension("tmp");
    std::fs::write(&temporary, text).expect("write auth file");
    std::fs::rename(&temporary, path).expect("rename auth file");
}

async fn connect(addr: &str) -> Channel {
    let patience = Patience::new(format!("a connection to {addr}"));
    loop {
        if let Ok(channel) = Channel::from_shared(format!("http://{addr}"))
            .expect("endpoint")
            .connect()
            .await
        {
            return channel;
        }
        patience.wait().await;
    }
}

/// A Work stream on `shop-a` opened with `t-<name>`, and the sender of its messages.
async fn open_work(
    channel: &Channel,
    name: &str,
) -> (
    mpsc::Sender<proto::WorkRequest>,
    Streaming<proto::WorkResponse>,
) {
    let (send, open) = mpsc::channel(4);
    let start = proto::WorkStart {
        namespace: "shop-a".into(),
        queues: vec!["q".into()],
        ..Default::default()
    };
    let start = proto::WorkRequest {
        request: Some(proto::work_request::Request::Start(start)),
    };
    send.send(start).await.expect("start");
    let requests = with_token(ReceiverStream::new(open), Some(&format!("t-{name}")));
    let stream = Client::new(channel.clone())
        .work(requests)
        .await
        .unwrap_or_else(|s| panic!("{name} opens a Work stream: {s:?}"))
        .into_inner();
    (send, stream)
}

/// Sends an ack of a job that is not there; the stream's next message.
async fn ack_nothing(
    send: &mpsc::Sender<proto::WorkRequest>,
    stream: &mut Streaming<proto::WorkResponse>,
) -> Result<Option<proto::WorkResponse>, Status> {
    let ack = proto::JobLease {
        job_id: "none".into(),
        lease_token: "none".into(),
        result: Vec::new(),
    };
    let ack = proto::WorkRequest {
        request: Some(proto::work_request::Request::Ack(ack)),
    };
    send.send(ack).await.expect("send an ack");
    within_patience("the stream's answer to an ack", stream.message()).await
}

/// An Enqueue as `name`, into a queue no Work stream here serves (a job in "q" could
/// reach an open stream before that stream's next message re-checks its principal).
async fn enqueue(channel: &Channel, name: &str) -> Result<(), Status> {
    let mut job = job("not-worked", "j");
    job.namespace = "shop-a".into();
    let token = format!("t-{name}");
    let mut client = Client::new(channel.clone());
    client
        .enqueue(with_token(job, Some(&token)))
        .await
        .map(|_| ())
}

/// Pins: SIGHUP swaps the auth file. A principal taken out is UNAUTHENTICATED on its
/// next call, and its open Work stream (and WatchJob stream) ends UNAUTHENTICATED at
/// its next message; a
/// principal whose role was taken away gets PERMISSION_DENIED there; the others go on.
/// Each refusal is an audit line with the method, the namespace and the outcome. A
/// bad file is logged and the principals in force stay.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sighup_reloads_the_auth_file_and_open_streams_follow_it() {
    let redis = Redis::start().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("auth.toml");
    let keep = principal("keep", "admin");
    replace(
        &path,
        &format!(
            "{keep}{}{}",
            principal("gone", "worker"),
            principal("demoted", "worker")
        ),
    );
    let addr = format!("127.0.0.1:{}", free_port());
    let file = path.to_str().expect("utf-8");
    let mut dueq = Binary::spawn_with(&addr, &redis.url(), "info", &["--auth-file", file]);
    dueq.line_with(&["dueq listening"]).await;
    let channel = connect(&addr).await;
    let (gone_send, mut gone) = open_work(&channel, "gone").await;
    let (demoted_send, mut demoted) = open_work(&channel, "demoted").await;
    for (name, send, stream) in [
        ("gone", &gone_send, &mut gone),
        ("demoted", &demoted_send, &mut demoted),
    ] {
        let answer = ack_nothing(send, stream).await;
        assert!(
            matches!(
                &answer,
                Ok(Some(proto::WorkResponse {
                    response: Some(proto::work_response::Response::Ack(_))
                }))
            ),
            "{name}'s stream answers before the reload: {answer:?}"
        );
    }

    // A server stream too: gone watches a job keep enqueued.
    let mut job = job("not-worked", "watched");
    job.namespace = "shop-a".into();
    let mut client = Client::new(channel.clone());
    let job_id = client
        .enqueue(with_token(job, Some("t-keep")))
        .await
        .expect("keep enqueues")
        .into_inner()
        .job_id;
    let watch = proto::WatchJobRequest {
        namespace: "shop-a".into(),
        job_id: job_id.clone(),
        ..Default::default()
    };
    let mut watched = client
        .watch_job(with_token(watch, Some("t-gone")))
        .await
        .expect("gone watches")
        .into_inner();
    let first = within_patience("the job now", watched.message()).await;
    assert!(matches!(first, Ok(Some(_))), "{first:?}");

    replace(&path, &format!("{keep}{}", principal("demoted", "reader")));
    dueq.hangup();
    dueq.line_with(&["INFO", "auth file reloaded", "principals=2"])
        .await;
    let refused = enqueue(&channel, "gone")
        .await
        .expect_err("gone is revoked");
    assert_eq!(refused.code(), Code::Unauthenticated, "{refused:?}");
    enqueue(&channel, "keep")
        .await
        .expect("keep still enqueues");
    let ended = ack_nothing(&gone_send, &mut gone)
        .await
        .expect_err("gone's stream ends");
    assert_eq!(ended.code(), Code::Unauthenticated, "{ended:?}");
    let ended = ack_nothing(&demoted_send, &mut demoted)
        .await
        .expect_err("demoted's stream ends");
    assert_eq!(ended.code(), Code::PermissionDenied, "{ended:?}");
    assert!(ended.message().contains("\"demoted\""), "{ended:?}");
    // The watched job changes: the watch ends at that next message.
    let cancel = proto::CancelJobRequest {
        namespace: "shop-a".into(),
        job_id,
    };
    client
        .cancel_job(with_token(cancel, Some("t-keep")))
        .await
        .expect("keep cancels");
    let ended = within_patience("the watch's end", watched.message())
        .await
        .expect_err("gone's watch ends");
    assert_eq!(ended.code(), Code::Unauthenticated, "{ended:?}");
    for needles in [
        [
            "principal=(unauthenticated)",
            "method=Enqueue",
            "outcome=\"UNAUTHENTICATED\"",
        ],
        [
            "principal=(unauthenticated)",
            "method=Work",
            "namespace=shop-a target= outcome=\"UNAUTHENTICATED\"",
        ],
        [
            "principal=demoted",
            "method=Work",
            "namespace=shop-a target= outcome=\"PERMISSION_DENIED\"",
        ],
    ] {
        let line = dueq.line_with(&needles).await;
        assert!(
            line.contains(" INFO ") && line.contains("dueq::audit"),
            "{line}"
        );
    }

    // A file with a mistake: logged, and the principals in force stay.
    replace(&path, "[[principal]]\nname = \"keep\"\n");
    dueq.hangup();
    let error = dueq.line_with(&["ERROR", "auth file reload failed"]).await;
    assert!(
        error.contains("roles") || error.contains("missing field"),
        "{error}"
    );
    enqueue(&channel, "keep")
        .await
        .expect("keep still enqueues");
    let refused = enqueue(&channel, "gone")
        .await
        .expect_err("gone stays revoked");
    assert_eq!(refused.code(), Code::Unauthenticated, "{refused:?}");
    let denied = enqueue(&channel, "demoted")
        .await
        .expect_err("demoted stays a reader");
    assert_eq!(denied.code(), Code::PermissionDenied, "{denied:?}");
    // A refusal of a unary RPC that is not audited is an audit line too.
    let needles = [
        "principal=demoted",
        "method=Enqueue",
        "namespace=shop-a",
        "PERMISSION_DENIED",
    ];
    dueq.line_with(&needles).await;
}

/// Pins: SIGHUP does not end a plaintext service without an auth file (it used to
/// be SIGHUP's default action: the process died without draining); it says there is
/// nothing to reload and goes on serving.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sighup_does_not_stop_a_plaintext_service() {
    let redis = Redis::start().await;
    let addr = format!("127.0.0.1:{}", free_port());
    let mut dueq = Binary::spawn_with(&addr, &redis.url(), "info", &[]);
    dueq.line_with(&["dueq listening"]).await;
    dueq.hangup();
    dueq.line_with(&["SIGHUP: nothing to reload"]).await;
    let channel = connect(&addr).await;
    let mut client = Client::new(channel);
    let mut job = job("q", "j");
    job.namespace = "ns".into();
    client
        .enqueue(job)
        .await
        .expect("still serving after SIGHUP");
}
