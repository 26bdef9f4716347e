//! What `lua/retry_jobs.lua`, `lua/cancel_jobs.lua` and `lua/delete_jobs.lua` share
//! (issue 33): one bounded batch of an action on many jobs, the same KEYS, ARGV and
//! reply (lua/lib/job.lua `manage.bulk`). Each script's operation wraps [`BulkJobs`].

use super::{job_head, list_jobs::filter_args, prelude::*};
use crate::domain::{JobFilter, JobState};

/// Most ids one script call takes (each is one O(log N) transition).
pub(crate) const IDS_PER_CALL: usize = 100;
/// Most jobs one query call takes (applied or skipped).
pub(crate) const TAKEN_PER_CALL: usize = 100;

/// Which jobs a batch takes.
pub(crate) enum Selection<'a> {
    /// These (at most [`IDS_PER_CALL`]).
    Ids(&'a [String]),
    /// The next matching jobs past `after` (a job number; `None` = from the start).
    Query {
        after: Option<i64>,
        state: Option<JobState>,
        filter: &'a JobFilter,
        budget: usize,
    },
}

pub(crate) struct BulkJobs<'a> {
    pub(crate) queue: &'a str,
    pub(crate) selection: Selection<'a>,
}

/// What one batch did.
#[derive(Debug, Default)]
pub(crate) struct BulkBatch {
    /// The job number to continue after (a query with more to examine).
    pub(crate) next_after: Option<i64>,
    pub(crate) scanned: u64,
    pub(crate) applied: u64,
    /// The namespace must be put in the prune due-set (a job finished).
    pub(crate) register: bool,
    /// Each skipped job and why ("missing", or the state the action refused).
    pub(crate) skips: Vec<(String, String)>,
}

impl BulkJobs<'_> {
    pub(super) fn encode(&self, keys: &NamespaceKeys, call: &mut Call) {
        job_head(keys, call);
        call.arg("queue", self.queue);
        let none = JobFilter::default();
        let (query, after, state, filter, budget) = match &self.selection {
            Selection::Ids(_) => (false, None, None, &none, 0),
            Selection::Query {
                after,
                state,
                filter,
                budget,
            } => (true, *after, *state, *filter, *budget),
        };
        call.arg("query", if query { "1" } else { "" })
            .opt("after", after)
            .arg("state", state.map(JobState::as_str).unwrap_or(""))
            .arg("budget", budget)
            .arg("max_taken", TAKEN_PER_CALL);
        filter_args(filter, call);
        if let Selection::Ids(ids) = self.selection {
            for id in ids {
                call.arg("ids", id);
            }
        }
    }

    pub(super) fn decode(mut reply: Reply) -> Result<BulkBatch, StoreError> {
        let next_after = reply.opt_int()?;
        let scanned = reply.count()?;
        let applied = reply.count()?;
        let register = reply.flag()?;
        let skipped = reply.count()?;
        let mut skips = Vec::new();
        for _ in 0..skipped {
            skips.push((reply.text()?, reply.text()?));
        }
        reply.finish()?;
        Ok(BulkBatch {
            next_after,
            scanned,
            applied,
            register,
            skips,
        })
    }
}

/// The operation of one bulk script: `$name` (its module) runs [`BulkJobs`].
macro_rules! bulk_op {
    ($op:ident: $name:literal) => {
        use super::{
            bulk::{BulkBatch, BulkJobs},
            prelude::*,
        };

        script!($op<'_>: $name, Job, Arity::Exactly(2), Arity::AtLeast(21));

        pub(crate) struct $op<'a>(pub(crate) BulkJobs<'a>);

        impl Operation for $op<'_> {
            type Output = BulkBatch;

            fn encode(&self, keys: &NamespaceKeys, call: &mut Call) {
                self.0.encode(keys, call);
            }

            fn decode(&self, reply: Reply) -> Result<Self::Output, StoreError> {
                BulkJobs::decode(reply)
            }
        }

        #[cfg(test)]
        pub(super) fn sample() -> $op<'static> {
            static IDS: std::sync::LazyLock<Vec<String>> =
                std::sync::LazyLock::new(|| vec!["a".to_owned(), "b".to_owned()]);
            $op(BulkJobs {
                queue: "q",
                selection: super::bulk::Selection::Ids(&IDS),
            })
        }
    };
}
pub(super) use bulk_op;
