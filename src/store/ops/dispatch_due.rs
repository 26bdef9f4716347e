//! `lua/dispatch_due.lua`: enqueue the due slots of a namespace's target schedules as
//! jobs (issue 30).

use super::{claim_due::ClaimHint, job_prefixes, prelude::*, schedule_head, upsert_schedule::follow_arg};
use crate::domain::{OccurrenceKind, ScheduleRecord};

script!(DispatchDue<'_>: "dispatch_due", Dispatch, Arity::Exactly(6),
    Arity::Groups { fixed: 16, group: 8 });

/// Slots one call enqueues at most, and index entries it examines at most.
pub(crate) const DISPATCH_SLOTS: u32 = 32;
const DISPATCH_CANDIDATES: u32 = 64;

pub(crate) struct DispatchDue<'a> {
    /// The namespace, for the occurrence ids the script computes.
    pub(crate) namespace: &'a str,
    /// Plans computed for the schedules a previous call answered as "compute".
    pub(crate) hints: &'a [ClaimHint],
    /// `--max-jobs-per-namespace` (0: no limit): at it, no slot is taken.
    pub(crate) max_jobs: u64,
}

/// One slot the call took.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DispatchedSlot {
    pub(crate) schedule_id: String,
    /// The job's id: the slot's occurrence id.
    pub(crate) job_id: String,
    pub(crate) due_ms: i64,
    /// False: the job existed already (a slot taken again), nothing was written.
    pub(crate) created: bool,
    pub(crate) kind: OccurrenceKind,
    pub(crate) run: u64,
    /// Slots skipped before it (catch-up and window together).
    pub(crate) skipped: u64,
    /// The queue of its job.
    pub(crate) queue: String,
}

/// What one dispatch call did.
#[derive(Debug)]
pub(crate) struct Dispatched {
    pub(crate) now_ms: i64,
    /// The earliest entry left in the target index.
    pub(crate) earliest_ms: Option<i64>,
    /// Slots skipped under the overlap policy (metric).
    pub(crate) overlap_skips: u64,
    pub(crate) slots: Vec<DispatchedSlot>,
    /// Schedules whose plan the caller must compute (a cron's next slot, a catch-up
    /// plan), as `ClaimDue`'s "compute".
    pub(crate) compute: Vec<ScheduleRecord>,
    /// The call stopped at the namespace's job quota: the slots left stay due.
    pub(crate) at_quota: bool,
}

impl Operation for DispatchDue<'_> {
    type Output = Dispatched;

    fn encode(&self, keys: &NamespaceKeys, call: &mut Call) {
        schedule_head(keys, call);
        call.key(keys.target_due())
            .key(keys.due())
            .key(keys.jobs_done());
        job_prefixes(keys, call);
        call.arg("namespace", self.namespace)
            .arg("max_slots", DISPATCH_SLOTS)
            .arg("candidates", DISPATCH_CANDIDATES)
            .arg("backfill_prefix", keys.backfill_prefix())
            .arg("runs_prefix", keys.runs_prefix())
            .arg("max_jobs", self.max_jobs);
        for h in self.hints {
            call.arg("hint_id", &h.id)
                .arg("hint_rev", h.revision)
                .arg("hint_expected_next_ms", h.expected_next_ms)
                .opt("hint_next_ms", h.next.next_ms);
            follow_arg(call, "hint_follow", h.next.follow);
            call.arg("hint_skipped", h.skipped)
                .opt("hint_hand_out", h.hand_out)
                .arg("hint_skipped_window", h.skipped_window);
        }
    }

    fn decode(&self, mut reply: Reply) -> Result<Self::Output, StoreError> {
        let now_ms = reply.int()?;
        let earliest_ms = reply.opt_int()?;
        let overlap_skips = reply.count()?;
        let slots = reply.count()?;
        let computes = reply.count()?;
        let at_quota = reply.flag()?;
        let mut out = Dispatched {
            now_ms,
            earliest_ms,
            overlap_skips,
            slots: Vec::new(),
            compute: Vec::new(),
            at_quota,
        };
        for _ in 0..slots {
            out.slots.push(DispatchedSlot {
                schedule_id: reply.text()?,
                job_id: reply.text()?,
                due_ms: reply.int()?,
                created: reply.word(|w| match w {
                    "created" => Some(true),
                    "duplicate" => Some(false),
                    _ => None,
                })?,
                kind: reply.word(OccurrenceKind::parse)?,
                run: reply.count()?,
                skipped: reply.count()?,
                queue: reply.text()?,
            });
        }
        for _ in 0..computes {
            out.compute.push(records::schedule(&reply.counted_fields()?)?);
        }
        reply.finish()?;
        Ok(out)
    }
}

#[cfg(test)]
pub(super) fn sample() -> DispatchDue<'static> {
    use crate::domain::{Follow, NextRun};
    use std::sync::LazyLock;
    static HINTS: LazyLock<Vec<ClaimHint>> = LazyLock::new(|| {
        vec![ClaimHint {
            id: "s".into(),
            revision: 1,
            expected_next_ms: 60_000,
            next: NextRun {
                next_ms: Some(120_000),
                follow: Follow::Unknown,
            },
            hand_out: Some(60_000),
            skipped: 0,
            skipped_window: 0,
        }]
    });
    DispatchDue {
        namespace: "ns",
        hints: &HINTS,
        max_jobs: 0,
    }
}

#[cfg(test)]
mod tests {
    use deadpool_redis::redis;

    use crate::{
        domain::{Backoff, EnqueueTarget, Follow, NextRun, ScheduleDef, TimingDef},
        store::{keys::NamespaceKeys, ops::upsert_schedule::UpsertSchedule},
        testing::TestRedis,
    };

    fn def(target: Option<EnqueueTarget>) -> ScheduleDef {
        ScheduleDef {
            id: "s".into(),
            timing: TimingDef::EveryMs(60_000),
            timezone: "UTC".into(),
            start_ms: None,
            end_ms: None,
            run_limit: 0,
            job_name: "j".into(),
            payload: Vec::new(),
            headers: Default::default(),
            paused: false,
            catchup: Default::default(),
            offset_ms: None,
            overlap: Default::default(),
            max_attempts: 0,
            jitter_ms: 0,
            target,
        }
    }

    /// The stored record's top-level items (lib/schedule.lua positions).
    async fn stored(redis: &TestRedis) -> Vec<rmpv::Value> {
        let key = NamespaceKeys::new("dueq", "ns").schedule("s");
        let raw: Vec<u8> = redis::cmd("GET")
            .arg(key)
            .query_async(&mut redis.conn().await)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        match rmpv::decode::read_value(&mut raw.as_slice()) {
            Ok(rmpv::Value::Array(items)) => items,
            other => panic!("not a packed record: {other:?}"),
        }
    }

    /// Pins the stored layout: a schedule without a target is stored exactly as before
    /// targets existed (no policies entry 17, so older builds and records read alike:
    /// no Migrate step), and a target is entry 17 of the policies, read back whole.
    #[tokio::test]
    async fn a_target_is_policies_entry_17_and_its_absence_changes_nothing() {
        let redis = TestRedis::start().await;
        let store = redis.store();
        let next = NextRun {
            next_ms: Some(60_000),
            follow: Follow::Unknown,
        };
        let plain = def(None);
        let upsert = UpsertSchedule {
            def: &plain,
            next,
            max_schedules: 0,
        };
        let back = store.run("ns", &upsert).await.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(back.record.def.target, None);
        assert_eq!(stored(&redis).await.len(), 16, "no policies entry at all");

        let target = EnqueueTarget {
            queue: "invoices".into(),
            priority: -3,
            max_attempts: 7,
            backoff: Backoff {
                jitter: 0.25,
                ..Backoff::default()
            },
            headers: [("k".to_owned(), "v".to_owned())].into(),
            lease_ms: 45_000,
        };
        let with = def(Some(target.clone()));
        let upsert = UpsertSchedule {
            def: &with,
            next,
            max_schedules: 0,
        };
        let back = store.run("ns", &upsert).await.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(back.record.def.target, Some(target));
        let items = stored(&redis).await;
        let Some(rmpv::Value::Array(policies)) = items.get(16) else {
            panic!("policies: {items:?}")
        };
        assert_eq!(policies.len(), 17);
        assert!(policies[16].is_str(), "{policies:?}");
        assert_eq!(
            back.record.revision, 1,
            "the target is not timing: no revision bump"
        );
    }
}
