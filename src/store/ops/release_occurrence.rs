//! `lua/release_occurrence.lua`: give back a leased occurrence whose claim the
//! replicas did not confirm, its attempt not counted.

use super::prelude::*;

script!(ReleaseOccurrence<'_>: "release_occurrence", Core, Arity::Exactly(1), Arity::Exactly(3));

pub(crate) struct ReleaseOccurrence<'a> {
    pub(crate) occurrence_id: &'a str,
    /// The lease token of the claim that handed it out.
    pub(crate) token: &'a str,
}

impl Operation for ReleaseOccurrence<'_> {
    /// Whether it was still leased under the token, and released.
    type Output = bool;

    fn encode(&self, keys: &NamespaceKeys, call: &mut Call) {
        call.key(keys.occurrence_leases())
            .arg("occurrence_prefix", keys.occurrence_prefix())
            .arg("occurrence_id", self.occurrence_id)
            .arg("token", self.token);
    }

    fn decode(&self, mut reply: Reply) -> Result<Self::Output, StoreError> {
        let released = reply.flag()?;
        reply.finish()?;
        Ok(released)
    }
}

#[cfg(test)]
pub(super) fn sample() -> ReleaseOccurrence<'static> {
    ReleaseOccurrence {
        occurrence_id: "o",
        token: "t",
    }
}

#[cfg(test)]
mod tests {
    use super::ReleaseOccurrence;
    use crate::{
        domain::{Follow, NextRun, ScheduleDef},
        store::ops::{
            claim_due::{ClaimDue, ClaimReply},
            upsert_schedule::{self, UpsertSchedule},
        },
        testing::TestRedis,
    };

    /// Pins issue 29 item 11: an occurrence given back under its claim's token is
    /// re-handed by the next leased claim at the same attempt, even with
    /// max_attempts 1 (where an expired lease would finish it); its old token no
    /// longer releases anything.
    #[tokio::test]
    async fn a_released_occurrence_is_re_handed_at_the_same_attempt() {
        let redis = TestRedis::start().await;
        let store = redis.store();
        let now = crate::clock::Clock::new().now_ms();
        let def = ScheduleDef {
            max_attempts: 1,
            ..upsert_schedule::sample().def.clone()
        };
        let upsert = UpsertSchedule {
            def: &def,
            next: NextRun {
                next_ms: Some(now - 1_000),
                follow: Follow::Unknown,
            },
            max_schedules: 0,
        };
        store.run("ns", &upsert).await.unwrap_or_else(|e| panic!("{e}"));
        let claim = |token| ClaimDue {
            namespace: "ns",
            hint: None,
            lease: Some((token, 60_000)),
            worker: "w",
        };
        let first = store.run("ns", &claim("t1")).await.map(|a| a.reply);
        let Ok(ClaimReply::Claimed {
            occurrence_id,
            lease: Some(lease),
            ..
        }) = first
        else {
            panic!("the due schedule is claimed: {first:?}")
        };
        assert_eq!(lease.attempt, 1);
        let release = ReleaseOccurrence {
            occurrence_id: &occurrence_id,
            token: "t1",
        };
        let released = store.run("ns", &release).await.unwrap_or_else(|e| panic!("{e}"));
        assert!(released);
        let again = store.run("ns", &claim("t2")).await.map(|a| a.reply);
        let Ok(ClaimReply::Claimed {
            occurrence_id: again_id,
            lease: Some(lease),
            ..
        }) = again
        else {
            panic!("the released occurrence is re-handed: {again:?}")
        };
        assert_eq!((again_id.as_str(), lease.attempt), (occurrence_id.as_str(), 1));
        let stale = store.run("ns", &release).await.unwrap_or_else(|e| panic!("{e}"));
        assert!(!stale, "t1 no longer holds the lease");
    }
}
