//! OpenTelemetry traces (issue 29 item 21): `dueq serve --otlp-endpoint` as a child
//! process exports its per-RPC spans to a real OTLP/HTTP receiver on loopback (an
//! axum server that decodes each ExportTraceServiceRequest with the
//! opentelemetry-proto types); a caller's `traceparent` continues through dueq, and a
//! job's claim links to the trace it was enqueued under.

use std::{
    process::Stdio,
    sync::{Arc, Mutex},
};

use axum::{body::Bytes, extract::State, http::header, routing::post, Router};
use opentelemetry_proto::tonic::{
    collector::trace::v1::ExportTraceServiceRequest,
    trace::v1::{span::SpanKind, Span},
};
use prost::Message;
use tokio::process::{Child, Command};
use tonic::transport::Channel;

use crate::common::*;

/// What the receiver got: the requests, and every span in them.
#[derive(Default)]
struct Received {
    requests: usize,
    spans: Vec<Span>,
}

/// An OTLP/HTTP receiver on a loopback port of its own.
struct Receiver {
    url: String,
    received: Arc<Mutex<Received>>,
}

impl Receiver {
    async fn start() -> Receiver {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the receiver");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        let received: Arc<Mutex<Received>> = Arc::default();
        let app = Router::new()
            .route("/v1/traces", post(receive))
            .with_state(received.clone());
        tokio::spawn(async move { axum::serve(listener, app).await });
        Receiver { url, received }
    }

    fn requests(&self) -> usize {
        self.received.lock().expect("received").requests
    }

    /// The first span received that `wanted` accepts, once there is one.
    async fn span(&self, what: &str, wanted: impl Fn(&Span) -> bool) -> Span {
        let patience = Patience::new(format!("a span: {what}"));
        loop {
            let found = {
                let received = self.received.lock().expect("received");
                received.spans.iter().find(|s| wanted(s)).cloned()
            };
            if let Some(span) = found {
                return span;
            }
            patience.wait().await;
        }
    }
}

async fn receive(
    State(received): State<Arc<Mutex<Received>>>,
    body: Bytes,
) -> impl axum::response::IntoResponse {
    let request = ExportTraceServiceRequest::decode(body).expect("an ExportTraceServiceRequest");
    let mut received = received.lock().expect("received");
    received.requests += 1;
    let spans = request
        .resource_spans
        .into_iter()
        .flat_map(|r| r.scope_spans)
        .flat_map(|s| s.spans);
    received.spans.extend(spans);
    // An empty ExportTraceServiceResponse: full success.
    (
        [(header::CONTENT_TYPE, "application/x-protobuf")],
        Vec::<u8>::new(),
    )
}

/// `dueq serve` as a child process with `args`, and a client of it.
struct Traced {
    child: Child,
    client: Client,
}

impl Traced {
    /// Starts the binary on `redis` with `args` (and, in its environment, `env`),
    /// once it serves. Spans are batched for 50 ms rather than 5 s: the tests wait
    /// for them less.
    async fn start(redis: &Redis, args: &[&str], env: &[(&str, &str)]) -> Traced {
        for _ in 0..5 {
            let port = free_port();
            let mut command = Command::new(env!("CARGO_BIN_EXE_dueq"));
            command
                .args(["serve", "--listen", &format!("127.0.0.1:{port}")])
                .args(["--redis-url", &redis.url(), "--shutdown-grace", "1s"])
                .args(args)
                .env("DUEQ_LOG", "warn")
                .env("OTEL_BSP_SCHEDULE_DELAY", "50")
                .envs(env.iter().copied())
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::inherit())
                .kill_on_drop(true);
            for (k, _) in std::env::vars() {
                if (k.starts_with("DUEQ_") || k.starts_with("OTEL_"))
                    && !env.iter().any(|(e, _)| *e == k)
                {
                    command.env_remove(k);
                }
            }
            let mut child = command.spawn().expect("start dueq serve");
            if let Some(client) = serving(&mut child, port).await {
                return Traced { child, client };
            }
        }
        panic!("dueq serve could not listen on any of 5 free ports");
    }

    /// SIGTERM, then its exit (0): by then it has flushed what it had to export.
    async fn stop(mut self) {
        let pid = self.child.id().expect("running");
        let sent = std::process::Command::new("kill")
            .args(["-TERM", &pid.to_string()])
            .status()
            .expect("run kill");
        assert!(sent.success(), "kill -TERM {pid}");
        let status = within_patience("dueq to exit", self.child.wait())
            .await
            .expect("wait for dueq");
        assert!(status.success(), "dueq exited {status}");
    }
}

/// A client of the binary on `port` once it reports SERVING; None if it exited.
async fn serving(child: &mut Child, port: u16) -> Option<Client> {
    let patience = Patience::new("dueq serve to report SERVING");
    let endpoint = format!("http://127.0.0.1:{port}");
    loop {
        if let Ok(channel) = Channel::from_shared(endpoint.clone())
            .expect("endpoint")
            .connect()
            .await
        {
            let mut health = tonic_health::pb::health_client::HealthClient::new(channel.clone());
            let request = tonic_health::pb::HealthCheckRequest {
                service: "dueq.v1.QueueService".into(),
            };
            if health
                .check(request)
                .await
                .is_ok_and(|r| r.into_inner().status == 1)
            {
                return Some(proto::queue_service_client::QueueServiceClient::new(
                    channel,
                ));
            }
        }
        if child.try_wait().ok().flatten().is_some() {
            return None;
        }
        patience.wait().await;
    }
}

/// A caller's trace: its trace id and span id, in hex.
struct Caller {
    trace_id: String,
    span_id: String,
}

impl Caller {
    fn new(trace_id: &str, span_id: &str) -> Caller {
        Caller {
            trace_id: trace_id.into(),
            span_id: span_id.into(),
        }
    }

    /// `message` as a request carrying this trace's `traceparent` (sampled).
    fn request<T>(&self, message: T) -> tonic::Request<T> {
        let mut request = tonic::Request::new(message);
        let traceparent = format!("00-{}-{}-01", self.trace_id, self.span_id);
        request
            .metadata_mut()
            .insert("traceparent", traceparent.parse().expect("metadata"));
        request
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The server span of `method` in the trace `trace_id`.
fn rpc_span<'a>(method: &'static str, trace_id: &'a str) -> impl Fn(&Span) -> bool + 'a {
    move |s: &Span| {
        s.name == format!("dueq.v1.QueueService/{method}") && hex(&s.trace_id) == trace_id
    }
}

/// Pins: a call with a `traceparent` makes a server span in the caller's trace,
/// whose parent is the caller's span, named after the method.
#[tokio::test]
async fn a_callers_trace_continues_through_dueq() {
    let receiver = Receiver::start().await;
    let redis = Redis::start().await;
    let mut traced = Traced::start(&redis, &["--otlp-endpoint", &receiver.url], &[]).await;
    let caller = Caller::new("4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7");
    traced
        .client
        .enqueue(caller.request(job("q", "traced")))
        .await
        .expect("Enqueue");
    let span = receiver
        .span(
            "Enqueue in the caller's trace",
            rpc_span("Enqueue", &caller.trace_id),
        )
        .await;
    assert_eq!(hex(&span.parent_span_id), caller.span_id);
    assert_eq!(span.kind, SpanKind::Server as i32);
    traced.stop().await;
}

/// The value of a span's integer attribute `key`.
fn int_attribute(span: &Span, key: &str) -> Option<i64> {
    use opentelemetry_proto::tonic::common::v1::any_value::Value;
    span.attributes
        .iter()
        .find(|a| a.key == key)
        .and_then(|a| a.value.as_ref()?.value.as_ref())
        .and_then(|v| match v {
            Value::IntValue(i) => Some(*i),
            _ => None,
        })
}

/// Pins: a call answered with an error carries its gRPC code
/// (`rpc.grpc.status_code`); the span is an error only for a fault of the server's
/// (UNAVAILABLE with Redis gone), not for a caller's (INVALID_ARGUMENT).
#[tokio::test]
async fn a_calls_status_is_on_its_span() {
    let receiver = Receiver::start().await;
    let mut redis = Redis::start().await;
    let mut traced = Traced::start(&redis, &["--otlp-endpoint", &receiver.url], &[]).await;
    let invalid = Caller::new("6bf92f3577b34da6a3ce929d0e0e4736", "20f067aa0ba902b7");
    let refused = traced
        .client
        .enqueue(invalid.request(job("", "no queue")))
        .await;
    assert_eq!(
        refused.expect_err("refused").code(),
        tonic::Code::InvalidArgument
    );
    let span = receiver
        .span(
            "the refused Enqueue",
            rpc_span("Enqueue", &invalid.trace_id),
        )
        .await;
    assert_eq!(int_attribute(&span, "rpc.grpc.status_code"), Some(3));
    assert_ne!(span.status.map(|s| s.code), Some(2), "not an error status");

    redis.kill();
    let unavailable = Caller::new("7bf92f3577b34da6a3ce929d0e0e4736", "30f067aa0ba902b7");
    let failed = traced
        .client
        .enqueue(unavailable.request(job("q", "no redis")))
        .await;
    assert_eq!(failed.expect_err("failed").code(), tonic::Code::Unavailable);
    let span = receiver
        .span(
            "the failed Enqueue",
            rpc_span("Enqueue", &unavailable.trace_id),
        )
        .await;
    assert_eq!(int_attribute(&span, "rpc.grpc.status_code"), Some(14));
    assert_eq!(span.status.map(|s| s.code), Some(2), "an error status");
    traced.stop().await;
}

/// Pins: shutdown sends the spans still queued: with batches sent only every ten
/// minutes, a call's span reaches the receiver once dueq has stopped.
#[tokio::test]
async fn shutdown_sends_the_last_spans() {
    let receiver = Receiver::start().await;
    let redis = Redis::start().await;
    let env = [("OTEL_BSP_SCHEDULE_DELAY", "600000")];
    let mut traced = Traced::start(&redis, &["--otlp-endpoint", &receiver.url], &env).await;
    let caller = Caller::new("5bf92f3577b34da6a3ce929d0e0e4736", "10f067aa0ba902b7");
    traced
        .client
        .enqueue(caller.request(job("q", "last")))
        .await
        .expect("Enqueue");
    traced.stop().await;
    let received = receiver.received.lock().expect("received");
    assert!(
        received
            .spans
            .iter()
            .any(rpc_span("Enqueue", &caller.trace_id)),
        "the Enqueue span was sent at shutdown"
    );
}

/// Pins: the job keeps the Enqueue span's context in its `traceparent` header (so a
/// worker can continue it), and its claim — by ClaimJob and by Work — gets a span,
/// under the claim's, linked to that context.
#[tokio::test]
async fn a_jobs_claim_links_to_the_trace_it_was_enqueued_under() {
    let receiver = Receiver::start().await;
    let redis = Redis::start().await;
    let mut traced = Traced::start(&redis, &["--otlp-endpoint", &receiver.url], &[]).await;
    let client = &mut traced.client;
    let producer = Caller::new("0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331");
    let enqueued = client
        .enqueue(producer.request(job("q", "claimed")))
        .await
        .expect("Enqueue")
        .into_inner();
    let enqueue = receiver
        .span("Enqueue", rpc_span("Enqueue", &producer.trace_id))
        .await;
    let context = format!("00-{}-{}-01", producer.trace_id, hex(&enqueue.span_id));
    let stored = get_job(client, &enqueued.job_id).await;
    assert_eq!(stored.headers.get("traceparent"), Some(&context));

    let worker = Caller::new("11111111111111111111111111111111", "2222222222222222");
    let claimed = client
        .claim_job(worker.request(claim_req(&["q"], LONG_POLL_MS, None)))
        .await
        .expect("ClaimJob")
        .into_inner()
        .jobs;
    assert_eq!(claimed.len(), 1);
    assert_eq!(claimed[0].headers.get("traceparent"), Some(&context));
    let claim = receiver
        .span("ClaimJob", rpc_span("ClaimJob", &worker.trace_id))
        .await;
    let linked_to = |enqueue: &Span| {
        let (trace_id, span_id) = (enqueue.trace_id.clone(), enqueue.span_id.clone());
        move |s: &Span| {
            s.name == "job handed out"
                && s.links
                    .iter()
                    .any(|l| l.trace_id == trace_id && l.span_id == span_id)
        }
    };
    let handed_out = receiver.span("the claimed job", linked_to(&enqueue)).await;
    assert_eq!(handed_out.trace_id, claim.trace_id);
    assert_eq!(handed_out.parent_span_id, claim.span_id);

    // The same by a Work stream.
    let producer = Caller::new("33333333333333333333333333333333", "4444444444444444");
    client
        .enqueue(producer.request(job("w", "worked")))
        .await
        .expect("Enqueue");
    let enqueue = receiver
        .span("Enqueue", rpc_span("Enqueue", &producer.trace_id))
        .await;
    let (_tx, mut work) = open_work(client, "w").await;
    let proto::work_response::Response::Job(worked) = next_work(&mut work).await else {
        panic!("a job");
    };
    let context = format!("00-{}-{}-01", producer.trace_id, hex(&enqueue.span_id));
    assert_eq!(worked.headers.get("traceparent"), Some(&context));
    let handed_out = receiver.span("the worked job", linked_to(&enqueue)).await;
    assert!(!handed_out.parent_span_id.is_empty(), "under the Work span");
    drop(work);
    traced.stop().await;
}

/// Pins: without --otlp-endpoint nothing is sent, even with the OTEL_* variables
/// that name a receiver set and a caller's trace in the metadata, and no job gets a
/// `traceparent`.
#[tokio::test]
async fn without_an_endpoint_nothing_is_sent() {
    let receiver = Receiver::start().await;
    let redis = Redis::start().await;
    let env = [
        ("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url.as_str()),
        ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", receiver.url.as_str()),
    ];
    let mut traced = Traced::start(&redis, &[], &env).await;
    let caller = Caller::new("4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7");
    let enqueued = traced
        .client
        .enqueue(caller.request(job("q", "untraced")))
        .await
        .expect("Enqueue")
        .into_inner();
    let stored = get_job(&mut traced.client, &enqueued.job_id).await;
    assert!(stored.headers.is_empty(), "{:?}", stored.headers);
    // Once it has exited, whatever it would have sent, it has sent.
    traced.stop().await;
    assert_eq!(receiver.requests(), 0);
}

/// Pins: an --otlp-endpoint that is not an http URL is refused at start, naming the
/// flag; one nobody listens on neither fails nor holds up a call, nor the shutdown.
#[tokio::test]
async fn a_bad_endpoint_is_refused_and_an_unreachable_one_is_harmless() {
    for (bad, reason) in [
        ("not a url", "not a URL"),
        ("collector:4318", "must be an http://host:port URL"),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_dueq"))
            .args(["serve", "--otlp-endpoint", bad])
            .env_remove("DUEQ_OTLP_ENDPOINT")
            .stdin(Stdio::null())
            .output();
        let out = within_patience("dueq to refuse", out)
            .await
            .expect("run dueq");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{bad}: {stderr}");
        assert!(stderr.contains("--otlp-endpoint"), "{bad}: {stderr}");
        assert!(stderr.contains(reason), "{bad}: {stderr}");
    }

    let redis = Redis::start().await;
    let nobody = format!("http://127.0.0.1:{}", free_port());
    let mut traced = Traced::start(&redis, &["--otlp-endpoint", &nobody], &[]).await;
    let caller = Caller::new("4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7");
    for i in 0..5 {
        traced
            .client
            .enqueue(caller.request(job("q", &format!("job {i}"))))
            .await
            .expect("Enqueue with no receiver listening");
        let claimed = claim_job(&mut traced.client, &["q"], LONG_POLL_MS, None).await;
        assert!(claimed.is_some(), "claimed job {i}");
    }
    traced.stop().await;
}
