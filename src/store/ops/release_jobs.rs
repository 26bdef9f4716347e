//! `lua/release_jobs.lua`: give back leases a claim took but its reply could not
//! carry, or that a broken worker stream held.

use super::{job_head, prelude::*};

script!(ReleaseJobs<'_>: "release_jobs", Job, Arity::Exactly(2), Arity::Groups { fixed: 9, group: 2 });

/// Why leases are given back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Release {
    /// The claim's reply could not carry them: as if never claimed.
    Unsent,
    /// The worker stream that held them broke: as if their leases expired now.
    Abandoned,
}

pub(crate) struct ReleaseJobs<'a> {
    pub(crate) why: Release,
    /// (job id, lease token) of each job to release.
    pub(crate) leases: &'a [(&'a str, &'a str)],
}

/// What a release did.
#[derive(Debug)]
pub(crate) struct Released {
    /// How many were still leased under their token, and released.
    pub(crate) count: i64,
    /// A job went dead: the namespace must be put in the prune due-set.
    pub(crate) register: bool,
}

impl Operation for ReleaseJobs<'_> {
    type Output = Released;

    fn encode(&self, keys: &NamespaceKeys, call: &mut Call) {
        job_head(keys, call);
        call.arg(
            "mode",
            match self.why {
            Release::Unsent => "unsent",
            Release::Abandoned => "abandoned",
            },
        );
        for (id, token) in self.leases {
            call.arg("id", *id).arg("token", *token);
        }
    }

    fn decode(&self, mut reply: Reply) -> Result<Self::Output, StoreError> {
        let count = reply.int()?;
        let register = reply.flag()?;
        reply.finish()?;
        Ok(Released { count, register })
    }
}

#[cfg(test)]
pub(super) fn sample() -> ReleaseJobs<'static> {
    ReleaseJobs {
        why: Release::Unsent,
        leases: &[("j", "t")],
    }
}

#[cfg(test)]
mod tests {
    use super::{Release, ReleaseJobs};
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
            receipt: true,
            group: &[],
            ..claim_jobs::sample()
        };
        let first = store.run("ns", &claim).await.unwrap_or_else(|e| panic!("{e}"));
        let token = first.jobs[0].lease_token.clone();
        let leases = [("j", token.as_str())];
        let release = ReleaseJobs {
            why: Release::Unsent,
            leases: &leases,
        };
        let released = store.run("ns", &release).await.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(released.count, 1);
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
        assert_eq!(stale.count, 0, "the old token no longer holds the lease");
    }

    /// Issue 30: a job whose cancel was requested while a claim held it is not made
    /// pending again by either release: unsent or abandoned, it ends cancelled, in
    /// the finished set.
    #[tokio::test]
    async fn a_cancel_requested_job_released_ends_cancelled() {
        use crate::store::ops::cancel_job::CancelJob;
        use deadpool_redis::redis::AsyncCommands;

        for why in [Release::Unsent, Release::Abandoned] {
            let redis = TestRedis::start().await;
            let store = redis.store();
            let one = enqueue_jobs::sample();
            let op = enqueue_jobs::EnqueueJobs {
                jobs: &one.jobs[..1],
                ..enqueue_jobs::sample()
            };
            store.run("ns", &op).await.unwrap_or_else(|e| panic!("enqueue: {e}"));
            let queues = ["q".to_owned()];
            let claim = claim_jobs::ClaimJobs {
                queues: &queues,
                receipt: true,
                group: &[],
                ..claim_jobs::sample()
            };
            let claimed = store.run("ns", &claim).await.unwrap_or_else(|e| panic!("{e}"));
            let token = claimed.jobs[0].lease_token.clone();
            store
                .run("ns", &CancelJob { id: "j" })
                .await
                .unwrap_or_else(|e| panic!("cancel: {e}"));
            let leases = [("j", token.as_str())];
            let released = store
                .run("ns", &ReleaseJobs { why, leases: &leases })
                .await
                .unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(released.count, 1, "{why:?}");
            assert!(released.register, "{why:?}: the first finished job registers");
            let job = store.run("ns", &GetJob { id: "j" }).await.unwrap_or_else(|e| panic!("{e}"));
            let job = job.unwrap_or_else(|| panic!("job j is gone"));
            assert_eq!(job.state, JobState::Cancelled, "{why:?}");
            assert!(job.finish_ms.is_some() && job.cancel_requested, "{why:?}");
            let mut conn = redis.conn().await;
            let done: Option<f64> = conn
                .zscore("dueq:{ns}:jdone", "j")
                .await
                .unwrap_or_else(|e| panic!("zscore: {e}"));
            assert!(done.is_some(), "{why:?}: in the finished set");
        }
    }
}
