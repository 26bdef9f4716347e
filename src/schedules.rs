//! Schedule use cases: joins the pure timing module with the store's scripts.
//!
//! The API layer validates and translates; this module decides next runs (cron and
//! time zones live in Rust) and drives the claim protocol of `lua/claim_due.lua`.

use std::sync::Arc;

use crate::{
    clock::Clock,
    domain::{occurrence_id, Occurrence, ScheduleDef, ScheduleRecord, ScheduleStatus, TimingDef},
    store::{
        schedules::{AckOccurrenceReply, ClaimHint, ClaimReply, Follow, NextRun, ResumeReply},
        Store, StoreError,
    },
    timing::{Timing, TimingError, TimingSpec},
};

/// How often one claim re-runs the script after computing a cron hint that lost a race.
const MAX_COMPUTE_ROUNDS: usize = 4;

#[derive(Debug, thiserror::Error)]
pub enum ScheduleError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Timing(#[from] TimingError),
    #[error("schedule {0:?} not found")]
    NotFound(String),
    #[error("no leased occurrence {0:?} (never leased, or its acked record expired)")]
    OccurrenceNotFound(String),
    /// The caller's occurrence lease is not (or no longer) current. Nothing changed.
    #[error("occurrence {id:?}: {reason}")]
    OccurrenceLeaseLost { id: String, reason: String },
}

/// What one claim attempt found.
pub struct ClaimOutcome {
    pub occurrence: Option<Occurrence>,
    /// Earliest due time left in the index (for the wake-up timer).
    pub earliest_ms: Option<i64>,
    /// Redis's clock at the claim.
    pub now_ms: i64,
}

impl ClaimOutcome {
    /// True when more entries were already due when this claim ran.
    pub fn more_due(&self) -> bool {
        self.earliest_ms.is_some_and(|e| e <= self.now_ms)
    }
}

pub struct Schedules {
    store: Arc<Store>,
    clock: Arc<Clock>,
}

/// Parses a definition's timing (already validated on write; stored ones re-checked).
pub fn timing_of(def: &ScheduleDef) -> Result<Timing, TimingError> {
    let (cron, every_ms) = match &def.timing {
        TimingDef::Cron(expr) => (Some(expr.as_str()), None),
        TimingDef::EveryMs(ms) => (None, Some(*ms)),
    };
    Timing::parse(&TimingSpec {
        cron,
        every_ms,
        timezone: &def.timezone,
        start_ms: def.start_ms,
        end_ms: def.end_ms,
    })
}

/// Next run at or after `now_ms`, plus the follow-up slot for cron schedules.
fn next_run(timing: &Timing, from_ms: i64) -> NextRun {
    let next_ms = timing.first_at_or_after(from_ms);
    let follow = match (timing.is_cron(), next_ms) {
        (true, Some(next)) => Follow::from_next(timing.next_after(next)),
        _ => Follow::Unknown,
    };
    NextRun { next_ms, follow }
}

impl Schedules {
    pub fn new(store: Arc<Store>, clock: Arc<Clock>) -> Self {
        Self { store, clock }
    }

    pub fn store(&self) -> &Arc<Store> {
        &self.store
    }

    pub fn clock(&self) -> &Arc<Clock> {
        &self.clock
    }

    /// Creates or updates; the next run is computed from now (used only when the
    /// timing changed or the schedule is new).
    pub async fn upsert(
        &self,
        namespace: &str,
        def: &ScheduleDef,
        timing: &Timing,
    ) -> Result<(bool, ScheduleRecord), ScheduleError> {
        // A slot must be strictly after now to not fire "in the past" on create.
        let next = next_run(timing, self.clock.now_ms() + 1);
        Ok(self.store.upsert_schedule(namespace, def, next).await?)
    }

    pub async fn get(&self, namespace: &str, id: &str) -> Result<ScheduleRecord, ScheduleError> {
        self.store
            .get_schedule(namespace, id)
            .await?
            .ok_or_else(|| ScheduleError::NotFound(id.to_owned()))
    }

    pub async fn delete(&self, namespace: &str, id: &str) -> Result<(), ScheduleError> {
        if self.store.delete_schedule(namespace, id).await? {
            Ok(())
        } else {
            Err(ScheduleError::NotFound(id.to_owned()))
        }
    }

    pub async fn pause(&self, namespace: &str, id: &str) -> Result<ScheduleRecord, ScheduleError> {
        self.store
            .pause_schedule(namespace, id)
            .await?
            .ok_or_else(|| ScheduleError::NotFound(id.to_owned()))
    }

    /// Resumes with a next run computed from now; retries if the timing moved meanwhile.
    pub async fn resume(&self, namespace: &str, id: &str) -> Result<ScheduleRecord, ScheduleError> {
        loop {
            let current = self.get(namespace, id).await?;
            if current.status != ScheduleStatus::Paused {
                return Ok(current);
            }
            let timing = timing_of(&current.def)?;
            let next = next_run(&timing, self.clock.now_ms() + 1);
            match self
                .store
                .resume_schedule(namespace, id, current.revision, next)
                .await?
            {
                ResumeReply::Missing => return Err(ScheduleError::NotFound(id.to_owned())),
                ResumeReply::Moved => continue,
                ResumeReply::Resumed(record) => return Ok(*record),
            }
        }
    }

    pub async fn list(
        &self,
        namespace: &str,
        after: &str,
        page_size: usize,
        status: Option<ScheduleStatus>,
    ) -> Result<(Vec<ScheduleRecord>, Option<String>), ScheduleError> {
        Ok(self
            .store
            .list_schedules(namespace, after, page_size, status)
            .await?)
    }

    /// Acks a leased occurrence.
    pub async fn ack_occurrence(
        &self,
        namespace: &str,
        occurrence_id: &str,
        token: &str,
    ) -> Result<(), ScheduleError> {
        let lost = |reason: &str| ScheduleError::OccurrenceLeaseLost {
            id: occurrence_id.to_owned(),
            reason: reason.to_owned(),
        };
        match self
            .store
            .ack_occurrence(namespace, occurrence_id, token)
            .await?
        {
            AckOccurrenceReply::Acked => Ok(()),
            AckOccurrenceReply::Missing => {
                Err(ScheduleError::OccurrenceNotFound(occurrence_id.to_owned()))
            }
            AckOccurrenceReply::Expired => Err(lost(
                "the lease expired; it is handed to the next leased claim",
            )),
            AckOccurrenceReply::Stale(state) if state == "acked" => Err(lost("already acked")),
            AckOccurrenceReply::Stale(_) => Err(lost(
                "the lease token is not the current one (it was re-handed)",
            )),
        }
    }

    /// One claim attempt, without waiting. `lease_ms`: claim at-least-once.
    pub async fn claim_once(
        &self,
        namespace: &str,
        lease_ms: Option<i64>,
    ) -> Result<ClaimOutcome, ScheduleError> {
        let mut hint: Option<ClaimHint> = None;
        let token = uuid::Uuid::new_v4().simple().to_string();
        let lease = lease_ms.map(|ms| (token.as_str(), ms));
        for _ in 0..MAX_COMPUTE_ROUNDS {
            match self
                .store
                .claim_due(namespace, hint.as_ref(), lease)
                .await?
            {
                ClaimReply::Claimed {
                    now_ms,
                    due_ms,
                    skipped,
                    earliest_ms,
                    schedule,
                    revision,
                    follow_missing,
                    lease,
                } => {
                    if follow_missing {
                        self.fill_follow(namespace, &schedule, revision);
                    }
                    let occurrence = Occurrence {
                        occurrence_id: occurrence_id(
                            namespace,
                            &schedule.def.id,
                            due_ms,
                            schedule.revision,
                        ),
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
                ClaimReply::Compute {
                    now_ms,
                    revision,
                    next_ms,
                    schedule,
                    ..
                } => {
                    let id = schedule.def.id.clone();
                    let timing = match timing_of(&schedule.def) {
                        Ok(timing) => timing,
                        Err(error) => {
                            // Only a hand-edited or imported record gets here (upserts are
                            // validated). Pause it, loudly, rather than block the index head.
                            tracing::error!(%namespace, schedule_id = %id, %error,
                                "stored schedule has an invalid timing; pausing it");
                            self.store.pause_schedule(namespace, &id).await?;
                            continue;
                        }
                    };
                    let advance = timing.advance(next_ms, now_ms);
                    let follow = match advance.next_ms {
                        Some(next) => Follow::from_next(timing.next_after(next)),
                        None => Follow::End,
                    };
                    hint = Some(ClaimHint {
                        id,
                        revision,
                        expected_next_ms: next_ms,
                        next: NextRun {
                            next_ms: advance.next_ms,
                            follow,
                        },
                        skipped: advance.skipped,
                    });
                }
            }
        }
        // Lost every race this round; report "nothing yet" so the caller waits briefly.
        Ok(ClaimOutcome {
            occurrence: None,
            earliest_ms: Some(self.clock.now_ms()),
            now_ms: self.clock.now_ms(),
        })
    }

    /// Precomputes the slot after a cron schedule's new next run, off the claim's path,
    /// so its next claim is one round trip. Losing this write costs one extra trip.
    fn fill_follow(&self, namespace: &str, schedule: &ScheduleRecord, revision: String) {
        let Some(next_ms) = schedule.next_run_ms else {
            return;
        };
        let Ok(timing) = timing_of(&schedule.def) else {
            return;
        };
        let follow = Follow::from_next(timing.next_after(next_ms));
        let (store, namespace, id) = (
            self.store.clone(),
            namespace.to_owned(),
            schedule.def.id.clone(),
        );
        tokio::spawn(async move {
            if let Err(error) = store
                .set_follow(&namespace, &id, &revision, next_ms, follow)
                .await
            {
                tracing::debug!(%namespace, schedule_id = %id, %error, "could not record follow slot");
            }
        });
    }
}
