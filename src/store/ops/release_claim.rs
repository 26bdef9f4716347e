//! `lua/release_claim.lua`: give back what one claim leased, by its token base,
//! when its reply was lost or the replicas did not confirm it.

use super::{job_head, prelude::*, release_jobs::Released};

script!(ReleaseClaim<'_>: "release_claim", Job, Arity::Exactly(3), Arity::Exactly(9));

pub(crate) struct ReleaseClaim<'a> {
    /// The claim's lease token base (it kept a receipt under it).
    pub(crate) token_base: &'a str,
}

impl Operation for ReleaseClaim<'_> {
    type Output = Released;

    fn encode(&self, keys: &NamespaceKeys, call: &mut Call) {
        job_head(keys, call);
        call.key(keys.claim_receipt(self.token_base))
            .arg("token_base", self.token_base);
    }

    fn decode(&self, mut reply: Reply) -> Result<Self::Output, StoreError> {
        let count = reply.int()?;
        let register = reply.flag()?;
        reply.finish()?;
        Ok(Released { count, register })
    }
}

#[cfg(test)]
pub(super) fn sample() -> ReleaseClaim<'static> {
    ReleaseClaim { token_base: "t" }
}

#[cfg(test)]
mod tests {
    use super::ReleaseClaim;
    use crate::{
        domain::JobState,
        store::ops::{claim_jobs::ClaimJobs, enqueue_jobs, get_job::GetJob},
        testing::TestRedis,
    };

    /// Pins issue 29 item 11: a claim kept a receipt is given back by its token base
    /// alone (pending, attempt not counted); a claim with a token base already given
    /// back (its reply lost before it ran) claims nothing; the next claim takes the
    /// job at attempt 1.
    #[tokio::test]
    async fn a_claim_is_given_back_by_its_token_base_even_before_it_ran() {
        let redis = TestRedis::start().await;
        let store = redis.store();
        let one = enqueue_jobs::sample();
        let enqueue = enqueue_jobs::EnqueueJobs {
            jobs: &one.jobs[..1],
            ..enqueue_jobs::sample()
        };
        store.run("ns", &enqueue).await.unwrap_or_else(|e| panic!("enqueue: {e}"));
        let queues = ["q".to_owned()];
        let claim = |token_base| ClaimJobs {
            queues: &queues,
            token_base,
            acks: &[],
            results: &[],
            receipt: true,
            group: &[],
            ..crate::store::ops::claim_jobs::sample()
        };
        let first = store.run("ns", &claim("a")).await.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(first.jobs.len(), 1);
        let released = store
            .run("ns", &ReleaseClaim { token_base: "a" })
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(released.count, 1);
        let job = store.run("ns", &GetJob { id: "j" }).await.unwrap_or_else(|e| panic!("{e}"));
        let job = job.unwrap_or_else(|| panic!("job j is gone"));
        assert_eq!((job.state, job.attempts), (JobState::Pending, 0));

        // Given back before it ran: the claim takes nothing when it does.
        let early = store
            .run("ns", &ReleaseClaim { token_base: "b" })
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(early.count, 0);
        let late = store.run("ns", &claim("b")).await.unwrap_or_else(|e| panic!("{e}"));
        assert!(late.jobs.is_empty(), "{late:?}");

        let next = store.run("ns", &claim("c")).await.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(next.jobs.len(), 1);
        assert_eq!(next.jobs[0].attempts, 1, "the given-back claim was not counted");
        let again = store
            .run("ns", &ReleaseClaim { token_base: "a" })
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(again.count, 0, "a receipt is given back once");
    }
}
