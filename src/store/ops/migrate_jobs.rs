//! `lua/migrate_jobs.lua`: convert a batch of layout-1 jobs to layout 2, under
//! Migrate's lock.

use super::{prelude::*, under_lock};

script!(MigrateJobs<'_>: "migrate_jobs", Job, Arity::AtLeast(2), Arity::AtLeast(11));

/// Most jobs one call converts, so no single script holds Redis long.
pub(crate) const JOBS_PER_CALL: usize = 50;

/// One step of the conversion (see the modes in the script).
#[derive(Debug)]
pub(crate) enum JobStep<'a> {
    /// Take (and remove) the first members of a ready set, in claim order. Dry runs
    /// do not use it: the `Records` pass counts every job a dry run would convert.
    Ready { set: &'a [u8] },
    /// Convert these jobs, by id.
    Records(&'a [String]),
    /// Raise the job counters to these (current-layout) jobs' numbers, by id.
    Recount(&'a [String]),
    /// Report these (current-layout) jobs that the listing does not name under their
    /// number (read-only).
    Listed(&'a [String]),
    /// Unlink these keys.
    Drop(&'a [Vec<u8>]),
    /// Record job layout 2.
    Finish,
}

pub(crate) struct MigrateJobs<'a> {
    pub(crate) token: &'a str,
    pub(crate) dry_run: bool,
    pub(crate) step: JobStep<'a>,
}

/// What one step did.
#[derive(Debug, Default)]
pub(crate) struct JobStepCounts {
    pub(crate) converted: u64,
    /// Members left in the ready set (a `Ready` step).
    pub(crate) remaining: u64,
    /// (job id, reason) of records that could not be converted (left as they were).
    pub(crate) problems: Vec<(String, String)>,
}

impl Operation for MigrateJobs<'_> {
    /// `None` when the lock was lost (nothing written).
    type Output = Option<JobStepCounts>;

    fn encode(&self, keys: &NamespaceKeys, call: &mut Call) {
        let mode = match &self.step {
            JobStep::Ready { .. } => "ready",
            JobStep::Records(_) => "records",
            JobStep::Recount(_) => "recount",
            JobStep::Listed(_) => "listed",
            JobStep::Drop(_) => "drop",
            JobStep::Finish => "finish",
        };
        call.key(keys.meta())
            .key(keys.migrate_lock())
            .arg("token", self.token)
            .flag("dry_run", self.dry_run)
            .arg("mode", mode);
        super::job_prefixes(keys, call);
        match &self.step {
            JobStep::Ready { set } => {
                call.key(*set).arg("take", JOBS_PER_CALL);
            }
            JobStep::Records(ids) | JobStep::Recount(ids) | JobStep::Listed(ids) => {
                for id in *ids {
                    call.arg("ids", id);
                }
            }
            JobStep::Drop(found) => {
                for key in *found {
                    call.key(key.as_slice());
                }
            }
            JobStep::Finish => {}
        }
    }

    fn decode(&self, mut reply: Reply) -> Result<Self::Output, StoreError> {
        if !under_lock(&mut reply)? {
            reply.finish()?;
            return Ok(None);
        }
        let converted = reply.count()?;
        reply.count()?; // pending jobs appended to their ready lists
        let remaining = reply.count()?;
        let mut problems = Vec::new();
        while !reply.is_done() {
            let id = String::from_utf8_lossy(&reply.bytes()?).into_owned();
            problems.push((id, reply.text()?));
        }
        Ok(Some(JobStepCounts {
            converted,
            remaining,
            problems,
        }))
    }
}

#[cfg(test)]
pub(super) fn sample() -> MigrateJobs<'static> {
    MigrateJobs {
        token: "t",
        dry_run: false,
        step: JobStep::Finish,
    }
}
