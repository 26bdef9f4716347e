//! The schedule worker: a handler run for each due occurrence of the namespace's
//! schedules, claimed with a lease (ClaimDueSchedule) and acked (AckOccurrence).

use std::{
    collections::HashMap, future::Future, panic::AssertUnwindSafe, sync::Arc, time::Duration,
};

use futures_util::{future::BoxFuture, stream::FuturesUnordered, FutureExt, StreamExt};
use serde::de::DeserializeOwned;
use tokio_util::sync::CancellationToken;

use crate::{
    client::Client,
    error::{Error, ErrorKind, Result},
    proto,
    reconnect::Backoff,
    time::{duration, system_time},
    worker::{HandlerError, Ready, Signals, StopHandle},
};

/// One due occurrence of a schedule, handed to exactly one worker at a time.
#[derive(Debug, Clone)]
pub struct Occurrence {
    occurrence: proto::Occurrence,
}

impl Occurrence {
    /// The occurrence's id: the same for every hand-out of this occurrence, so
    /// use it as the idempotency key of what the handler does.
    pub fn occurrence_id(&self) -> &str {
        &self.occurrence.occurrence_id
    }

    /// The schedule it belongs to.
    pub fn schedule_id(&self) -> &str {
        self.occurrence
            .schedule
            .as_ref()
            .map_or("", |s| s.id.as_str())
    }

    /// The schedule's `job_name`.
    pub fn job_name(&self) -> &str {
        self.occurrence
            .schedule
            .as_ref()
            .map_or("", |s| s.job_name.as_str())
    }

    /// When it was due (its nominal slot; the time of the trigger for a
    /// triggered one).
    pub fn due_time(&self) -> Option<std::time::SystemTime> {
        system_time(self.occurrence.due_time.as_ref())
    }

    /// The schedule's payload (opaque bytes).
    pub fn payload(&self) -> &[u8] {
        self.occurrence
            .schedule
            .as_ref()
            .map_or(&[], |s| s.payload.as_slice())
    }

    /// The payload parsed as JSON, when the handler asks.
    pub fn json<T: DeserializeOwned>(&self) -> std::result::Result<T, serde_json::Error> {
        serde_json::from_slice(self.payload())
    }

    /// The schedule's headers.
    pub fn headers(&self) -> Option<&HashMap<String, String>> {
        self.occurrence.schedule.as_ref().map(|s| &s.headers)
    }

    /// 1 for the first hand-out; more when an earlier one's lease ran out unacked.
    pub fn attempt(&self) -> u32 {
        self.occurrence.attempt
    }

    /// The schedule's run number of this occurrence.
    pub fn run_number(&self) -> u64 {
        self.occurrence.run_number
    }

    /// The occurrence as the service sent it.
    pub fn proto(&self) -> &proto::Occurrence {
        &self.occurrence
    }
}

type ScheduleHandler = Arc<
    dyn Fn(Occurrence) -> BoxFuture<'static, std::result::Result<(), HandlerError>> + Send + Sync,
>;

/// A schedule worker: [`concurrency`](ScheduleWorker::concurrency) claim loops,
/// each long-polling ClaimDueSchedule with a lease and running `handler` for the
/// occurrence it gets. `Ok` acks it (AckOccurrence); `Err` leaves it to its lease,
/// so it is handed out again (with `attempt + 1`) once the lease runs out.
///
/// [`run`](ScheduleWorker::run) returns after SIGINT/SIGTERM or
/// [`StopHandle::stop`]: no new claims, running handlers get the grace period.
///
/// ```no_run
/// # async fn f(client: dueq_client::Client) -> dueq_client::Result<()> {
/// use dueq_client::{HandlerError, Occurrence, ScheduleWorker};
/// ScheduleWorker::new(client, |occ: Occurrence| async move {
///     println!("{} of {}", occ.occurrence_id(), occ.schedule_id());
///     Ok::<_, HandlerError>(())
/// })
/// .run()
/// .await
/// # }
/// ```
pub struct ScheduleWorker {
    client: Client,
    handler: ScheduleHandler,
    concurrency: usize,
    lease: Duration,
    wait: Duration,
    worker_id: String,
    grace: Duration,
    handle_signals: bool,
    stop: CancellationToken,
    on_ready: Option<Ready>,
}

impl std::fmt::Debug for ScheduleWorker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScheduleWorker")
            .field("concurrency", &self.concurrency)
            .field("lease", &self.lease)
            .field("worker_id", &self.worker_id)
            .finish_non_exhaustive()
    }
}

impl ScheduleWorker {
    /// A schedule worker of the client's namespace: concurrency 1, lease 30 s,
    /// long-polls of 20 s, grace 30 s, stopping on SIGINT/SIGTERM.
    pub fn new<F, Fut>(client: Client, handler: F) -> ScheduleWorker
    where
        F: Fn(Occurrence) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = std::result::Result<(), HandlerError>> + Send + 'static,
    {
        ScheduleWorker {
            client,
            handler: Arc::new(move |occurrence| Box::pin(handler(occurrence))),
            concurrency: 1,
            lease: Duration::from_secs(30),
            wait: Duration::from_secs(20),
            worker_id: format!("rust-{}", std::process::id()),
            grace: Duration::from_secs(30),
            handle_signals: true,
            stop: CancellationToken::new(),
            on_ready: None,
        }
    }

    /// How many claim loops (and so handlers) run at once (default 1).
    pub fn concurrency(mut self, concurrency: usize) -> ScheduleWorker {
        self.concurrency = concurrency;
        self
    }

    /// The lease of each occurrence (default 30 s): ack within it, or it is handed
    /// out again.
    pub fn lease(mut self, lease: Duration) -> ScheduleWorker {
        self.lease = lease;
        self
    }

    /// How long one claim waits for an occurrence to come due (default 20 s).
    pub fn wait(mut self, wait: Duration) -> ScheduleWorker {
        self.wait = wait;
        self
    }

    /// Recorded as the claiming worker (default `rust-<pid>`).
    pub fn worker_id(mut self, id: impl Into<String>) -> ScheduleWorker {
        self.worker_id = id.into();
        self
    }

    /// How long running handlers may take to finish once stopped (default 30 s).
    pub fn grace(mut self, grace: Duration) -> ScheduleWorker {
        self.grace = grace;
        self
    }

    /// Whether SIGINT and SIGTERM stop the worker (default true).
    pub fn handle_signals(mut self, handle: bool) -> ScheduleWorker {
        self.handle_signals = handle;
        self
    }

    /// A handle that stops the worker from anywhere (a handler included).
    pub fn stop_handle(&self) -> StopHandle {
        StopHandle(self.stop.clone())
    }

    /// Calls `ready` once [`run`](ScheduleWorker::run) is running: its
    /// SIGINT/SIGTERM handlers are installed and its claims are starting.
    pub fn on_ready(mut self, ready: impl FnOnce() + Send + Sync + 'static) -> ScheduleWorker {
        self.on_ready = Some(Box::new(ready));
        self
    }

    /// Works until stopped; `Ok` after a drain. Fails with the service's error
    /// when it refuses the claims for good (PermissionDenied, Unauthenticated,
    /// InvalidArgument); other errors are retried with backoff.
    pub async fn run(mut self) -> Result<()> {
        if !(1..=1000).contains(&self.concurrency) {
            return Err(Error::invalid("concurrency", "must be 1-1000"));
        }
        let mut signals = if self.handle_signals {
            Some(Signals::new()?)
        } else {
            None
        };
        let (stop, grace) = (self.stop.clone(), self.grace);
        let ready = self.on_ready.take();
        let me = Arc::new(self);
        let mut loops: FuturesUnordered<_> = (0..me.concurrency)
            .map(|_| claim_loop(me.clone()))
            .collect();
        let all = async move {
            let mut first = None;
            while let Some(result) = loops.next().await {
                if let Err(e) = result {
                    me.stop.cancel();
                    first.get_or_insert(e);
                }
            }
            first.map_or(Ok(()), Err)
        };
        tokio::pin!(all);
        if let Some(ready) = ready {
            ready();
        }
        tokio::select! {
            result = &mut all => return result,
            _ = stop.cancelled() => {}
            _ = async { match &mut signals { Some(s) => s.recv().await, None => std::future::pending().await } } => stop.cancel(),
        }
        // Stopped: the claims end at once; running handlers get the grace period.
        tokio::time::timeout(grace, all).await.unwrap_or(Ok(()))
    }
}

async fn claim_loop(w: Arc<ScheduleWorker>) -> Result<()> {
    let mut backoff = Backoff::new(Duration::from_millis(100), Duration::from_secs(5));
    while !w.stop.is_cancelled() {
        let claimed = tokio::select! {
            claimed = claim(&w) => claimed,
            // An occurrence a cut claim took comes again after its lease.
            _ = w.stop.cancelled() => return Ok(()),
        };
        match claimed {
            Ok(Some(occurrence)) => {
                backoff.reset();
                handle(&w, occurrence).await;
            }
            Ok(None) => backoff.reset(),
            Err(e) if is_fatal(&e) => return Err(e),
            Err(e) => {
                let wait = backoff.next_wait();
                tracing::warn!(error = %e, ?wait, "dueq schedule worker: claim failed; retrying");
                tokio::select! {
                    _ = sleep(wait) => {}
                    _ = w.stop.cancelled() => return Ok(()),
                }
            }
        }
    }
    Ok(())
}

#[allow(clippy::disallowed_methods)] // a backoff: waits out real time
async fn sleep(wait: Duration) {
    tokio::time::sleep(wait).await
}

async fn claim(w: &ScheduleWorker) -> Result<Option<proto::Occurrence>> {
    let request = proto::ClaimDueScheduleRequest {
        namespace: w.client.namespace().to_owned(),
        worker_id: w.worker_id.clone(),
        wait: Some(duration(w.wait)),
        lease: Some(duration(w.lease)),
    };
    // The service answers empty just before the deadline; the margin is for the
    // network.
    let within = w.wait + Duration::from_secs(10);
    let reply = w
        .client
        .call_within(within, request, |mut g, r| async move {
            g.claim_due_schedule(r).await
        })
        .await??;
    Ok(reply.into_inner().occurrence)
}

/// Runs the handler; acks on `Ok`, retrying a transient failure of the ack a few
/// times within the lease.
async fn handle(w: &ScheduleWorker, occurrence: proto::Occurrence) {
    let ack = proto::AckOccurrenceRequest {
        namespace: w.client.namespace().to_owned(),
        occurrence_id: occurrence.occurrence_id.clone(),
        lease_token: occurrence.lease_token.clone(),
    };
    let run = AssertUnwindSafe((w.handler)(Occurrence { occurrence })).catch_unwind();
    match run.await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => {
            tracing::warn!(occurrence_id = ack.occurrence_id, error = %e, "dueq schedule worker: handler failed; the occurrence comes again after its lease");
            return;
        }
        Err(_) => {
            tracing::warn!(occurrence_id = ack.occurrence_id, "dueq schedule worker: handler panicked; the occurrence comes again after its lease");
            return;
        }
    }
    let mut backoff = Backoff::new(Duration::from_millis(100), Duration::from_secs(2));
    for _ in 0..8 {
        let sent = w
            .client
            .unary(
                ack.clone(),
                |mut g, r| async move { g.ack_occurrence(r).await },
            )
            .await
            .and_then(|r| r.map_err(Error::from));
        match sent {
            Ok(_) => return,
            Err(e) if e.is_transient() => sleep(backoff.next_wait()).await,
            Err(e) => {
                tracing::warn!(occurrence_id = ack.occurrence_id, error = %e, "dueq schedule worker: ack refused");
                return;
            }
        }
    }
}

fn is_fatal(e: &Error) -> bool {
    matches!(
        e.kind(),
        ErrorKind::InvalidArgument
            | ErrorKind::PermissionDenied
            | ErrorKind::Unauthenticated
            | ErrorKind::Unimplemented
    )
}
