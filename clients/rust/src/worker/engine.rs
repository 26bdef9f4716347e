//! The worker's loop: one task that reads the Work stream, polls the handlers
//! (no task per job), extends leases from one timer, and answers for every job it
//! was handed exactly once, across stream breaks and the drain.
//!
//! The per-job fast path is what the service's bench does: one `job` message in,
//! one `ack` message out on the same stream; nothing else for a job that finishes
//! within half its lease.

use std::{
    collections::{HashMap, VecDeque},
    future::Future,
    panic::AssertUnwindSafe,
    time::Duration,
};

use futures_util::{future::BoxFuture, stream::FuturesUnordered, FutureExt, StreamExt};
use tokio::{
    sync::mpsc,
    time::{Instant, MissedTickBehavior},
};
use tokio_stream::wrappers::UnboundedReceiverStream;
use tokio_util::sync::CancellationToken;
use tonic::{Code, Status, Streaming};

use super::{ActiveJob, HandlerError, Output, Signals, Worker};
use crate::{
    error::{Error, ErrorKind, Result},
    proto::{self, work_request::Request as In, work_response::Response as Out},
    reconnect::Backoff,
    time::duration,
};

/// The largest result the service keeps (JobLease.result): a larger one would end
/// the stream, so the job is failed instead, saying why.
const MAX_RESULT: usize = 64 * 1024;
/// The longest error text the service records (FailJobRequest.error).
const MAX_ERROR: usize = 4096;
/// A refused-for-now answer (UNAVAILABLE) is sent again after this long.
const RESEND_AFTER: Duration = Duration::from_millis(250);

/// What a handler's [`ActiveJob`] tells the loop.
pub(crate) enum Event {
    Progress {
        job_id: String,
        token: String,
        progress: proto::JobProgress,
    },
}

/// A handler's end: the job id, its lease token, and what it returned.
type Finished = (String, String, std::result::Result<Output, HandlerError>);

/// Where a job the worker holds is.
enum Phase {
    /// Handed over, waiting for a free handler slot.
    Waiting,
    /// Its handler runs.
    Running,
    /// Its ack or fail was sent on a stream (or waits for one) and is not answered
    /// yet; sent again on the next stream if this one breaks.
    Answering {
        request: In,
        resend_at: Option<Instant>,
    },
    /// Its ack or fail goes by a unary call (while draining).
    Unary,
}

struct Held {
    token: String,
    cancel: CancellationToken,
    extend_at: Instant,
    phase: Phase,
    /// Extensions sent and not answered: progress waits while one is in flight.
    extending: u32,
    /// Progress reported while an extension was in flight: sent with the next one,
    /// the latest value of each field winning.
    progress: Option<proto::JobProgress>,
}

/// A unary call of the loop: an ack, fail or extension sent outside a stream.
enum Call {
    Ack(proto::AckJobRequest),
    Fail(proto::FailJobRequest),
    Extend(proto::ExtendLeaseRequest),
}

type CallDone = (Call, Result<bool>);

struct Session {
    tx: mpsc::UnboundedSender<proto::WorkRequest>,
    replies: Streaming<proto::WorkResponse>,
    answered: bool,
}

/// What woke the loop.
enum Wake {
    Reply(std::result::Result<Option<proto::WorkResponse>, Status>),
    Opened(std::result::Result<Session, Status>),
    Finished(Finished),
    Called(CallDone),
    Event(Event),
    Tick,
    Reconnect,
    Stop,
    GraceOver,
}

pub(crate) struct Engine {
    w: Worker,
    held: HashMap<String, Held>,
    waiting: VecDeque<proto::ClaimedJob>,
    running: FuturesUnordered<BoxFuture<'static, Finished>>,
    calls: FuturesUnordered<BoxFuture<'static, CallDone>>,
    events_tx: mpsc::UnboundedSender<Event>,
    events_rx: mpsc::UnboundedReceiver<Event>,
    session: Option<Session>,
    connecting: Option<BoxFuture<'static, std::result::Result<Session, Status>>>,
    reconnect_at: Option<Instant>,
    backoff: Backoff,
    /// Set once stopped: when the grace period ends.
    grace_end: Option<Instant>,
}

impl Engine {
    pub(crate) fn new(w: Worker) -> Engine {
        let (events_tx, events_rx) = mpsc::unbounded_channel();
        Engine {
            held: HashMap::with_capacity(w.concurrency * 2),
            waiting: VecDeque::new(),
            running: FuturesUnordered::new(),
            calls: FuturesUnordered::new(),
            events_tx,
            events_rx,
            session: None,
            connecting: None,
            reconnect_at: None,
            backoff: Backoff::new(Duration::from_millis(100), Duration::from_secs(5)),
            grace_end: None,
            w,
        }
    }

    pub(crate) async fn run(mut self) -> Result<()> {
        let mut signals = if self.w.handle_signals {
            Some(Signals::new()?)
        } else {
            None
        };
        let period =
            (self.w.lease / 10).clamp(Duration::from_millis(10), Duration::from_millis(500));
        let mut tick = tokio::time::interval(period);
        tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
        self.connecting = Some(self.open());
        if let Some(ready) = self.w.on_ready.take() {
            ready();
        }
        loop {
            if self.grace_end.is_some() && self.held.is_empty() && self.calls.is_empty() {
                // A job the service sent before the drain ended, already here but
                // not read, is run too: closing the stream would give it back
                // with its attempt counted.
                if let Some(reply) = self.arrived_reply() {
                    self.on_reply(reply);
                    continue;
                }
                // Every job answered for: closing our side ends the stream, which
                // then holds nothing.
                return Ok(());
            }
            let wake = self.next(&mut signals, &mut tick).await;
            match wake {
                Wake::Reply(Ok(Some(reply))) => self.on_reply(reply),
                Wake::Reply(Ok(None)) => {
                    self.on_broken(Status::unavailable("the service ended the stream"))?
                }
                Wake::Reply(Err(status)) => self.on_broken(status)?,
                Wake::Opened(opened) => self.on_opened(opened)?,
                Wake::Finished(finished) => self.on_finished(finished),
                Wake::Called(done) => self.on_called(done),
                Wake::Event(event) => self.on_event(event),
                Wake::Tick => self.on_tick(),
                Wake::Reconnect => {
                    self.reconnect_at = None;
                    self.connecting = Some(self.open());
                }
                Wake::Stop => self.on_stop(),
                Wake::GraceOver => {
                    self.abandon();
                    return Ok(());
                }
            }
        }
    }

    /// Waits for the next thing to do.
    async fn next(
        &mut self,
        signals: &mut Option<Signals>,
        tick: &mut tokio::time::Interval,
    ) -> Wake {
        let stopping = self.grace_end.is_some();
        let grace_end = self.grace_end;
        let reconnect_at = self.reconnect_at;
        let session = &mut self.session;
        let connecting = &mut self.connecting;
        let running = &mut self.running;
        let calls = &mut self.calls;
        let stop = self.w.stop.clone();
        tokio::select! {
            reply = next_reply(session) => Wake::Reply(reply),
            opened = poll_some(connecting) => Wake::Opened(opened),
            Some(finished) = running.next(), if !running.is_empty() => Wake::Finished(finished),
            Some(done) = calls.next(), if !calls.is_empty() => Wake::Called(done),
            Some(event) = self.events_rx.recv() => Wake::Event(event),
            _ = tick.tick() => Wake::Tick,
            _ = sleep_until(reconnect_at) => Wake::Reconnect,
            _ = stop.cancelled(), if !stopping => Wake::Stop,
            _ = next_signal(signals) => if stopping { Wake::GraceOver } else { Wake::Stop },
            _ = sleep_until(grace_end) => Wake::GraceOver,
        }
    }

    /// A reply already received on the stream, if any (without waiting).
    fn arrived_reply(&mut self) -> Option<proto::WorkResponse> {
        let session = self.session.as_mut()?;
        match session.replies.message().now_or_never() {
            Some(Ok(Some(reply))) => Some(reply),
            _ => None,
        }
    }

    /// A new Work stream: its start message is queued before the call.
    fn open(&self) -> BoxFuture<'static, std::result::Result<Session, Status>> {
        let (tx, rx) = mpsc::unbounded_channel();
        let start = In::Start(proto::WorkStart {
            namespace: self.w.client.namespace().to_owned(),
            queues: self.w.queues.clone(),
            worker_id: self.w.worker_id.clone(),
            lease: Some(duration(self.w.lease)),
            capacity: self.w.concurrency as u32,
        });
        let _ = tx.send(proto::WorkRequest {
            request: Some(start),
        });
        let mut grpc = self.w.client.grpc();
        Box::pin(async move {
            let replies = grpc
                .work(UnboundedReceiverStream::new(rx))
                .await?
                .into_inner();
            Ok(Session {
                tx,
                replies,
                answered: false,
            })
        })
    }

    fn on_opened(&mut self, opened: std::result::Result<Session, Status>) -> Result<()> {
        self.connecting = None;
        let session = match opened {
            Ok(session) => session,
            Err(status) => return self.on_broken(status),
        };
        if self.grace_end.is_some() {
            return Ok(()); // stopped meanwhile: dropping it closes it, holding nothing
        }
        // Answers the last stream did not give: asked again on this one (one that
        // went through is answered ABORTED and changes nothing).
        for held in self.held.values_mut() {
            if let Phase::Answering { request, resend_at } = &mut held.phase {
                *resend_at = None;
                let _ = session.tx.send(proto::WorkRequest {
                    request: Some(request.clone()),
                });
            }
        }
        self.session = Some(session);
        Ok(())
    }

    /// The stream ended: reconnect after a backoff, or fail for good.
    fn on_broken(&mut self, status: Status) -> Result<()> {
        self.session = None;
        self.connecting = None;
        // Extensions in flight on the lost stream are never answered.
        for held in self.held.values_mut() {
            held.extending = 0;
        }
        if is_fatal(status.code()) {
            self.abandon();
            return Err(Error::from(status));
        }
        if self.grace_end.is_some() {
            self.answer_by_calls();
            return Ok(());
        }
        let wait = self.backoff.next_wait();
        tracing::warn!(code = ?status.code(), message = status.message(), ?wait, "dueq worker: the Work stream broke; reconnecting");
        self.reconnect_at = Some(Instant::now() + wait);
        Ok(())
    }

    fn on_reply(&mut self, reply: proto::WorkResponse) {
        if let Some(session) = &mut self.session {
            if !session.answered {
                session.answered = true;
                self.backoff.reset();
            }
        }
        match reply.response {
            Some(Out::Job(job)) => self.on_job(job),
            Some(Out::Ack(r)) => self.on_answer(&r.job_id, r.code, &r.message),
            Some(Out::Fail(r)) => self.on_answer(&r.job_id, r.code, &r.message),
            Some(Out::Extend(r)) => self.on_extended(
                &r.job_id,
                r.code,
                r.result.is_some_and(|r| r.cancel_requested),
            ),
            Some(Out::Cancel(lease)) => {
                if let Some(held) = self.held.get(&lease.job_id) {
                    if held.token == lease.lease_token {
                        held.cancel.cancel();
                    }
                }
            }
            None => {}
        }
    }

    fn on_job(&mut self, job: proto::ClaimedJob) {
        let held = Held {
            token: job.lease_token.clone(),
            cancel: CancellationToken::new(),
            extend_at: Instant::now() + self.w.lease / 2,
            phase: Phase::Waiting,
            extending: 0,
            progress: None,
        };
        // The same job again under a new lease: the old one was lost.
        if let Some(old) = self.held.insert(job.job_id.clone(), held) {
            old.cancel.cancel();
        }
        if self.running.len() < self.w.concurrency {
            self.start(job);
        } else {
            self.waiting.push_back(job);
        }
    }

    fn start(&mut self, job: proto::ClaimedJob) {
        let Some(held) = self.held.get_mut(&job.job_id) else {
            return;
        };
        if held.token != job.lease_token {
            return; // superseded by a newer lease of the same job
        }
        held.phase = Phase::Running;
        let (id, token) = (job.job_id.clone(), job.lease_token.clone());
        let active = ActiveJob {
            job,
            cancelled: held.cancel.clone(),
            events: self.events_tx.clone(),
        };
        let run = AssertUnwindSafe((self.w.handler)(active)).catch_unwind();
        self.running.push(Box::pin(async move {
            let outcome = run
                .await
                .unwrap_or_else(|_| Err(HandlerError::msg("the handler panicked")));
            (id, token, outcome)
        }));
    }

    fn on_finished(&mut self, (id, token, outcome): Finished) {
        while self.running.len() < self.w.concurrency {
            let Some(next) = self.waiting.pop_front() else {
                break;
            };
            self.start(next);
        }
        let request = answer(&id, &token, outcome);
        let current = self.held.get(&id).is_some_and(|h| h.token == token);
        if !current {
            // An older lease of a job handed over again: answer for it, so the
            // stream frees its slot (the service answers ABORTED).
            self.send(request);
            return;
        }
        self.answer(id, request);
    }

    /// Sends `request` (an ack or fail) for the job: on the stream while working,
    /// by a unary call once stopped (an ack on the stream would let the service
    /// hand out the freed slot's next job).
    fn answer(&mut self, id: String, request: In) {
        if self.grace_end.is_some() {
            if let Some(held) = self.held.get_mut(&id) {
                held.phase = Phase::Unary;
            }
            let namespace = self.w.client.namespace().to_owned();
            self.call(to_call(request, namespace), Duration::ZERO);
            return;
        }
        let sent = self.send(request.clone());
        if let Some(held) = self.held.get_mut(&id) {
            held.phase = Phase::Answering {
                request,
                resend_at: if sent {
                    None
                } else {
                    Some(Instant::now() + RESEND_AFTER)
                },
            };
        }
    }

    /// Sends on the current stream; false when there is none.
    fn send(&mut self, request: In) -> bool {
        match &self.session {
            Some(session) => session
                .tx
                .send(proto::WorkRequest {
                    request: Some(request),
                })
                .is_ok(),
            None => false,
        }
    }

    fn on_answer(&mut self, id: &str, code: i32, message: &str) {
        let Some(held) = self.held.get_mut(id) else {
            return;
        };
        let Phase::Answering { resend_at, .. } = &mut held.phase else {
            return; // the answer for an older lease
        };
        match Code::from(code) {
            Code::Ok => {}
            Code::Aborted | Code::NotFound => {
                tracing::warn!(
                    job_id = id,
                    message,
                    "dueq worker: the job's lease was lost before its answer"
                );
            }
            Code::InvalidArgument | Code::PermissionDenied | Code::Unauthenticated => {
                tracing::warn!(
                    job_id = id,
                    code,
                    message,
                    "dueq worker: the job's answer was refused"
                );
            }
            _ => {
                // Not applied (UNAVAILABLE, FAILED_PRECONDITION): send it again.
                *resend_at = Some(Instant::now() + RESEND_AFTER);
                return;
            }
        }
        self.held.remove(id);
    }

    fn on_extended(&mut self, id: &str, code: i32, cancel_requested: bool) {
        let Some(held) = self.held.get_mut(id) else {
            return;
        };
        held.extending = held.extending.saturating_sub(1);
        match Code::from(code) {
            Code::Ok if cancel_requested => held.cancel.cancel(),
            Code::Aborted | Code::NotFound => {
                tracing::warn!(
                    job_id = id,
                    "dueq worker: the job's lease was lost; cancelling its handler"
                );
                held.cancel.cancel();
                held.progress = None;
            }
            _ => {}
        }
        if held.extending == 0 && held.progress.is_some() && matches!(held.phase, Phase::Running) {
            let token = held.token.clone();
            self.extend(id, &token);
        }
    }

    fn on_event(
        &mut self,
        Event::Progress {
            job_id,
            token,
            progress,
        }: Event,
    ) {
        let Some(held) = self.held.get_mut(&job_id) else {
            return;
        };
        if held.token != token || !matches!(held.phase, Phase::Running) {
            return;
        }
        held.progress = Some(match held.progress.take() {
            Some(earlier) => merge(earlier, progress),
            None => progress,
        });
        // At most one extension in flight per job: a report made meanwhile rides
        // on the next one.
        if held.extending == 0 {
            self.extend(&job_id, &token);
        }
    }

    /// Extends the leases due for it, sends again the answers due for it.
    fn on_tick(&mut self) {
        let now = Instant::now();
        let mut extends = Vec::new();
        let mut resends = Vec::new();
        for (id, held) in &mut self.held {
            match &mut held.phase {
                Phase::Waiting | Phase::Running if held.extend_at <= now => {
                    held.extend_at = now + self.w.lease / 2;
                    extends.push((id.clone(), held.token.clone()));
                }
                Phase::Answering {
                    request,
                    resend_at: Some(at),
                } if *at <= now => {
                    resends.push((id.clone(), request.clone()));
                }
                _ => {}
            }
        }
        for (id, token) in extends {
            self.extend(&id, &token);
        }
        for (id, request) in resends {
            self.answer(id, request);
        }
    }

    /// Extends the job's lease, with the progress waiting to be reported: on the
    /// stream, or by a unary call without one.
    fn extend(&mut self, id: &str, token: &str) {
        let Some(held) = self.held.get_mut(id) else {
            return;
        };
        held.extending += 1;
        held.extend_at = Instant::now() + self.w.lease / 2;
        let extend = proto::ExtendLeaseRequest {
            namespace: String::new(),
            job_id: id.to_owned(),
            lease_token: token.to_owned(),
            lease: Some(duration(self.w.lease)),
            progress: held.progress.take(),
        };
        if self.session.is_some() {
            self.send(In::Extend(extend));
        } else {
            let namespace = self.w.client.namespace().to_owned();
            self.call(
                Call::Extend(proto::ExtendLeaseRequest {
                    namespace,
                    ..extend
                }),
                Duration::ZERO,
            );
        }
    }

    /// Stopped: nothing new is asked for; what runs gets the grace period.
    fn on_stop(&mut self) {
        self.grace_end = Some(Instant::now() + self.w.grace);
        self.connecting = None;
        self.reconnect_at = None;
        if self.session.is_none() {
            self.answer_by_calls();
        }
    }

    /// Every answer not yet given goes by a unary call.
    fn answer_by_calls(&mut self) {
        let namespace = self.w.client.namespace().to_owned();
        let mut calls = Vec::new();
        for held in self.held.values_mut() {
            if let Phase::Answering { request, .. } = &held.phase {
                calls.push(to_call(request.clone(), namespace.clone()));
                held.phase = Phase::Unary;
            }
        }
        for call in calls {
            self.call(call, Duration::ZERO);
        }
    }

    /// Starts a unary call after `delay`.
    fn call(&mut self, call: Call, delay: Duration) {
        let client = self.w.client.clone();
        self.calls.push(Box::pin(async move {
            if !delay.is_zero() {
                #[allow(clippy::disallowed_methods)] // a backoff: waits out real time
                tokio::time::sleep(delay).await;
            }
            let outcome = unary(&client, &call).await;
            (call, outcome)
        }));
    }

    fn on_called(&mut self, (call, outcome): CallDone) {
        let (id, token) = match &call {
            Call::Ack(r) => (r.job_id.clone(), r.lease_token.clone()),
            Call::Fail(r) => (r.job_id.clone(), r.lease_token.clone()),
            Call::Extend(r) => {
                let (code, cancel) = match &outcome {
                    Ok(cancel) => (0, *cancel),
                    Err(e) => (e.code() as i32, false),
                };
                self.on_extended(&r.job_id.clone(), code, cancel);
                return;
            }
        };
        match outcome {
            Err(e)
                if e.is_transient() && self.grace_end.is_some_and(|end| Instant::now() < end) =>
            {
                self.call(call, RESEND_AFTER);
            }
            Err(e) => {
                tracing::warn!(job_id = id, error = %e, "dueq worker: the job's answer failed");
                self.forget(&id, &token);
            }
            Ok(_) => self.forget(&id, &token),
        }
    }

    fn forget(&mut self, id: &str, token: &str) {
        if self.held.get(id).is_some_and(|h| h.token == token) {
            self.held.remove(id);
        }
    }

    /// The grace period is over (or the stream failed for good): handlers are
    /// told to stop, and their jobs go back to the queue when the stream closes.
    fn abandon(&mut self) {
        for held in self.held.values() {
            held.cancel.cancel();
        }
        if !self.held.is_empty() {
            tracing::warn!(
                jobs = self.held.len(),
                "dueq worker: stopping with jobs unfinished; they go back to the queue"
            );
        }
    }
}

/// Two progress reports as one: each field of `later` that is set wins.
fn merge(earlier: proto::JobProgress, later: proto::JobProgress) -> proto::JobProgress {
    proto::JobProgress {
        fraction: later.fraction.or(earlier.fraction),
        message: later.message.or(earlier.message),
        checkpoint: later.checkpoint.or(earlier.checkpoint),
        update_time: None,
    }
}

/// The ack or fail that answers for a job.
fn answer(id: &str, token: &str, outcome: std::result::Result<Output, HandlerError>) -> In {
    let error = match outcome {
        Ok(Output(result)) if result.len() <= MAX_RESULT => {
            return In::Ack(proto::JobLease {
                job_id: id.to_owned(),
                lease_token: token.to_owned(),
                result,
            })
        }
        Ok(Output(result)) => HandlerError::msg(format!(
            "result: {} bytes is over the 64 KiB the service keeps",
            result.len()
        )),
        Err(e) => e,
    };
    In::Fail(proto::FailJobRequest {
        namespace: String::new(),
        job_id: id.to_owned(),
        lease_token: token.to_owned(),
        error: truncate(error.message, MAX_ERROR),
        retry_after: error.retry_after.map(duration),
        non_retryable: error.non_retryable,
    })
}

fn truncate(mut text: String, max: usize) -> String {
    if text.len() > max {
        let mut end = max;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
    }
    text
}

fn to_call(request: In, namespace: String) -> Call {
    match request {
        In::Ack(lease) => Call::Ack(proto::AckJobRequest {
            namespace,
            job_id: lease.job_id,
            lease_token: lease.lease_token,
            result: lease.result,
        }),
        In::Fail(fail) => Call::Fail(proto::FailJobRequest { namespace, ..fail }),
        In::Extend(extend) => Call::Extend(proto::ExtendLeaseRequest {
            namespace,
            ..extend
        }),
        In::Start(_) => Call::Extend(proto::ExtendLeaseRequest::default()),
    }
}

/// One unary call; for an extension, whether a cancel was requested.
async fn unary(client: &crate::Client, call: &Call) -> Result<bool> {
    match call {
        Call::Ack(r) => client
            .unary(r.clone(), |mut g, r| async move { g.ack_job(r).await })
            .await?
            .map(|_| false)
            .map_err(Error::from),
        Call::Fail(r) => client
            .unary(r.clone(), |mut g, r| async move { g.fail_job(r).await })
            .await?
            .map(|_| false)
            .map_err(Error::from),
        Call::Extend(r) => client
            .unary(r.clone(), |mut g, r| async move { g.extend_lease(r).await })
            .await?
            .map(|reply| reply.into_inner().cancel_requested)
            .map_err(Error::from),
    }
}

/// Codes after which reconnecting cannot help: the service refuses this worker.
fn is_fatal(code: Code) -> bool {
    matches!(
        ErrorKind::from_code(code),
        Some(
            ErrorKind::InvalidArgument
                | ErrorKind::PermissionDenied
                | ErrorKind::Unauthenticated
                | ErrorKind::Unimplemented
                | ErrorKind::NotFound
        )
    )
}

async fn next_reply(
    session: &mut Option<Session>,
) -> std::result::Result<Option<proto::WorkResponse>, Status> {
    match session {
        Some(session) => session.replies.message().await,
        None => std::future::pending().await,
    }
}

async fn poll_some<F: Future + Unpin>(slot: &mut Option<F>) -> F::Output {
    match slot {
        Some(future) => future.await,
        None => std::future::pending().await,
    }
}

async fn next_signal(signals: &mut Option<Signals>) {
    match signals {
        Some(signals) => signals.recv().await,
        None => std::future::pending().await,
    }
}

async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_return_acks_with_the_result() {
        let In::Ack(lease) = answer("j", "t", Ok(Output::bytes(b"r".to_vec()))) else {
            panic!("not an ack");
        };
        assert_eq!(
            (
                lease.job_id.as_str(),
                lease.lease_token.as_str(),
                lease.result.as_slice()
            ),
            ("j", "t", &b"r"[..])
        );
    }

    #[test]
    fn an_error_fails_retryable_and_non_retryable_fails_for_good() {
        let In::Fail(fail) = answer("j", "t", Err(HandlerError::msg("planned failure"))) else {
            panic!("not a fail");
        };
        assert_eq!(fail.error, "planned failure");
        assert!(!fail.non_retryable);
        let In::Fail(fail) = answer(
            "j",
            "t",
            Err(super::super::NonRetryable::new("fatal").into()),
        ) else {
            panic!("not a fail");
        };
        assert!(fail.non_retryable);
    }

    #[test]
    fn a_result_too_large_to_keep_fails_the_job_instead_of_the_stream() {
        let In::Fail(fail) = answer("j", "t", Ok(Output::bytes(vec![0; MAX_RESULT + 1]))) else {
            panic!("not a fail");
        };
        assert!(fail.error.starts_with("result: "), "{}", fail.error);
    }

    #[test]
    fn progress_reports_merge_the_latest_fields() {
        let earlier = proto::JobProgress {
            fraction: Some(0.1),
            message: Some("a".into()),
            ..Default::default()
        };
        let later = proto::JobProgress {
            fraction: Some(0.5),
            ..Default::default()
        };
        let m = merge(earlier, later);
        assert_eq!(
            (m.fraction, m.message.as_deref(), m.checkpoint),
            (Some(0.5), Some("a"), None)
        );
    }

    #[test]
    fn long_errors_are_cut_at_a_char_boundary() {
        let text = "é".repeat(MAX_ERROR);
        let cut = truncate(text, MAX_ERROR);
        assert!(cut.len() <= MAX_ERROR && cut.chars().all(|c| c == 'é'));
    }
}
