//! What a job handler gets ([`ActiveJob`]) and returns ([`Output`],
//! [`HandlerError`], [`NonRetryable`]), and how it reports [`Progress`].

use std::{collections::HashMap, fmt, time::Duration};

use serde::{de::DeserializeOwned, Serialize};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::{proto, time::system_time};

/// A job handed to a handler: the claimed job, its `cancelled` token, and
/// [`progress`](ActiveJob::progress).
pub struct ActiveJob {
    pub(crate) job: proto::ClaimedJob,
    pub(crate) cancelled: CancellationToken,
    pub(crate) events: mpsc::UnboundedSender<super::engine::Event>,
}

impl fmt::Debug for ActiveJob {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ActiveJob")
            .field("id", &self.job.job_id)
            .field("queue", &self.job.queue)
            .field("name", &self.job.name)
            .field("attempt", &self.job.attempt)
            .finish_non_exhaustive()
    }
}

impl ActiveJob {
    /// The job's id.
    pub fn id(&self) -> &str {
        &self.job.job_id
    }

    /// The queue it came from.
    pub fn queue(&self) -> &str {
        &self.job.queue
    }

    /// What the job is (its enqueue's `name`).
    pub fn name(&self) -> &str {
        &self.job.name
    }

    /// The payload, as enqueued (opaque bytes).
    pub fn payload(&self) -> &[u8] {
        &self.job.payload
    }

    /// The payload parsed as JSON, when the handler asks: the library never
    /// guesses an encoding. A payload that is not valid JSON for `T` is an error
    /// (which, returned with `?`, fails the attempt).
    pub fn json<T: DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        serde_json::from_slice(&self.job.payload)
    }

    /// The string headers, as enqueued.
    pub fn headers(&self) -> &HashMap<String, String> {
        &self.job.headers
    }

    /// This attempt's number, from 1.
    pub fn attempt(&self) -> u32 {
        self.job.attempt
    }

    /// How many attempts the job has in all.
    pub fn max_attempts(&self) -> u32 {
        self.job.max_attempts
    }

    /// The last checkpoint an earlier attempt reported ([`Progress::checkpoint`]);
    /// empty when none.
    pub fn checkpoint(&self) -> &[u8] {
        &self.job.checkpoint
    }

    /// When the job was enqueued (the service's clock).
    pub fn create_time(&self) -> Option<std::time::SystemTime> {
        system_time(self.job.create_time.as_ref())
    }

    /// Set when a cancel is requested for this job (CancelJob while it runs), or
    /// when its lease is lost, or when the worker's grace period ends: stop, and
    /// return (an error fails the job, which then ends CANCELLED when a cancel was
    /// requested; an `Ok` completes it).
    ///
    /// ```no_run
    /// # async fn f(job: dueq_client::ActiveJob) -> Result<dueq_client::Output, dueq_client::HandlerError> {
    /// tokio::select! {
    ///     _ = job.cancelled().cancelled() => Err(dueq_client::HandlerError::msg("cancelled")),
    ///     _ = tokio::time::sleep(std::time::Duration::from_secs(60)) => Ok(dueq_client::Output::none()),
    /// }
    /// # }
    /// ```
    pub fn cancelled(&self) -> &CancellationToken {
        &self.cancelled
    }

    /// Whether [`cancelled`](ActiveJob::cancelled) is set.
    pub fn is_cancelled(&self) -> bool {
        self.cancelled.is_cancelled()
    }

    /// Reports how far the job got: sent at once on the Work stream with a lease
    /// extension (one script call on the service), shown by GetJob. Each field
    /// set replaces the stored one; unset ones keep it.
    pub fn progress(&self, progress: Progress) {
        // The worker outlives its handlers; a send fails only once it has stopped.
        let _ = self.events.send(super::engine::Event::Progress {
            job_id: self.job.job_id.clone(),
            token: self.job.lease_token.clone(),
            progress: progress.0,
        });
    }

    /// Set when the job is a node of a flow ([`Client::enqueue_flow`]): the flow's
    /// id; empty otherwise.
    ///
    /// [`Client::enqueue_flow`]: crate::Client::enqueue_flow
    pub fn flow_id(&self) -> &str {
        &self.job.flow_id
    }

    /// Its ref in its flow; empty when not a flow node.
    pub fn flow_ref(&self) -> &str {
        &self.job.flow_ref
    }

    /// Its direct dependencies, in `after` order, as the claim found them: ref,
    /// job id and state (COMPLETED or SKIPPED; DEAD or CANCELLED only under
    /// [`DependencyFailure::Run`](crate::DependencyFailure::Run)).
    pub fn dependencies(&self) -> &[proto::JobDependency] {
        &self.job.dependencies
    }

    /// The COMPLETED dependencies' results, by ref, as many as fit the claim's
    /// reply. A completed dependency whose ref is missing here did not fit: read
    /// its result with [`Client::get_job`](crate::Client::get_job) (its id is in
    /// [`dependencies`](ActiveJob::dependencies)).
    pub fn dependency_results(&self) -> &HashMap<String, Vec<u8>> {
        &self.job.dependency_results
    }

    /// The result of dependency `reference` parsed as JSON; `None` when it is not
    /// in [`dependency_results`](ActiveJob::dependency_results).
    pub fn dependency_json<T: DeserializeOwned>(
        &self,
        reference: &str,
    ) -> Option<Result<T, serde_json::Error>> {
        self.job
            .dependency_results
            .get(reference)
            .map(|bytes| serde_json::from_slice(bytes))
    }

    /// The claimed job as the service sent it (schedule, priority, deadline...).
    pub fn claimed(&self) -> &proto::ClaimedJob {
        &self.job
    }
}

/// A progress report: a fraction (0.0-1.0), a message for people (up to 256
/// bytes), a checkpoint for the next attempt (up to 64 KiB).
///
/// ```no_run
/// # fn f(job: &dueq_client::ActiveJob) {
/// use dueq_client::Progress;
/// job.progress(Progress::new().fraction(0.4).message("row 400").checkpoint(b"row=400".to_vec()));
/// # }
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Progress(pub(crate) proto::JobProgress);

impl Progress {
    /// An empty report (changes nothing but the report time).
    pub fn new() -> Progress {
        Progress::default()
    }

    /// How far, 0.0-1.0.
    pub fn fraction(mut self, fraction: f64) -> Progress {
        self.0.fraction = Some(fraction);
        self
    }

    /// Free text for people.
    pub fn message(mut self, message: impl Into<String>) -> Progress {
        self.0.message = Some(message.into());
        self
    }

    /// Opaque bytes handed to the next attempt if this one fails.
    pub fn checkpoint(mut self, checkpoint: impl Into<Vec<u8>>) -> Progress {
        self.0.checkpoint = Some(checkpoint.into());
        self
    }

    /// A report from a JSON object's fields `fraction`, `message` and
    /// `checkpoint` (a string); other fields are ignored.
    pub fn from_json(value: &serde_json::Value) -> Progress {
        let mut p = Progress::new();
        p.0.fraction = value.get("fraction").and_then(serde_json::Value::as_f64);
        p.0.message = value
            .get("message")
            .and_then(|m| m.as_str())
            .map(str::to_owned);
        p.0.checkpoint = value
            .get("checkpoint")
            .and_then(|c| c.as_str())
            .map(|c| c.as_bytes().to_vec());
        p
    }
}

/// What a handler returns with `Ok`: the job's result, stored with the completed
/// job (GetJob's `result`, up to 64 KiB), or nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Output(pub(crate) Vec<u8>);

impl Output {
    /// No result.
    pub fn none() -> Output {
        Output(Vec::new())
    }

    /// These bytes as the result.
    pub fn bytes(bytes: impl Into<Vec<u8>>) -> Output {
        Output(bytes.into())
    }

    /// `value` encoded as JSON as the result: the tail of a handler
    /// (`Output::json(&value)`), an error if it cannot be encoded.
    pub fn json<T: Serialize + ?Sized>(value: &T) -> Result<Output, HandlerError> {
        Ok(Output(serde_json::to_vec(value)?))
    }

    /// The result's bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }
}

impl From<()> for Output {
    fn from(_: ()) -> Output {
        Output::none()
    }
}

impl From<Vec<u8>> for Output {
    fn from(bytes: Vec<u8>) -> Output {
        Output(bytes)
    }
}

/// An error that makes the job dead at once, whatever attempts it has left:
/// return it from a handler (`Err(NonRetryable::new("bad address").into())`, or
/// with `?`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NonRetryable(String);

impl NonRetryable {
    /// A non-retryable failure with this message (recorded in the job's errors).
    pub fn new(message: impl Into<String>) -> NonRetryable {
        NonRetryable(message.into())
    }
}

impl fmt::Display for NonRetryable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for NonRetryable {}

/// Why a handler failed its job: any error converts into it with `?` (the job is
/// retried after its backoff), a [`NonRetryable`] makes the job dead at once.
/// The message is recorded in the job's errors.
#[derive(Debug)]
pub struct HandlerError {
    pub(crate) message: String,
    pub(crate) non_retryable: bool,
    pub(crate) retry_after: Option<Duration>,
}

impl HandlerError {
    /// A retryable failure with this message.
    pub fn msg(message: impl fmt::Display) -> HandlerError {
        HandlerError {
            message: message.to_string(),
            non_retryable: false,
            retry_after: None,
        }
    }

    /// A failure that makes the job dead at once.
    pub fn non_retryable(message: impl fmt::Display) -> HandlerError {
        HandlerError {
            non_retryable: true,
            ..HandlerError::msg(message)
        }
    }

    /// Retry after this long instead of the job's backoff.
    pub fn retry_after(mut self, wait: Duration) -> HandlerError {
        self.retry_after = Some(wait);
        self
    }

    /// The message recorded with the failure.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// Whether the job is made dead at once.
    pub fn is_non_retryable(&self) -> bool {
        self.non_retryable
    }
}

impl fmt::Display for HandlerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl<E: std::error::Error + Send + Sync + 'static> From<E> for HandlerError {
    fn from(error: E) -> HandlerError {
        let boxed: Box<dyn std::error::Error + Send + Sync> = Box::new(error);
        let non_retryable = boxed.downcast_ref::<NonRetryable>().is_some();
        HandlerError {
            message: boxed.to_string(),
            non_retryable,
            retry_after: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn non_retryable_converts_as_such_and_other_errors_do_not() {
        let e: HandlerError = NonRetryable::new("planned fatal").into();
        assert!(e.is_non_retryable());
        assert_eq!(e.message(), "planned fatal");
        let e: HandlerError = std::io::Error::other("disk").into();
        assert!(!e.is_non_retryable());
        assert_eq!(e.message(), "disk");
        assert!(HandlerError::non_retryable("x").is_non_retryable());
    }

    #[test]
    fn output_json_encodes_the_value() {
        let out = Output::json(&serde_json::json!({"ok": true})).unwrap();
        assert_eq!(out.as_bytes(), br#"{"ok":true}"#);
        assert_eq!(Output::from(()).as_bytes(), b"");
    }

    #[test]
    fn progress_from_json_takes_the_known_fields() {
        let p =
            Progress::from_json(&serde_json::json!({"fraction": 0.5, "message": "half", "x": 1}));
        assert_eq!(p.0.fraction, Some(0.5));
        assert_eq!(p.0.message.as_deref(), Some("half"));
        assert_eq!(p.0.checkpoint, None);
    }

    #[test]
    fn a_flow_node_shows_its_flow_dependencies_and_their_results() {
        let mut job = proto::ClaimedJob {
            job_id: "j-d".into(),
            flow_id: "f".into(),
            flow_ref: "d".into(),
            dependencies: vec![
                proto::JobDependency {
                    r#ref: "b".into(),
                    job_id: "j-b".into(),
                    state: proto::JobState::Completed as i32,
                },
                proto::JobDependency {
                    r#ref: "c".into(),
                    job_id: "j-c".into(),
                    state: proto::JobState::Dead as i32,
                },
            ],
            ..Default::default()
        };
        job.dependency_results
            .insert("b".into(), br#"{"n":1}"#.to_vec());
        let (events, _) = mpsc::unbounded_channel();
        let active = ActiveJob {
            job,
            cancelled: CancellationToken::new(),
            events,
        };
        assert_eq!((active.flow_id(), active.flow_ref()), ("f", "d"));
        let states: Vec<_> = active.dependencies().iter().map(|d| d.state()).collect();
        assert_eq!(states, [proto::JobState::Completed, proto::JobState::Dead]);
        assert_eq!(active.dependency_results().len(), 1);
        let n: serde_json::Value = active.dependency_json("b").unwrap().unwrap();
        assert_eq!(n, serde_json::json!({"n": 1}));
        assert!(active.dependency_json::<serde_json::Value>("c").is_none());
    }
}
