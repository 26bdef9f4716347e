//! Transport limits (issue 13): the per-connection stream cap, load shedding beyond
//! the in-flight caps, the unary timeout (long-polls exempt), the connection cap and
//! the preface deadline, keepalive pings.

use std::time::Duration;

use dueq::config::ServeConfig;
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::TcpStream,
};
use tonic::{codegen::http, Code};

use crate::common::*;

fn get_job_req() -> proto::GetJobRequest {
    proto::GetJobRequest {
        namespace: "ns".into(),
        job_id: "nope".into(),
    }
}

/// A unary call whose request body never comes: the handler waits for it, holding a
/// unary slot. Returns the response future and what keeps the connection open.
async fn half_open_call(
    service: &Service,
) -> (
    h2::client::ResponseFuture,
    h2::SendStream<tonic::codegen::Bytes>,
) {
    let tcp = TcpStream::connect(service.addr).await.expect("connect");
    let (send, connection) = h2::client::handshake(tcp).await.expect("h2 handshake");
    tokio::spawn(connection);
    let mut send = send.ready().await.expect("ready");
    let request = http::Request::builder()
        .method("POST")
        .uri(format!(
            "http://{}/dueq.v1.QueueService/GetJob",
            service.addr
        ))
        .header("content-type", "application/grpc")
        .header("te", "trailers")
        .body(())
        .expect("request");
    send.send_request(request, false).expect("send headers")
}

async fn start(tune: impl FnOnce(&mut ServeConfig)) -> (Redis, Service) {
    let redis = Redis::start().await;
    let mut config = config(&redis.url());
    tune(&mut config);
    let service = Service::start_with(config).await;
    (redis, service)
}

/// Pins: a unary call not answered within --request-timeout (here: its request body
/// never arrives, the half-open stream of the issue) is answered DEADLINE_EXCEEDED
/// naming the flag; a long-poll longer than the timeout still ends normally.
#[tokio::test]
async fn unary_calls_time_out_and_long_polls_do_not() {
    let (_redis, service) = start(|c| c.request_timeout = Duration::from_secs(1)).await;
    let (response, _body) = half_open_call(&service).await;
    let response = within_patience("the half-open call", response)
        .await
        .expect("an answer");
    let headers = response.headers();
    assert_eq!(
        headers.get("grpc-status").and_then(|v| v.to_str().ok()),
        Some("4"),
        "DEADLINE_EXCEEDED: {headers:?}"
    );
    let message = headers
        .get("grpc-message")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    assert!(message.contains("--request-timeout"), "{message}");

    let mut c = service.client().await;
    let nothing = try_claim(&mut c, "ns", 2_500).await;
    assert_eq!(nothing.ok(), Some(None), "the long-poll ran out its wait");
}

/// Pins: with --max-in-flight unary calls in flight, the next is answered
/// RESOURCE_EXHAUSTED naming the flag at once; long-polls have their own cap; when the
/// slot is given back, calls are served again.
#[tokio::test]
async fn unary_calls_beyond_max_in_flight_are_shed() {
    let (_redis, service) = start(|c| {
        c.max_in_flight = 1;
        c.request_timeout = Duration::from_secs(3600);
    })
    .await;
    let mut c = service.client().await;
    let (response, body) = half_open_call(&service).await;

    let patience = Patience::new("a call shed while the half-open call holds the slot");
    let status = loop {
        match c.get_job(get_job_req()).await {
            Err(status) if status.code() == Code::ResourceExhausted => break status,
            Err(status) => assert_eq!(status.code(), Code::NotFound, "{status:?}"),
            Ok(_) => panic!("no such job"),
        }
        patience.wait().await;
    };
    assert!(status.message().contains("--max-in-flight"), "{status:?}");
    let claimed = try_claim(&mut c, "ns", 0).await;
    assert_eq!(
        claimed.ok(),
        Some(None),
        "long-polls have a cap of their own"
    );

    // The client goes away: its call ends and gives the slot back.
    drop((response, body));
    let patience = Patience::new("calls served again");
    while let Err(status) = c.get_job(get_job_req()).await {
        if status.code() == Code::NotFound {
            break;
        }
        assert_eq!(status.code(), Code::ResourceExhausted, "{status:?}");
        patience.wait().await;
    }
}

/// Pins: with --max-long-polls long-polls waiting, the next is answered
/// RESOURCE_EXHAUSTED naming the flag at once, and unary calls are still served.
#[tokio::test]
async fn long_polls_beyond_their_cap_are_shed() {
    let (redis, service) = start(|c| c.max_long_polls = 1).await;
    let mut conn = redis.conn().await;
    let c = service.client().await;
    let before = script_calls(&mut conn).await;
    let mut parked = c.clone();
    let waiter = tokio::spawn(async move { try_claim(&mut parked, "ns", LONG_POLL_MS).await });
    wait_parked(&mut conn, before, 1).await;

    let mut other = service.client().await;
    let status = within_patience(
        "the second long-poll",
        try_claim(&mut other, "ns", LONG_POLL_MS),
    )
    .await
    .expect_err("shed");
    assert_eq!(status.code(), Code::ResourceExhausted, "{status:?}");
    assert!(status.message().contains("--max-long-polls"), "{status:?}");
    let unary = other.get_job(get_job_req()).await.expect_err("no such job");
    assert_eq!(
        unary.code(),
        Code::NotFound,
        "unary calls have their own cap"
    );
    waiter.abort();
}

/// Pins: one connection runs at most --max-concurrent-streams calls at once (the
/// HTTP/2 SETTINGS the server sends); a call beyond it waits on the client's side
/// until one ends, so it is answered only after the long-poll holding the stream.
#[tokio::test]
async fn calls_beyond_the_stream_cap_wait_for_a_stream() {
    let (redis, service) = start(|c| c.max_concurrent_streams = 1).await;
    let mut conn = redis.conn().await;
    let c = service.client().await;
    let before = script_calls(&mut conn).await;
    let mut parked = c.clone();
    let waiter = tokio::spawn(async move { try_claim(&mut parked, "ns", 2_000).await });
    wait_parked(&mut conn, before, 1).await;

    let mut same_connection = c.clone();
    let unary = within_patience(
        "the call behind the long-poll",
        same_connection.get_job(get_job_req()),
    )
    .await
    .expect_err("no such job");
    assert_eq!(unary.code(), Code::NotFound);
    assert!(
        waiter.is_finished(),
        "the call was answered while the long-poll held the connection's one stream"
    );
    assert_eq!(waiter.await.expect("task").ok(), Some(None));
}

/// Pins: with --max-connections open, a new connection is closed at once; when one
/// closes, new connections are served again.
#[tokio::test]
async fn connections_beyond_the_cap_are_closed() {
    let (_redis, service) = start(|c| c.max_connections = 1).await;
    let mut first = service.client().await;
    first.get_job(get_job_req()).await.expect_err("no such job");

    let mut tcp = TcpStream::connect(service.addr).await.expect("tcp connect");
    let mut buf = [0u8; 64];
    let read = within_patience("the refused connection to close", tcp.read(&mut buf)).await;
    assert!(matches!(read, Ok(0) | Err(_)), "closed: {read:?}");

    drop(first);
    let patience = Patience::new("a new connection to be served");
    loop {
        if let Ok(channel) = tonic::transport::Channel::from_shared(service.endpoint())
            .expect("endpoint")
            .connect()
            .await
        {
            let mut c = proto::queue_service_client::QueueServiceClient::new(channel);
            if let Err(status) = c.get_job(get_job_req()).await {
                if status.code() == Code::NotFound {
                    break;
                }
            }
        }
        patience.wait().await;
    }
}

/// Pins: a connection that sends nothing (no HTTP/2 preface) is closed after
/// --http2-header-timeout.
#[tokio::test]
async fn a_silent_connection_is_closed() {
    let (_redis, service) = start(|c| c.http2_header_timeout = Duration::from_millis(500)).await;
    let mut tcp = TcpStream::connect(service.addr).await.expect("tcp connect");
    let mut buf = [0u8; 1024];
    // The server's SETTINGS may come first; then the connection must end.
    let closed = within_patience("the silent connection to close", async {
        loop {
            match tcp.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(_) => continue,
            }
        }
    });
    closed.await;
}

/// Pins: a connection older than --max-connection-age is sent GOAWAY and ends (the
/// grace, for calls still running on it, is tonic's to enforce).
#[tokio::test]
async fn old_connections_are_closed() {
    let (_redis, service) = start(|c| {
        c.max_connection_age = Duration::from_millis(300);
        c.max_connection_age_grace = Duration::from_millis(300);
    })
    .await;
    let tcp = TcpStream::connect(service.addr).await.expect("connect");
    let (_send, connection) = h2::client::handshake(tcp).await.expect("h2 handshake");
    within_patience("the old connection to end", connection)
        .await
        .ok();
}

/// Pins: the server pings every --http2-keepalive-interval, and a client that
/// never answers (a dead peer behind a NAT that still holds the socket) is closed
/// after --http2-keepalive-timeout, instead of holding a connection for ever.
#[tokio::test]
async fn a_client_that_never_answers_keepalive_pings_is_closed() {
    let (_redis, service) = start(|c| {
        c.http2_keepalive_interval = Duration::from_millis(300);
        c.http2_keepalive_timeout = Duration::from_millis(300);
    })
    .await;
    let mut tcp = TcpStream::connect(service.addr).await.expect("tcp connect");
    // The client preface and an empty SETTINGS frame; then never another byte.
    let mut hello = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
    hello.extend_from_slice(&[0, 0, 0, 4, 0, 0, 0, 0, 0]);
    tcp.write_all(&hello).await.expect("send the preface");

    const PING: u8 = 6;
    let mut received = Vec::new();
    let mut buf = [0u8; 4096];
    within_patience("the unresponsive connection to close", async {
        loop {
            match tcp.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => received.extend_from_slice(&buf[..n]),
            }
        }
    })
    .await;
    // Walk the frames the server sent: 9-byte headers (24-bit length, type, ...).
    let mut pings = 0;
    let mut at = 0;
    while at + 9 <= received.len() {
        let len = usize::from(received[at]) << 16
            | usize::from(received[at + 1]) << 8
            | usize::from(received[at + 2]);
        if received[at + 3] == PING && received[at + 4] & 1 == 0 {
            pings += 1;
        }
        at += 9 + len;
    }
    assert!(pings >= 1, "the server sent keepalive pings before closing");
}
