//! The dispatcher (issue 30): enqueues the due slots of target schedules as jobs.
//! One task per replica, driven by the dispatch due-set in Redis
//! (`store::dispatch_due`): it sleeps until the set's earliest time (re-read every
//! `--recheck-interval`, so other replicas' registrations are seen, and woken at once
//! when a schedule write on this replica makes a slot due sooner), takes the due
//! namespaces, a bounded page at a time, and runs `lua/dispatch_due.lua` on each a
//! bounded number of times per visit, so one namespace with 10,000 due slots does not
//! starve the others; then it re-registers the namespace at its next due slot. Nothing
//! is held per schedule: an idle namespace is one sorted-set entry, and a namespace
//! without target schedules is not in the set at all (docs/DESIGN.md, "Dispatch").
//!
//! Exactly once needs no protocol here: each script call takes slots and creates
//! their jobs atomically, with the slot's occurrence id as the job id. Two replicas
//! visiting one namespace share the work; a replica killed between calls leaves the
//! rest due for the next visit.

use std::{sync::Arc, time::Duration};

use crate::{
    context::Context,
    domain::Namespace,
    effects::{Effects, HandedOut, Ready},
    error::Error,
    namespaces::Work,
    schedules::Schedules,
    store::ops::{
        claim_due::ClaimHint,
        dispatch_due::{DispatchDue, Dispatched, DISPATCH_SLOTS},
    },
};

/// Script calls per namespace per visit (up to `DISPATCH_SLOTS` slots each); a
/// namespace with more due stays due, and is visited again after the others.
const ROUNDS_PER_VISIT: usize = 20;
/// Due namespaces read from the due-set per page.
const DUE_PAGE: usize = 100;
/// A namespace whose visit failed (Redis away, needs Migrate) is tried again after this.
const RETRY_AFTER_MS: i64 = 10_000;
/// A visit that took nothing while its index still said "due" (every plan it computed
/// lost a race) looks again this much later rather than at once.
const NO_PROGRESS_MS: i64 = 50;
/// A namespace at its job quota (`--max-jobs-per-namespace`) is looked at again after
/// this: its slots stay due until jobs finish (then the catch-up policy applies).
const AT_QUOTA_MS: i64 = 1_000;

pub(crate) struct Dispatcher {
    cx: Context,
    schedules: Schedules,
    recheck: Duration,
    /// `--max-jobs-per-namespace` (0: no limit).
    max_jobs: u64,
}

/// What a visit of one namespace left.
struct Visit {
    /// When the namespace is due next (`None`: no target slot waits).
    next_ms: Option<i64>,
}

impl Dispatcher {
    pub(crate) fn new(cx: Context, recheck: Duration, max_jobs: u64) -> Self {
        Self {
            schedules: Schedules::new(cx.clone()),
            cx,
            recheck,
            max_jobs,
        }
    }

    /// One visit: dispatch calls until nothing is due or the round budget is spent.
    async fn visit(&self, namespace: &Namespace) -> Result<Visit, Error> {
        let entry = self.cx.namespaces.entry(namespace);
        let mut hints: Vec<ClaimHint> = Vec::new();
        let mut progress = false;
        for _ in 0..ROUNDS_PER_VISIT {
            let op = DispatchDue {
                namespace,
                hints: &hints,
                max_jobs: self.max_jobs,
            };
            let out = self.cx.store.run(namespace, &op).await?;
            self.cx.apply(&entry, effects(&out, &hints)).await;
            progress |= !out.slots.is_empty();
            if out.at_quota {
                tracing::debug!(%namespace, "schedule dispatch waits: the namespace is at its job quota");
                return Ok(Visit {
                    next_ms: Some(out.now_ms + AT_QUOTA_MS),
                });
            }
            let full = out.slots.len() >= DISPATCH_SLOTS as usize;
            hints.clear();
            for schedule in &out.compute {
                let hint = self
                    .schedules
                    .compute_hint(namespace, schedule, out.now_ms)
                    .await?;
                hints.extend(hint);
            }
            if !full && hints.is_empty() {
                let next_ms = match out.earliest_ms {
                    Some(at) if at <= out.now_ms && !progress => Some(out.now_ms + NO_PROGRESS_MS),
                    other => other,
                };
                return Ok(Visit { next_ms });
            }
            progress |= !hints.is_empty();
        }
        Ok(Visit {
            next_ms: Some(self.cx.clock.now_ms()),
        })
    }

    /// Visits the namespaces due now, a page at a time; returns whether any was due.
    async fn tick(&self) -> Result<bool, Error> {
        let due = self
            .cx
            .store
            .dispatch_due(self.cx.clock.now_ms(), DUE_PAGE)
            .await?;
        for name in &due {
            let Ok(namespace) = Namespace::parse(name) else {
                tracing::warn!(namespace = %name, "dropping an invalid name from the dispatch due-set");
                self.cx.store.dispatch_forget(name).await?;
                continue;
            };
            let next_ms = match self.visit(&namespace).await {
                Ok(visit) => visit.next_ms,
                Err(error) => {
                    tracing::warn!(%namespace, %error, "schedule dispatch failed; retrying later");
                    Some(self.cx.clock.now_ms() + RETRY_AFTER_MS)
                }
            };
            self.cx.store.dispatch_again(&namespace, next_ms).await?;
        }
        Ok(!due.is_empty())
    }

    /// Until shutdown: sleeps until the earliest registered time (at most the recheck
    /// interval, or until poked), then visits what is due.
    pub(crate) async fn run(self: Arc<Self>) {
        let shutdown = self.cx.shutdown.clone();
        loop {
            let wait = match self.tick().await {
                Ok(true) => Duration::ZERO,
                Ok(false) => self.until_next().await,
                Err(error) => {
                    tracing::debug!(%error, "schedule dispatch paused until the next check");
                    self.recheck
                }
            };
            if wait.is_zero() {
                tokio::task::yield_now().await;
                if shutdown.is_cancelled() {
                    return;
                }
                continue;
            }
            // The time until the next registered slot (bounded by the recheck
            // interval): real time, as the long-poll timers wait it.
            #[allow(clippy::disallowed_methods)]
            let sleep = tokio::time::sleep(wait);
            tokio::select! {
                _ = sleep => {}
                _ = self.cx.dispatch.notified() => {}
                _ = shutdown.cancelled() => return,
            }
        }
    }

    /// How long until the due-set's earliest time, at most the recheck interval.
    async fn until_next(&self) -> Duration {
        match self.cx.store.dispatch_next().await {
            Ok(Some(at)) => {
                let ms = (at - self.cx.clock.now_ms()).max(0);
                Duration::from_millis(u64::try_from(ms).unwrap_or(0)).min(self.recheck)
            }
            Ok(None) | Err(_) => self.recheck,
        }
    }
}

/// What a dispatch call did: jobs created (metrics, and this replica's job waiters
/// woken), each slot counted as an occurrence, the overlap skips. A slot's skips are
/// split between the policy and the window as the plan (`hints`) that took it says,
/// as a claim splits them.
fn effects<'a>(out: &'a Dispatched, hints: &[ClaimHint]) -> Effects<'a> {
    let mut effects = Effects {
        overlap_skips: out.overlap_skips,
        ..Effects::default()
    };
    for slot in out.slots.iter().filter(|s| s.created) {
        effects.created.push(&slot.queue);
        let window = hints
            .iter()
            .find(|h| h.id == slot.schedule_id && h.hand_out == Some(slot.due_ms))
            .map_or(0, |h| h.skipped_window.min(slot.skipped));
        effects.occurrences.push(HandedOut {
            late_ms: out.now_ms - slot.due_ms,
            skipped_policy: slot.skipped - window,
            skipped_window: window,
        });
    }
    if !effects.occurrences.is_empty() {
        effects = effects.stored().and_ready(Work::Jobs, Ready::Now);
    }
    effects
}
