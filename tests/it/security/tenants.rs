//! Fairness and quotas between principals (issue 29 items 4 and 5): each principal
//! holds at most its share of the in-flight caps, so one holding all it may does
//! not lock another out; each reads at most its --heavy-read-rate of GetJob and
//! full-view ListJobs bytes, so one paging megabyte jobs does not slow another;
//! `max_namespaces` in the auth file bounds the namespaces a principal writes into,
//! the same on every replica, and follows a SIGHUP reload.

use std::path::Path;

use tonic::{transport::Channel, Code, Status};

use super::auth::{token_hash, with_token, write_auth_file};
use crate::{common::*, tools::binary::Binary};

/// A producer on every namespace whose token is `t-<name>`, with `max_namespaces`.
fn limited(name: &str, max_namespaces: u32) -> String {
    format!(
        "[[principal]]\nname = \"{name}\"\nroles = [\"producer\"]\nnamespaces = [\"*\"]\n\
         token_sha256 = \"{}\"\nmax_namespaces = {max_namespaces}\n\n",
        token_hash(&format!("t-{name}"))
    )
}

/// An Enqueue into `namespace` as `t-<name>`.
async fn enqueue(channel: &Channel, name: &str, namespace: &str) -> Result<(), Status> {
    let mut request = job("q", "j");
    request.namespace = namespace.into();
    Client::new(channel.clone())
        .enqueue(with_token(request, Some(&format!("t-{name}"))))
        .await
        .map(|_| ())
}

/// Asserts `answer` is RESOURCE_EXHAUSTED naming `name` and its `max_namespaces`.
fn over_quota(answer: Result<(), Status>, name: &str, max: u32) {
    let status = answer.expect_err("refused by the principal's max_namespaces");
    assert_eq!(status.code(), Code::ResourceExhausted, "{status:?}");
    let message = status.message();
    assert!(message.contains(&format!("\"{name}\"")), "{message}");
    assert!(
        message.contains(&format!("max_namespaces of {max}")),
        "{message}"
    );
}

/// Pins (issue 29): with several principals, one holds at most half of
/// --max-long-polls. `worker` keeps a long-poll waiting (its share of 2 is 1): its
/// next long-poll is refused naming the principal and its share, while `root`'s is
/// admitted. With one cap for everyone, worker's second was admitted too.
#[tokio::test]
async fn one_principal_holding_its_share_does_not_lock_another_out() {
    let dir = tempfile::tempdir().expect("tempdir");
    let redis = Redis::start().await;
    let mut config = config(&redis.url());
    config.auth_file = Some(write_auth_file(dir.path()));
    config.max_long_polls = 2;
    let service = Service::start_with(config).await;
    let claim = |token: &str, wait_ms: u64| {
        let mut request = claim_req(&["q"], wait_ms, None);
        request.namespace = "shop-a".into();
        with_token(request, Some(token))
    };
    let mut holder = service.client().await;
    let held = claim("t-worker", 3_600_000);
    let waiting = tokio::spawn(async move { holder.claim_job(held).await });

    let mut worker = service.client().await;
    let patience = Patience::new("worker's long-poll to hold its share");
    let refused = loop {
        match worker.claim_job(claim("t-worker", 0)).await {
            Err(status) if status.code() == Code::ResourceExhausted => break status,
            answer => {
                assert!(answer.is_ok(), "{answer:?}");
                patience.wait().await;
            }
        }
    };
    let message = refused.message();
    assert!(message.contains("principal \"worker\""), "{message}");
    assert!(
        message.contains("its 1 of the 2 --max-long-polls"),
        "{message}"
    );

    let mut root = service.client().await;
    let other = root.claim_job(claim("t-root", 0)).await;
    assert!(other.is_ok(), "another principal is let in: {other:?}");
    assert!(
        !waiting.is_finished(),
        "worker's long-poll still holds its share"
    );
    waiting.abort();
}

/// Pins (issue 29): `max_namespaces` bounds the namespaces a principal writes into
/// across replicas: with a limit of 2, a namespace written through one replica and
/// another through a second leave no room for a third through either; the ones it
/// has stay open through both.
#[tokio::test]
async fn max_namespaces_holds_across_replicas() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("auth.toml");
    std::fs::write(&path, limited("p", 2)).expect("write auth file");
    let redis = Redis::start().await;
    let start = || {
        let mut config = config(&redis.url());
        config.auth_file = Some(path.clone());
        Service::start_with(config)
    };
    let (one, two) = (start().await, start().await);
    let channel = |service: &Service| {
        Channel::from_shared(format!("http://{}", service.addr))
            .expect("endpoint")
            .connect_lazy()
    };
    let (one, two) = (channel(&one), channel(&two));
    enqueue(&one, "p", "ns-a").await.expect("first namespace");
    enqueue(&two, "p", "ns-b").await.expect("second namespace");
    over_quota(enqueue(&one, "p", "ns-c").await, "p", 2);
    over_quota(enqueue(&two, "p", "ns-c").await, "p", 2);
    enqueue(&two, "p", "ns-a")
        .await
        .expect("its own namespace, via the other");
    enqueue(&one, "p", "ns-b")
        .await
        .expect("its own namespace, via the other");
    let mut conn = redis.conn().await;
    let stored: Vec<String> = query(&mut conn, cmd("KEYS").arg("*ns-c*")).await;
    assert!(stored.is_empty(), "nothing written into ns-c: {stored:?}");
}

/// Replaces the file whole (a rename), as a deployment tool does.
fn replace(path: &Path, text: &str) {
    let temporary = path.with_extension("tmp");
    std::fs::write(&temporary, text).expect("write auth file");
    std::fs::rename(&temporary, path).expect("rename auth file");
}

/// Pins (issue 29): a SIGHUP reload applies a changed `max_namespaces` from the next
/// call on; a bad value in the new file keeps the limits in force, and says why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sighup_reloads_max_namespaces() {
    let redis = Redis::start().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("auth.toml");
    replace(&path, &limited("p", 1));
    let addr = format!("127.0.0.1:{}", free_port());
    let file = path.to_str().expect("utf-8");
    let mut dueq = Binary::spawn_with(&addr, &redis.url(), "info", &["--auth-file", file]);
    dueq.line_with(&["dueq listening"]).await;
    let channel = Channel::from_shared(format!("http://{addr}"))
        .expect("endpoint")
        .connect_lazy();
    enqueue(&channel, "p", "ns-a")
        .await
        .expect("first namespace");
    over_quota(enqueue(&channel, "p", "ns-b").await, "p", 1);

    replace(&path, &limited("p", 0));
    dueq.hangup();
    dueq.line_with(&["max_namespaces", "0 is not from 1"]).await;
    over_quota(enqueue(&channel, "p", "ns-b").await, "p", 1);

    replace(&path, &limited("p", 2));
    dueq.hangup();
    dueq.line_with(&["INFO", "auth file reloaded"]).await;
    enqueue(&channel, "p", "ns-b")
        .await
        .expect("room after the reload");
    over_quota(enqueue(&channel, "p", "ns-c").await, "p", 2);
}

/// A ListQueues of shop-a as `token` on `client`'s connection.
async fn list_queues(client: &mut Client, token: &str) -> Result<(), Status> {
    let request = proto::ListQueuesRequest {
        namespace: "shop-a".into(),
        ..Default::default()
    };
    client
        .list_queues(with_token(request, Some(token)))
        .await
        .map(|_| ())
}

/// A new connection on which `token`'s ListQueues is answered OK, once one is.
async fn connection_for(service: &Service, token: &str) -> Client {
    let patience = Patience::new(format!("a connection serving {token}"));
    loop {
        if let Ok(channel) = Channel::from_shared(service.endpoint())
            .expect("endpoint")
            .connect()
            .await
        {
            let mut client = Client::new(channel);
            if list_queues(&mut client, token).await.is_ok() {
                return client;
            }
        }
        patience.wait().await;
    }
}

/// Pins (issue 29): with several principals, the connections one principal has
/// called on are at most half of --max-connections. `reader` calls on two of 4: its
/// call on a third connection is refused (RESOURCE_EXHAUSTED naming it, or the
/// connection closes first) and that connection is closed, so `root` gets two
/// connections of its own, and reader's first two still serve it. With one cap for
/// everyone, reader's third call was served and root found one slot.
#[tokio::test]
async fn one_principal_holding_its_connections_does_not_lock_another_out() {
    let dir = tempfile::tempdir().expect("tempdir");
    let redis = Redis::start().await;
    let mut config = config(&redis.url());
    config.auth_file = Some(write_auth_file(dir.path()));
    config.max_connections = 4;
    let service = Service::start_with(config).await;
    let mut reader = Vec::new();
    for _ in 0..2 {
        reader.push(connection_for(&service, "t-reader").await);
    }
    let mut third = service.client().await;
    let refused = list_queues(&mut third, "t-reader")
        .await
        .expect_err("reader's third connection is refused");
    match refused.code() {
        Code::ResourceExhausted => {
            let message = refused.message();
            assert!(message.contains("principal \"reader\""), "{message}");
            assert!(
                message.contains("its 2 of the 4 --max-connections"),
                "{message}"
            );
        }
        code => assert_eq!(code, Code::Unavailable, "{refused:?}"),
    }
    let mut root = Vec::new();
    for _ in 0..2 {
        root.push(connection_for(&service, "t-root").await);
    }
    for client in &mut reader {
        list_queues(client, "t-reader")
            .await
            .expect("reader's own connections still serve it");
    }
}

/// A GetJob of `job_id` in shop-a as `t-<name>`.
async fn get_job(client: &mut Client, name: &str, job_id: &str) -> Result<(), Status> {
    let request = proto::GetJobRequest {
        namespace: "shop-a".into(),
        job_id: job_id.into(),
    };
    client
        .get_job(with_token(request, Some(&format!("t-{name}"))))
        .await
        .map(|_| ())
}

/// A ListJobs page of shop-a's queue q in `view`, as `t-<name>`.
async fn list_jobs(client: &mut Client, name: &str, view: proto::JobView) -> Result<(), Status> {
    let request = proto::ListJobsRequest {
        namespace: "shop-a".into(),
        queue: "q".into(),
        view: view as i32,
        ..Default::default()
    };
    client
        .list_jobs(with_token(request, Some(&format!("t-{name}"))))
        .await
        .map(|_| ())
}

/// Pins (issue 29 item 4): with several principals, each may read at most
/// --heavy-read-rate bytes a second of GetJob and full-view ListJobs replies. At
/// 1024 bytes a second, `reader`'s GetJob of a 64 KiB job leaves it a minute in
/// debt: its next heavy read (GetJob, full-view ListJobs) is refused at once, naming
/// the principal and the flag, while its summary ListJobs is not charged and
/// `root`'s GetJob of the same job is admitted. Without the budget, reader's second
/// GetJob was served like its first.
#[tokio::test]
async fn a_principal_over_its_heavy_read_rate_is_refused_and_another_is_not() {
    let dir = tempfile::tempdir().expect("tempdir");
    let redis = Redis::start().await;
    let mut config = config(&redis.url());
    config.auth_file = Some(write_auth_file(dir.path()));
    config.heavy_read_rate = 1024;
    let service = Service::start_with(config).await;
    let mut client = service.client().await;
    let mut request = job("q", "big");
    request.namespace = "shop-a".into();
    request.payload = vec![b'x'; 64 * 1024];
    let job_id = client
        .enqueue(with_token(request, Some("t-producer")))
        .await
        .expect("enqueue")
        .into_inner()
        .job_id;

    get_job(&mut client, "reader", &job_id)
        .await
        .expect("reader's first read is within its budget");
    for refused in [
        get_job(&mut client, "reader", &job_id).await,
        list_jobs(&mut client, "reader", proto::JobView::Full).await,
    ] {
        let status = refused.expect_err("reader is over its budget");
        assert_eq!(status.code(), Code::ResourceExhausted, "{status:?}");
        let message = status.message();
        assert!(message.contains("principal \"reader\""), "{message}");
        assert!(
            message.contains("--heavy-read-rate of 1024 bytes a second"),
            "{message}"
        );
    }
    list_jobs(&mut client, "reader", proto::JobView::Basic)
        .await
        .expect("a summary page is not a heavy read");
    get_job(&mut client, "root", &job_id)
        .await
        .expect("another principal's budget is its own");
}

/// An HTTP/2 connection to `service` that never calls: its task ends when the
/// connection does. Returns once the server has answered a PING on it, so the
/// server has taken it in before the next one opens.
async fn idle_connection(service: &Service) -> tokio::task::JoinHandle<()> {
    let tcp = tokio::net::TcpStream::connect(service.addr)
        .await
        .expect("connect");
    let (send, mut connection) = h2::client::handshake(tcp).await.expect("h2 handshake");
    let mut ping = connection.ping_pong().expect("ping_pong");
    // The connection ends when its last SendRequest goes: keep it until then.
    let task = tokio::spawn(async move {
        let _keep = send;
        let _ = connection.await;
    });
    within_patience("a PING answer", ping.ping(h2::Ping::opaque()))
        .await
        .expect("pong");
    task
}

/// Pins (issue 29): with an auth file, the connections no principal has called on
/// (the anonymous class) hold at most half of --max-connections: of four that
/// never call, with a cap of 4, the two oldest are closed to make room for the
/// two newest, and `root` still gets a connection that serves it. With the cap
/// alone, the four held every slot and root's connection was closed on arrival.
#[tokio::test]
async fn connections_nobody_called_on_hold_at_most_half_of_max_connections() {
    let dir = tempfile::tempdir().expect("tempdir");
    let redis = Redis::start().await;
    let mut config = config(&redis.url());
    config.auth_file = Some(write_auth_file(dir.path()));
    config.max_connections = 4;
    config.http2_header_timeout = std::time::Duration::from_secs(3600);
    let service = Service::start_with(config).await;
    let mut idle = Vec::new();
    for _ in 0..4 {
        idle.push(idle_connection(&service).await);
    }
    let newest = idle.split_off(2);
    for oldest in idle {
        within_patience("the oldest idle connection to close", oldest)
            .await
            .expect("its task");
    }
    let mut root = connection_for(&service, "t-root").await;
    list_queues(&mut root, "t-root")
        .await
        .expect("root's connection serves it");
    drop(newest);
}
