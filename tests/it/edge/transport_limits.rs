//! Transport limits (issue 13): the per-connection stream cap, load shedding beyond
//! the in-flight caps, the unary timeout (long-polls exempt), the connection cap and
//! the preface deadline, keepalive pings; (issue 29) a call takes its slot only once
//! its request is in, after authentication, the request's own deadline
//! (--body-timeout), the open RPCs' cap of their own (--max-open-calls).

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

/// A raw HTTP/2 connection, for calls that send their HEADERS and nothing else.
struct Raw {
    send: h2::client::SendRequest<tonic::codegen::Bytes>,
    ping: h2::PingPong,
}

/// A call whose request never comes: its response, and what keeps its stream open.
type HeadersOnly = (
    h2::client::ResponseFuture,
    h2::SendStream<tonic::codegen::Bytes>,
);

impl Raw {
    async fn connect(service: &Service) -> Raw {
        let tcp = TcpStream::connect(service.addr).await.expect("connect");
        let (send, mut connection) = h2::client::handshake(tcp).await.expect("h2 handshake");
        let ping = connection.ping_pong().expect("ping_pong");
        tokio::spawn(connection);
        Raw { send, ping }
    }

    /// HEADERS for `path` (with `token` as a bearer token), no DATA, no END_STREAM.
    async fn headers_only(&mut self, path: &str, token: Option<&str>) -> HeadersOnly {
        let mut send = self.send.clone().ready().await.expect("ready");
        let mut request = http::Request::builder()
            .method("POST")
            .uri(format!("http://localhost{path}"))
            .header("content-type", "application/grpc")
            .header("te", "trailers");
        if let Some(token) = token {
            request = request.header("authorization", format!("Bearer {token}"));
        }
        let request = request.body(()).expect("request");
        send.send_request(request, false).expect("send headers")
    }

    /// Once the server has answered a PING sent after them, it has read every frame
    /// sent before (and hyper has handed each new stream to the service).
    async fn flushed(&mut self) {
        within_patience("a PING answer", self.ping.ping(h2::Ping::opaque()))
            .await
            .expect("pong");
    }
}

/// The grpc-status and grpc-message of a trailers-only answer.
fn status_of(response: &http::Response<h2::RecvStream>) -> (Option<&str>, &str) {
    let headers = response.headers();
    let value = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    (
        value("grpc-status"),
        value("grpc-message").unwrap_or_default(),
    )
}

async fn start(tune: impl FnOnce(&mut ServeConfig)) -> (Redis, Service) {
    let redis = Redis::start().await;
    let mut config = config(&redis.url());
    tune(&mut config);
    let service = Service::start_with(config).await;
    (redis, service)
}

/// Pins: a unary call not answered within --request-timeout (here: Redis is stopped,
/// and --redis-timeout longer) is answered DEADLINE_EXCEEDED naming the flag; a
/// long-poll longer than the timeout still ends normally.
#[tokio::test]
async fn unary_calls_time_out_and_long_polls_do_not() {
    let (redis, service) = start(|c| {
        c.request_timeout = Duration::from_secs(1);
        c.redis_timeout = Duration::from_secs(3600);
    })
    .await;
    let mut c = service.client().await;
    let nothing = try_claim(&mut c, "ns", 2_500).await;
    assert_eq!(nothing.ok(), Some(None), "the long-poll ran out its wait");

    redis.signal(libc::SIGSTOP);
    let status = within_patience("the call to a stopped Redis", c.get_job(get_job_req()))
        .await
        .expect_err("timed out");
    redis.signal(libc::SIGCONT);
    assert_eq!(status.code(), Code::DeadlineExceeded, "{status:?}");
    assert!(status.message().contains("--request-timeout"), "{status:?}");
}

/// Pins: with --max-in-flight unary calls in flight (one, waiting on a stopped
/// Redis), the next is answered RESOURCE_EXHAUSTED naming the flag at once; when the
/// slot is given back, calls are served again.
#[tokio::test]
async fn unary_calls_beyond_max_in_flight_are_shed() {
    let (redis, service) = start(|c| {
        c.max_in_flight = 1;
        c.request_timeout = Duration::from_secs(3600);
        c.redis_timeout = Duration::from_secs(3600);
    })
    .await;
    let mut c = service.client().await;
    redis.signal(libc::SIGSTOP);
    let mut holder = c.clone();
    // Retried while a probe holds the slot, until it holds it itself.
    let held = tokio::spawn(async move {
        loop {
            match holder.get_job(get_job_req()).await {
                Err(status) if status.code() == Code::ResourceExhausted => {}
                answered => return answered,
            }
        }
    });

    // A probe that was admitted (the holder was not in yet) hangs on the stopped
    // Redis: given up on, it gives its slot back and the next probe tries again.
    let patience = Patience::new("a call shed while the other call holds the slot");
    let status = loop {
        let probe = tokio::time::timeout(Duration::from_millis(200), c.get_job(get_job_req()));
        match probe.await {
            Ok(Err(status)) if status.code() == Code::ResourceExhausted => break status,
            Ok(other) => panic!("answered by a stopped Redis: {other:?}"),
            Err(_) => patience.wait().await,
        }
    };
    assert!(status.message().contains("--max-in-flight"), "{status:?}");

    // The call is answered: its slot is given back.
    redis.signal(libc::SIGCONT);
    let answered = within_patience("the held call", held).await.expect("task");
    assert_eq!(answered.map_err(|s| s.code()).err(), Some(Code::NotFound));
    let again = c.get_job(get_job_req()).await.expect_err("no such job");
    assert_eq!(again.code(), Code::NotFound, "{again:?}");
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

/// The paths of the HEADERS-only calls: health Check and Watch and
/// reflection (open to anyone), long-polls, a unary call, response streams (WatchJob,
/// Migrate) and a request stream (Work).
const HELD_PATHS: &[&str] = &[
    "/grpc.health.v1.Health/Watch",
    "/grpc.health.v1.Health/Check",
    "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
    "/dueq.v1.QueueService/ClaimJob",
    "/dueq.v1.QueueService/ClaimDueSchedule",
    "/dueq.v1.QueueService/GetJob",
    "/dueq.v1.QueueService/WatchJob",
    "/dueq.v1.QueueService/Migrate",
    "/dueq.v1.QueueService/Work",
];

/// Pins (issue 29): calls that send HEADERS and never their request (health Watch
/// and Check, reflection, ClaimJob, ClaimDueSchedule, GetJob, WatchJob, Migrate, a
/// Work stream without its first message) hold no slot of --max-in-flight, --max-long-polls or --max-open-calls:
/// with every cap at 1 and three of each held, every kind of call is still served.
/// (Health/Watch took the long-polls' slot from its headers on; GetJob's the unary
/// one.)
#[tokio::test]
async fn headers_without_a_request_hold_no_slot() {
    let (_redis, service) = start(|c| {
        c.max_in_flight = 1;
        c.max_long_polls = 1;
        c.max_open_calls = 1;
        c.body_timeout = Duration::from_secs(3600);
    })
    .await;
    let mut raw = Raw::connect(&service).await;
    let mut held = Vec::new();
    for path in HELD_PATHS {
        for _ in 0..3 {
            held.push(raw.headers_only(path, None).await);
        }
    }
    raw.flushed().await;

    assert_eq!(service.health().await, 1, "health Check is SERVING");
    let mut c = service.client().await;
    let claimed = try_claim(&mut c, "ns", 0).await;
    assert_eq!(claimed.ok(), Some(None), "ClaimDueSchedule is served");
    let jobs = c.claim_job(claim_req(&["q"], 0, None)).await;
    assert_eq!(jobs.map(|r| r.into_inner().jobs.len()).ok(), Some(0));
    let unary = c.get_job(get_job_req()).await.expect_err("no such job");
    assert_eq!(unary.code(), Code::NotFound, "{unary:?}");
    drop(held);
}

/// Pins (issue 29): a request that has not arrived within --body-timeout of its
/// headers (a unary call's message, a long-poll's, a stream's, a Work stream's first
/// message) is answered DEADLINE_EXCEEDED naming the flag, and nothing is done.
#[tokio::test]
async fn a_request_that_never_arrives_is_answered_at_the_body_timeout() {
    let (_redis, service) = start(|c| c.body_timeout = Duration::from_millis(300)).await;
    let mut raw = Raw::connect(&service).await;
    for path in HELD_PATHS {
        let (response, _stream) = raw.headers_only(path, None).await;
        let response = within_patience(path, response).await.expect("an answer");
        let (status, message) = status_of(&response);
        assert_eq!(status, Some("4"), "{path}: DEADLINE_EXCEEDED: {response:?}");
        assert!(message.contains("--body-timeout"), "{path}: {message}");
    }
}

/// Pins (issue 29): a principal of another namespace (billing, on `billing` only)
/// sending ClaimJob HEADERS for shop-a, whose request never comes (so it is never
/// authorised), holds no --max-long-polls slot: shop-a's worker still claims.
#[tokio::test]
async fn a_principal_of_another_namespace_holds_no_long_poll_slot() {
    use crate::security::auth::{with_token, write_auth_file};
    let dir = tempfile::tempdir().expect("tempdir");
    let (_redis, service) = start(|c| {
        c.auth_file = Some(write_auth_file(dir.path()));
        c.max_long_polls = 1;
        c.body_timeout = Duration::from_secs(3600);
    })
    .await;
    let mut raw = Raw::connect(&service).await;
    let mut held = Vec::new();
    for _ in 0..3 {
        held.push(
            raw.headers_only("/dueq.v1.QueueService/ClaimJob", Some("t-billing"))
                .await,
        );
    }
    raw.flushed().await;

    let mut c = service.client().await;
    let mut request = claim_req(&["q"], 0, None);
    request.namespace = "shop-a".into();
    let claimed = c.claim_job(with_token(request, Some("t-worker"))).await;
    assert_eq!(claimed.map(|r| r.into_inner().jobs.len()).ok(), Some(0));
    drop(held);
}

/// Pins (issue 29): an open RPC's request (health, reflection: anyone may send one)
/// is read before admission only up to 64 KiB; a larger one is answered
/// RESOURCE_EXHAUSTED instead of being buffered up to --max-message-size.
#[tokio::test]
async fn an_open_rpcs_large_request_is_refused() {
    use prost::Message;
    let (_redis, service) = start(|_| {}).await;
    let mut raw = Raw::connect(&service).await;
    let request = tonic_health::pb::HealthCheckRequest {
        service: "x".repeat(100 * 1024),
    }
    .encode_to_vec();
    let mut message = vec![0u8];
    message.extend_from_slice(&u32::try_from(request.len()).expect("len").to_be_bytes());
    message.extend_from_slice(&request);
    let (response, mut stream) = raw.headers_only("/grpc.health.v1.Health/Check", None).await;
    // Sent as HTTP/2 flow control lets it; the answer may come before all of it.
    let sent = tokio::spawn(async move {
        let mut rest = tonic::codegen::Bytes::from(message);
        while !rest.is_empty() {
            stream.reserve_capacity(rest.len());
            let Some(Ok(room)) = std::future::poll_fn(|cx| stream.poll_capacity(cx)).await else {
                return;
            };
            let chunk = rest.split_to(room.min(rest.len()));
            if stream.send_data(chunk, rest.is_empty()).is_err() {
                return;
            }
        }
    });
    let response = within_patience("the large health request", response)
        .await
        .expect("an answer");
    let (status, message) = status_of(&response);
    assert_eq!(status, Some("8"), "RESOURCE_EXHAUSTED: {response:?}");
    // grpc-message is percent-encoded.
    assert!(message.contains("more%20than%2065536%20bytes"), "{message}");
    sent.abort();
}
