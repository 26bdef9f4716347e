//! `lua/fail_job.lua`: record a failed attempt; retry after the backoff, or dead.

use super::{ack_job::lease_guarded, job_head, prelude::*};
use crate::domain::{Failed, Failure, JobState, LeaseCheck};

script!(FailJob<'_>: "fail_job", Job, Arity::Exactly(2), Arity::Exactly(14));

pub(crate) struct FailJob<'a> {
    pub(crate) id: &'a str,
    pub(crate) token: &'a str,
    pub(crate) failure: &'a Failure,
    /// Uniform in [0, 1), for the backoff's jitter.
    pub(crate) random: f64,
}

/// A failed attempt FailJob recorded.
#[derive(Debug)]
pub(crate) struct FailedJob {
    /// What became of the job: retried later, or dead.
    pub(crate) failed: Failed,
    /// The namespace must be put in the prune due-set (the job went dead).
    pub(crate) register: bool,
    /// The job's queue.
    pub(crate) queue: String,
}

impl Operation for FailJob<'_> {
    type Output = LeaseCheck<FailedJob>;

    fn encode(&self, keys: &NamespaceKeys, call: &mut Call) {
        job_head(keys, call);
        call.arg("id", self.id)
            .arg("token", self.token)
            .arg("error", &self.failure.error)
            .opt("retry_after_ms", self.failure.retry_after_ms)
            .flag("non_retryable", self.failure.non_retryable)
            .arg("random", self.random.to_string());
    }

    fn decode(&self, mut reply: Reply) -> Result<Self::Output, StoreError> {
        lease_guarded(&mut reply, |reply| {
            reply.int()?; // Redis now
            let failed = Failed {
                state: reply.word(JobState::parse)?,
                run_at_ms: reply.opt_int()?,
            };
            Ok(FailedJob {
                failed,
                register: reply.flag()?,
                queue: reply.text()?,
            })
        })
    }
}

#[cfg(test)]
pub(super) fn sample() -> FailJob<'static> {
    use std::sync::LazyLock;
    static FAILURE: LazyLock<Failure> = LazyLock::new(|| Failure {
        error: "e".into(),
        retry_after_ms: None,
        non_retryable: false,
    });
    FailJob {
        id: "j",
        token: "t",
        failure: &FAILURE,
        random: 0.5,
    }
}
