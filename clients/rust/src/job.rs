//! What to enqueue: [`Job`], a builder over `EnqueueRequest`, and what an enqueue
//! answers, [`Enqueued`].

use std::time::{Duration, SystemTime};

use serde::Serialize;

use crate::{
    error::{Error, Result},
    proto,
    time::{duration, timestamp},
};

pub use proto::{DedupMode, EnqueueOutcome, JobState};

/// Longest queue name, job name, job id or dedup key the service accepts, in bytes.
pub(crate) const MAX_NAME: usize = 256;

/// A job to enqueue: queue, name and payload, and the options of
/// `EnqueueRequest` (see proto/dueq/v1/jobs.proto for each one's rules).
///
/// ```no_run
/// # async fn f(client: dueq_client::Client) -> dueq_client::Result<()> {
/// use std::time::Duration;
/// use dueq_client::{Backoff, Job};
/// let job = Job::new("emails", "welcome", b"hi".to_vec())
///     .priority(5)
///     .delay(Duration::from_secs(60))
///     .max_attempts(7)
///     .backoff(Backoff::exponential(Duration::from_secs(2), Duration::from_secs(600)))
///     .header("tenant", "acme");
/// let enqueued = client.enqueue(job).await?;
/// println!("{} {:?}", enqueued.job_id, enqueued.outcome);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Job {
    pub(crate) request: proto::EnqueueRequest,
    /// A problem found while building (a value that did not encode as JSON),
    /// reported by the enqueue before anything is sent.
    pub(crate) invalid: Option<Error>,
}

impl Job {
    /// A job of `name` in `queue` carrying `payload` as given (opaque bytes).
    pub fn new(
        queue: impl Into<String>,
        name: impl Into<String>,
        payload: impl Into<Vec<u8>>,
    ) -> Job {
        Job {
            request: proto::EnqueueRequest {
                queue: queue.into(),
                name: name.into(),
                payload: payload.into(),
                ..Default::default()
            },
            invalid: None,
        }
    }

    /// A job whose payload is `value` encoded as JSON. A value that cannot be
    /// encoded makes the enqueue fail with InvalidArgument naming `payload`, before
    /// anything is sent.
    pub fn json<T: Serialize + ?Sized>(
        queue: impl Into<String>,
        name: impl Into<String>,
        value: &T,
    ) -> Job {
        match serde_json::to_vec(value) {
            Ok(payload) => Job::new(queue, name, payload),
            Err(e) => {
                let mut job = Job::new(queue, name, Vec::new());
                job.invalid = Some(Error::invalid(
                    "payload",
                    format!("cannot encode as JSON: {e}"),
                ));
                job
            }
        }
    }

    /// Higher runs first; equal priorities run in enqueue order. Default 0.
    pub fn priority(mut self, priority: i32) -> Job {
        self.request.priority = priority;
        self
    }

    /// Claimable only after this long (replaces [`run_at`](Job::run_at)).
    pub fn delay(mut self, delay: Duration) -> Job {
        self.request.when = Some(proto::enqueue_request::When::Delay(duration(delay)));
        self
    }

    /// Claimable only from this instant (replaces [`delay`](Job::delay)).
    pub fn run_at(mut self, at: SystemTime) -> Job {
        self.request.when = Some(proto::enqueue_request::When::RunAt(timestamp(at)));
        self
    }

    /// The job's id, an idempotency key: if a job with this id exists in the
    /// namespace, nothing is written and the answer is a duplicate.
    pub fn job_id(mut self, id: impl Into<String>) -> Job {
        self.request.job_id = id.into();
        self
    }

    /// A deduplication key, live for `ttl`: while it holds, an enqueue with the
    /// same key does what [`dedup_mode`](Job::dedup_mode) says (default: skip).
    pub fn dedup(mut self, key: impl Into<String>, ttl: Duration) -> Job {
        self.request.dedup_key = key.into();
        self.request.dedup_ttl = Some(duration(ttl));
        self
    }

    /// What an enqueue does when its dedup key is held.
    pub fn dedup_mode(mut self, mode: DedupMode) -> Job {
        self.request.dedup_mode = mode as i32;
        self
    }

    /// How many times the job may be claimed before it is dead, 1-1000 (default 3).
    pub fn max_attempts(mut self, attempts: u32) -> Job {
        self.request.max_attempts = Some(attempts);
        self
    }

    /// The wait before each retry.
    pub fn backoff(mut self, backoff: Backoff) -> Job {
        self.request.backoff = Some(backoff.0);
        self
    }

    /// One string header for the worker.
    pub fn header(mut self, key: impl Into<String>, value: impl Into<String>) -> Job {
        self.request.headers.insert(key.into(), value.into());
        self
    }

    /// String headers for the worker (added to those already set).
    pub fn headers<K: Into<String>, V: Into<String>>(
        mut self,
        headers: impl IntoIterator<Item = (K, V)>,
    ) -> Job {
        self.request
            .headers
            .extend(headers.into_iter().map(|(k, v)| (k.into(), v.into())));
        self
    }

    /// The lease of a claim that does not set one (default 30 s).
    pub fn lease(mut self, lease: Duration) -> Job {
        self.request.lease = Some(duration(lease));
        self
    }

    /// Anything else of `EnqueueRequest` (retention, flow keys): edit the request.
    pub fn with_request(mut self, edit: impl FnOnce(&mut proto::EnqueueRequest)) -> Job {
        edit(&mut self.request);
        self
    }

    /// The request to send in `namespace`, after the checks made before sending:
    /// the queue and name are 1-256 bytes, the payload at most `max_payload`.
    /// `field` prefixes the names of bad fields (`jobs[2].` in a batch).
    pub(crate) fn into_request(
        self,
        namespace: &str,
        max_payload: usize,
        field: &str,
    ) -> Result<proto::EnqueueRequest> {
        if let Some(e) = self.invalid {
            return Err(Error::new(e.kind(), format!("{field}{}", e.message())));
        }
        let mut request = self.request;
        check_name(&format!("{field}queue"), &request.queue)?;
        check_name(&format!("{field}name"), &request.name)?;
        if request.payload.len() > max_payload {
            return Err(Error::invalid(
                &format!("{field}payload"),
                format!(
                    "{} bytes is over the client's max_payload_size of {max_payload} bytes",
                    request.payload.len()
                ),
            ));
        }
        if request.job_id.len() > MAX_NAME {
            return Err(Error::invalid(
                &format!("{field}job_id"),
                "longer than 256 bytes",
            ));
        }
        if request.max_attempts == Some(0) {
            return Err(Error::invalid(
                &format!("{field}max_attempts"),
                "must be 1-1000",
            ));
        }
        request.namespace = namespace.to_owned();
        Ok(request)
    }
}

/// Checks a queue or job name: 1-256 bytes.
pub(crate) fn check_name(field: &str, value: &str) -> Result<()> {
    if value.is_empty() {
        return Err(Error::invalid(field, "must not be empty"));
    }
    if value.len() > MAX_NAME {
        return Err(Error::invalid(
            field,
            format!("{} bytes is longer than 256", value.len()),
        ));
    }
    Ok(())
}

/// The wait between a failed attempt and the next.
#[derive(Debug, Clone, PartialEq)]
pub struct Backoff(pub(crate) proto::Backoff);

impl Backoff {
    /// Always wait `base`.
    pub fn fixed(base: Duration) -> Backoff {
        Backoff(proto::Backoff {
            kind: proto::BackoffKind::Fixed as i32,
            base: Some(duration(base)),
            cap: None,
            jitter: 0.0,
        })
    }

    /// Wait `base * 2^(attempt-1)`, at most `cap`.
    pub fn exponential(base: Duration, cap: Duration) -> Backoff {
        Backoff(proto::Backoff {
            kind: proto::BackoffKind::Exponential as i32,
            base: Some(duration(base)),
            cap: Some(duration(cap)),
            jitter: 0.0,
        })
    }

    /// Shorten each wait by a random fraction of up to `jitter` (0.0-1.0) of itself.
    pub fn jitter(mut self, jitter: f64) -> Backoff {
        self.0.jitter = jitter;
        self
    }
}

/// What an enqueue did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Enqueued {
    /// The job's id: the new job's, or the existing one's for a duplicate.
    pub job_id: String,
    /// Created, or a duplicate (replaced, extended) of an existing job.
    pub outcome: EnqueueOutcome,
    /// The job's state after the call.
    pub state: JobState,
}

impl Enqueued {
    /// Whether nothing new was stored: a job with this id or dedup key existed.
    pub fn is_duplicate(&self) -> bool {
        self.outcome != EnqueueOutcome::Created
    }

    pub(crate) fn from_proto(reply: proto::EnqueueResponse) -> Enqueued {
        Enqueued {
            outcome: reply.outcome(),
            state: reply.state(),
            job_id: reply.job_id,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorKind;

    const MIB: usize = 1024 * 1024;

    #[test]
    fn an_empty_queue_or_name_is_refused_naming_it() {
        let e = Job::new("", "n", b"x".to_vec())
            .into_request("ns", MIB, "")
            .unwrap_err();
        assert_eq!(
            (e.kind(), e.message()),
            (ErrorKind::InvalidArgument, "queue: must not be empty")
        );
        let e = Job::new("q", "", b"x".to_vec())
            .into_request("ns", MIB, "jobs[2].")
            .unwrap_err();
        assert_eq!(e.message(), "jobs[2].name: must not be empty");
    }

    #[test]
    fn a_payload_over_the_limit_is_refused_naming_it() {
        Job::new("q", "n", vec![0; MIB])
            .into_request("ns", MIB, "")
            .unwrap();
        let e = Job::new("q", "n", vec![0; MIB + 1])
            .into_request("ns", MIB, "")
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument);
        assert!(e.message().starts_with("payload: 1048577 bytes"), "{e}");
    }

    #[test]
    fn json_encodes_only_when_asked() {
        let r = Job::json("q", "n", &serde_json::json!({"n": 1}))
            .into_request("ns", MIB, "")
            .unwrap();
        assert_eq!(r.payload, br#"{"n":1}"#);
        let r = Job::new("q", "n", "{not json")
            .into_request("ns", MIB, "")
            .unwrap();
        assert_eq!(r.payload, b"{not json");
    }

    #[test]
    fn a_value_that_is_not_json_is_refused_naming_the_payload() {
        let mut map = std::collections::HashMap::new();
        map.insert(vec![1u8], 1); // a map with non-string keys has no JSON form
        let e = Job::json("q", "n", &map)
            .into_request("ns", MIB, "")
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument);
        assert!(
            e.message().starts_with("payload: cannot encode as JSON"),
            "{e}"
        );
    }

    #[test]
    fn the_options_reach_the_request() {
        let r = Job::new("q", "n", b"raw".to_vec())
            .priority(5)
            .delay(Duration::from_secs(60))
            .job_id("p-1")
            .header("h", "v")
            .max_attempts(7)
            .backoff(Backoff::exponential(
                Duration::from_secs(2),
                Duration::from_secs(60),
            ))
            .dedup("d", Duration::from_secs(5))
            .into_request("ns", MIB, "")
            .unwrap();
        assert_eq!(r.namespace, "ns");
        assert_eq!(r.priority, 5);
        assert_eq!(r.job_id, "p-1");
        assert_eq!(r.headers.get("h").map(String::as_str), Some("v"));
        assert_eq!(r.max_attempts, Some(7));
        assert_eq!(r.backoff.unwrap().kind(), proto::BackoffKind::Exponential);
        assert_eq!(r.dedup_key, "d");
        assert!(matches!(r.when, Some(proto::enqueue_request::When::Delay(d)) if d.seconds == 60));
    }
}
