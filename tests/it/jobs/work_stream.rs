//! The worker fast path (issue 15): the Work stream's flow control, its acks, fails and
//! extensions, what happens to its jobs when it breaks or the service shuts down, its
//! wake-ups; ClaimJob carrying acks; AckJobs; and the crash test over the stream.

use std::{
    collections::{HashMap, VecDeque},
    sync::{Arc, Mutex},
    time::Duration,
};

use deadpool_redis::redis;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tokio_util::sync::CancellationToken;
use tonic::{Code, Status, Streaming};

use super::crash::{self, Rng, Seen};
use crate::{common::*, edge::faults::full::fill_redis};
use proto::{work_request::Request as In, work_response::Response as Out};

/// A worker's end of a Work stream. Dropping it ends the stream, as a worker that
/// goes away does.
struct Work {
    tx: mpsc::Sender<proto::WorkRequest>,
    rx: Streaming<proto::WorkResponse>,
}

/// What a stream sent, sorted by kind.
#[derive(Debug, Default)]
struct Received {
    jobs: Vec<proto::ClaimedJob>,
    acks: Vec<proto::AckResult>,
    fails: Vec<proto::FailResult>,
    extends: Vec<proto::ExtendResult>,
    cancels: Vec<proto::JobLease>,
}

/// A start on queues of "ns", with a lease no test outlasts (so only the stream can
/// give its jobs back early).
fn start(queues: &[&str], capacity: u32) -> proto::WorkStart {
    proto::WorkStart {
        namespace: "ns".into(),
        queues: queues.iter().map(|q| q.to_string()).collect(),
        worker_id: "stream-worker".into(),
        lease: Some(dur(600_000)),
        capacity,
    }
}

/// Opens a stream whose first messages are `first` (none: the worker sends nothing
/// and closes its side).
async fn open_with(c: &mut Client, first: Vec<In>) -> Result<Work, Status> {
    let (tx, rx) = mpsc::channel(64);
    let empty = first.is_empty();
    for request in first {
        tx.send(proto::WorkRequest {
            request: Some(request),
        })
        .await
        .expect("queue a request");
    }
    let tx = if empty {
        // Close the worker's side before the server reads it.
        drop(tx);
        mpsc::channel(1).0
    } else {
        tx
    };
    let rx = within_patience("opening a Work stream", c.work(ReceiverStream::new(rx)))
        .await?
        .into_inner();
    Ok(Work { tx, rx })
}

async fn open(c: &mut Client, start: proto::WorkStart) -> Work {
    open_with(c, vec![In::Start(start)])
        .await
        .expect("open a Work stream")
}

impl Work {
    async fn send(&self, request: In) {
        self.tx
            .send(proto::WorkRequest {
                request: Some(request),
            })
            .await
            .expect("the stream takes requests");
    }

    async fn ack_lease(&self, id: &str, token: &str) {
        self.send(In::Ack(proto::JobLease {
            result: Vec::new(),
            job_id: id.into(),
            lease_token: token.into(),
        }))
        .await;
    }

    async fn ack(&self, job: &proto::ClaimedJob) {
        self.ack_lease(&job.job_id, &job.lease_token).await;
    }

    async fn fail(&self, job: &proto::ClaimedJob, error: &str, retry_after_ms: Option<u64>) {
        self.send(In::Fail(proto::FailJobRequest {
            namespace: String::new(),
            job_id: job.job_id.clone(),
            lease_token: job.lease_token.clone(),
            error: error.into(),
            retry_after: retry_after_ms.map(dur),
            non_retryable: false,
        }))
        .await;
    }

    async fn extend(&self, id: &str, token: &str, lease_ms: u64) {
        self.send(In::Extend(proto::ExtendLeaseRequest {
            progress: None,
            namespace: String::new(),
            job_id: id.into(),
            lease_token: token.into(),
            lease: Some(dur(lease_ms)),
        }))
        .await;
    }

    /// The stream's next message, or how it ended (`Ok(None)`: ended OK).
    async fn message(&mut self) -> Result<Option<Out>, Status> {
        let message = within_patience("the Work stream's next message", self.rx.message()).await?;
        Ok(message.map(|m| m.response.expect("a response")))
    }

    async fn next(&mut self) -> Out {
        self.message()
            .await
            .expect("the stream is healthy")
            .expect("the stream is open")
    }

    async fn job(&mut self) -> proto::ClaimedJob {
        match self.next().await {
            Out::Job(job) => job,
            other => panic!("expected a job, got {other:?}"),
        }
    }

    /// The next `n` messages, by kind.
    async fn receive(&mut self, n: usize) -> Received {
        let mut got = Received::default();
        for _ in 0..n {
            match self.next().await {
                Out::Job(j) => got.jobs.push(j),
                Out::Ack(a) => got.acks.push(a),
                Out::Fail(f) => got.fails.push(f),
                Out::Extend(e) => got.extends.push(e),
                Out::Cancel(c) => got.cancels.push(c),
            }
        }
        got
    }

    /// Everything the server sent before it answered an extension of `held`: a
    /// marker, since the stream answers an extension as it reads it, after what it
    /// sent before.
    async fn sync(&mut self, held: &proto::ClaimedJob) -> Received {
        self.extend(&held.job_id, &held.lease_token, 600_000).await;
        let mut got = Received::default();
        loop {
            match self.next().await {
                Out::Extend(e) if e.job_id == held.job_id => {
                    assert_eq!(e.code, 0, "the marker extension: {e:?}");
                    return got;
                }
                Out::Job(j) => got.jobs.push(j),
                Out::Ack(a) => got.acks.push(a),
                Out::Fail(f) => got.fails.push(f),
                Out::Extend(e) => got.extends.push(e),
                Out::Cancel(c) => got.cancels.push(c),
            }
        }
    }
}

/// `config` with the wake re-check put off beyond any test: only a wake-up delivers.
fn no_recheck(mut config: dueq::config::ServeConfig) -> dueq::config::ServeConfig {
    config.recheck_interval = Duration::from_secs(3600);
    config
}

fn code(code: i32) -> Code {
    Code::from(code)
}

/// How many jobs of `queue` are in `state`.
async fn count(c: &mut Client, queue: &str, state: proto::JobState) -> usize {
    list_all_jobs(c, "ns", queue, 1000)
        .await
        .iter()
        .filter(|j| j.state == state as i32)
        .count()
}

async fn enqueue_named(c: &mut Client, queue: &str, names: &[&str]) {
    for name in names {
        let mut req = job(queue, name);
        req.job_id = (*name).into();
        enqueue(c, req).await;
    }
}

fn lease(id: &str, token: &str) -> proto::JobLease {
    proto::JobLease {
        result: Vec::new(),
        job_id: id.into(),
        lease_token: token.into(),
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

/// Pins the flow control: a stream holds `capacity` jobs and no more (the others stay
/// pending, unleased), and each ack frees one slot for exactly one more job.
#[tokio::test]
async fn the_stream_holds_capacity_jobs_and_each_ack_frees_one_slot() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    enqueue_named(&mut c, "q", &["j0", "j1", "j2", "j3", "j4"]).await;

    let mut w = open(&mut c, start(&["q"], 2)).await;
    let first = [w.job().await, w.job().await];
    assert_eq!([&*first[0].job_id, &*first[1].job_id], ["j0", "j1"]);
    let more = w.sync(&first[0]).await;
    assert!(more.jobs.is_empty(), "past capacity: {more:?}");
    assert_eq!(count(&mut c, "q", proto::JobState::Active).await, 2);
    assert_eq!(count(&mut c, "q", proto::JobState::Pending).await, 3);

    w.ack(&first[0]).await;
    let got = w.receive(2).await;
    assert_eq!(got.acks.len(), 1, "{got:?}");
    assert_eq!(got.jobs.len(), 1, "{got:?}");
    assert_eq!(got.jobs[0].job_id, "j2");
    let more = w.sync(&first[1]).await;
    assert!(more.jobs.is_empty(), "one ack, one more job: {more:?}");
    assert_eq!(count(&mut c, "q", proto::JobState::Active).await, 2);
    assert_eq!(count(&mut c, "q", proto::JobState::Pending).await, 2);
    assert_eq!(count(&mut c, "q", proto::JobState::Completed).await, 1);
}

/// Pins: a capacity beyond what one claim call takes (100) is filled over several
/// calls, to exactly the capacity.
#[tokio::test]
async fn a_capacity_past_one_claim_call_is_filled_exactly() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let jobs = (0..200).map(|i| job("q", &format!("j{i}"))).collect();
    c.enqueue_batch(proto::EnqueueBatchRequest {
        namespace: "ns".into(),
        jobs,
    })
    .await
    .expect("batch");
    let mut w = open(&mut c, start(&["q"], 150)).await;
    let held = w.receive(150).await.jobs;
    assert_eq!(held.len(), 150);
    assert!(w.sync(&held[0]).await.jobs.is_empty(), "past capacity");
    assert_eq!(count(&mut c, "q", proto::JobState::Active).await, 150);
    assert_eq!(count(&mut c, "q", proto::JobState::Pending).await, 50);
}

/// Pins WorkStart.capacity 0 meaning 1 (as ClaimJob's max_jobs 0 does).
#[tokio::test]
async fn capacity_zero_means_one() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    enqueue_named(&mut c, "q", &["j0", "j1"]).await;
    let mut w = open(&mut c, start(&["q"], 0)).await;
    let held = w.job().await;
    assert!(w.sync(&held).await.jobs.is_empty());
    assert_eq!(count(&mut c, "q", proto::JobState::Pending).await, 1);
}

/// Pins: each ack on the stream is answered for its own job id, OK, and completes
/// the job.
#[tokio::test]
async fn acks_on_the_stream_are_answered_per_job_and_complete_it() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    enqueue_named(&mut c, "q", &["a", "b", "c"]).await;
    let mut w = open(&mut c, start(&["q"], 3)).await;
    let jobs = w.receive(3).await.jobs;
    assert_eq!(jobs.len(), 3);
    for j in &jobs {
        w.ack(j).await;
    }
    let acks = w.receive(3).await.acks;
    let mut answered: Vec<_> = acks
        .iter()
        .map(|a| {
            assert_eq!(code(a.code), Code::Ok, "{a:?}");
            a.job_id.as_str()
        })
        .collect();
    answered.sort();
    assert_eq!(answered, ["a", "b", "c"]);
    for id in ["a", "b", "c"] {
        let job = get_job(&mut c, id).await;
        assert_eq!(state(&job), proto::JobState::Completed, "{job:?}");
        assert_eq!(job.attempts, 1);
        assert_eq!(job.worker_id, "stream-worker", "the start's worker_id");
    }
}

/// Pins: a refused ack (a token that is not the job's, an unknown job) is answered
/// with AckJob's code for that item alone; the stream goes on, the job keeps its slot
/// and its lease, and the right ack then completes it and frees the slot.
#[tokio::test]
async fn a_refused_ack_is_answered_on_its_own_and_the_stream_goes_on() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    enqueue_named(&mut c, "q", &["j0", "j1"]).await;
    let mut w = open(&mut c, start(&["q"], 1)).await;
    let held = w.job().await;

    w.ack_lease(&held.job_id, "not-the-token").await;
    let wrong = w.receive(1).await;
    assert_eq!(wrong.acks.len(), 1, "{wrong:?}");
    assert_eq!(wrong.acks[0].job_id, "j0");
    assert_eq!(code(wrong.acks[0].code), Code::Aborted, "{wrong:?}");
    w.ack_lease("no-such-job", "token").await;
    let unknown = w.receive(1).await;
    assert_eq!(unknown.acks.len(), 1, "{unknown:?}");
    assert_eq!(unknown.acks[0].job_id, "no-such-job");
    assert_eq!(code(unknown.acks[0].code), Code::NotFound, "{unknown:?}");
    assert!(!unknown.acks[0].message.is_empty());

    // The worker still holds j0 under its lease: no second job for the refused ack.
    assert!(
        w.sync(&held).await.jobs.is_empty(),
        "a refused ack freed a slot"
    );
    assert_eq!(state(&get_job(&mut c, "j0").await), proto::JobState::Active);
    assert_eq!(count(&mut c, "q", proto::JobState::Pending).await, 1);

    w.ack(&held).await;
    let got = w.receive(2).await;
    assert_eq!(code(got.acks[0].code), Code::Ok, "{got:?}");
    assert_eq!(got.jobs[0].job_id, "j1");
    assert_eq!(
        state(&get_job(&mut c, "j0").await),
        proto::JobState::Completed
    );
}

/// Pins: the same ack sent twice frees one slot, not two: one is answered OK, the
/// other ABORTED, and one job comes in their place. (The extension sent first holds
/// the loop in a Redis call while both acks arrive, so they are taken together.)
#[tokio::test]
async fn an_ack_sent_twice_frees_one_slot() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    enqueue_named(&mut c, "q", &["j0", "j1", "j2"]).await;
    let mut w = open(&mut c, start(&["q"], 1)).await;
    let held = w.job().await;
    w.extend(&held.job_id, &held.lease_token, 600_000).await;
    w.ack(&held).await;
    w.ack(&held).await;
    let got = w.receive(4).await;
    assert_eq!(got.extends.len(), 1, "{got:?}");
    let mut codes: Vec<Code> = got.acks.iter().map(|a| code(a.code)).collect();
    codes.sort_by_key(|c| *c as i32);
    assert_eq!(codes, [Code::Ok, Code::Aborted], "{got:?}");
    assert_eq!(got.jobs.len(), 1, "{got:?}");
    let next = &got.jobs[0];
    assert!(w.sync(next).await.jobs.is_empty(), "past capacity");
    assert_eq!(count(&mut c, "q", proto::JobState::Active).await, 1);
    assert_eq!(count(&mut c, "q", proto::JobState::Pending).await, 1);
}

/// Pins: a job whose lease ran out while the stream held it, handed to the same
/// stream again, takes a second slot until the worker answers for the first lease
/// (the worker has both): the stream never sends more than its capacity.
#[tokio::test]
async fn a_job_handed_out_again_to_the_same_stream_takes_a_second_slot() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    enqueue_named(&mut c, "q", &["j0"]).await;
    let mut start = start(&["q"], 2);
    start.lease = Some(dur(2_000));
    let mut w = open(&mut c, start).await;
    let first = w.job().await;
    // Due when j0's lease runs out: the claim that takes j0 back finds j1 too.
    let mut later = job("q", "j1");
    later.job_id = "j1".into();
    later.when = Some(proto::enqueue_request::When::RunAt(ts(ms(
        &first.lease_deadline
    ))));
    enqueue(&mut c, later).await;

    let again = w.job().await;
    assert_eq!((again.job_id.as_str(), again.attempt), ("j0", 2));
    let more = w.sync(&again).await;
    assert!(more.jobs.is_empty(), "past capacity: {more:?}");
    assert_eq!(count(&mut c, "q", proto::JobState::Pending).await, 1);

    // Answering for the first lease frees its slot.
    w.ack(&first).await;
    let got = w.receive(2).await;
    assert_eq!(code(got.acks[0].code), Code::Aborted, "{got:?}");
    assert_eq!(got.jobs[0].job_id, "j1");
}

/// Pins: an ack the store refuses as a whole (here: the namespace's jobs in an older
/// layout, until Migrate) changes nothing and is answered with that error, and the job
/// stays held: it is still released at once when the stream then breaks.
#[tokio::test]
async fn an_ack_the_store_refuses_leaves_the_job_held() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;
    enqueue_named(&mut c, "q", &["j0"]).await;
    let mut w = open(&mut c, start(&["q"], 1)).await;
    let held = w.job().await;

    let meta = "dueq:{ns}:meta";
    let layout: String = query(&mut conn, cmd("HGET").arg(meta).arg("jobs")).await;
    let _: () = query(&mut conn, cmd("HSET").arg(meta).arg("jobs").arg("1")).await;
    w.ack(&held).await;
    let refused = w.receive(1).await;
    assert_eq!(refused.acks.len(), 1, "{refused:?}");
    assert_eq!(
        code(refused.acks[0].code),
        Code::FailedPrecondition,
        "{refused:?}"
    );
    let _: () = query(&mut conn, cmd("HSET").arg(meta).arg("jobs").arg(&layout)).await;
    assert_eq!(state(&get_job(&mut c, "j0").await), proto::JobState::Active);

    drop(w);
    let again = claim_job(&mut c, &["q"], LONG_POLL_MS, None)
        .await
        .expect("released at once");
    assert_eq!((again.job_id.as_str(), again.attempt), ("j0", 2));
}

/// Pins fail and extend over the stream: FailResult carries FailJob's answer (retry
/// or dead) and the job is in that state; ExtendResult carries the new deadline and
/// the job's lease moved to it; a stale token is answered ABORTED, item by item.
#[tokio::test]
async fn fail_and_extend_on_the_stream() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    for (name, max_attempts) in [("retry", 3), ("dead", 1), ("long", 3)] {
        let mut req = job("q", name);
        req.job_id = name.into();
        req.max_attempts = Some(max_attempts);
        enqueue(&mut c, req).await;
    }
    let mut start = start(&["q"], 3);
    start.lease = Some(dur(30_000));
    let mut w = open(&mut c, start).await;
    let jobs: HashMap<String, proto::ClaimedJob> = w
        .receive(3)
        .await
        .jobs
        .into_iter()
        .map(|j| (j.job_id.clone(), j))
        .collect();

    // Retried an hour later: not handed to this stream again within the test.
    w.fail(&jobs["retry"], "boom", Some(3_600_000)).await;
    let failed = w.receive(1).await.fails.pop().expect("a fail result");
    assert_eq!(
        (failed.job_id.as_str(), code(failed.code)),
        ("retry", Code::Ok)
    );
    let answer = failed.result.expect("FailJob's answer");
    assert_eq!(answer.state, proto::JobState::Delayed as i32, "{answer:?}");
    let retry = get_job(&mut c, "retry").await;
    assert_eq!(state(&retry), proto::JobState::Delayed);
    assert_eq!(ms(&retry.run_at), ms(&answer.run_at));
    assert_eq!(retry.errors.len(), 1);
    assert_eq!(retry.errors[0].message, "boom");

    w.fail(&jobs["dead"], "fatal", None).await;
    let failed = w.receive(1).await.fails.pop().expect("a fail result");
    assert_eq!(
        (failed.job_id.as_str(), code(failed.code)),
        ("dead", Code::Ok)
    );
    let answer = failed.result.expect("FailJob's answer");
    assert_eq!(answer.state, proto::JobState::Dead as i32, "{answer:?}");
    assert_eq!(state(&get_job(&mut c, "dead").await), proto::JobState::Dead);
    // Failing it again: its lease is gone.
    w.fail(&jobs["dead"], "again", None).await;
    let again = w.receive(1).await.fails.pop().expect("a fail result");
    assert_eq!(code(again.code), Code::Aborted, "{again:?}");
    assert!(again.result.is_none());

    let long = &jobs["long"];
    w.extend(&long.job_id, &long.lease_token, 600_000).await;
    let extended = w.receive(1).await.extends.pop().expect("an extend result");
    assert_eq!(
        (extended.job_id.as_str(), code(extended.code)),
        ("long", Code::Ok)
    );
    let until = ms(&extended
        .result
        .expect("ExtendLease's answer")
        .lease_deadline);
    assert!(
        until >= ms(&long.lease_deadline) + 500_000,
        "moved from {} to {until}",
        ms(&long.lease_deadline)
    );
    assert_eq!(ms(&get_job(&mut c, "long").await.lease_deadline), until);
    w.extend(&long.job_id, "not-the-token", 600_000).await;
    let refused = w.receive(1).await.extends.pop().expect("an extend result");
    assert_eq!(code(refused.code), Code::Aborted, "{refused:?}");
    assert!(refused.result.is_none());
    assert_eq!(ms(&get_job(&mut c, "long").await.lease_deadline), until);
}

/// Pins: when the worker drops its stream, the jobs it held are claimable at once
/// (their ten-minute leases are not waited out), the attempt counted with the error
/// "worker stream closed"; the old tokens are refused ABORTED.
#[tokio::test]
async fn a_dropped_stream_releases_its_jobs_at_once_attempt_counted() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    enqueue_named(&mut c, "q", &["j0", "j1"]).await;
    let mut w = open(&mut c, start(&["q"], 2)).await;
    let held = w.receive(2).await.jobs;
    assert_eq!(held.len(), 2);
    // A refused ack (not the job's token) leaves the job held, released with the rest.
    w.ack_lease(&held[0].job_id, "not-the-token").await;
    let refused = w.receive(1).await;
    assert_eq!(code(refused.acks[0].code), Code::Aborted, "{refused:?}");
    drop(w);

    let mut again = Vec::new();
    while again.len() < 2 {
        let mut req = claim_req(&["q"], LONG_POLL_MS, Some(60_000));
        req.max_jobs = 2;
        let jobs = c.claim_job(req).await.expect("claim").into_inner().jobs;
        assert!(!jobs.is_empty(), "not released within the wait");
        again.extend(jobs);
    }
    again.sort_by(|a, b| a.job_id.cmp(&b.job_id));
    for (old, new) in held.iter().zip(&again) {
        assert_eq!(old.job_id, new.job_id);
        assert_eq!(new.attempt, 2, "the dropped stream's attempt counts");
        let status = ack_job(&mut c, &old.job_id, &old.lease_token)
            .await
            .expect_err("the old token is refused");
        assert_eq!(status.code(), Code::Aborted, "{status:?}");
        let job = get_job(&mut c, &old.job_id).await;
        assert_eq!(job.errors.len(), 1, "{job:?}");
        assert_eq!(job.errors[0].attempt, 1);
        assert_eq!(job.errors[0].message, "worker stream closed");
        ack_job(&mut c, &new.job_id, &new.lease_token)
            .await
            .expect("the new lease acks");
    }
}

/// Pins: a worker that closes its side (and keeps reading) sees the stream end OK,
/// and the jobs it held are claimable at once, attempt counted.
#[tokio::test]
async fn a_stream_closed_by_its_worker_ends_ok_and_releases_its_jobs() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    enqueue_named(&mut c, "q", &["j0"]).await;
    let mut w = open(&mut c, start(&["q"], 1)).await;
    let held = w.job().await;
    w.tx = mpsc::channel(1).0;
    let end = w.message().await.expect("ends OK");
    assert!(end.is_none(), "{end:?}");
    let again = claim_job(&mut c, &["q"], LONG_POLL_MS, None)
        .await
        .expect("released at once");
    assert_eq!((again.job_id.as_str(), again.attempt), ("j0", 2));
    assert_ne!(again.lease_token, held.lease_token);
}

/// Pins: a job at max_attempts whose stream is dropped goes dead (a job that kills
/// its worker cannot loop).
#[tokio::test]
async fn a_job_at_max_attempts_goes_dead_when_its_stream_is_dropped() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut req = job("q", "poison");
    req.job_id = "poison".into();
    req.max_attempts = Some(1);
    enqueue(&mut c, req).await;
    let mut w = open(&mut c, start(&["q"], 1)).await;
    assert_eq!(w.job().await.job_id, "poison");
    drop(w);

    let patience = Patience::new("the dropped job to go dead");
    let dead = loop {
        let job = get_job(&mut c, "poison").await;
        if state(&job) != proto::JobState::Active {
            break job;
        }
        patience.wait().await;
    };
    assert_eq!(state(&dead), proto::JobState::Dead, "{dead:?}");
    assert_eq!(dead.attempts, 1);
    assert_eq!(dead.errors.len(), 1);
    assert_eq!(dead.errors[0].message, "worker stream closed");
    assert!(claim_job(&mut c, &["q"], 0, None).await.is_none());
}

/// Pins the opening: no start, a start that is not first, or a bad start is refused
/// INVALID_ARGUMENT naming the field, before anything is handed out; a malformed
/// message later ends the stream the same way, and its jobs are released.
#[tokio::test]
async fn a_missing_or_bad_start_is_refused_naming_the_field() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    enqueue_named(&mut c, "q", &["j0"]).await;

    let ack = In::Ack(lease("j0", "token"));
    let status = open_with(&mut c, vec![ack]).await.err().expect("refused");
    assert_invalid(&status, "start");
    let status = open_with(&mut c, vec![]).await.err().expect("refused");
    assert_invalid(&status, "start");
    for (field, bad) in [
        ("start.capacity", {
            let mut s = start(&["q"], 1001);
            s.capacity = 1001;
            s
        }),
        ("start.queues", start(&[], 1)),
        ("start.queues[0]", start(&[""], 1)),
        ("start.lease", {
            let mut s = start(&["q"], 1);
            s.lease = Some(dur(0));
            s
        }),
        ("start.namespace", {
            let mut s = start(&["q"], 1);
            s.namespace = String::new();
            s
        }),
    ] {
        let status = open_with(&mut c, vec![In::Start(bad)])
            .await
            .err()
            .unwrap_or_else(|| panic!("{field}: accepted"));
        assert_invalid(&status, field);
    }
    assert_eq!(count(&mut c, "q", proto::JobState::Pending).await, 1);

    // A second start ends the stream, naming it; the held job is released at once.
    let mut w = open(&mut c, start(&["q"], 1)).await;
    let held = w.job().await;
    w.send(In::Start(start(&["q"], 1))).await;
    let end = match w.message().await {
        Ok(Some(other)) => panic!("after a second start: {other:?}"),
        Ok(None) => panic!("ended OK after a second start"),
        Err(status) => status,
    };
    assert_invalid(&end, "start");
    let again = claim_job(&mut c, &["q"], LONG_POLL_MS, None)
        .await
        .expect("released");
    assert_eq!((again.job_id.as_str(), again.attempt), ("j0", 2));
    assert_ne!(again.lease_token, held.lease_token);

    // A malformed ack ends it, naming the field.
    let mut w = open(&mut c, start(&["q2"], 1)).await;
    w.ack_lease("", "token").await;
    let end = w.message().await.expect_err("ended");
    assert_invalid(&end, "ack.job_id");
}

/// Pins: a stream parked with nothing to do is woken by an Enqueue on its instance
/// (the re-check never runs here) and receives the job; and after an ack frees a slot
/// of a full stream, a job enqueued while it was full is handed out.
#[tokio::test]
async fn a_waiting_stream_is_woken_by_an_enqueue() {
    let redis = Redis::start().await;
    let service = Service::start_with(no_recheck(config(&redis.url()))).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;

    let before = script_calls(&mut conn).await;
    let mut w = open(&mut c, start(&["q"], 1)).await;
    wait_parked(&mut conn, before, 1).await;
    enqueue_named(&mut c, "q", &["first"]).await;
    let first = w.job().await;
    assert_eq!(first.job_id, "first");

    // Full now: what is enqueued waits for the ack.
    enqueue_named(&mut c, "q", &["second"]).await;
    assert!(w.sync(&first).await.jobs.is_empty());
    w.ack(&first).await;
    let got = w.receive(2).await;
    assert_eq!(code(got.acks[0].code), Code::Ok, "{got:?}");
    assert_eq!(got.jobs[0].job_id, "second");
}

/// Pins: a stream that stays open without sending its first message is answered
/// DEADLINE_EXCEEDED naming --body-timeout (issue 29: it holds no long-poll slot
/// meanwhile, and is not kept open for nothing).
#[tokio::test]
async fn a_stream_that_never_sends_its_start_is_refused() {
    let redis = Redis::start().await;
    let mut config = config(&redis.url());
    config.body_timeout = std::time::Duration::from_millis(500);
    let service = Service::start_with(config).await;
    let mut c = service.client().await;
    let (_open, silent) = mpsc::channel::<proto::WorkRequest>(1);
    let status = within_patience("the refusal", c.work(ReceiverStream::new(silent)))
        .await
        .expect_err("refused");
    assert_eq!(status.code(), Code::DeadlineExceeded, "{status:?}");
    assert!(status.message().contains("--body-timeout"), "{status:?}");
}

/// Pins: the job that refills an acked slot comes without a wake-up: nothing woke the
/// full stream when it was enqueued, and another waiter of the namespace, parked all
/// along, keeps the stream's own parking from making the timer peek (the re-check
/// never runs here).
#[tokio::test]
async fn an_ack_refills_its_slot_while_other_waiters_are_parked() {
    let redis = Redis::start().await;
    let service = Service::start_with(no_recheck(config(&redis.url()))).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;

    // Parked on another queue of the namespace for the whole test.
    let before = script_calls(&mut conn).await;
    let _other = open(&mut c, start(&["other"], 1)).await;
    wait_parked(&mut conn, before, 1).await;
    enqueue_named(&mut c, "q", &["j0"]).await;
    let mut w = open(&mut c, start(&["q"], 1)).await;
    let first = w.job().await;
    // Enqueued while the stream is full: no waiter of its queue to wake.
    enqueue_named(&mut c, "q", &["j1"]).await;
    assert!(w.sync(&first).await.jobs.is_empty());

    w.ack(&first).await;
    let got = w.receive(2).await;
    assert_eq!(code(got.acks[0].code), Code::Ok, "{got:?}");
    assert_eq!(got.jobs[0].job_id, "j1");
}

/// Pins: a delayed job is handed to a parked stream at its time (the namespace timer
/// is armed for it; the re-check never runs here).
#[tokio::test]
async fn a_waiting_stream_gets_a_delayed_job_at_its_time() {
    let redis = Redis::start().await;
    let service = Service::start_with(no_recheck(config(&redis.url()))).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;

    let before = script_calls(&mut conn).await;
    let mut w = open(&mut c, start(&["q"], 1)).await;
    wait_parked(&mut conn, before, 1).await;
    let mut delayed = job("q", "later");
    delayed.job_id = "later".into();
    delayed.when = Some(proto::enqueue_request::When::Delay(dur(SOON_MS as u64)));
    enqueue(&mut c, delayed).await;
    let run_at = ms(&get_job(&mut c, "later").await.run_at);
    let got = w.job().await;
    assert_eq!(got.job_id, "later");
    assert!(redis_now(&mut conn).await >= run_at, "not before its time");
}

/// Pins the order a stream hands jobs out in: higher priority first, then enqueue
/// order, across its queues.
#[tokio::test]
async fn a_stream_hands_out_by_priority_then_fifo_across_queues() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    for (queue, name, priority) in [
        ("a", "low-1", 0),
        ("b", "high-1", 10),
        ("a", "low-2", 0),
        ("a", "high-2", 10),
        ("b", "neg", -5),
        ("b", "low-3", 0),
    ] {
        let mut req = job(queue, name);
        req.priority = priority;
        enqueue(&mut c, req).await;
    }
    let mut w = open(&mut c, start(&["a", "b"], 1)).await;
    let mut order = Vec::new();
    let mut held = w.job().await;
    loop {
        order.push(held.name.clone());
        if order.len() == 6 {
            break;
        }
        w.ack(&held).await;
        let got = w.receive(2).await;
        assert_eq!(code(got.acks[0].code), Code::Ok, "{got:?}");
        held = got.jobs.into_iter().next().expect("the next job");
    }
    assert_eq!(
        order,
        ["high-1", "high-2", "low-1", "low-2", "low-3", "neg"],
        "priority desc, then enqueue order"
    );
}

/// Pins: a job enqueued through another replica reaches a stream parked on this one
/// (through the other replica's announcement: no re-check runs).
#[tokio::test]
async fn a_waiting_stream_gets_a_job_enqueued_through_another_replica() {
    let redis = Redis::start().await;
    let mut ca = config(&redis.url());
    ca.recheck_interval = Duration::from_secs(3600);
    let a = Service::start_with(ca).await;
    let b = Service::start(&redis.url()).await;
    let mut on_a = a.client().await;
    let mut on_b = b.client().await;
    let mut conn = redis.conn().await;

    let before = script_calls(&mut conn).await;
    let mut w = open(&mut on_a, start(&["x"], 4)).await;
    wait_parked(&mut conn, before, 1).await;
    enqueue_named(&mut on_b, "x", &["elsewhere"]).await;
    assert_eq!(w.job().await.job_id, "elsewhere");
}

/// Pins: shutting the service down ends a stream that holds jobs with UNAVAILABLE
/// (rather than cutting it, or waiting out the grace), and leaves its leases alone:
/// the same tokens ack through another replica.
#[tokio::test]
async fn shutdown_ends_the_stream_unavailable_and_keeps_its_leases() {
    let redis = Redis::start().await;
    let mut config = config(&redis.url());
    // Longer than PATIENCE: a stop() that waited on the stream would not end in time.
    config.shutdown_grace = Duration::from_secs(120);
    let doomed = Service::start_with(config).await;
    let other = Service::start(&redis.url()).await;
    let mut c = doomed.client().await;
    let mut on_other = other.client().await;
    enqueue_named(&mut c, "q", &["j0", "j1"]).await;
    let mut w = open(&mut c, start(&["q"], 4)).await;
    let held = w.receive(2).await.jobs;
    assert_eq!(held.len(), 2);
    // Parked: both jobs are held and nothing else is claimable.
    assert!(w.sync(&held[0]).await.jobs.is_empty());

    let stopping = tokio::spawn(doomed.stop());
    let end = loop {
        match w.message().await {
            Ok(Some(Out::Extend(_))) => continue,
            Ok(other) => panic!("expected the stream to end UNAVAILABLE, got {other:?}"),
            Err(status) => break status,
        }
    };
    assert_eq!(end.code(), Code::Unavailable, "{end:?}");
    within_patience("the service to stop", stopping)
        .await
        .expect("stopped");

    for j in &held {
        let job = get_job(&mut on_other, &j.job_id).await;
        assert_eq!(state(&job), proto::JobState::Active, "{job:?}");
        assert_eq!(job.attempts, 1);
    }
    ack_job(&mut on_other, &held[0].job_id, &held[0].lease_token)
        .await
        .expect("AckJob with the shut-down stream's token");
    let results = on_other
        .ack_jobs(proto::AckJobsRequest {
            namespace: "ns".into(),
            acks: vec![lease(&held[1].job_id, &held[1].lease_token)],
        })
        .await
        .expect("AckJobs")
        .into_inner()
        .results;
    assert_eq!(code(results[0].code), Code::Ok, "{results:?}");
    assert_eq!(
        count(&mut on_other, "q", proto::JobState::Completed).await,
        2
    );
}

/// Pins ClaimJobRequest.acks: applied before the claim, answered in request order with
/// AckJob's code each (a refused one fails only itself), the acked jobs completed,
/// and the claim still hands out new jobs.
#[tokio::test]
async fn a_claim_carries_the_previous_jobs_acks() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    enqueue_named(&mut c, "q", &["j0", "j1", "j2", "j3"]).await;
    let mut req = claim_req(&["q"], 0, Some(60_000));
    req.max_jobs = 2;
    let first = c.claim_job(req.clone()).await.expect("claim").into_inner();
    assert_eq!(first.jobs.len(), 2);
    assert!(first.acks.is_empty());

    req.acks = vec![
        lease(&first.jobs[1].job_id, &first.jobs[1].lease_token),
        lease("no-such-job", "token"),
        lease(&first.jobs[0].job_id, "not-the-token"),
        lease(&first.jobs[0].job_id, &first.jobs[0].lease_token),
        lease("", "token"),
    ];
    let second = c.claim_job(req).await.expect("claim").into_inner();
    let answered: Vec<(&str, Code)> = second
        .acks
        .iter()
        .map(|a| (a.job_id.as_str(), code(a.code)))
        .collect();
    assert_eq!(
        answered,
        [
            ("j1", Code::Ok),
            ("no-such-job", Code::NotFound),
            ("j0", Code::Aborted),
            ("j0", Code::Ok),
            ("", Code::InvalidArgument),
        ]
    );
    assert!(
        second.acks[4].message.contains("acks[4].job_id"),
        "{second:?}"
    );
    let ids: Vec<&str> = second.jobs.iter().map(|j| j.job_id.as_str()).collect();
    assert_eq!(ids, ["j2", "j3"]);
    for id in ["j0", "j1"] {
        assert_eq!(
            state(&get_job(&mut c, id).await),
            proto::JobState::Completed
        );
    }

    // More than 100 acks: refused whole, naming the field, nothing acked.
    let mut req = claim_req(&["q"], 0, None);
    req.acks = (0..101)
        .map(|_| lease(&second.jobs[0].job_id, &second.jobs[0].lease_token))
        .collect();
    let status = c.claim_job(req).await.expect_err("refused");
    assert_invalid(&status, "acks");
    assert_eq!(state(&get_job(&mut c, "j2").await), proto::JobState::Active);
}

/// Pins: a claim's acks are applied before it waits (the jobs are completed while the
/// long-poll is parked), and their results come back with the job it then gets.
#[tokio::test]
async fn a_waiting_claim_applies_its_acks_before_the_wait() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;
    enqueue_named(&mut c, "q", &["done"]).await;
    let done = claim_job(&mut c, &["q"], 0, Some(600_000))
        .await
        .expect("claimable");

    let mut req = claim_req(&["q"], LONG_POLL_MS, None);
    req.acks = vec![lease(&done.job_id, &done.lease_token)];
    let mut waiter = c.clone();
    let before = script_calls(&mut conn).await;
    let poll = tokio::spawn(async move { waiter.claim_job(req).await });
    wait_parked(&mut conn, before, 1).await;
    assert_eq!(
        state(&get_job(&mut c, "done").await),
        proto::JobState::Completed,
        "not acked before the wait"
    );
    enqueue_named(&mut c, "q", &["next"]).await;
    let reply = poll.await.expect("task").expect("claim").into_inner();
    assert_eq!(reply.jobs.len(), 1);
    assert_eq!(reply.jobs[0].job_id, "next");
    assert_eq!(reply.acks.len(), 1);
    assert_eq!(
        (reply.acks[0].job_id.as_str(), code(reply.acks[0].code)),
        ("done", Code::Ok)
    );
}

/// Pins: at maxmemory, a claim that carries acks is refused RESOURCE_EXHAUSTED but its
/// acks are applied (sending them again is ABORTED); a stream's acks are answered OK
/// and, once Redis has room again, the stream claims again.
#[tokio::test]
async fn acks_are_applied_when_a_full_redis_refuses_the_claim() {
    let redis = Redis::start().await;
    let service = Service::start_with(config_without_background_work(&redis.url())).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;
    enqueue_named(&mut c, "q", &["unary", "streamed", "waiting"]).await;
    let unary = claim_job(&mut c, &["q"], 0, Some(600_000))
        .await
        .expect("claimable");
    assert_eq!(unary.job_id, "unary");
    let mut w = open(&mut c, start(&["q"], 1)).await;
    let streamed = w.job().await;
    assert_eq!(streamed.job_id, "streamed");
    assert!(w.sync(&streamed).await.jobs.is_empty());

    fill_redis(&mut conn).await;

    let mut req = claim_req(&["q"], 0, None);
    req.acks = vec![lease(&unary.job_id, &unary.lease_token)];
    let status = c.claim_job(req).await.expect_err("refused at maxmemory");
    assert_eq!(status.code(), Code::ResourceExhausted, "{status:?}");
    assert_eq!(
        state(&get_job(&mut c, "unary").await),
        proto::JobState::Completed,
        "the refused claim's ack was applied"
    );
    let again = ack_job(&mut c, &unary.job_id, &unary.lease_token)
        .await
        .expect_err("acked already");
    assert_eq!(again.code(), Code::Aborted, "{again:?}");

    w.ack(&streamed).await;
    let acked = loop {
        let got = w.receive(1).await;
        assert!(
            got.jobs.is_empty(),
            "a job handed out at maxmemory: {got:?}"
        );
        if let Some(ack) = got.acks.into_iter().next() {
            break ack;
        }
    };
    assert_eq!(code(acked.code), Code::Ok, "{acked:?}");
    assert_eq!(
        state(&get_job(&mut c, "streamed").await),
        proto::JobState::Completed
    );
    let waiting = get_job(&mut c, "waiting").await;
    assert_eq!(state(&waiting), proto::JobState::Pending, "{waiting:?}");
    assert_eq!(waiting.attempts, 0);

    // Room again: the stream claims the waiting job.
    let _: () = query(&mut conn, cmd("CONFIG").arg("SET").arg("maxmemory").arg(0)).await;
    assert_eq!(w.job().await.job_id, "waiting");
}

/// Pins AckJobs: one result per item in request order, each AckJob's code (OK, a
/// token that is not the job's, an unknown job, a malformed item naming its field); more than 100 leases, or none, is
/// refused INVALID_ARGUMENT naming `acks`, and nothing is acked.
#[tokio::test]
async fn ack_jobs_answers_each_lease_in_order() {
    let redis = Redis::start().await;
    let service = Service::start_with(config_without_background_work(&redis.url())).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;
    enqueue_named(&mut c, "q", &["j0", "j1", "j2"]).await;
    let mut req = claim_req(&["q"], 0, Some(600_000));
    req.max_jobs = 3;
    let jobs = c.claim_job(req).await.expect("claim").into_inner().jobs;
    assert_eq!(jobs.len(), 3);

    let results = c
        .ack_jobs(proto::AckJobsRequest {
            namespace: "ns".into(),
            acks: vec![
                lease(&jobs[0].job_id, &jobs[0].lease_token),
                lease(&jobs[1].job_id, "not-the-token"),
                lease("no-such-job", "token"),
                lease("", "token"),
            ],
        })
        .await
        .expect("AckJobs")
        .into_inner()
        .results;
    let answered: Vec<(&str, Code)> = results
        .iter()
        .map(|r| (r.job_id.as_str(), code(r.code)))
        .collect();
    assert_eq!(
        answered,
        [
            ("j0", Code::Ok),
            ("j1", Code::Aborted),
            ("no-such-job", Code::NotFound),
            ("", Code::InvalidArgument),
        ]
    );
    assert!(results[3].message.contains("acks[3].job_id"), "{results:?}");
    assert_eq!(
        state(&get_job(&mut c, "j0").await),
        proto::JobState::Completed
    );
    assert_eq!(state(&get_job(&mut c, "j1").await), proto::JobState::Active);

    let before = snapshot(&mut conn).await;
    for acks in [
        (0..101)
            .map(|_| lease(&jobs[2].job_id, &jobs[2].lease_token))
            .collect(),
        vec![],
    ] {
        let status = c
            .ack_jobs(proto::AckJobsRequest {
                namespace: "ns".into(),
                acks,
            })
            .await
            .expect_err("refused");
        assert_invalid(&status, "acks");
    }
    assert_eq!(snapshot(&mut conn).await, before, "a refused AckJobs wrote");
    assert_eq!(state(&get_job(&mut c, "j2").await), proto::JobState::Active);
}

/// Pins the crash test's guarantees over the Work stream: two instances, 64 workers
/// on streams of random capacity (1-4) that randomly ack, fail, extend then ack, or drop their
/// stream (closing their side and reading to its end, or cut off at once with jobs
/// in flight); short leases that run out under load. Every job ends completed or
/// dead exactly once, and the attempts add up.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_job_ends_completed_or_dead_exactly_once_over_streams() {
    const JOBS: usize = 3_000;
    const WORKERS: usize = 64;
    let redis = Redis::start().await;
    let mut conn = redis.conn().await;
    let a = Service::start(&redis.url()).await;
    let b = Service::start(&redis.url()).await;
    let clients = [a.client().await, b.client().await];
    crash::enqueue_jobs(&mut clients[0].clone(), JOBS).await;

    let seen = Arc::new(Mutex::new(Seen::default()));
    let stop = CancellationToken::new();
    let workers: Vec<_> = (0..WORKERS)
        .map(|w| {
            let c = clients[w % 2].clone();
            tokio::spawn(stream_worker(c, w, seen.clone(), stop.clone()))
        })
        .collect();
    crash::wait_finished(&mut conn, JOBS).await;
    stop.cancel();
    let mut unseen = 0;
    for w in workers {
        unseen += within_patience("a worker to stop", w)
            .await
            .expect("worker");
    }
    let seen = std::mem::take(&mut *lock(&seen));
    crash::check_outcome(&mut clients[1].clone(), seen, JOBS, unseen).await;
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// One crash-test worker: streams until `stop`; returns at most how many jobs were
/// handed out that it never read (its streams cut off with jobs in flight).
async fn stream_worker(
    mut c: Client,
    w: usize,
    seen: Arc<Mutex<Seen>>,
    stop: CancellationToken,
) -> u64 {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ ((w as u64 + 1) * 0x1234_5679));
    let mut unseen = 0;
    while !stop.is_cancelled() {
        let capacity = 1 + (rng.next() % 4) as u32;
        let mut start = start(&[crash::QUEUE], capacity);
        start.worker_id = format!("w{w}");
        start.lease = Some(dur(300));
        let mut s = open(&mut c, start).await;
        let mut local = VecDeque::new();
        loop {
            let job = match local.pop_front() {
                Some(job) => job,
                None => {
                    let message = tokio::select! {
                        message = s.next() => message,
                        _ = stop.cancelled() => return unseen + u64::from(capacity),
                    };
                    match message {
                        Out::Job(job) => {
                            lock(&seen).claims.push((job.job_id.clone(), job.attempt));
                            job
                        }
                        other => panic!("w{w}: unasked for: {other:?}"),
                    }
                }
            };
            match rng.next() % 100 {
                0..=64 => {
                    s.ack(&job).await;
                    let result = s.answer(&job, &seen, &mut local).await;
                    match code(about(&result).1) {
                        Code::Ok => lock(&seen).acked.push(job.job_id),
                        Code::Aborted => {}
                        other => panic!("w{w} ack: {other:?} {result:?}"),
                    }
                }
                65..=82 => {
                    s.fail(&job, "random", None).await;
                    match s.answer(&job, &seen, &mut local).await {
                        Out::Fail(f) if f.code == 0 => {
                            let answer = f.result.expect("FailJob's answer");
                            if answer.state == proto::JobState::Dead as i32 {
                                lock(&seen).failed_dead.push(job.job_id);
                            }
                        }
                        Out::Fail(f) if code(f.code) == Code::Aborted => {}
                        other => panic!("w{w} fail: {other:?}"),
                    }
                }
                83..=92 => {
                    // The worker goes away holding its jobs.
                    if rng.next().is_multiple_of(2) {
                        // Cut off: jobs may be in flight, never read.
                        unseen += u64::from(capacity);
                        drop(s);
                    } else {
                        // Closes its side, and reads what was sent until the end.
                        s.tx = mpsc::channel(1).0;
                        loop {
                            match s.message().await {
                                Ok(Some(Out::Job(job))) => {
                                    lock(&seen).claims.push((job.job_id, job.attempt))
                                }
                                Ok(Some(other)) => panic!("w{w}: unasked for: {other:?}"),
                                Ok(None) => break,
                                Err(status) => panic!("w{w}: closing: {status:?}"),
                            }
                        }
                    }
                    break;
                }
                _ => {
                    // Extend past the first deadline, then ack.
                    crash::work_for(150).await;
                    s.extend(&job.job_id, &job.lease_token, 400).await;
                    let extended = s.answer(&job, &seen, &mut local).await;
                    match code(about(&extended).1) {
                        Code::Ok => {}
                        Code::Aborted => continue,
                        other => panic!("w{w} extend: {other:?} {extended:?}"),
                    }
                    crash::work_for(200).await;
                    s.ack(&job).await;
                    let result = s.answer(&job, &seen, &mut local).await;
                    match code(about(&result).1) {
                        Code::Ok => lock(&seen).acked.push(job.job_id),
                        Code::Aborted => {}
                        other => panic!("w{w} ack after extend: {other:?} {result:?}"),
                    }
                }
            }
        }
    }
    unseen
}

impl Work {
    /// The answer about `job` (an ack, fail or extend result); the jobs that arrive
    /// before it are recorded and kept for later.
    async fn answer(
        &mut self,
        job: &proto::ClaimedJob,
        seen: &Mutex<Seen>,
        local: &mut VecDeque<proto::ClaimedJob>,
    ) -> Out {
        loop {
            match self.next().await {
                Out::Job(next) => {
                    lock(seen).claims.push((next.job_id.clone(), next.attempt));
                    local.push_back(next);
                }
                answer if about(&answer).0 == job.job_id => return answer,
                other => panic!("an answer about {}: {other:?}", job.job_id),
            }
        }
    }
}

/// The job id and code of a message (a job: its id, 0).
fn about(out: &Out) -> (&str, i32) {
    match out {
        Out::Job(j) => (&j.job_id, 0),
        Out::Ack(a) => (&a.job_id, a.code),
        Out::Fail(f) => (&f.job_id, f.code),
        Out::Extend(e) => (&e.job_id, e.code),
        Out::Cancel(c) => (&c.job_id, 0),
    }
}

/// Script calls Redis holds back during a `CLIENT PAUSE ... WRITE`: a client blocked
/// on one, plus one more when further commands wait in its query buffer behind it.
/// (The service's other writes while paused are plain commands, not scripts.)
async fn calls_held(conn: &mut redis::aio::MultiplexedConnection) -> usize {
    let list: String = cmd("CLIENT")
        .arg("LIST")
        .query_async(conn)
        .await
        .expect("CLIENT LIST");
    list.lines()
        .filter(|line| {
            let mut fields = line.split(' ');
            let blocked = fields
                .clone()
                .any(|f| f.starts_with("flags=") && f.contains('b'));
            blocked && fields.any(|f| f == "cmd=fcall")
        })
        .map(|line| {
            let queued = line
                .split(' ')
                .find_map(|f| f.strip_prefix("qbuf="))
                .is_some_and(|q| q != "0");
            1 + usize::from(queued)
        })
        .sum()
}

/// Pins the two calls in flight: while one claim call is held in Redis, an ack that
/// arrives goes out at once in a second call (it does not wait for the first), and
/// the stream still never holds more than its capacity. Redis holds the calls with a
/// write pause, so the overlap is seen in Redis rather than timed.
#[tokio::test]
async fn an_ack_goes_out_in_a_second_call_while_the_first_is_held() {
    let redis = Redis::start().await;
    // No background work or re-check: the only scripts held are the stream's.
    let service =
        Service::start_with(no_recheck(config_without_background_work(&redis.url()))).await;
    let mut c = service.client().await;
    let mut conn = redis.conn().await;
    enqueue_named(&mut c, "q", &["j0", "j1", "j2", "j3", "j4", "j5"]).await;
    let mut w = open(&mut c, start(&["q"], 2)).await;
    let first = [w.job().await, w.job().await];

    let _: () = cmd("CLIENT")
        .arg("PAUSE")
        .arg(120_000)
        .arg("WRITE")
        .query_async(&mut conn)
        .await
        .expect("CLIENT PAUSE");
    for (held, ack) in first.iter().enumerate() {
        w.ack(ack).await;
        let patience = Patience::new(format!("{} claim calls held in Redis", held + 1));
        while calls_held(&mut conn).await < held + 1 {
            patience.wait().await;
        }
    }
    let _: () = cmd("CLIENT")
        .arg("UNPAUSE")
        .query_async(&mut conn)
        .await
        .expect("CLIENT UNPAUSE");

    let got = w.receive(4).await;
    let codes: Vec<Code> = got.acks.iter().map(|a| code(a.code)).collect();
    assert_eq!(codes, [Code::Ok, Code::Ok], "{got:?}");
    let ids: Vec<&str> = got.jobs.iter().map(|j| j.job_id.as_str()).collect();
    assert_eq!(ids, ["j2", "j3"], "{got:?}");
    assert!(w.sync(&got.jobs[0]).await.jobs.is_empty(), "past capacity");
    assert_eq!(count(&mut c, "q", proto::JobState::Completed).await, 2);
    assert_eq!(count(&mut c, "q", proto::JobState::Active).await, 2);
    assert_eq!(count(&mut c, "q", proto::JobState::Pending).await, 2);
}
