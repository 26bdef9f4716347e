//! What a caller sends cannot forge a log line: in the text format, control
//! characters inside an event are escaped, so a job id with a newline and an escape
//! code stays inside its own line.

use tonic::transport::Channel;

use super::auth::{start_logging_service, with_token};
use crate::common::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_id_cannot_forge_a_log_line() {
    let redis = Redis::start().await;
    let service = start_logging_service(&redis, "text", "debug").await;
    let channel = Channel::from_shared(format!("http://{}", service.addr))
        .expect("endpoint")
        .connect()
        .await
        .expect("connect");
    let mut client = Client::new(channel);
    let forged = "2026-12-05T00:00:00.000000Z  INFO dueq::audit: principal=root forged";
    let enqueue = proto::EnqueueRequest {
        namespace: "shop-eu".into(),
        queue: "q".into(),
        name: "send".into(),
        job_id: format!("x\n{forged}\r\u{1b}[2J"),
        ..Default::default()
    };
    client
        .enqueue(with_token(enqueue, Some("ops-token")))
        .await
        .expect("enqueue");
    // The debug line that names the job: it must hold the whole id, escaped.
    let patience = Patience::new("the enqueue's debug line");
    let mut seen = Vec::new();
    let line = loop {
        match service.lines.try_recv() {
            Ok(line) if line.contains("enqueued") && line.contains("forged") => break line,
            Ok(line) => seen.push(line),
            Err(_) => patience.wait().await,
        }
    };
    assert!(
        line.contains("job_id=x\\n2026-12-05T00:00:00.000000Z") && line.contains("\\r\\x1b[2J"),
        "{line}"
    );
    for other in &seen {
        assert!(!other.contains("forged"), "a forged line got out: {other}");
        assert!(
            !other.contains('\u{1b}'),
            "a raw escape code got out: {other}"
        );
    }
}
