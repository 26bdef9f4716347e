//! `lua/claim_due.lua`: hand the earliest due occurrence of a namespace to one caller.

use super::{
    ack_occurrence::ACKED_OCCURRENCE_TTL_MS, prelude::*, schedule_head, upsert_schedule::follow_arg,
};
use crate::domain::{NextRun, OccurrenceKind, OccurrenceLease, ScheduleRecord};

script!(ClaimDue<'_>: "claim_due", Claim, Arity::Exactly(5), Arity::Exactly(19));

/// Candidates one claim call examines at most (bounds the script's work).
const CLAIM_CANDIDATES: u32 = 32;

/// ARGV[4..9], the hint's first values (all "" without a hint).
const HINT: [&str; 6] = [
    "hint_id",
    "hint_rev",
    "hint_expected_next_ms",
    "hint_next_ms",
    "hint_follow",
    "hint_skipped",
];

pub(crate) struct ClaimDue<'a> {
    /// The namespace, for the occurrence id the script computes.
    pub(crate) namespace: &'a str,
    /// The answer to a previous `Compute` reply.
    pub(crate) hint: Option<&'a ClaimHint>,
    /// For an at-least-once claim: the lease token and its length.
    pub(crate) lease: Option<(&'a str, i64)>,
    /// The claiming worker's id (recorded in the schedule's recent runs).
    pub(crate) worker: &'a str,
}

/// A cron schedule's next slot, computed in Rust for the claim that asked for it.
#[derive(Debug, Clone)]
pub(crate) struct ClaimHint {
    pub(crate) id: String,
    /// The revision and next run it was computed from (the script re-checks both).
    pub(crate) revision: u64,
    pub(crate) expected_next_ms: i64,
    pub(crate) next: NextRun,
    /// The slot to hand out (`None`: the plan skips every due slot).
    pub(crate) hand_out: Option<i64>,
    /// Slots skipped by the catch-up policy and for the window.
    pub(crate) skipped: u64,
    pub(crate) skipped_window: u64,
}

/// A claim script's answer, with the slots it skipped for overlap on the way.
#[derive(Debug)]
pub(crate) struct ClaimAnswer {
    pub(crate) reply: ClaimReply,
    /// Slots held back and skipped under the overlap policy by this call (metric).
    pub(crate) overlap_skips: u64,
}

#[derive(Debug)]
pub(crate) enum ClaimReply {
    Claimed {
        now_ms: i64,
        due_ms: i64,
        skipped: u64,
        /// Earliest entry left in the index or the occurrence leases.
        earliest_ms: Option<i64>,
        /// The schedule after the claim (for a re-handed occurrence: as it was at its
        /// first claim).
        schedule: Box<ScheduleRecord>,
        lease: Option<OccurrenceLease>,
        /// The occurrence id the script computed (lib/rules.lua occurrence_id).
        occurrence_id: String,
        kind: OccurrenceKind,
    },
    /// A cron schedule is due; the caller must compute its next slot after `now_ms`.
    Compute {
        now_ms: i64,
        schedule: Box<ScheduleRecord>,
    },
    Nothing {
        now_ms: i64,
        earliest_ms: Option<i64>,
    },
}

impl Operation for ClaimDue<'_> {
    type Output = ClaimAnswer;

    fn encode(&self, keys: &NamespaceKeys, call: &mut Call) {
        schedule_head(keys, call);
        call.key(keys.due())
            .key(keys.occurrence_leases())
            .arg("candidates", CLAIM_CANDIDATES);
        match self.hint {
            Some(h) => {
                call.arg("hint_id", &h.id)
                    .arg("hint_rev", h.revision)
                    .arg("hint_expected_next_ms", h.expected_next_ms)
                    .opt("hint_next_ms", h.next.next_ms);
                follow_arg(call, "hint_follow", h.next.follow);
                call.arg("hint_skipped", h.skipped);
            }
            None => {
                for name in HINT {
                    call.arg(name, "");
                }
            }
        }
        match self.lease {
            Some((token, ms)) => call.arg("lease_ms", ms).arg("token", token),
            None => call.arg("lease_ms", "").arg("token", ""),
        };
        call.arg("namespace", self.namespace)
            .arg("occurrence_prefix", keys.occurrence_prefix());
        match self.hint {
            Some(h) => call
                .opt("hint_hand_out", h.hand_out)
                .arg("hint_skipped_window", h.skipped_window),
            None => call.arg("hint_hand_out", "").arg("hint_skipped_window", ""),
        };
        call.arg("finished_ttl_ms", ACKED_OCCURRENCE_TTL_MS)
            .arg("backfill_prefix", keys.backfill_prefix())
            .arg("runs_prefix", keys.runs_prefix())
            .arg("worker", self.worker);
    }

    fn decode(&self, mut reply: Reply) -> Result<Self::Output, StoreError> {
        #[derive(Clone, Copy)]
        enum Tag {
            Claimed,
            Compute,
            None,
        }
        let tag = reply.word(|tag| match tag {
            "claimed" => Some(Tag::Claimed),
            "compute" => Some(Tag::Compute),
            "none" => Some(Tag::None),
            _ => None,
        })?;
        let now_ms = reply.int()?;
        let overlap_skips = reply.count()?;
        let reply = match tag {
            Tag::Claimed => claimed(now_ms, reply)?,
            Tag::Compute => {
                // The earliest entry, id, revision and next run repeat the record.
                reply.opt_int()?;
                reply.text()?;
                reply.text()?;
                reply.int()?;
                let schedule = records::schedule(&reply.rest_fields()?)?;
                ClaimReply::Compute {
                    now_ms,
                    schedule: Box::new(schedule),
                }
            }
            Tag::None => {
                let earliest_ms = reply.opt_int()?;
                reply.finish()?;
                ClaimReply::Nothing {
                    now_ms,
                    earliest_ms,
                }
            }
        };
        Ok(ClaimAnswer {
            reply,
            overlap_skips,
        })
    }
}

/// `due_ms, skipped, earliest, token, lease_until, attempt, occurrence id, kind, fields...`
fn claimed(now_ms: i64, mut reply: Reply) -> Result<ClaimReply, StoreError> {
    let due_ms = reply.int()?;
    let skipped = reply.count()?;
    let earliest_ms = reply.opt_int()?;
    let token = reply.text()?;
    let deadline_ms = reply.opt_int()?;
    let attempt = reply.opt_int()?;
    let lease = match (token.is_empty(), deadline_ms, attempt) {
        (true, None, None) => None,
        (false, Some(deadline_ms), Some(attempt)) => Some(OccurrenceLease {
            token,
            deadline_ms,
            attempt: u32::try_from(attempt)
                .map_err(|_| StoreError::corrupt("claim_due reply", "attempt out of range"))?,
        }),
        _ => {
            return Err(StoreError::corrupt(
                "claim_due reply",
                "a lease without its token, deadline or attempt",
            ))
        }
    };
    let occurrence_id = reply.text()?;
    let kind = reply.word(OccurrenceKind::parse)?;
    // A re-handed occurrence's copy of its schedule comes without the marker.
    let schedule = records::claimed_schedule(&reply.rest_fields()?)?;
    Ok(ClaimReply::Claimed {
        occurrence_id,
        kind,
        now_ms,
        due_ms,
        skipped,
        earliest_ms,
        schedule: Box::new(schedule),
        lease,
    })
}

#[cfg(test)]
pub(super) fn sample() -> ClaimDue<'static> {
    ClaimDue {
        namespace: "ns",
        hint: None,
        lease: Some(("token", 30_000)),
        worker: "w",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{
        domain::{Follow, ScheduleDef, TimingDef},
        store::ops::upsert_schedule::UpsertSchedule,
        testing::TestRedis,
        timing::{Timing, TimingSpec},
    };

    fn cron(expr: &str) -> ScheduleDef {
        ScheduleDef {
            id: "h".into(),
            timing: TimingDef::Cron(expr.into()),
            timezone: "UTC".into(),
            start_ms: None,
            end_ms: None,
            run_limit: 0,
            job_name: String::new(),
            payload: Vec::new(),
            headers: Default::default(),
            paused: false,
            catchup: Default::default(),
        offset_ms: None,
        overlap: Default::default(),
        max_attempts: 0,
        jitter_ms: 0,
        target: None,
        }
    }

    /// The claim script asks Rust to compute a cron's next slot; if the timing changes
    /// before the answer comes back, the answer (computed from the old timing) must
    /// not be applied: the script asks again, and the answer for the new timing works.
    #[tokio::test]
    async fn a_cron_hint_from_old_timing_is_refused() {
        let redis = TestRedis::start().await;
        let store = redis.store();
        let now = crate::clock::Clock::new().now_ms();
        let slot = (now / 3_600_000 - 1) * 3_600_000;
        let due = NextRun {
            next_ms: Some(slot),
            follow: Follow::Unknown,
        };
        let first = cron("0 * * * *");
        store
            .run("ns", &UpsertSchedule {
                    def: &first,
                    next: due,
                    max_schedules: 0,
                })
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let claim = |hint| ClaimDue {
            namespace: "ns",
            hint,
            lease: None,
            worker: "",
        };
        let asked = store.run("ns", &claim(None)).await.map(|a| a.reply);
        let Ok(ClaimReply::Compute { schedule, .. }) = asked else {
            panic!("a due cron asks for its next slot: {asked:?}")
        };
        assert_eq!(schedule.revision, 1);

        // The timing changes (revision 2) while the hint is computed; same next run.
        let second = cron("30 * * * *");
        store
            .run("ns", &UpsertSchedule {
                    def: &second,
                    next: due,
                    max_schedules: 0,
                })
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let stale = ClaimHint {
            id: "h".into(),
            revision: 1,
            expected_next_ms: slot,
            next: NextRun {
                next_ms: Some(slot + 100 * 3_600_000),
                follow: Follow::Unknown,
            },
            hand_out: Some(slot),
            skipped: 0,
            skipped_window: 0,
        };
        let refused = store.run("ns", &claim(Some(&stale))).await.map(|a| a.reply);
        let Ok(ClaimReply::Compute { schedule, .. }) = refused else {
            panic!("a hint from revision 1 is refused: {refused:?}")
        };
        assert_eq!((schedule.revision, schedule.run_count), (2, 0));

        let timing = Timing::parse(&TimingSpec {
            cron: Some("30 * * * *"),
            ..TimingSpec::default()
        })
        .unwrap_or_else(|e| panic!("{e}"));
        let advance = timing.advance(slot, now);
        let fresh = ClaimHint {
            revision: 2,
            next: NextRun {
                next_ms: advance.next_ms,
                follow: Follow::Unknown,
            },
            skipped: advance.skipped,
            ..stale.clone()
        };
        let claimed = store.run("ns", &claim(Some(&fresh))).await.map(|a| a.reply);
        let Ok(ClaimReply::Claimed { schedule, .. }) = claimed else {
            panic!("the hint for revision 2 claims: {claimed:?}")
        };
        let next = schedule.next_run_ms.unwrap_or_default();
        assert_eq!(next % 3_600_000, 1_800_000, "next from the new timing (minute 30)");
    }

    /// A leased occurrence keeps a copy of its schedule's fields, without the version
    /// marker a reply puts before a loaded record; a copy written by a build from
    /// before issue 17 lacks the policy fields. Re-handed, it reads as the previous
    /// version: the same schedule, its policies at their defaults.
    #[tokio::test]
    async fn a_re_handed_copy_without_policy_fields_reads_with_their_defaults() {
        use crate::store::{keys::NamespaceKeys, records::field};
        use deadpool_redis::redis;
        let redis = TestRedis::start().await;
        let store = redis.store();
        let now = crate::clock::Clock::new().now_ms();
        let def = ScheduleDef {
            timing: TimingDef::EveryMs(3_600_000),
            timezone: "UTC".into(),
            ..cron("")
        };
        let due = NextRun {
            next_ms: Some(now - 1_000),
            follow: Follow::Unknown,
        };
        let upsert = UpsertSchedule {
            def: &def,
            next: due,
            max_schedules: 0,
        };
        store.run("ns", &upsert).await.unwrap_or_else(|e| panic!("{e}"));
        let claim = |token, ms| ClaimDue {
            namespace: "ns",
            hint: None,
            lease: Some((token, ms)),
            worker: "w",
        };
        let first = store.run("ns", &claim("t1", 1)).await.map(|a| a.reply);
        let Ok(ClaimReply::Claimed {
            schedule: claimed,
            occurrence_id,
            ..
        }) = first
        else {
            panic!("the due schedule is claimed: {first:?}")
        };
        let key = NamespaceKeys::new("dueq", "ns").occurrence_prefix() + &occurrence_id;
        let added = field::ALL.iter().skip_while(|name| **name != field::CATCHUP);
        let mut hdel = redis::cmd("HDEL");
        hdel.arg(&key);
        for name in added {
            hdel.arg(format!("s.{name}"));
        }
        let mut conn = redis.conn().await;
        let removed: usize = hdel.query_async(&mut conn).await.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(removed, 15, "the copy held every policy field");
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        let again = store.run("ns", &claim("t2", 30_000)).await.map(|a| a.reply);
        let Ok(ClaimReply::Claimed {
            schedule, lease, ..
        }) = again
        else {
            panic!("the expired occurrence is re-handed: {again:?}")
        };
        assert_eq!(lease.map(|l| l.attempt), Some(2));
        assert_eq!(schedule, claimed);
    }
}
