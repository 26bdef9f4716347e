//! The Work stream (issue 15): one worker's long-lived claim loop.
//!
//! The worker holds at most `capacity` jobs. The loop takes every ack that has
//! arrived, and in one claim script call completes them and claims as many jobs as
//! there are free slots (a slot is free again once its job's ack or fail is
//! answered), so under load a script call finishes and refills many jobs at once
//! where ClaimJob + AckJob take two calls per job. Up to two calls are in flight: the
//! acks that arrive while one runs go out at once with the next, so a finished job's
//! slot waits for one call rather than for the rest of the running one and then its
//! own. Calls are answered in the order they were made. With nothing claimable the
//! loop parks on the namespace's job timer (the long-polls' `Waiter`), and wakes on a
//! new job, on the worker's next message, or on shutdown.
//!
//! When the worker's side ends (closed, cancelled, disconnected) or its replies can
//! no longer be delivered, the jobs it holds are released at once as abandoned
//! (their attempt counts, as a lease expiry's would). On shutdown the loop ends
//! without touching the leases: the worker can still ack them elsewhere. Either way
//! the calls still in flight are finished first: their acks are answered (when the
//! worker can still hear it), and the jobs they claimed, which the worker never saw,
//! go back to their queues without counting an attempt.

use std::{
    collections::{HashMap, HashSet},
    sync::Arc,
    time::Duration,
};

use futures_util::{future::BoxFuture, stream::FuturesOrdered, StreamExt};
use tokio::{sync::mpsc, time::Instant};

use super::{ClaimRequest, Jobs, Lease};
use crate::{
    domain::{Extended, Failed, Failure, JobRecord, Namespace, ProgressReport},
    error::Error,
    longpoll::Waiter,
    namespaces::Entry,
    store::{ops::publish_workers::SessionKind, StoreError},
    watch::{Cancel, CancelFeed},
    workers::{Opening, Session},
};

/// Most acks and claims one script call carries (the claim script's bound).
const MAX_PER_CALL: usize = 100;
/// Most claim calls a stream has in flight (see the module doc).
const MAX_CALLS_IN_FLIGHT: usize = 2;
/// Claim attempts in a row that find claimable work but claim none (stale heads)
/// before the loop parks instead of trying again at once.
const MAX_EMPTY_RETRIES: usize = 8;
/// How long the loop backs off after a failed claim (Redis down or full) before it
/// claims again; acks that arrive meanwhile are still applied.
const RETRY_AFTER_ERROR: Duration = Duration::from_millis(500);

/// What a Work stream works on, validated.
#[derive(Debug, Clone)]
pub(crate) struct WorkOptions {
    /// Sorted, without duplicates.
    pub(crate) queues: Vec<String>,
    pub(crate) worker: String,
    pub(crate) lease_ms: Option<i64>,
    /// Most jobs the worker holds at once.
    pub(crate) capacity: usize,
    /// Most bytes one claim call's jobs may take (each job goes in its own message).
    pub(crate) max_bytes: usize,
}

/// A worker's message, validated.
#[derive(Debug)]
pub(crate) enum WorkInput {
    Ack {
        id: String,
        token: String,
        /// What the job returned (empty: nothing; issue 30).
        result: Vec<u8>,
    },
    Fail {
        id: String,
        token: String,
        failure: Failure,
    },
    Extend {
        id: String,
        token: String,
        /// None: the deadline stays (only progress is reported).
        lease_ms: Option<i64>,
        progress: Option<ProgressReport>,
    },
}

/// What the loop sends the worker.
#[derive(Debug)]
pub(crate) enum WorkOutput {
    Job(Box<JobRecord>),
    Acked {
        id: String,
        result: Result<(), Error>,
    },
    Failed {
        id: String,
        result: Result<Failed, Error>,
    },
    Extended {
        id: String,
        result: Result<Extended, Error>,
    },
    /// A cancel was asked (CancelJob) of a job the stream holds under this lease
    /// (issue 30); sent once per lease.
    Cancel {
        id: String,
        token: String,
    },
    /// The loop ended because the service is shutting down.
    ShuttingDown,
}

/// Why the loop stopped taking work.
enum End {
    /// The worker's side ended, or its replies cannot be delivered: release its jobs.
    Gone,
    /// The service is shutting down: leave the leases.
    Shutdown,
}

/// One stream's state: the jobs it holds, the acks not yet applied, and what the
/// calls in flight will change.
struct Hand {
    /// Lease token -> job id of every job sent and not yet answered for. By token: a
    /// job whose lease ran out can come to the same stream again under a new one, and
    /// the worker then has both, until it answers for the old one.
    held: HashMap<String, String>,
    /// Acks received, to apply with the next claim call.
    acks: Vec<(String, String)>,
    /// Lease token -> the result of a received ack that carries one (issue 30), taken
    /// out when the ack goes in a call; acks without a result cost nothing here.
    results: HashMap<String, Vec<u8>>,
    capacity: usize,
    /// Lease tokens of held jobs whose acks are in a call in flight: their slots are
    /// spoken for by that call's claim.
    acking: HashSet<String>,
    /// Jobs the calls in flight may claim.
    reserved: usize,
}

impl Hand {
    /// Slots the next claim may fill: the ones free now, plus those the acks queued
    /// or in flight free (a claim applies its acks first), less what the calls in
    /// flight may claim.
    fn free(&self) -> usize {
        // Distinct leases: the same ack sent twice frees one slot.
        let queued = self
            .acks
            .iter()
            .filter(|(id, token)| self.holds(id, token) && !self.acking.contains(token))
            .map(|(_, token)| token.as_str())
            .collect::<HashSet<&str>>()
            .len();
        (self.capacity + queued + self.acking.len()).saturating_sub(self.held.len() + self.reserved)
    }

    /// Whether `token` is the lease the stream sent job `id` with. An ack or fail with
    /// another token leaves that lease alone, so the job still takes its slot (and is
    /// released if the stream breaks).
    fn holds(&self, id: &str, token: &str) -> bool {
        self.held.get(token).is_some_and(|held| held == id)
    }

    /// The results of `acks` (by index) that carry one, taken out of the hand.
    fn take_results(&mut self, acks: &[(String, String)]) -> Vec<(usize, Vec<u8>)> {
        if self.results.is_empty() {
            return Vec::new();
        }
        acks.iter()
            .enumerate()
            .filter_map(|(i, (_, token))| self.results.remove(token).map(|r| (i, r)))
            .collect()
    }

    /// The job is answered for under its lease: its slot is free.
    fn settle(&mut self, id: &str, token: &str) {
        if self.holds(id, token) {
            self.held.remove(token);
        }
    }
}

/// A claim call's acks, the jobs it may claim, and what it returned.
type Answered = (Vec<(String, String)>, usize, Called);

/// A claim call in flight.
type Call = BoxFuture<'static, Answered>;

/// One stream's loop, in named steps: `admit` the worker's messages, `claim` (start
/// calls while slots or acks wait), `next_event` (park like a long-poll when idle),
/// `settle` a call's answer, and `wind_down` once the stream ends.
struct WorkLoop {
    jobs: Arc<Jobs>,
    namespace: Namespace,
    entry: Arc<Entry>,
    options: Arc<WorkOptions>,
    hand: Hand,
    input: mpsc::Receiver<WorkInput>,
    output: mpsc::Sender<WorkOutput>,
    /// Answered in the order they were made.
    calls: FuturesOrdered<Call>,
    /// Whether a claim may find something: true at first, after a wake-up, and while
    /// the last claim said more was left.
    claimable: bool,
    empty_retries: usize,
    /// After a failed call (Redis down or full), no call until then.
    backoff: Option<Instant>,
    /// Cancels announced in the namespace (issue 30), and the leases already told.
    cancels: CancelFeed,
    told: HashSet<String>,
    /// This stream as ListWorkers shows it (issue 33): its jobs held, kept current.
    session: Session,
}

/// What woke the loop.
enum Event {
    Answered(Answered),
    Message(Option<WorkInput>),
    Woken(bool),
    BackoffOver,
    Shutdown,
    Gone,
    Cancel(Option<Cancel>),
}

impl WorkLoop {
    async fn run(&mut self, waiter: &Waiter) -> End {
        loop {
            // The worker's side closing ends the loop even while there is work to claim.
            if !self.admit().await || self.output.is_closed() {
                return End::Gone;
            }
            self.claim();
            self.session.set_in_flight(self.hand.held.len());
            let step = match self.next_event(waiter).await {
                Event::Answered(answered) => self.settle(answered).await,
                Event::Message(Some(message)) => {
                    self.take(message).await.then_some(()).ok_or(End::Gone)
                }
                Event::Message(None) | Event::Gone => Err(End::Gone),
                Event::Woken(false) | Event::Shutdown => Err(End::Shutdown),
                Event::Woken(true) => {
                    self.claimable = true;
                    Ok(())
                }
                Event::BackoffOver => {
                    self.backoff = None;
                    self.claimable = true;
                    Ok(())
                }
                Event::Cancel(cancel) => self.tell_cancel(cancel).await,
            };
            if let Err(end) = step {
                return end;
            }
        }
    }

    /// Takes every message the worker sent meanwhile; false once its side is gone.
    async fn admit(&mut self) -> bool {
        loop {
            match self.input.try_recv() {
                Ok(message) => {
                    if !self.take(message).await {
                        return false;
                    }
                }
                Err(mpsc::error::TryRecvError::Empty) => return true,
                Err(mpsc::error::TryRecvError::Disconnected) => return false,
            }
        }
    }

    async fn take(&mut self, message: WorkInput) -> bool {
        self.jobs
            .take(&self.namespace, &mut self.hand, message, &self.output)
            .await
    }

    /// Starts claim calls (with the acks waiting) while slots are free or acks wait,
    /// up to MAX_CALLS_IN_FLIGHT.
    fn claim(&mut self) {
        while self.backoff.is_none() && self.calls.len() < MAX_CALLS_IN_FLIGHT {
            let hand = &mut self.hand;
            let free = hand.free().min(MAX_PER_CALL);
            let claiming = self.claimable && free > 0;
            if !claiming && hand.acks.is_empty() {
                break;
            }
            let take = hand.acks.len().min(MAX_PER_CALL);
            let acks: Vec<(String, String)> = hand.acks.drain(..take).collect();
            let results = hand.take_results(&acks);
            for (id, token) in &acks {
                if hand.holds(id, token) {
                    hand.acking.insert(token.clone());
                }
            }
            let max_jobs = if claiming { free } else { 0 };
            hand.reserved += max_jobs;
            let (jobs, entry, options) =
                (self.jobs.clone(), self.entry.clone(), self.options.clone());
            self.calls.push_back(Box::pin(async move {
                let called = jobs.call(&entry, &options, &acks, &results, max_jobs).await;
                (acks, max_jobs, called)
            }));
        }
    }

    /// Waits for a call's answer, a message, a wake-up (only when nothing is in
    /// flight: the stream then waits like a long-poll), the end of a backoff, or the
    /// end of the stream.
    async fn next_event(&mut self, waiter: &Waiter) -> Event {
        let idle = self.calls.is_empty() && self.backoff.is_none();
        if idle {
            self.empty_retries = 0;
        }
        let parkable = idle && self.hand.free() > 0;
        let shutdown = &self.jobs.cx.shutdown;
        let park = waiter.park(shutdown);
        let pause = tokio::time::sleep_until(self.backoff.unwrap_or_else(Instant::now));
        tokio::select! {
            Some(answered) = self.calls.next() => Event::Answered(answered),
            message = self.input.recv() => Event::Message(message),
            woken = park, if parkable => Event::Woken(woken),
            _ = pause, if self.backoff.is_some() => Event::BackoffOver,
            _ = shutdown.cancelled() => Event::Shutdown,
            _ = self.output.closed() => Event::Gone,
            cancel = self.cancels.cancels.recv() => Event::Cancel(cancel),
        }
    }

    /// Tells the worker of a cancel asked of a job it holds under that lease, once.
    async fn tell_cancel(&mut self, cancel: Option<Cancel>) -> Result<(), End> {
        let Some((id, token)) = cancel else {
            return Ok(());
        };
        if !self.hand.holds(&id, &token) || !self.told.insert(token.clone()) {
            return Ok(());
        }
        let held = &self.hand.held;
        self.told.retain(|told| held.contains_key(told));
        deliver(&self.output, WorkOutput::Cancel { id, token })
            .await
            .map_err(|_| End::Gone)
    }

    /// Settles a call's answer with the stream and decides whether to claim again.
    async fn settle(&mut self, (acks, max_jobs, called): Answered) -> Result<(), End> {
        let finished = self.finish((acks, max_jobs, called), true).await;
        match finished {
            // An ack-only call says nothing of what is claimable.
            Ok(_) if max_jobs == 0 => {}
            Ok(Round { claimed, more }) => {
                self.claimable = more;
                if claimed == 0 && more {
                    self.empty_retries += 1;
                    self.claimable = self.empty_retries < MAX_EMPTY_RETRIES;
                } else if claimed > 0 {
                    self.empty_retries = 0;
                }
            }
            Err(Delivery::Closed) => return Err(End::Gone),
            Err(Delivery::Failed(error)) => {
                tracing::debug!(namespace = %self.namespace, %error, "work stream claim failed; retrying");
                self.backoff = Some(Instant::now() + RETRY_AFTER_ERROR);
            }
        }
        Ok(())
    }

    /// Settles a call with the stream: answers its acks, then sends the jobs it
    /// claimed (or, when `deliver` is false or the worker cannot be reached, puts them
    /// back at the head of their queues, attempt not counted, as a reply that cannot
    /// carry them).
    async fn finish(
        &mut self,
        (acks, max_jobs, called): Answered,
        deliver: bool,
    ) -> Result<Round, Delivery> {
        let hand = &mut self.hand;
        hand.reserved = hand.reserved.saturating_sub(max_jobs);
        for (_, token) in &acks {
            hand.acking.remove(token);
        }
        let (jobs, more, answered) = match called {
            Called::Done { jobs, more, acked } => {
                let answered = self.answer_acks(acks, acked).await;
                (jobs, more, answered)
            }
            Called::Full { acked, error } => {
                self.answer_acks(acks, acked).await?;
                return Err(Delivery::Failed(error));
            }
            Called::Failed(error) => {
                let copy = Err(Error::Store(store_error(&error)));
                self.answer_acks(acks, copy).await?;
                return Err(Delivery::Failed(error));
            }
        };
        let deliver = deliver && answered.is_ok();
        let claimed = jobs.len();
        let mut jobs = jobs.into_iter();
        while let Some(job) = jobs.next() {
            let lease = (job.id.clone(), job.lease_token.clone());
            if !deliver
                || self
                    .output
                    .send(WorkOutput::Job(Box::new(job)))
                    .await
                    .is_err()
            {
                let unsent: Vec<(String, String)> = std::iter::once(lease)
                    .chain(jobs.map(|job| (job.id, job.lease_token)))
                    .collect();
                let leases: Vec<Lease<'_>> = unsent
                    .iter()
                    .map(|(i, t)| (i.as_str(), t.as_str()))
                    .collect();
                if let Err(error) = self.jobs.release(&self.namespace, &leases).await {
                    tracing::warn!(namespace = %self.namespace, %error, "could not release jobs a work stream never sent");
                }
                return Err(Delivery::Closed);
            }
            self.hand.held.insert(lease.1, lease.0);
        }
        answered?;
        Ok(Round { claimed, more })
    }

    /// Answers each ack with its outcome (or the call's error); a job acked under the
    /// lease it was sent with is no longer held, unless the store refused the ack.
    async fn answer_acks(
        &mut self,
        acks: Vec<(String, String)>,
        acked: Result<Vec<Result<(), Error>>, Error>,
    ) -> Result<(), Delivery> {
        let outcomes: Vec<Result<(), Error>> = match acked {
            Ok(outcomes) => outcomes,
            Err(error) => {
                let store = store_error(&error);
                acks.iter()
                    .map(|_| Err(Error::Store(store.clone())))
                    .collect()
            }
        };
        for ((id, token), result) in acks.into_iter().zip(outcomes) {
            if settles(&result) {
                self.hand.settle(&id, &token);
            }
            deliver(&self.output, WorkOutput::Acked { id, result }).await?;
        }
        Ok(())
    }

    /// Calls already made still land: their acks are answered and the jobs they
    /// claimed, never sent, go back to their queues. Then the worker hears of a
    /// shutdown, or its jobs are released when it is gone.
    async fn wind_down(mut self, end: End) {
        while let Some(answered) = self.calls.next().await {
            let _ = self.finish(answered, false).await;
        }
        match end {
            End::Shutdown => {
                let _ = self.output.send(WorkOutput::ShuttingDown).await;
            }
            End::Gone => self.jobs.release_hand(&self.namespace, self.hand).await,
        }
    }
}

impl Jobs {
    /// Runs one worker's stream until it ends; `input` is closed when the worker's
    /// side ends.
    pub(crate) async fn work(
        self: Arc<Self>,
        namespace: Namespace,
        options: WorkOptions,
        input: mpsc::Receiver<WorkInput>,
        output: mpsc::Sender<WorkOutput>,
    ) {
        let entry = self.entry(&namespace);
        let waiter = self.cx.wakers.job_waiter(&entry, &options.queues);
        let _waiting = self.cx.metrics.waiting("jobs");
        let _open = self.cx.metrics.work_stream();
        let capacity = options.capacity;
        let session = self.cx.sessions.open(
            namespace.as_str(),
            Opening {
                kind: SessionKind::Work,
                worker: &options.worker,
                queues: &options.queues,
                capacity: u32::try_from(capacity).unwrap_or(u32::MAX),
            },
        );
        let cancels = self.cx.hub.cancels(&namespace);
        let mut stream = WorkLoop {
            jobs: self,
            namespace,
            entry,
            options: Arc::new(options),
            hand: Hand {
                held: HashMap::new(),
                acks: Vec::new(),
                results: HashMap::new(),
                capacity,
                acking: HashSet::new(),
                reserved: 0,
            },
            input,
            output,
            calls: FuturesOrdered::new(),
            claimable: true,
            empty_retries: 0,
            backoff: None,
            cancels,
            told: HashSet::new(),
            session,
        };
        let end = stream.run(&waiter).await;
        stream.wind_down(end).await;
    }

    /// Handles one worker message: an ack waits for the next claim call; a fail or an
    /// extension runs now. False when the reply could not be delivered.
    async fn take(
        &self,
        namespace: &Namespace,
        hand: &mut Hand,
        message: WorkInput,
        output: &mpsc::Sender<WorkOutput>,
    ) -> bool {
        match message {
            WorkInput::Ack { id, token, result } => {
                if !result.is_empty() {
                    hand.results.insert(token.clone(), result);
                }
                hand.acks.push((id, token));
                true
            }
            WorkInput::Fail { id, token, failure } => {
                let result = self.fail(namespace, &id, &token, &failure).await;
                if settles(&result) {
                    hand.settle(&id, &token);
                }
                output.send(WorkOutput::Failed { id, result }).await.is_ok()
            }
            WorkInput::Extend {
                id,
                token,
                lease_ms,
                progress,
            } => {
                let result = self
                    .extend(namespace, &id, &token, lease_ms, progress.as_ref())
                    .await;
                output
                    .send(WorkOutput::Extended { id, result })
                    .await
                    .is_ok()
            }
        }
    }

    /// One claim call: `acks` (at most MAX_PER_CALL), then up to `max_jobs` jobs (an
    /// ack-only call when 0). Touches nothing of the stream: `finish` does.
    async fn call(
        &self,
        entry: &Arc<Entry>,
        options: &WorkOptions,
        acks: &[(String, String)],
        results: &[(usize, Vec<u8>)],
        max_jobs: usize,
    ) -> Called {
        let leases: Vec<Lease<'_>> = acks
            .iter()
            .map(|(id, token)| (id.as_str(), token.as_str()))
            .collect();
        let results: Vec<(usize, &[u8])> =
            results.iter().map(|(i, r)| (*i, r.as_slice())).collect();
        if max_jobs == 0 {
            let acked = self.ack_many(entry.name(), &leases, &results).await;
            return Called::Done {
                jobs: Vec::new(),
                more: false,
                acked,
            };
        }
        let claim = ClaimRequest {
            queues: &options.queues,
            worker: &options.worker,
            lease_ms: options.lease_ms,
            max_jobs: max_jobs as u32,
            wait: Duration::ZERO,
            max_bytes: options.max_bytes,
            acks: &[],
            results: &[],
        };
        match self.attempt(entry, &claim, &leases, &results).await {
            Ok((attempt, acked)) => Called::Done {
                jobs: attempt.found.unwrap_or_default(),
                more: attempt.more,
                acked: Ok(acked),
            },
            Err(Error::Store(StoreError::OutOfMemory { url })) => {
                // Redis refused the whole call as full; acks free memory, so they go
                // through on their own, and claiming waits for room.
                let acked = self.ack_many(entry.name(), &leases, &results).await;
                Called::Full {
                    acked,
                    error: StoreError::OutOfMemory { url }.into(),
                }
            }
            // Nothing was applied: each ack is answered with the error, and the
            // worker may send it again.
            Err(error) => Called::Failed(error),
        }
    }

    /// The stream is gone: its jobs go back to their queues now, attempt counted.
    async fn release_hand(&self, namespace: &Namespace, mut hand: Hand) {
        // Acks that arrived but were never applied: the worker finished those jobs,
        // so they are completed rather than handed out again.
        // An ack the store refused leaves its job held, to be released with the rest.
        let acks = std::mem::take(&mut hand.acks);
        for chunk in acks.chunks(MAX_PER_CALL) {
            let leases: Vec<Lease<'_>> = chunk
                .iter()
                .map(|(i, t)| (i.as_str(), t.as_str()))
                .collect();
            let results = hand.take_results(chunk);
            let results: Vec<(usize, &[u8])> =
                results.iter().map(|(i, r)| (*i, r.as_slice())).collect();
            match self.ack_many(namespace, &leases, &results).await {
                Ok(outcomes) => {
                    for ((id, token), outcome) in chunk.iter().zip(&outcomes) {
                        if settles(outcome) {
                            hand.settle(id, token);
                        }
                    }
                }
                Err(error) => {
                    tracing::warn!(%namespace, %error, "could not apply a closed work stream's last acks")
                }
            }
        }
        let held: Vec<(String, String)> = hand
            .held
            .into_iter()
            .map(|(token, id)| (id, token))
            .collect();
        for chunk in held.chunks(MAX_PER_CALL) {
            let leases: Vec<Lease<'_>> = chunk
                .iter()
                .map(|(i, t)| (i.as_str(), t.as_str()))
                .collect();
            match self.abandon(namespace, &leases).await {
                Ok(released) => {
                    tracing::debug!(%namespace, released, "closed work stream's jobs released")
                }
                Err(error) => tracing::warn!(
                    %namespace, %error,
                    "could not release a closed work stream's jobs; they are claimable again when their leases expire"
                ),
            }
        }
    }
}

/// What one call returned.
enum Called {
    Done {
        jobs: Vec<JobRecord>,
        more: bool,
        acked: Result<Vec<Result<(), Error>>, Error>,
    },
    /// Redis refused the claim as full; the acks were applied on their own.
    Full {
        acked: Result<Vec<Result<(), Error>>, Error>,
        error: Error,
    },
    /// Nothing was applied.
    Failed(Error),
}

/// What a claim round did.
struct Round {
    claimed: usize,
    /// More may be claimable now.
    more: bool,
}

/// Why a round stopped.
enum Delivery {
    /// The worker can no longer be reached.
    Closed,
    /// The claim failed; the loop backs off.
    Failed(Error),
}

async fn deliver(output: &mpsc::Sender<WorkOutput>, message: WorkOutput) -> Result<(), Delivery> {
    output.send(message).await.map_err(|_| Delivery::Closed)
}

/// Whether an ack's or fail's outcome ends the lease it was sent under: done, or lost
/// (expired, moved on, gone). A refusal of the call as a whole (Redis down or full, a
/// namespace that needs Migrate) changed nothing: the worker still holds the job.
fn settles<T>(outcome: &Result<T, Error>) -> bool {
    matches!(
        outcome,
        Ok(_) | Err(Error::LeaseLost(_) | Error::NotFound(_))
    )
}

/// A store error to answer each ack of a failed call with (Error is not Clone).
fn store_error(error: &Error) -> StoreError {
    match error {
        Error::Store(store) => store.clone(),
        other => StoreError::corrupt("work stream", other.to_string()),
    }
}
