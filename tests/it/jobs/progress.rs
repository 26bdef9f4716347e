//! Issue 30: a running job's progress (ExtendLease.progress and the Work stream's
//! extend), the checkpoint handed to the next attempt, results kept with completed
//! jobs (AckJob, AckJobs, ClaimJobRequest.acks, the Work stream's ack), and
//! cancellation of active jobs (CancelJob sets cancel_requested; the worker hears it
//! at its next extend; fail, lease expiry and a closed stream end it CANCELLED).

use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Code, Status, Streaming};

use crate::common::*;
use proto::{work_request::Request as In, work_response::Response as Out};

const KIB: usize = 1024;

fn named(queue: &str, id: &str) -> proto::EnqueueRequest {
    let mut req = job(queue, id);
    req.job_id = id.into();
    req
}

fn report(
    fraction: Option<f64>,
    message: Option<&str>,
    checkpoint: Option<&[u8]>,
) -> proto::JobProgress {
    proto::JobProgress {
        fraction,
        message: message.map(str::to_owned),
        checkpoint: checkpoint.map(<[u8]>::to_vec),
        update_time: None,
    }
}

fn extend_req(
    id: &str,
    token: &str,
    lease_ms: Option<u64>,
    progress: Option<proto::JobProgress>,
) -> proto::ExtendLeaseRequest {
    proto::ExtendLeaseRequest {
        namespace: "ns".into(),
        job_id: id.into(),
        lease_token: token.into(),
        lease: lease_ms.map(dur),
        progress,
    }
}

async fn extend(
    c: &mut Client,
    id: &str,
    token: &str,
    lease_ms: Option<u64>,
    progress: Option<proto::JobProgress>,
) -> Result<proto::ExtendLeaseResponse, Status> {
    c.extend_lease(extend_req(id, token, lease_ms, progress))
        .await
        .map(|r| r.into_inner())
}

async fn ack_with(c: &mut Client, id: &str, token: &str, result: &[u8]) -> Result<(), Status> {
    c.ack_job(proto::AckJobRequest {
        namespace: "ns".into(),
        job_id: id.into(),
        lease_token: token.into(),
        result: result.to_vec(),
    })
    .await
    .map(|_| ())
}

async fn cancel(c: &mut Client, id: &str) -> Result<proto::Job, Status> {
    c.cancel_job(proto::CancelJobRequest {
        namespace: "ns".into(),
        job_id: id.into(),
    })
    .await
    .map(|r| r.into_inner().job.expect("a job"))
}

fn lease_of(job: &proto::ClaimedJob, result: &[u8]) -> proto::JobLease {
    proto::JobLease {
        job_id: job.job_id.clone(),
        lease_token: job.lease_token.clone(),
        result: result.to_vec(),
    }
}

fn assert_invalid(status: &Status, field: &str) {
    assert_eq!(status.code(), Code::InvalidArgument, "{status:?}");
    assert!(
        status.message().contains(field),
        "{:?} does not name {field}",
        status.message()
    );
}

/// (pending, delayed, active, dead) of queue `q` of "ns".
async fn counts(c: &mut Client, queue: &str) -> (u64, u64, u64, u64) {
    let q = listed_queue(c, queue).await;
    (q.pending, q.delayed, q.active, q.dead)
}

/// A worker's end of a Work stream; dropping it ends the stream.
struct Stream {
    tx: mpsc::Sender<proto::WorkRequest>,
    rx: Streaming<proto::WorkResponse>,
}

impl Stream {
    /// Opens a stream of capacity 1 on `queue` of "ns" (its `start` is queued before
    /// the call: the server answers the call once it has read it).
    async fn open(c: &mut Client, queue: &str) -> Stream {
        let (tx, rx) = mpsc::channel(16);
        let start = In::Start(proto::WorkStart {
            namespace: "ns".into(),
            queues: vec![queue.into()],
            worker_id: "stream-worker".into(),
            lease: Some(dur(600_000)),
            capacity: 1,
        });
        tx.send(proto::WorkRequest {
            request: Some(start),
        })
        .await
        .expect("queue the start");
        let rx = within_patience("opening a Work stream", c.work(ReceiverStream::new(rx)))
            .await
            .expect("open a Work stream")
            .into_inner();
        Stream { tx, rx }
    }

    async fn send(&self, request: In) {
        self.tx
            .send(proto::WorkRequest {
                request: Some(request),
            })
            .await
            .expect("the stream takes requests");
    }

    async fn next(&mut self) -> Result<Option<Out>, Status> {
        let message = within_patience("the Work stream's next message", self.rx.message()).await?;
        Ok(message.map(|m| m.response.expect("a response")))
    }

    async fn job(&mut self) -> proto::ClaimedJob {
        match self.next().await {
            Ok(Some(Out::Job(job))) => job,
            other => panic!("expected a job, got {other:?}"),
        }
    }
}

/// Pins: ExtendLease's progress is stored in the same call as the lease: a set field
/// replaces the stored one and an unset one keeps it, the report's time is Redis's
/// now, GetJob shows it with the checkpoint, each write bumps the version, and
/// `lease` may be left out only when progress is reported (the deadline then stays).
#[tokio::test]
async fn progress_is_merged_field_by_field_and_shown_by_get_job() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;
    enqueue(&mut c, named("q", "p")).await;
    let held = claim_job(&mut c, &["q"], 0, Some(60_000))
        .await
        .expect("claimed");
    assert!(
        get_job(&mut c, "p").await.progress.is_none(),
        "no report yet"
    );

    let before = redis_now(&mut conn).await;
    let first = extend(
        &mut c,
        "p",
        &held.lease_token,
        Some(120_000),
        Some(report(Some(0.25), Some("a quarter"), Some(b"row=250"))),
    )
    .await
    .expect("extend");
    assert!(!first.cancel_requested);
    let job = get_job(&mut c, "p").await;
    let progress = job.progress.clone().expect("progress");
    assert_eq!(progress.fraction, Some(0.25));
    assert_eq!(progress.message.as_deref(), Some("a quarter"));
    assert_eq!(progress.checkpoint.as_deref(), Some(&b"row=250"[..]));
    assert!(ms(&progress.update_time) >= before, "{progress:?}");
    assert_eq!(ms(&job.lease_deadline), ms(&first.lease_deadline));
    let version = job.version;

    // Only the fraction, and no lease: the message, checkpoint and deadline stay.
    let second = extend(
        &mut c,
        "p",
        &held.lease_token,
        None,
        Some(report(Some(1.0), None, None)),
    )
    .await
    .expect("progress alone");
    assert_eq!(
        ms(&second.lease_deadline),
        ms(&first.lease_deadline),
        "the deadline stays"
    );
    let job = get_job(&mut c, "p").await;
    let progress = job.progress.clone().expect("progress");
    assert_eq!(progress.fraction, Some(1.0));
    assert_eq!(progress.message.as_deref(), Some("a quarter"));
    assert_eq!(progress.checkpoint.as_deref(), Some(&b"row=250"[..]));
    assert!(job.version > version, "{} then {}", version, job.version);

    // A lease alone keeps the progress; empty message and checkpoint clear them.
    extend(&mut c, "p", &held.lease_token, Some(60_000), None)
        .await
        .expect("lease alone");
    assert_eq!(
        get_job(&mut c, "p").await.progress.expect("kept").fraction,
        Some(1.0)
    );
    extend(
        &mut c,
        "p",
        &held.lease_token,
        None,
        Some(report(Some(0.0), Some(""), Some(b""))),
    )
    .await
    .expect("clear");
    let progress = get_job(&mut c, "p").await.progress.expect("progress");
    assert_eq!(
        (progress.fraction, progress.message, progress.checkpoint),
        (Some(0.0), None, None)
    );

    // Neither lease nor progress: the lease is required.
    let refused = extend(&mut c, "p", &held.lease_token, None, None)
        .await
        .expect_err("nothing");
    assert_invalid(&refused, "lease");
    // The lease rules are unchanged: a stale token is ABORTED.
    let stale = extend(
        &mut c,
        "p",
        "not-the-token",
        None,
        Some(report(Some(0.5), None, None)),
    )
    .await
    .expect_err("stale");
    assert_eq!(stale.code(), Code::Aborted, "{stale:?}");
}

/// Pins invariant 8 for the new fields: a fraction outside 0..1 or NaN, a message over
/// 256 bytes, a checkpoint or result over 64 KiB are INVALID_ARGUMENT naming the
/// field, and nothing is written; in AckJobs and a claim's acks only that item is
/// refused.
#[tokio::test]
async fn bad_progress_and_results_are_refused_naming_the_field_and_write_nothing() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;
    for id in ["a", "b"] {
        enqueue(&mut c, named("q", id)).await;
    }
    let mut req = claim_req(&["q"], 0, Some(60_000));
    req.max_jobs = 2;
    let held = c.claim_job(req).await.expect("claim").into_inner().jobs;
    let (a, b) = (&held[0], &held[1]);
    let big = vec![b'x'; 64 * KIB + 1];
    let long = "m".repeat(257);
    let before = snapshot(&mut conn).await;
    for (progress, field) in [
        (report(Some(1.5), None, None), "progress.fraction"),
        (report(Some(-0.1), None, None), "progress.fraction"),
        (report(Some(f64::NAN), None, None), "progress.fraction"),
        (report(None, Some(&long), None), "progress.message"),
        (report(None, None, Some(&big)), "progress.checkpoint"),
    ] {
        let refused = extend(
            &mut c,
            &a.job_id,
            &a.lease_token,
            Some(60_000),
            Some(progress),
        )
        .await
        .expect_err("refused");
        assert_invalid(&refused, field);
    }
    let refused = ack_with(&mut c, &a.job_id, &a.lease_token, &big)
        .await
        .expect_err("refused");
    assert_invalid(&refused, "result");
    assert_eq!(
        snapshot(&mut conn).await,
        before,
        "a refused call writes nothing"
    );

    // At the limits: accepted.
    let exact = vec![b'y'; 64 * KIB];
    extend(
        &mut c,
        &a.job_id,
        &a.lease_token,
        None,
        Some(report(Some(1.0), Some(&"m".repeat(256)), Some(&exact))),
    )
    .await
    .expect("at the limits");

    // AckJobs: the oversized item alone is refused, the other completes.
    let acked = c
        .ack_jobs(proto::AckJobsRequest {
            namespace: "ns".into(),
            acks: vec![lease_of(b, &big), lease_of(a, &exact)],
        })
        .await
        .expect("AckJobs")
        .into_inner()
        .results;
    assert_eq!(
        Code::from(acked[0].code),
        Code::InvalidArgument,
        "{acked:?}"
    );
    assert!(acked[0].message.contains("acks[0].result"), "{acked:?}");
    assert_eq!(acked[1].code, 0, "{acked:?}");
    assert_eq!(
        state(&get_job(&mut c, &b.job_id).await),
        proto::JobState::Active
    );
    assert_eq!(get_job(&mut c, &a.job_id).await.result, exact);

    // A claim's acks: the same.
    let mut req = claim_req(&["q"], 0, None);
    req.acks = vec![lease_of(b, &big)];
    let answered = c.claim_job(req).await.expect("claim").into_inner().acks;
    assert_eq!(
        Code::from(answered[0].code),
        Code::InvalidArgument,
        "{answered:?}"
    );
    assert!(
        answered[0].message.contains("acks[0].result"),
        "{answered:?}"
    );
    assert_eq!(
        state(&get_job(&mut c, &b.job_id).await),
        proto::JobState::Active
    );

    // The Work stream: a malformed message ends it naming the field.
    for (request, field) in [
        (In::Ack(lease_of(b, &big)), "ack.result"),
        (
            In::Extend(extend_req(
                &b.job_id,
                &b.lease_token,
                None,
                Some(report(Some(2.0), None, None)),
            )),
            "extend.progress.fraction",
        ),
    ] {
        let mut w = Stream::open(&mut c, "empty").await;
        w.send(request).await;
        let status = w.next().await.expect_err("the stream ends");
        assert_invalid(&status, field);
    }
}

/// Pins: the next attempt of a failed job, and of one whose lease expired, receives
/// the last checkpoint in its claim (ClaimJob and the Work stream alike).
#[tokio::test]
async fn the_next_attempt_receives_the_last_checkpoint() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;
    enqueue(&mut c, named("q", "resumable")).await;
    let first = claim_job(&mut c, &["q"], 0, Some(60_000))
        .await
        .expect("first");
    assert!(first.checkpoint.is_empty());
    extend(
        &mut c,
        "resumable",
        &first.lease_token,
        None,
        Some(report(None, None, Some(b"page=3"))),
    )
    .await
    .expect("checkpoint");
    let mut fail = proto::FailJobRequest {
        namespace: "ns".into(),
        job_id: "resumable".into(),
        lease_token: first.lease_token.clone(),
        error: "timeout".into(),
        retry_after: Some(dur(0)),
        non_retryable: false,
    };
    c.fail_job(fail.clone()).await.expect("fail");

    // The retry: the checkpoint of the failed attempt. Its lease runs out.
    let second = claim_job(&mut c, &["q"], 0, Some(200))
        .await
        .expect("second");
    assert_eq!(
        (second.attempt, second.checkpoint.as_slice()),
        (2, &b"page=3"[..])
    );
    fail.lease_token = second.lease_token.clone();
    extend(
        &mut c,
        "resumable",
        &second.lease_token,
        None,
        Some(report(Some(0.7), None, Some(b"page=7"))),
    )
    .await
    .expect("checkpoint");
    wait_redis_past(&mut conn, ms(&second.lease_deadline)).await;

    // The next claim, on a Work stream, takes the expired lease back and hands out
    // the third attempt with the last checkpoint.
    let mut w = Stream::open(&mut c, "q").await;
    let third = w.job().await;
    assert_eq!(
        (third.attempt, third.checkpoint.as_slice()),
        (3, &b"page=7"[..])
    );
    assert!(!third.cancel_requested);
    let job = get_job(&mut c, "resumable").await;
    assert_eq!(
        job.errors.last().map(|e| e.message.as_str()),
        Some("lease expired")
    );
    assert_eq!(job.progress.expect("kept").fraction, Some(0.7));
}

/// Pins: a result is kept with the completed job, whichever way the ack came (AckJob,
/// AckJobs, ClaimJobRequest.acks, the Work stream), GetJob returns it, and ListJobs
/// shows results and checkpoints in the FULL view only.
#[tokio::test]
async fn results_are_kept_with_the_completed_job_whichever_way_it_was_acked() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    for id in [
        "unary",
        "batch-with",
        "batch-without",
        "carried",
        "streamed",
        "running",
    ] {
        enqueue(&mut c, named("q", id)).await;
    }
    let held = |jobs: &[proto::ClaimedJob], id: &str| -> proto::ClaimedJob {
        jobs.iter().find(|j| j.job_id == id).expect("held").clone()
    };
    let mut req = claim_req(&["q"], 0, Some(60_000));
    req.max_jobs = 4;
    let jobs = c.claim_job(req).await.expect("claim").into_inner().jobs;
    ack_with(
        &mut c,
        "unary",
        &held(&jobs, "unary").lease_token,
        b"{\"sent\":3}",
    )
    .await
    .expect("ack");
    let acked = c
        .ack_jobs(proto::AckJobsRequest {
            namespace: "ns".into(),
            acks: vec![
                lease_of(&held(&jobs, "batch-without"), b""),
                lease_of(&held(&jobs, "batch-with"), b"two"),
            ],
        })
        .await
        .expect("AckJobs")
        .into_inner()
        .results;
    assert!(acked.iter().all(|a| a.code == 0), "{acked:?}");
    let mut req = claim_req(&["q"], 0, Some(60_000));
    req.acks = vec![lease_of(&held(&jobs, "carried"), b"three")];
    let next = c.claim_job(req).await.expect("claim").into_inner();
    assert_eq!(next.acks[0].code, 0, "{:?}", next.acks);
    let streamed_lease = next.jobs[0].clone();
    assert_eq!(streamed_lease.job_id, "streamed");
    // The stream takes "running"; "streamed" is acked on it under its unary lease.
    let mut w = Stream::open(&mut c, "q").await;
    let running = w.job().await;
    w.send(In::Ack(lease_of(&streamed_lease, b"four"))).await;
    match w.next().await {
        Ok(Some(Out::Ack(a))) => assert_eq!(a.code, 0, "{a:?}"),
        other => panic!("expected the ack's result, got {other:?}"),
    }
    w.send(In::Extend(extend_req(
        "running",
        &running.lease_token,
        None,
        Some(report(None, None, Some(b"cp"))),
    )))
    .await;
    assert!(matches!(w.next().await, Ok(Some(Out::Extend(_)))));

    for (id, result) in [
        ("unary", &b"{\"sent\":3}"[..]),
        ("batch-with", b"two"),
        ("batch-without", b""),
        ("carried", b"three"),
        ("streamed", b"four"),
    ] {
        let job = get_job(&mut c, id).await;
        assert_eq!(
            (state(&job), job.result.as_slice()),
            (proto::JobState::Completed, result),
            "{id}"
        );
    }
    let list = |view: proto::JobView| proto::ListJobsRequest {
        namespace: "ns".into(),
        queue: "q".into(),
        state: 0,
        page_size: 100,
        page_token: String::new(),
        view: view as i32,
        filter: None,
    };
    let full = c
        .list_jobs(list(proto::JobView::Full))
        .await
        .expect("full")
        .into_inner()
        .jobs;
    let basic = c
        .list_jobs(list(proto::JobView::Basic))
        .await
        .expect("basic")
        .into_inner()
        .jobs;
    let of = |jobs: &[proto::Job], id: &str| {
        jobs.iter()
            .find(|j| j.job_id == id)
            .expect("listed")
            .clone()
    };
    assert_eq!(of(&full, "carried").result, b"three");
    assert_eq!(
        of(&full, "running")
            .progress
            .expect("progress")
            .checkpoint
            .as_deref(),
        Some(&b"cp"[..])
    );
    assert!(
        of(&basic, "carried").result.is_empty(),
        "BASIC leaves the result out"
    );
    let basic_progress = of(&basic, "running")
        .progress
        .expect("BASIC keeps the progress");
    assert_eq!(
        basic_progress.checkpoint, None,
        "BASIC leaves the checkpoint out"
    );
}

/// Pins: CancelJob of an active job leaves it ACTIVE under its lease with
/// cancel_requested set (the version bumps once: asking again writes nothing); the
/// worker's next extend says so; its FailJob then ends the job CANCELLED (finish
/// time, error recorded, not retried, out of the active count, no failure counted),
/// and a finished job's cancel stays FAILED_PRECONDITION.
#[tokio::test]
async fn cancelling_an_active_job_asks_its_worker_and_its_fail_ends_it_cancelled() {
    let redis = Redis::start().await;
    let metrics = format!("127.0.0.1:{}", free_port());
    let mut config = config(&redis.url());
    config.metrics_listen = Some(metrics.clone());
    let service = Service::start_with(config).await;
    let mut c = service.client().await;
    enqueue(&mut c, named("q", "long")).await;
    let held = claim_job(&mut c, &["q"], 0, Some(60_000))
        .await
        .expect("claimed");
    let asked = cancel(&mut c, "long").await.expect("cancel an active job");
    assert_eq!(state(&asked), proto::JobState::Active);
    assert!(asked.cancel_requested);
    assert_eq!(asked.worker_id, "test-worker");
    assert_eq!(
        ms(&asked.lease_deadline),
        ms(&held.lease_deadline),
        "the lease stands"
    );
    let again = cancel(&mut c, "long").await.expect("idempotent");
    assert!(again.cancel_requested);
    assert_eq!(again.version, asked.version, "asking twice writes nothing");
    assert_eq!(counts(&mut c, "q").await, (0, 0, 1, 0));

    let told = extend(&mut c, "long", &held.lease_token, Some(60_000), None)
        .await
        .expect("extend");
    assert!(told.cancel_requested, "the next extend tells the worker");
    let failed = fail_job(&mut c, "long", &held.lease_token, "stopped: cancelled")
        .await
        .expect("fail");
    assert_eq!(failed.state, proto::JobState::Cancelled as i32);
    assert!(failed.run_at.is_none());
    let job = get_job(&mut c, "long").await;
    assert_eq!(state(&job), proto::JobState::Cancelled);
    assert!(job.finish_time.is_some() && job.lease_deadline.is_none());
    assert_eq!(
        job.errors.last().map(|e| e.message.as_str()),
        Some("stopped: cancelled")
    );
    assert!(
        claim_job(&mut c, &["q"], 0, None).await.is_none(),
        "not retried"
    );
    assert_eq!(counts(&mut c, "q").await, (0, 0, 0, 0));
    let scraped = scrape(&metrics).await;
    assert!(
        scraped.series_of("dueq_jobs_failed_total").is_empty(),
        "a cancelled job is no failure: {:?}",
        scraped.series_of("dueq_jobs_failed_total")
    );
    let finished = cancel(&mut c, "long").await.expect_err("finished");
    assert_eq!(finished.code(), Code::FailedPrecondition, "{finished:?}");
    // The finished set holds it, for retention, as any cancelled job.
    let mut conn = redis.conn().await;
    let score: Option<i64> =
        query(&mut conn, cmd("ZSCORE").arg("dueq:{ns}:jdone").arg("long")).await;
    assert!(score.is_some(), "in the finished set");
}

/// Pins: an ack of a cancel-requested job completes it, with its result.
#[tokio::test]
async fn a_cancel_requested_job_that_is_acked_completes_with_its_result() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    enqueue(&mut c, named("q", "almost")).await;
    let held = claim_job(&mut c, &["q"], 0, Some(60_000))
        .await
        .expect("claimed");
    cancel(&mut c, "almost").await.expect("cancel");
    ack_with(&mut c, "almost", &held.lease_token, b"done anyway")
        .await
        .expect("ack");
    let job = get_job(&mut c, "almost").await;
    assert_eq!(
        (state(&job), job.result.as_slice()),
        (proto::JobState::Completed, &b"done anyway"[..])
    );
}

/// Pins: a cancel-requested job whose worker never answers ends CANCELLED when its
/// lease runs out (the claim's expiry walk), not retried; the lease expiry is counted.
#[tokio::test]
async fn a_cancel_requested_job_whose_lease_expires_ends_cancelled() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;
    enqueue(&mut c, named("q", "stuck")).await;
    let held = claim_job(&mut c, &["q"], 0, Some(200))
        .await
        .expect("claimed");
    cancel(&mut c, "stuck").await.expect("cancel");
    wait_redis_past(&mut conn, ms(&held.lease_deadline)).await;
    assert!(
        claim_job(&mut c, &["q"], 0, None).await.is_none(),
        "not handed out again"
    );
    let job = get_job(&mut c, "stuck").await;
    assert_eq!(state(&job), proto::JobState::Cancelled);
    assert_eq!(job.attempts, 1);
    assert_eq!(
        job.errors.last().map(|e| e.message.as_str()),
        Some("lease expired")
    );
    assert_eq!(counts(&mut c, "q").await, (0, 0, 0, 0));
    let score: Option<i64> =
        query(&mut conn, cmd("ZSCORE").arg("dueq:{ns}:jdone").arg("stuck")).await;
    assert!(score.is_some(), "in the finished set");
}

/// Pins: on the Work stream, the extend's result carries cancel_requested, and a
/// cancel-requested job whose stream ends (abandoned) ends CANCELLED, not pending.
#[tokio::test]
async fn a_cancel_requested_job_on_a_closed_stream_ends_cancelled() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    enqueue(&mut c, named("q", "streamed")).await;
    let mut w = Stream::open(&mut c, "q").await;
    let held = w.job().await;
    cancel(&mut c, "streamed").await.expect("cancel");
    // A stream that only reports progress learns of the cancel in the result.
    w.send(In::Extend(extend_req(
        "streamed",
        &held.lease_token,
        None,
        Some(report(Some(0.9), None, None)),
    )))
    .await;
    loop {
        match w.next().await {
            Ok(Some(Out::Extend(e))) => {
                assert_eq!(e.code, 0, "{e:?}");
                assert!(
                    e.result.expect("a result").cancel_requested,
                    "the extend tells the worker"
                );
                break;
            }
            Ok(Some(Out::Cancel(_))) => continue, // the stream's own cancel message
            other => panic!("expected the extend's result, got {other:?}"),
        }
    }
    drop(w);
    let patience = Patience::new("the closed stream's cancel-requested job to end cancelled");
    loop {
        let job = get_job(&mut c, "streamed").await;
        if state(&job) != proto::JobState::Active {
            assert_eq!(state(&job), proto::JobState::Cancelled, "{job:?}");
            assert_eq!(
                job.errors.last().map(|e| e.message.as_str()),
                Some("worker stream closed")
            );
            break;
        }
        patience.wait().await;
    }
    assert!(
        claim_job(&mut c, &["q"], 0, None).await.is_none(),
        "not handed out again"
    );
    assert_eq!(counts(&mut c, "q").await, (0, 0, 0, 0));
}

/// Pins: the request travels through Redis, not through an instance's memory:
/// CancelJob through instance B, and the worker's ExtendLease through instance A
/// says cancel_requested.
#[tokio::test]
async fn a_cancel_through_one_instance_reaches_an_extend_through_another() {
    let redis = Redis::start().await;
    let a = Service::start(&redis.url()).await;
    let b = Service::start(&redis.url()).await;
    let (mut ca, mut cb) = (a.client().await, b.client().await);
    enqueue(&mut ca, named("q", "shared")).await;
    let held = claim_job(&mut ca, &["q"], 0, Some(60_000))
        .await
        .expect("claimed on A");
    let before = extend(&mut ca, "shared", &held.lease_token, Some(60_000), None)
        .await
        .expect("extend");
    assert!(!before.cancel_requested);
    let asked = cancel(&mut cb, "shared").await.expect("cancel on B");
    assert!(asked.cancel_requested);
    let after = extend(
        &mut ca,
        "shared",
        &held.lease_token,
        None,
        Some(report(Some(0.5), None, None)),
    )
    .await
    .expect("extend on A");
    assert!(after.cancel_requested, "A's extend sees B's cancel");
    fail_job(&mut ca, "shared", &held.lease_token, "cancelled")
        .await
        .expect("fail");
    assert_eq!(
        state(&get_job(&mut cb, "shared").await),
        proto::JobState::Cancelled
    );
}

/// Pins: CancelJob of a pending or delayed job is unchanged: CANCELLED at once.
#[tokio::test]
async fn cancelling_a_pending_job_is_unchanged() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    enqueue(&mut c, named("q", "waiting")).await;
    let job = cancel(&mut c, "waiting").await.expect("cancel");
    assert_eq!(state(&job), proto::JobState::Cancelled);
    assert!(!job.cancel_requested);
    assert_eq!(counts(&mut c, "q").await, (0, 0, 0, 0));
}

/// Pins invariant 9 for checkpoints: a claim counts each job's checkpoint in its reply
/// budget, so it stops leasing before its reply would pass --max-message-size: the
/// jobs it leaves are never leased (their records are not written: same version),
/// rather than leased and given back.
#[tokio::test]
async fn a_claim_counts_checkpoints_in_its_reply_budget() {
    let redis = Redis::start().await;
    let mut config = config(&redis.url());
    config.max_message_size = 700_000;
    config.max_payload_size = 1024;
    let service = Service::start_with(config).await;
    let mut c = service.client().await;
    let ids: Vec<String> = (0..12).map(|i| format!("c{i:02}")).collect();
    for id in &ids {
        enqueue(&mut c, named("q", id)).await;
    }
    let mut req = claim_req(&["q"], 0, Some(60_000));
    req.max_jobs = 12;
    let held = c.claim_job(req).await.expect("claim").into_inner().jobs;
    assert_eq!(held.len(), 12, "without checkpoints all fit");
    let checkpoint = vec![b'c'; 60 * KIB];
    for job in &held {
        extend(
            &mut c,
            &job.job_id,
            &job.lease_token,
            None,
            Some(report(None, None, Some(&checkpoint))),
        )
        .await
        .expect("checkpoint");
        let mut fail = proto::FailJobRequest {
            namespace: "ns".into(),
            job_id: job.job_id.clone(),
            lease_token: job.lease_token.clone(),
            error: "again".into(),
            ..Default::default()
        };
        fail.retry_after = Some(dur(0));
        c.fail_job(fail).await.expect("fail");
    }
    let mut versions = std::collections::HashMap::new();
    for id in &ids {
        versions.insert(id.clone(), get_job(&mut c, id).await.version);
    }
    let mut req = claim_req(&["q"], 0, Some(60_000));
    req.max_jobs = 20;
    let claimed = c.claim_job(req).await.expect("claim").into_inner().jobs;
    assert!(
        !claimed.is_empty() && claimed.len() < 12,
        "claimed {}",
        claimed.len()
    );
    assert!(claimed.iter().all(|j| j.checkpoint == checkpoint));
    for id in &ids {
        if claimed.iter().any(|j| &j.job_id == id) {
            continue;
        }
        let job = get_job(&mut c, id).await;
        assert_eq!(state(&job), proto::JobState::Pending, "{id}");
        assert_eq!(job.version, versions[id], "{id} was never leased");
    }
}

/// `dueq <args> --addr <service>`: its stdout, after it succeeded.
fn dueq_cli(service: &Service, args: &[&str]) -> String {
    let addr = service.endpoint();
    let out = tokio::task::block_in_place(|| {
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_dueq"));
        for (key, _) in std::env::vars() {
            if key.starts_with("DUEQ_") {
                command.env_remove(key);
            }
        }
        command.args(args).args(["--addr", addr.as_str()]);
        command.output().expect("run dueq")
    });
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{args:?}: {stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// Pins: `dueq job` shows a running job's progress (its checkpoint's size in the
/// table, base64 in JSON), whether a cancel was requested, and a completed job's
/// result (its text when short, base64 in JSON); `dueq jobs -o json` the progress
/// without the checkpoint.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_shows_progress_results_and_cancel_requests() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    for id in ["export", "done"] {
        enqueue(&mut c, named("q", id)).await;
    }
    let mut req = claim_req(&["q"], 0, Some(60_000));
    req.max_jobs = 2;
    let held = c.claim_job(req).await.expect("claim").into_inner().jobs;
    extend(
        &mut c,
        "export",
        &held[0].lease_token,
        None,
        Some(report(
            Some(0.4),
            Some("400 of 1000 rows"),
            Some(b"row=400"),
        )),
    )
    .await
    .expect("progress");
    cancel(&mut c, "export").await.expect("cancel");
    ack_with(&mut c, "done", &held[1].lease_token, b"{\"rows\":1000}")
        .await
        .expect("ack");

    let doc: serde_json::Value = serde_json::from_str(&dueq_cli(
        &service,
        &["job", "-n", "ns", "export", "-o", "json"],
    ))
    .expect("JSON");
    let job = &doc["job"];
    assert_eq!(job["cancel_requested"], serde_json::json!(true));
    assert_eq!(job["progress"]["fraction"], serde_json::json!(0.4));
    assert_eq!(
        job["progress"]["message"],
        serde_json::json!("400 of 1000 rows")
    );
    assert_eq!(
        job["progress"]["checkpoint_base64"],
        serde_json::json!("cm93PTQwMA==")
    );
    assert!(job["progress"]["update_time"].is_string(), "{job}");
    let table = dueq_cli(&service, &["job", "-n", "ns", "export"]);
    for shown in ["40% 400 of 1000 rows", "7 bytes", "cancel_requested"] {
        assert!(table.contains(shown), "{shown} missing from\n{table}");
    }
    let doc: serde_json::Value = serde_json::from_str(&dueq_cli(
        &service,
        &["job", "-n", "ns", "done", "-o", "json"],
    ))
    .expect("JSON");
    assert_eq!(
        doc["job"]["result_base64"],
        serde_json::json!("eyJyb3dzIjoxMDAwfQ==")
    );
    assert_eq!(doc["job"]["result_bytes"], serde_json::json!(13));
    assert!(dueq_cli(&service, &["job", "-n", "ns", "done"]).contains("{\"rows\":1000}"));
    let list: serde_json::Value = serde_json::from_str(&dueq_cli(
        &service,
        &["jobs", "-n", "ns", "q", "-o", "json"],
    ))
    .expect("JSON");
    let export = &list["jobs"][0];
    assert_eq!(
        export["progress"]["message"],
        serde_json::json!("400 of 1000 rows")
    );
    assert!(
        export["progress"].get("checkpoint_base64").is_none(),
        "{export}"
    );
}

/// Pins: docs/jobs.md's progress example runs, as one script, against the service,
/// and shows what it says: the progress, the cancel request in the cancel's reply
/// and the next extension's, the job ending CANCELLED, and the other's result.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs grpcurl"]
async fn the_progress_example_runs() {
    crate::common::tools::require("grpcurl");
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let text = crate::doc_examples::run_fenced("progress-example", &service);
    for shown in [
        "\"fraction\": 0.4",
        "\"message\": \"400 of 1000 rows\"",
        "\"checkpoint\": \"cm93PTQwMA==\"",
        "\"state\": \"JOB_STATE_CANCELLED\"",
        "\"result\": \"eyJyb3dzIjoxMDAwfQ==\"",
    ] {
        assert!(
            text.contains(shown),
            "{shown} is not in the example's output:\n{text}"
        );
    }
    assert_eq!(
        text.matches("\"cancelRequested\": true").count(),
        2,
        "{text}"
    );
    let mut c = service.client().await;
    let job = |id: &str| proto::GetJobRequest {
        namespace: "shop".into(),
        job_id: id.into(),
    };
    let cancelled = c
        .get_job(job("export-42"))
        .await
        .expect("get")
        .into_inner()
        .job
        .expect("job");
    assert_eq!(state(&cancelled), proto::JobState::Cancelled);
    let done = c
        .get_job(job("export-43"))
        .await
        .expect("get")
        .into_inner()
        .job
        .expect("job");
    assert_eq!(
        (state(&done), done.result.as_slice()),
        (proto::JobState::Completed, &b"{\"rows\":1000}"[..])
    );
}
