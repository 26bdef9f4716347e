//! Schedule use cases: joins the pure timing module with the store's operations.
//!
//! The API layer validates and translates; this module decides next runs (cron and
//! time zones live in Rust), drives the claim protocol of `lua/claim_due.lua` and
//! its long-poll.

use std::time::Duration;

use tokio::time::Instant;

use crate::{
    context::Context,
    domain::Namespace,
    domain::{
        limits::PageShape, Follow, LeaseCheck, NextRun, Occurrence, ScheduleDef, ScheduleRecord,
        ScheduleStatus, TimingDef,
    },
    effects::{Effects, HandedOut, Ready},
    error::{Error, LostLease, Missing},
    longpoll::{long_poll, Attempt},
    namespaces::Entry,
    namespaces::Work,
    store::ops::publish_workers::SessionKind,
    store::ops::{
        ack_occurrence::AckOccurrence,
        backfill_schedule::{BackfillSchedule, Backfilled, MAX_BACKFILL_WAITING},
        claim_due::{ClaimAnswer, ClaimDue, ClaimHint, ClaimReply},
        delete_schedule::DeleteSchedule,
        get_schedule::GetSchedule,
        list_due_schedules::ListDueSchedules,
        list_schedules::ListSchedules,
        pause_schedule::PauseSchedule,
        release_occurrence::ReleaseOccurrence,
        resume_schedule::{ResumeSchedule, Resumed},
        set_follow::SetFollow,
        set_schedule_next_run::{CompletedBy, NextRunSet, SetScheduleNextRun},
        trigger_schedule::{TriggerSchedule, Triggered},
        upsert_schedule::UpsertSchedule,
    },
    timing::Timing,
    workers::Opening,
};

/// BackfillSchedule takes ranges of at most this many slots.
pub(crate) const MAX_BACKFILL_SLOTS: usize = 1000;

/// Why a backfill range is refused before anything is written.
#[derive(Debug)]
pub(crate) enum BadRange {
    /// The range holds more than MAX_BACKFILL_SLOTS slots.
    TooManySlots,
    /// It ends after now.
    InTheFuture,
}

pub(crate) use crate::store::ops::set_schedule_next_run::EarliestBy as NextRunEarliestBy;

/// How far in the past SetScheduleNextRun may put the next run of a schedule without
/// a catch-up window (one with a window: the window).
pub(crate) const MAX_NEXT_RUN_PAST_MS: i64 = 86_400_000;

/// Why SetScheduleNextRun refuses a `next_run_time` before anything is written.
#[derive(Debug)]
pub(crate) enum BadNextRun {
    /// Before the earliest time allowed, and why that is the earliest.
    TooEarly {
        earliest_ms: i64,
        by: NextRunEarliestBy,
    },
    /// After the schedule's end_time (this).
    AfterEnd(i64),
}

/// PauseSchedule's `note` is at most this many bytes.
pub(crate) const MAX_PAUSE_NOTE_LEN: usize = 1024;

/// How often one claim re-runs the script after computing a cron hint that lost a race.
const MAX_COMPUTE_ROUNDS: usize = 4;

/// How many hints one claim computes at most. A hint that skips every due slot (a
/// catch-up policy) makes progress without handing anything out, and the claim then
/// goes on to the next due schedule: those rounds are not lost races, but they are
/// bounded too.
const MAX_HINTS: usize = 32;

/// Most schedules one list_schedules call reads for a BASIC page (ListSchedules
/// makes several calls for a larger page), so no call holds Redis for long.
const LIST_CHUNK: usize = 25;

/// What one claim attempt found.
struct ClaimOutcome {
    occurrence: Option<Occurrence>,
    /// Earliest due time left in the index (for the wake-up timer).
    earliest_ms: Option<i64>,
    /// Redis's clock at the claim.
    now_ms: i64,
}

impl ClaimOutcome {
    /// True when more entries were already due when this claim ran.
    fn more_due(&self) -> bool {
        self.earliest_ms.is_some_and(|e| e <= self.now_ms)
    }
}

/// A page of schedules, and the id to continue after.
pub(crate) type SchedulePage = (Vec<ScheduleRecord>, Option<String>);

pub(crate) struct Schedules {
    cx: Context,
    /// `--max-schedules-per-namespace` (0: no limit).
    max_schedules: u64,
}

impl Schedules {
    pub(crate) fn new(cx: Context) -> Self {
        Self {
            cx,
            max_schedules: 0,
        }
    }

    /// Creates beyond `max` schedules in a namespace are refused (0: no limit).
    pub(crate) fn with_quota(self, max: u64) -> Self {
        Self {
            max_schedules: max,
            ..self
        }
    }

    /// Redis's time, as this instance best knows it.
    pub(crate) fn now_ms(&self) -> i64 {
        self.cx.clock.now_ms()
    }

    /// Creates or updates; the next run is computed from now (used only when the
    /// timing changed or the schedule is new). An empty id asks for a new one.
    /// Returns whether it was created.
    pub(crate) async fn upsert(
        &self,
        namespace: &Namespace,
        mut def: ScheduleDef,
        timing: &Timing,
    ) -> Result<(bool, ScheduleRecord), Error> {
        if def.id.is_empty() {
            def.id = uuid::Uuid::new_v4().to_string();
        }
        let entry = self.cx.namespaces.entry(namespace);
        // A slot must be strictly after now to not fire "in the past" on create.
        let next = NextRun::from(timing, self.cx.clock.now_ms() + 1);
        let upsert = UpsertSchedule {
            def: &def,
            next,
            max_schedules: self.max_schedules,
        };
        let upserted = self.cx.store.run(namespace, &upsert).await?;
        let next = Ready::At(upserted.record.next_run_ms);
        let effects = Effects::ready(Work::Schedules, next).stored();
        self.cx.apply(&entry, effects).await;
        self.dispatch_soon(namespace, &upserted.record).await;
        Ok((upserted.created, upserted.record))
    }

    /// A target schedule (issue 30) was written with a slot due at some time: its
    /// namespace goes in the dispatch due-set at that time, by a plain command after
    /// the script (the set is outside the namespace's slot), and this replica's
    /// dispatcher is woken. A failure is logged: the dispatcher's recheck of a
    /// namespace it knows, or the next write, registers it again.
    async fn dispatch_soon(&self, namespace: &Namespace, record: &ScheduleRecord) {
        if record.def.target.is_none() || record.status != ScheduleStatus::Active {
            return;
        }
        let due = [
            record.next_run_ms,
            record.trigger_ms,
            record.backfill_ms,
            record.buffered_ms,
        ]
        .into_iter()
        .flatten()
        .min();
        self.register_dispatch(namespace, due).await;
    }

    async fn register_dispatch(&self, namespace: &Namespace, due_ms: Option<i64>) {
        let Some(at) = due_ms else { return };
        if let Err(error) = self.cx.store.dispatch_soon(namespace, at).await {
            tracing::warn!(%namespace, %error, "could not register the namespace for dispatch");
        }
        self.cx.dispatch.notify_one();
    }

    pub(crate) async fn get(
        &self,
        namespace: &Namespace,
        id: &str,
    ) -> Result<ScheduleRecord, Error> {
        self.cx
            .store
            .run(namespace, &GetSchedule { id })
            .await?
            .ok_or_else(|| Error::NotFound(Missing::Schedule(id.to_owned())))
    }

    pub(crate) async fn delete(&self, namespace: &Namespace, id: &str) -> Result<(), Error> {
        if self.cx.store.run(namespace, &DeleteSchedule { id }).await? {
            Ok(())
        } else {
            Err(Error::NotFound(Missing::Schedule(id.to_owned())))
        }
    }

    pub(crate) async fn pause(
        &self,
        namespace: &Namespace,
        id: &str,
        note: &str,
    ) -> Result<ScheduleRecord, Error> {
        self.cx
            .store
            .run(namespace, &PauseSchedule { id, note })
            .await?
            .ok_or_else(|| Error::NotFound(Missing::Schedule(id.to_owned())))
    }

    /// Resumes with a next run computed from now; retries if the timing moved meanwhile.
    pub(crate) async fn resume(
        &self,
        namespace: &Namespace,
        id: &str,
    ) -> Result<ScheduleRecord, Error> {
        loop {
            let current = self.get(namespace, id).await?;
            if current.status != ScheduleStatus::Paused {
                return Ok(current);
            }
            let next = NextRun::from(&current.def.timing()?, self.cx.clock.now_ms() + 1);
            let resume = ResumeSchedule {
                id,
                revision: current.revision,
                next,
            };
            match self.cx.store.run(namespace, &resume).await? {
                Resumed::Missing => return Err(Error::NotFound(Missing::Schedule(id.to_owned()))),
                Resumed::Moved => continue,
                Resumed::Done(record) => {
                    let entry = self.cx.namespaces.entry(namespace);
                    let effects = Effects::ready(Work::Schedules, Ready::At(record.next_run_ms));
                    self.cx.apply(&entry, effects).await;
                    self.dispatch_soon(namespace, &record).await;
                    return Ok(*record);
                }
            }
        }
    }

    /// A page of schedules in id order (ListSchedules).
    pub(crate) async fn list(
        &self,
        namespace: &Namespace,
        after: &str,
        page: PageShape,
        status: Option<ScheduleStatus>,
    ) -> Result<SchedulePage, Error> {
        // A FULL page is one call (its byte budget bounds it); a BASIC one is read in
        // calls of at most LIST_CHUNK schedules, each well under a few ms of script.
        let chunk = if page.full { page.size } else { LIST_CHUNK };
        let (mut schedules, mut after) = (Vec::new(), after.to_owned());
        loop {
            let size = (page.size - schedules.len()).min(chunk);
            let list = ListSchedules {
                after: &after,
                page: PageShape { size, ..page },
                status,
            };
            let part = self.cx.store.run(namespace, &list).await?;
            let short = part.schedules.len() < size;
            schedules.extend(part.schedules);
            match part.next_after {
                Some(next) if !short && schedules.len() < page.size => after = next,
                next => return Ok((schedules, next)),
            }
        }
    }

    /// A page of active schedules by next run (from the due index), optionally only
    /// those overdue by `overdue_by_ms`; the next run and id to continue after.
    pub(crate) async fn list_by_next_run(
        &self,
        namespace: &Namespace,
        after: Option<(i64, &str)>,
        overdue_by_ms: Option<i64>,
        page: PageShape,
    ) -> Result<(Vec<ScheduleRecord>, Option<(i64, String)>), Error> {
        let list = ListDueSchedules {
            after,
            overdue_by_ms,
            page,
        };
        let page = self.cx.store.run(namespace, &list).await?;
        let next_after = page.next_after.map(|after| (after.next_run_ms, after.id));
        Ok((page.schedules, next_after))
    }

    /// TriggerSchedule: an occurrence now, handed out by the next claim; its id and due
    /// time.
    pub(crate) async fn trigger(
        &self,
        namespace: &Namespace,
        id: &str,
        ignore_overlap: bool,
    ) -> Result<(String, i64), Error> {
        let trigger = TriggerSchedule {
            namespace,
            id,
            ignore_overlap,
        };
        let refused = |why: String| Error::Refused {
            id: id.to_owned(),
            why,
        };
        match self.cx.store.run(namespace, &trigger).await? {
            Triggered::Done {
                occurrence_id,
                due_ms,
                target,
            } => {
                let entry = self.cx.namespaces.entry(namespace);
                let effects = Effects::ready(Work::Schedules, Ready::At(Some(due_ms))).stored();
                self.cx.apply(&entry, effects).await;
                if target {
                    self.register_dispatch(namespace, Some(due_ms)).await;
                }
                Ok((occurrence_id, due_ms))
            }
            Triggered::Missing => Err(Error::NotFound(Missing::Schedule(id.to_owned()))),
            Triggered::Paused => Err(refused(
                "is paused; resume it (ResumeSchedule) first".into(),
            )),
            Triggered::Completed => Err(refused(
                "is completed; raise its run_limit or end_time (UpsertSchedule) first".into(),
            )),
            Triggered::Pending(occurrence) => Err(refused(format!(
                "already has a triggered occurrence ({occurrence}) waiting for a claim; claim it first"
            ))),
            Triggered::Overlap(occurrence) => Err(refused(format!(
                "has occurrence {occurrence} outstanding and its overlap_policy refuses another; ack it, or set ignore_overlap"
            ))),
        }
    }

    /// SetScheduleNextRun: the next run becomes `next_ms` (handed out as a slot, with
    /// its own occurrence id), then the timing goes on with its first slot after it;
    /// the revision, run count and last run do not change. `expected_revision` 0: not
    /// checked. Retries if the timing moves between reading it and writing.
    pub(crate) async fn set_next_run(
        &self,
        namespace: &Namespace,
        id: &str,
        next_ms: i64,
        expected_revision: u64,
    ) -> Result<Result<ScheduleRecord, BadNextRun>, Error> {
        let refused = |why: &str| Error::Refused {
            id: id.to_owned(),
            why: why.to_owned(),
        };
        loop {
            let current = self.get(namespace, id).await?;
            let follow = Follow::from_next(current.def.timing()?.next_after(next_ms));
            let set = SetScheduleNextRun {
                id,
                revision: current.revision,
                expected_revision,
                next_ms,
                follow,
                max_past_ms: MAX_NEXT_RUN_PAST_MS,
            };
            return match self.cx.store.run(namespace, &set).await? {
                NextRunSet::Moved => continue,
                NextRunSet::Done(record) => {
                    let entry = self.cx.namespaces.entry(namespace);
                    let effects = Effects::ready(Work::Schedules, Ready::At(record.next_run_ms));
                    self.cx.apply(&entry, effects).await;
                    self.dispatch_soon(namespace, &record).await;
                    Ok(Ok(*record))
                }
                NextRunSet::Missing => Err(Error::NotFound(Missing::Schedule(id.to_owned()))),
                NextRunSet::Revision(current) => Err(Error::RevisionMismatch {
                    id: id.to_owned(),
                    expected: expected_revision,
                    current,
                }),
                NextRunSet::Paused => Err(refused("is paused; resume it (ResumeSchedule) first")),
                NextRunSet::Completed(CompletedBy::RunLimit) => Err(refused(
                    "is completed: its run_limit is used up; raise it (UpsertSchedule) first",
                )),
                NextRunSet::Completed(CompletedBy::EndTime) => Err(refused(
                    "is completed: its end_time has passed; move it later (UpsertSchedule) first",
                )),
                NextRunSet::NoNextRun => Err(refused(
                    "has no next run: its last slot waits for its outstanding occurrence \
                     (OVERLAP_POLICY_BUFFER_ONE); ack it first",
                )),
                NextRunSet::TooEarly { earliest_ms, by } => {
                    Ok(Err(BadNextRun::TooEarly { earliest_ms, by }))
                }
                NextRunSet::AfterEnd(end_ms) => Ok(Err(BadNextRun::AfterEnd(end_ms))),
            };
        }
    }

    /// BackfillSchedule: queues the slots of the schedule's timing in
    /// [start_ms, end_ms]; (slots in the range, added, waiting). Retries if the timing
    /// moves between reading it and writing the slots.
    pub(crate) async fn backfill(
        &self,
        namespace: &Namespace,
        id: &str,
        start_ms: i64,
        end_ms: i64,
    ) -> Result<Result<(usize, u64, u64), BadRange>, Error> {
        if end_ms > self.cx.clock.now_ms() {
            return Ok(Err(BadRange::InTheFuture));
        }
        let refused = |why: String| Error::Refused {
            id: id.to_owned(),
            why,
        };
        loop {
            let current = self.get(namespace, id).await?;
            let timing = current.def.timing()?;
            let mut slots = Vec::new();
            let mut at = timing.first_at_or_after(start_ms);
            while let Some(slot) = at.filter(|s| *s <= end_ms) {
                if slots.len() == MAX_BACKFILL_SLOTS {
                    return Ok(Err(BadRange::TooManySlots));
                }
                slots.push(slot);
                at = timing.next_after(slot);
            }
            let backfill = BackfillSchedule {
                id,
                revision: current.revision,
                slots: &slots,
            };
            return match self.cx.store.run(namespace, &backfill).await? {
                Backfilled::Done { added, waiting } => {
                    let entry = self.cx.namespaces.entry(namespace);
                    if added > 0 {
                        let first = Ready::At(slots.first().copied());
                        self.cx.apply(&entry, Effects::ready(Work::Schedules, first)).await;
                        if current.def.target.is_some() {
                            self.register_dispatch(namespace, slots.first().copied()).await;
                        }
                    }
                    Ok(Ok((slots.len(), added, waiting)))
                }
                Backfilled::Moved => continue,
                Backfilled::Missing => Err(Error::NotFound(Missing::Schedule(id.to_owned()))),
                Backfilled::Paused => Err(refused(
                    "is paused; resume it (ResumeSchedule) first".into(),
                )),
                Backfilled::Completed => Err(refused(
                    "is completed; raise its run_limit or end_time (UpsertSchedule) first"
                        .into(),
                )),
                Backfilled::Full(waiting) => Err(refused(format!(
                    "has {waiting} backfilled slots waiting; at most {MAX_BACKFILL_WAITING} may wait: let \
                     workers claim them first"
                ))),
            };
        }
    }

    /// Acks a leased occurrence.
    pub(crate) async fn ack_occurrence(
        &self,
        namespace: &Namespace,
        occurrence_id: &str,
        token: &str,
    ) -> Result<(), Error> {
        let ack = AckOccurrence {
            occurrence_id,
            token,
        };
        match self.cx.store.run(namespace, &ack).await? {
            LeaseCheck::Done(released) => {
                if released {
                    // A buffered slot (BUFFER_ONE) is due now: wake a waiter here;
                    // other instances find it at their timer's re-check.
                    let entry = self.cx.namespaces.entry(namespace);
                    let effects = Effects::ready(Work::Schedules, Ready::Now);
                    self.cx.apply(&entry, effects).await;
                }
                Ok(())
            }
            LeaseCheck::Missing => Err(Error::NotFound(Missing::Occurrence(
                occurrence_id.to_owned(),
            ))),
            LeaseCheck::Lost(why) => Err(Error::LeaseLost(LostLease::Occurrence {
                id: occurrence_id.to_owned(),
                why,
            })),
        }
    }

    /// Claims the earliest due occurrence, waiting up to `wait` for one. `lease_ms`:
    /// claim at-least-once.
    pub(crate) async fn claim(
        &self,
        namespace: &Namespace,
        lease_ms: Option<i64>,
        wait: Duration,
        worker: &str,
    ) -> Result<Option<Occurrence>, Error> {
        let entry = self.cx.namespaces.entry(namespace);
        let waiter = (!wait.is_zero()).then(|| self.cx.wakers.schedule_waiter(&entry));
        let _waiting = (!wait.is_zero()).then(|| self.cx.metrics.waiting("schedules"));
        let _session = (!wait.is_zero()).then(|| {
            self.cx.sessions.open(
                namespace.as_str(),
                Opening {
                    kind: SessionKind::ClaimDueSchedule,
                    worker,
                    queues: &[],
                    capacity: 1,
                },
            )
        });
        long_poll(waiter, Instant::now() + wait, &self.cx.shutdown, || {
            self.attempt(&entry, lease_ms, worker)
        })
        .await
    }

    async fn attempt(
        &self,
        entry: &Entry,
        lease_ms: Option<i64>,
        worker: &str,
    ) -> Result<Attempt<Occurrence>, Error> {
        let outcome = self.claim_once(entry, lease_ms, worker).await?;
        let effects = Effects::ready(Work::Schedules, Ready::At(outcome.earliest_ms));
        self.cx.apply(entry, effects).await;
        Ok(Attempt {
            more: outcome.more_due(),
            found: outcome.occurrence,
        })
    }

    /// One claim attempt, without waiting.
    async fn claim_once(
        &self,
        entry: &Entry,
        lease_ms: Option<i64>,
        worker: &str,
    ) -> Result<ClaimOutcome, Error> {
        let namespace = entry.name();
        let mut hint: Option<ClaimHint> = None;
        let token = uuid::Uuid::new_v4().simple().to_string();
        let mut lost = 0;
        for _ in 0..MAX_HINTS {
            if lost >= MAX_COMPUTE_ROUNDS {
                break;
            }
            let claim = ClaimDue {
                namespace,
                hint: hint.as_ref(),
                lease: lease_ms.map(|ms| (token.as_str(), ms)),
                worker,
            };
            let answer = self.claim_confirmed(entry, &claim).await?;
            self.cx
                .apply(entry, claim_effects(hint.as_ref(), &answer))
                .await;
            match answer.reply {
                ClaimReply::Claimed {
                    now_ms,
                    due_ms,
                    skipped,
                    earliest_ms,
                    schedule,
                    lease,
                    occurrence_id,
                    kind,
                } => {
                    self.fill_follow(namespace, &schedule);
                    let occurrence = Occurrence {
                        occurrence_id,
                        kind,
                        schedule: *schedule,
                        due_ms,
                        claim_ms: now_ms,
                        skipped,
                        lease,
                    };
                    return Ok(ClaimOutcome {
                        occurrence: Some(occurrence),
                        earliest_ms,
                        now_ms,
                    });
                }
                ClaimReply::Nothing {
                    now_ms,
                    earliest_ms,
                } => {
                    return Ok(ClaimOutcome {
                        occurrence: None,
                        earliest_ms,
                        now_ms,
                    })
                }
                ClaimReply::Compute { now_ms, schedule } => {
                    // Asked about the same schedule again: the hint lost a race.
                    if hint.as_ref().is_none_or(|h| h.id == schedule.def.id) {
                        lost += 1;
                    }
                    hint = self.compute_hint(namespace, &schedule, now_ms).await?;
                }
            }
        }
        // Lost every race this round; report "nothing yet" so the caller waits briefly.
        Ok(ClaimOutcome {
            occurrence: None,
            earliest_ms: Some(self.cx.clock.now_ms()),
            now_ms: self.cx.clock.now_ms(),
        })
    }

    /// One claim script call. When `--redis-wait-replicas` could not confirm it
    /// (issue 29 item 11), a leased occurrence it handed out is given back at once,
    /// its attempt not counted (release_occurrence.lua; the next leased claim
    /// re-hands it), and the call fails UNAVAILABLE. The schedule stays advanced: an
    /// at-most-once claim's slot is spent, as at-most-once allows. If the release
    /// fails UNAVAILABLE too (the master is gone), it is tried again in the
    /// background until the lease would have run out (src/giveback.rs); given up, the
    /// lease runs out as any lease does.
    async fn claim_confirmed(
        &self,
        entry: &Entry,
        claim: &ClaimDue<'_>,
    ) -> Result<ClaimAnswer, Error> {
        let namespace = entry.name();
        let lease_ms = claim.lease.map_or(0, |(_, ms)| ms);
        let lease = Duration::from_millis(u64::try_from(lease_ms).unwrap_or_default());
        let held_until = Instant::now() + lease;
        let confirmed = self
            .cx
            .store
            .run_confirmed(namespace, claim)
            .await
            .map_err(|unanswered| unanswered.error)?;
        let Some(unconfirmed) = confirmed.unconfirmed else {
            return Ok(confirmed.output);
        };
        if let ClaimReply::Claimed {
            lease: Some(lease),
            occurrence_id,
            ..
        } = &confirmed.output.reply
        {
            let (cx, entry) = (self.cx.clone(), self.cx.namespaces.entry(namespace));
            let (id, token) = (occurrence_id.clone(), lease.token.clone());
            let give_back = move || {
                let (cx, entry) = (cx.clone(), entry.clone());
                let (id, token) = (id.clone(), token.clone());
                async move {
                    let release = ReleaseOccurrence {
                        occurrence_id: &id,
                        token: &token,
                    };
                    cx.store.run_unwaited(entry.name(), &release).await?;
                    cx.apply(&entry, Effects::ready(Work::Schedules, Ready::Now))
                        .await;
                    Ok(())
                }
            };
            self.cx
                .give_backs
                .give_back(namespace, "schedule occurrence", held_until, give_back)
                .await;
        }
        Err(unconfirmed.into())
    }

    /// The next slot of a due cron schedule, or the catch-up plan of a schedule that
    /// is behind under its policy, as the claim script asked. A stored
    /// timing that does not parse can only come from a hand-edited or imported
    /// record (upserts are validated): it is paused, loudly, rather than left to
    /// block the index head; no hint then.
    pub(crate) async fn compute_hint(
        &self,
        namespace: &Namespace,
        schedule: &ScheduleRecord,
        now_ms: i64,
    ) -> Result<Option<ClaimHint>, Error> {
        let id = &schedule.def.id;
        let (timing, Some(next_ms)) = (schedule.def.timing(), schedule.next_run_ms) else {
            return Ok(None);
        };
        let timing = match timing {
            Ok(timing) => timing,
            Err(error) => {
                tracing::error!(%namespace, schedule_id = %id, %error,
                    "stored schedule has an invalid timing; pausing it");
                let note = format!("paused by dueq: the stored timing is invalid: {error}");
                let note = crate::domain::limits::truncated(&note, MAX_PAUSE_NOTE_LEN);
                self.cx
                    .store
                    .run(namespace, &PauseSchedule { id, note })
                    .await?;
                return Ok(None);
            }
        };
        let plan = timing.catch_up(next_ms, now_ms, schedule.def.catchup);
        // `every` needs no follow slot (the script adds the interval).
        let follow = match plan.next_ms {
            Some(_) if !timing.is_cron() => Follow::Unknown,
            Some(next) => Follow::from_next(timing.next_after(next)),
            None => Follow::End,
        };
        Ok(Some(ClaimHint {
            id: id.clone(),
            revision: schedule.revision,
            expected_next_ms: next_ms,
            next: NextRun {
                next_ms: plan.next_ms,
                follow,
            },
            hand_out: plan.hand_out,
            skipped: plan.skipped_catchup,
            skipped_window: plan.skipped_window,
        }))
    }

    /// Precomputes the slot after a cron schedule's new next run, off the claim's path,
    /// so its next claim is one round trip. Losing this write costs one extra trip.
    fn fill_follow(&self, namespace: &Namespace, schedule: &ScheduleRecord) {
        let missing = schedule.follow == Follow::Unknown
            && schedule.status == ScheduleStatus::Active
            && matches!(schedule.def.timing, TimingDef::Cron(_));
        let (true, Some(next_ms), Ok(timing)) =
            (missing, schedule.next_run_ms, schedule.def.timing())
        else {
            return;
        };
        let follow = Follow::from_next(timing.next_after(next_ms));
        let (store, namespace) = (self.cx.store.clone(), namespace.to_owned());
        let (id, revision) = (schedule.def.id.clone(), schedule.revision);
        tokio::spawn(async move {
            let set = SetFollow {
                id: &id,
                revision,
                next_ms,
                follow,
            };
            if let Err(error) = store.run(&namespace, &set).await {
                tracing::debug!(%namespace, schedule_id = %id, %error, "could not record follow slot");
            }
        });
    }
}

/// What a claim call did: the runs its overlap policy skipped, and the occurrence it
/// handed out.
fn claim_effects(hint: Option<&ClaimHint>, answer: &ClaimAnswer) -> Effects<'static> {
    let mut effects = Effects {
        overlap_skips: answer.overlap_skips,
        ..Effects::default()
    };
    if let ClaimReply::Claimed {
        now_ms,
        due_ms,
        skipped,
        schedule,
        ..
    } = &answer.reply
    {
        let planned = hint.filter(|h| h.id == schedule.def.id);
        effects
            .occurrences
            .push(handed_out(planned, *now_ms, *due_ms, *skipped));
    }
    effects
}

/// A handed-out occurrence's lateness and the runs skipped before it. The reply counts
/// both reasons for skipping together; when it handed out the slot of our plan
/// (`planned`, the hint about this schedule), the plan says how they split.
fn handed_out(planned: Option<&ClaimHint>, now_ms: i64, due_ms: i64, skipped: u64) -> HandedOut {
    let window = planned
        .filter(|h| h.hand_out == Some(due_ms))
        .map_or(0, |h| h.skipped_window.min(skipped));
    HandedOut {
        late_ms: now_ms - due_ms,
        skipped_policy: skipped - window,
        skipped_window: window,
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::Schedules;
    use crate::testing::offline_context;

    /// Each idle long-poll holds its future for the whole wait; 10,000 of them at
    /// 8 KB (the Redis call's state kept inline) cost 80 MB. Boxing that call keeps a
    /// waiter under 2 KB.
    #[tokio::test]
    async fn an_idle_schedule_long_poll_is_small() {
        let schedules = Schedules::new(offline_context());
        let namespace = crate::testing::namespace("ns");
        let wait = schedules.claim(&namespace, None, Duration::from_secs(30), "w");
        let size = std::mem::size_of_val(&wait);
        assert!(size < 2048, "a schedule long-poll's future is {size} bytes");
    }
}
