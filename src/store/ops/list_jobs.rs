//! `lua/list_jobs.lua`: one page of a queue's jobs in enqueue order.

use super::{job_prefixes, prelude::*};
use crate::{
    domain::{limits::PageShape, JobFilter, JobRecord, JobState},
    store::packed_job::read_job,
};

script!(ListJobs<'_>: "list_jobs", Job, Arity::Exactly(1), Arity::Exactly(22));

/// Jobs one filtered call (a [`JobFilter`] with a part set, ListJobs or a bulk
/// query) examines at most (issue 33): well under 5 ms of records, which hold no
/// large payload (those live in a key of their own).
pub(crate) const FILTER_BUDGET: usize = 500;

/// ARGV `filter` (lua/lib/job.lua `manage.filter`): the seven parts, '' when unset.
pub(crate) fn filter_args(filter: &JobFilter, call: &mut Call) {
    call.arg("filter", &filter.name)
        .arg("filter", &filter.dedup_key)
        .arg("filter", &filter.header_key)
        .arg("filter", &filter.header_value)
        .arg("filter", &filter.error_contains)
        .opt("filter", filter.created_after)
        .opt("filter", filter.created_before);
}

pub(crate) struct ListJobs<'a> {
    pub(crate) queue: &'a str,
    /// Exclusive lower bound job number (`None` = from the start).
    pub(crate) after: Option<i64>,
    pub(crate) page: PageShape,
    pub(crate) state: Option<JobState>,
    pub(crate) filter: &'a JobFilter,
}

impl ListJobs<'_> {
    /// Jobs one call examines at most: a filtered page may have to skip many.
    fn budget(&self) -> usize {
        if !self.filter.is_empty() {
            FILTER_BUDGET
        } else if self.state.is_some() {
            (self.page.size * 10).min(5000)
        } else {
            self.page.size
        }
    }
}

/// One page of a queue's jobs.
#[derive(Debug)]
pub(crate) struct ListedJobs {
    pub(crate) jobs: Vec<JobRecord>,
    /// The job number to continue after, if more may follow.
    pub(crate) next_after: Option<i64>,
    /// Jobs the call examined (matching or not).
    pub(crate) scanned: u64,
}

impl Operation for ListJobs<'_> {
    type Output = ListedJobs;

    fn encode(&self, keys: &NamespaceKeys, call: &mut Call) {
        call.key(keys.meta());
        job_prefixes(keys, call);
        call.arg("queue", self.queue)
            .opt("after", self.after)
            .arg("page_size", self.page.size)
            .arg("state", self.state.map(JobState::as_str).unwrap_or(""))
            .arg("budget", self.budget())
            .arg("full", if self.page.full { "1" } else { "" })
            .arg("max_bytes", self.page.max_bytes);
        filter_args(self.filter, call);
    }

    fn decode(&self, mut reply: Reply) -> Result<Self::Output, StoreError> {
        let next_after = reply.opt_int()?;
        let count = reply.count()?;
        let scanned = reply.count()?;
        let mut jobs = Vec::new();
        for _ in 0..count {
            jobs.push(read_job(&mut reply)?);
        }
        reply.finish()?;
        Ok(ListedJobs {
            jobs,
            next_after,
            scanned,
        })
    }
}

#[cfg(test)]
pub(super) fn sample() -> ListJobs<'static> {
    ListJobs {
        queue: "q",
        after: Some(3),
        page: PageShape {
            size: 10,
            full: false,
            max_bytes: 1 << 20,
        },
        state: None,
        filter: &SAMPLE_FILTER,
    }
}

#[cfg(test)]
static SAMPLE_FILTER: JobFilter = JobFilter {
    name: String::new(),
    dedup_key: String::new(),
    header_key: String::new(),
    header_value: String::new(),
    error_contains: String::new(),
    created_after: Some(1),
    created_before: None,
};

#[cfg(test)]
mod tests {
    use super::ListJobs;
    use crate::{
        domain::{limits::PageShape, JobFilter, JobSpec, RunAt},
        store::ops::{ack_job::AckJob, claim_jobs, enqueue_jobs},
        testing::TestRedis,
    };

    /// Issue 30: a FULL page counts each job's result (and checkpoint) in its byte
    /// budget, so five completed jobs with 60 KiB results do not fit a 200 KB page;
    /// a BASIC page leaves them out, and so counts and carries none of them.
    #[tokio::test]
    async fn a_full_page_counts_results_in_its_byte_budget() {
        let redis = TestRedis::start().await;
        let store = redis.store();
        let jobs: Vec<JobSpec> = (0..5)
            .map(|i| JobSpec {
                id: format!("j{i}"),
                queue: "q".into(),
                run_at: RunAt::Now,
                ..enqueue_jobs::sample().jobs[0].clone()
            })
            .collect();
        let op = enqueue_jobs::EnqueueJobs {
            namespace: "ns",
            jobs: &jobs,
            max_jobs: 0,
        };
        store.run("ns", &op).await.unwrap_or_else(|e| panic!("enqueue: {e}"));
        let queues = ["q".to_owned()];
        let claim = claim_jobs::ClaimJobs {
            queues: &queues,
            max_jobs: 5,
            acks: &[],
            results: &[],
            receipt: true,
            group: &[],
            ..claim_jobs::sample()
        };
        let claimed = store.run("ns", &claim).await.unwrap_or_else(|e| panic!("claim: {e}"));
        let result = vec![b'r'; 60 * 1024];
        for job in &claimed.jobs {
            let ack = AckJob {
                id: &job.id,
                token: &job.lease_token,
                result: &result,
            };
            store.run("ns", &ack).await.unwrap_or_else(|e| panic!("ack: {e}"));
        }
        let none = JobFilter::default();
        let page = |full| ListJobs {
            queue: "q",
            after: None,
            page: PageShape {
                size: 100,
                full,
                max_bytes: 200_000,
            },
            state: None,
            filter: &none,
        };
        let full = store.run("ns", &page(true)).await.unwrap_or_else(|e| panic!("list: {e}"));
        assert_eq!(full.jobs.len(), 3, "three 60 KiB results fit in 200 KB");
        assert!(full.next_after.is_some());
        assert!(full.jobs.iter().all(|j| j.result == result));
        let basic = store.run("ns", &page(false)).await.unwrap_or_else(|e| panic!("list: {e}"));
        assert_eq!(basic.jobs.len(), 5);
        assert!(basic.jobs.iter().all(|j| j.result.is_empty()), "BASIC leaves results out");
    }
}
