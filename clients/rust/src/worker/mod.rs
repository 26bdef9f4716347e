//! The job worker: a handler run for each job of the Work stream.

mod engine;
mod job;

use std::{future::Future, sync::Arc, time::Duration};

use futures_util::future::BoxFuture;
use tokio_util::sync::CancellationToken;

pub use job::{ActiveJob, HandlerError, NonRetryable, Output, Progress};

use crate::{
    client::Client,
    error::{Error, Result},
    job::check_name,
};

/// The handler, boxed: one future per job.
pub(crate) type HandlerFn = Arc<
    dyn Fn(ActiveJob) -> BoxFuture<'static, std::result::Result<Output, HandlerError>>
        + Send
        + Sync,
>;

/// A job worker: runs `handler` for each job of its queues, at most
/// [`concurrency`](Worker::concurrency) at once, over one Work stream.
///
/// - The handler's `Ok(output)` acks the job (the output is its result); an `Err`
///   fails it: retried after its backoff, or dead at once for a [`NonRetryable`].
/// - Each lease is extended before a third of it is left, while the handler runs.
/// - [`ActiveJob::cancelled`] is set when a cancel is requested for the job.
/// - [`run`](Worker::run) returns after SIGINT/SIGTERM or [`StopHandle::stop`]: no
///   new jobs start, in-flight ones get [`grace`](Worker::grace) to finish and are
///   acked, then the stream closes.
/// - When the stream breaks (the service restarts, fails over), it reconnects with
///   backoff; handlers keep running, and what they finish is acked on the new
///   stream: no job is lost, none acked twice.
///
/// Handlers run concurrently on the worker's own task (no task per job): they
/// should `await` rather than block. Move blocking or CPU-heavy work to
/// `tokio::task::spawn_blocking`.
///
/// ```no_run
/// # async fn f(client: dueq_client::Client) -> dueq_client::Result<()> {
/// use dueq_client::{ActiveJob, HandlerError, NonRetryable, Output, Worker};
/// Worker::new(client, ["emails"], |job: ActiveJob| async move {
///     let order: serde_json::Value = job.json()?;
///     if order["to"].is_null() {
///         return Err(NonRetryable::new("no recipient").into());
///     }
///     Output::json(&serde_json::json!({"sent": true}))
/// })
/// .concurrency(16)
/// .run()
/// .await
/// # }
/// ```
pub struct Worker {
    pub(crate) client: Client,
    pub(crate) queues: Vec<String>,
    pub(crate) handler: HandlerFn,
    pub(crate) concurrency: usize,
    pub(crate) lease: Duration,
    pub(crate) worker_id: String,
    pub(crate) grace: Duration,
    pub(crate) handle_signals: bool,
    pub(crate) stop: CancellationToken,
    pub(crate) on_ready: Option<Ready>,
}

/// A callback run once a worker runs.
pub(crate) type Ready = Box<dyn FnOnce() + Send + Sync>;

impl std::fmt::Debug for Worker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Worker")
            .field("queues", &self.queues)
            .field("concurrency", &self.concurrency)
            .field("lease", &self.lease)
            .field("worker_id", &self.worker_id)
            .field("grace", &self.grace)
            .finish_non_exhaustive()
    }
}

impl Worker {
    /// A worker of `queues` (1-16) running `handler` for each job; concurrency 1,
    /// lease 30 s, grace 30 s, stopping on SIGINT/SIGTERM.
    pub fn new<Q, F, Fut>(client: Client, queues: impl IntoIterator<Item = Q>, handler: F) -> Worker
    where
        Q: Into<String>,
        F: Fn(ActiveJob) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = std::result::Result<Output, HandlerError>> + Send + 'static,
    {
        Worker {
            client,
            queues: queues.into_iter().map(Into::into).collect(),
            handler: Arc::new(move |job| Box::pin(handler(job))),
            concurrency: 1,
            lease: Duration::from_secs(30),
            worker_id: format!("rust-{}", std::process::id()),
            grace: Duration::from_secs(30),
            handle_signals: true,
            stop: CancellationToken::new(),
            on_ready: None,
        }
    }

    /// How many handlers run at once (1-1000; default 1): also the Work stream's
    /// capacity, so the service hands out no more.
    pub fn concurrency(mut self, concurrency: usize) -> Worker {
        self.concurrency = concurrency;
        self
    }

    /// The lease of each job the worker takes (default 30 s): the worker extends it
    /// while the handler runs, so a job whose worker dies is handed out again after
    /// at most this long.
    pub fn lease(mut self, lease: Duration) -> Worker {
        self.lease = lease;
        self
    }

    /// Recorded on each job as the worker that claimed it (default `rust-<pid>`).
    pub fn worker_id(mut self, id: impl Into<String>) -> Worker {
        self.worker_id = id.into();
        self
    }

    /// How long in-flight handlers may take to finish once stopped (default 30 s).
    /// When it ends, their `cancelled` is set and their jobs go back to the queue
    /// (the attempt counted).
    pub fn grace(mut self, grace: Duration) -> Worker {
        self.grace = grace;
        self
    }

    /// Whether SIGINT and SIGTERM stop the worker (default true; a second signal
    /// ends the grace period at once).
    pub fn handle_signals(mut self, handle: bool) -> Worker {
        self.handle_signals = handle;
        self
    }

    /// A handle that stops the worker from anywhere (a handler included).
    pub fn stop_handle(&self) -> StopHandle {
        StopHandle(self.stop.clone())
    }

    /// Calls `ready` once [`run`](Worker::run) is running: its SIGINT/SIGTERM
    /// handlers are installed (a signal from then on drains it) and its first
    /// stream is being opened. For a readiness report.
    pub fn on_ready(mut self, ready: impl FnOnce() + Send + Sync + 'static) -> Worker {
        self.on_ready = Some(Box::new(ready));
        self
    }

    /// Works until stopped; `Ok` after a drain. Fails at once with InvalidArgument
    /// for bad settings (naming them), and with the service's error when it refuses
    /// the stream for good (PermissionDenied, Unauthenticated, InvalidArgument);
    /// any other stream error reconnects.
    pub async fn run(self) -> Result<()> {
        self.validate()?;
        engine::Engine::new(self).run().await
    }

    fn validate(&self) -> Result<()> {
        if self.queues.is_empty() || self.queues.len() > 16 {
            return Err(Error::invalid("queues", "name 1-16 queues"));
        }
        for (i, queue) in self.queues.iter().enumerate() {
            check_name(&format!("queues[{i}]"), queue)?;
        }
        if !(1..=1000).contains(&self.concurrency) {
            return Err(Error::invalid("concurrency", "must be 1-1000"));
        }
        if self.lease < Duration::from_millis(1) {
            return Err(Error::invalid("lease", "must be positive"));
        }
        if self.worker_id.len() > 256 {
            return Err(Error::invalid("worker_id", "longer than 256 bytes"));
        }
        Ok(())
    }
}

/// Stops a [`Worker`] or [`ScheduleWorker`](crate::ScheduleWorker): its `run()`
/// drains and returns.
#[derive(Debug, Clone)]
pub struct StopHandle(pub(crate) CancellationToken);

impl StopHandle {
    /// Asks the worker to stop (idempotent).
    pub fn stop(&self) {
        self.0.cancel();
    }

    /// Whether stop was asked.
    pub fn is_stopped(&self) -> bool {
        self.0.is_cancelled()
    }
}

/// SIGINT or SIGTERM (Ctrl-C elsewhere than Unix), for the workers' drains.
pub(crate) struct Signals {
    #[cfg(unix)]
    term: tokio::signal::unix::Signal,
    #[cfg(unix)]
    int: tokio::signal::unix::Signal,
}

impl Signals {
    pub(crate) fn new() -> Result<Signals> {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{signal, SignalKind};
            let watch = |kind| {
                signal(kind).map_err(|e| {
                    Error::new(
                        crate::ErrorKind::Internal,
                        format!("cannot watch signals: {e}"),
                    )
                })
            };
            Ok(Signals {
                term: watch(SignalKind::terminate())?,
                int: watch(SignalKind::interrupt())?,
            })
        }
        #[cfg(not(unix))]
        Ok(Signals {})
    }

    /// The next SIGINT or SIGTERM.
    pub(crate) async fn recv(&mut self) {
        #[cfg(unix)]
        tokio::select! {
            _ = self.term.recv() => {}
            _ = self.int.recv() => {}
        }
        #[cfg(not(unix))]
        let _ = tokio::signal::ctrl_c().await;
    }
}
