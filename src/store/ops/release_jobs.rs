//! `lua/release_jobs.lua`: give back leases a claim took but its reply could not carry.

use super::{job_head, prelude::*};

script!("release_jobs", Job, Arity::Exactly(2), Arity::Groups { fixed: 8, group: 2 });

pub(crate) struct ReleaseJobs<'a> {
    /// (job id, lease token) of each job to release.
    pub(crate) leases: &'a [(&'a str, &'a str)],
}

impl Operation for ReleaseJobs<'_> {
    /// How many were still leased under their token, and released.
    type Output = i64;

    fn script(&self) -> &'static ScriptDef {
        &SCRIPT
    }

    fn encode(&self, keys: &NamespaceKeys, call: &mut Call) {
        job_head(keys, call);
        for (id, token) in self.leases {
            call.arg(*id).arg(*token);
        }
    }

    fn decode(&self, mut reply: Reply) -> Result<Self::Output, StoreError> {
        let released = reply.int()?;
        reply.finish()?;
        Ok(released)
    }
}

#[cfg(test)]
pub(super) fn sample() -> ReleaseJobs<'static> {
    ReleaseJobs {
        leases: &[("j", "t")],
    }
}

#[cfg(test)]
mod tests {
    use super::ReleaseJobs;
    use crate::{
        domain::JobState,
        store::ops::{claim_jobs, enqueue_jobs, get_job::GetJob},
        testing::TestRedis,
    };

    /// A released job is pending again, its attempt not counted, and the next claim
    /// takes it; a token that no longer holds the lease releases nothing.
    #[tokio::test]
    async fn a_released_job_is_claimed_next_as_if_never_claimed() {
        let redis = TestRedis::start().await;
        let store = redis.store();
        let one = enqueue_jobs::sample();
        let jobs = &one.jobs[..1];
        store
            .run(
                "ns",
                &enqueue_jobs::EnqueueJobs {
                    jobs,
                    ..enqueue_jobs::sample()
                },
            )
            .await
            .unwrap_or_else(|e| panic!("enqueue: {e}"));
        let queues = ["q".to_owned()];
        let claim = claim_jobs::ClaimJobs {
            queues: &queues,
            ..claim_jobs::sample()
        };
        let first = store.run("ns", &claim).await.unwrap_or_else(|e| panic!("{e}"));
        let token = first.jobs[0].lease_token.clone();
        let leases = [("j", token.as_str())];
        let release = ReleaseJobs { leases: &leases };
        let released = store.run("ns", &release).await.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(released, 1);
        let job = store.run("ns", &GetJob { id: "j" }).await.unwrap_or_else(|e| panic!("{e}"));
        let job = job.unwrap_or_else(|| panic!("job j is gone"));
        assert_eq!((job.state, job.attempts), (JobState::Pending, 0));
        let reclaim = claim_jobs::ClaimJobs {
            token_base: "u",
            ..claim
        };
        let again = store.run("ns", &reclaim).await.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(again.jobs.len(), 1);
        assert_eq!(again.jobs[0].attempts, 1, "the released claim was not counted");
        let stale = store.run("ns", &release).await.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(stale, 0, "the old token no longer holds the lease");
    }
}
