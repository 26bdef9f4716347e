//! `lua/enqueue_jobs.lua`: store a batch of jobs in one script call (a single
//! Enqueue is a batch of one; concurrent ones are grouped, see `jobs::coalesce`).

use super::{job_prefixes, prelude::*};
use crate::domain::{EnqueueOutcome, Enqueued, JobSpec, JobState, RunAt, SCHEDULE_SCHEMA};

script!(EnqueueJobs<'_>: 
    "enqueue_jobs",
    Job,
    Arity::Exactly(2),
    Arity::Groups {
        fixed: 11,
        group: 19
    }
);

pub(crate) struct EnqueueJobs<'a> {
    pub(crate) namespace: &'a str,
    pub(crate) jobs: &'a [JobSpec],
    /// Most unfinished jobs the namespace may hold (`--max-jobs-per-namespace`; 0:
    /// no limit). A create beyond it is refused per job, nothing written for it.
    pub(crate) max_jobs: u64,
}

impl Operation for EnqueueJobs<'_> {
    /// One result per job, in order: a job refused by the quota is
    /// `StoreError::Quota`, the others are unaffected.
    type Output = Vec<Result<Enqueued, StoreError>>;

    fn encode(&self, keys: &NamespaceKeys, call: &mut Call) {
        call.key(keys.meta()).key(keys.jobs_done());
        job_prefixes(keys, call);
        call.arg("schema", SCHEDULE_SCHEMA)
            .arg("count", self.jobs.len())
            .arg("max_jobs", self.max_jobs);
        for spec in self.jobs {
            encode_job(call, spec);
        }
    }

    fn decode(&self, mut reply: Reply) -> Result<Self::Output, StoreError> {
        let mut results = Vec::with_capacity(self.jobs.len());
        for _ in self.jobs {
            let outcome = reply.text()?;
            if outcome == "quota" {
                let _id = reply.text()?;
                let _state = reply.text()?;
                results.push(Err(StoreError::Quota {
                    namespace: self.namespace.to_owned(),
                    what: "jobs".into(),
                    limit: self.max_jobs,
                }));
                continue;
            }
            let outcome = EnqueueOutcome::parse(&outcome)
                .ok_or_else(|| StoreError::corrupt("enqueue_jobs", format!("outcome {outcome:?}")))?;
            results.push(Ok(Enqueued {
                outcome,
                id: reply.text()?,
                state: reply.word(JobState::parse)?,
            }));
        }
        reply.finish()?;
        Ok(results)
    }
}

/// The 19 values of one job, in the order `spec(i)` in the script reads them.
pub(super) fn encode_job(call: &mut Call, spec: &JobSpec) {
    call.arg("id", &spec.id)
        .arg("queue", &spec.queue)
        .arg("name", &spec.name)
        .arg("payload", spec.payload.as_slice())
        .arg("headers", records::headers_json(&spec.headers))
        .arg("priority", spec.priority);
    match spec.run_at {
        RunAt::Now => call.arg("when", "").arg("when_ms", ""),
        RunAt::AtMs(ms) => call.arg("when", "at").arg("when_ms", ms),
        RunAt::DelayMs(ms) => call.arg("when", "delay").arg("when_ms", ms),
    };
    let backoff = &spec.backoff;
    call.arg("max_attempts", spec.max_attempts)
        .arg("backoff", backoff.kind.as_str())
        .arg("base_ms", backoff.base_ms)
        .arg("cap_ms", backoff.cap_ms)
        .arg("jitter", backoff.jitter.to_string())
        .arg("lease_ms", spec.lease_ms);
    match &spec.dedup {
        Some(d) => call
            .arg("dedup_key", &d.key)
            .arg("dedup_ttl_ms", d.ttl_ms)
            .arg("dedup_mode", d.mode.as_str()),
        None => call
            .arg("dedup_key", "")
            .arg("dedup_ttl_ms", "")
            .arg("dedup_mode", ""),
    };
    call.arg("retain", spec.retention.record_text())
        .arg("flow", spec.flow.record_text());
}

#[cfg(test)]
pub(super) fn sample() -> EnqueueJobs<'static> {
    use std::sync::LazyLock;
    static SPEC: LazyLock<JobSpec> = LazyLock::new(|| JobSpec {
        id: "j".into(),
        queue: "q".into(),
        name: "n".into(),
        payload: Vec::new(),
        headers: Default::default(),
        priority: 0,
        run_at: RunAt::Now,
        max_attempts: 3,
        backoff: Default::default(),
        lease_ms: 30_000,
        dedup: None,
        retention: Default::default(),
        flow: Default::default(),
    });
    static JOBS: LazyLock<Vec<JobSpec>> = LazyLock::new(|| vec![SPEC.clone(), SPEC.clone()]);
    EnqueueJobs {
        namespace: "ns",
        jobs: &JOBS,
        max_jobs: 0,
    }
}
