//! What each principal's namespaces hold together, as this replica reckons it, for
//! its `max_jobs` and `max_schedules` (`super::quota` says why it is a soft limit).
//! A [`Tally`] per principal: the totals last read from Redis plus what this replica
//! let in that the read may have missed (let in after it began, or still being
//! written then). A call takes its room from the tally under a lock;
//! the tally is read again [`REFRESH`] after its last read ended, and only while
//! the principal makes calls.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use crate::{
    store::{PrincipalTotals, Store, StoreError},
    sync::lock,
};

/// How old a tally's read may grow before a call starts another.
pub(super) const REFRESH: Duration = Duration::from_secs(1);

/// What a limit counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Jobs,
    Schedules,
}

/// What a call took from its principal's tally.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Taken {
    /// How many of the call's items were let in.
    pub(super) taken: u64,
    /// What the tally held before the call, as this replica reckons it.
    pub(super) held: u64,
}

/// One count of a tally.
#[derive(Debug, Default)]
struct Count {
    /// What the principal's namespaces held at the latest read.
    base: u64,
    /// What this replica has let in, ever (only grows).
    admitted: u64,
    /// What of `admitted` has been written (or failed) since: its calls ended.
    completed: u64,
    /// `completed` when the latest read began. The rest of `admitted` is counted on
    /// top of `base`: what was let in after the read began, and what was still
    /// being written then (the read may have missed it; if not, it counts twice
    /// until the next read, the safe way).
    at_read: u64,
}

impl Count {
    fn held(&self) -> u64 {
        self.base + (self.admitted - self.at_read)
    }
}

/// One principal's tally.
#[derive(Debug, Default)]
struct Tally {
    jobs: Count,
    schedules: Count,
    /// When the latest read whose totals are in `base` began; None before the first.
    read_at: Option<Instant>,
    /// When the latest read ended (stored or dropped): the next starts [`REFRESH`]
    /// after, so a slow read (10,000 namespaces) is not followed at once by another.
    read_ended: Option<Instant>,
    /// Whether a read is under way (one at a time, once there is a first).
    refreshing: bool,
}

impl Tally {
    /// What a read beginning now may find written: (jobs, schedules) of what was let
    /// in. The rest stays counted on top of what it reads.
    fn written(&self) -> (u64, u64) {
        (self.jobs.completed, self.schedules.completed)
    }

    fn count(&mut self, kind: Kind) -> &mut Count {
        match kind {
            Kind::Jobs => &mut self.jobs,
            Kind::Schedules => &mut self.schedules,
        }
    }
}

/// What a call does after looking at its tally.
enum Step {
    /// Let in (or refused) on the tally as it is.
    Done(Taken),
    /// Let in; the last read ended a second ago, so a read starts in the background.
    DoneAndRead(Taken),
    /// The tally has no read yet, or would refuse on a read that old: read, then
    /// look again.
    Read,
}

/// Every principal's tally on this replica.
pub(super) struct Totals {
    store: Arc<Store>,
    /// By principal name: one entry per principal with a `max_jobs` or
    /// `max_schedules` that has called, so at most the auth file's principals.
    tallies: Arc<Mutex<HashMap<String, Tally>>>,
}

impl Totals {
    pub(super) fn new(store: Arc<Store>) -> Self {
        Totals {
            store,
            tallies: Arc::new(Mutex::new(HashMap::new())),
        }
    }

    /// Takes room for `n` items of `kind` under `max` for `principal`: all `n` or
    /// none (`whole`), or as many as fit. A local check but for the principal's
    /// first call on this replica, and a call the tally would refuse while its read
    /// ended a second ago (that call reads first, so room freed by deletes is seen).
    pub(super) async fn take(
        &self,
        principal: &str,
        kind: Kind,
        n: u64,
        max: u64,
        whole: bool,
    ) -> Result<Taken, StoreError> {
        let mut may_read = true;
        loop {
            match self.step(principal, kind, n, max, whole, may_read) {
                Step::Done(taken) => return Ok(taken),
                Step::DoneAndRead(taken) => {
                    let (store, tallies) = (self.store.clone(), self.tallies.clone());
                    let principal = principal.to_owned();
                    tokio::spawn(async move {
                        if let Err(error) = read(&store, &tallies, &principal).await {
                            tracing::warn!(%principal, %error, "reading a principal's totals failed");
                        }
                    });
                    return Ok(taken);
                }
                Step::Read => {
                    // Boxed: every enqueue handler awaits this (quota.rs says why).
                    Box::pin(read(&self.store, &self.tallies, principal)).await?;
                    may_read = false;
                }
            }
        }
    }

    /// One look at the principal's tally, under the lock: takes what fits, or says
    /// to read first.
    fn step(
        &self,
        principal: &str,
        kind: Kind,
        n: u64,
        max: u64,
        whole: bool,
        may_read: bool,
    ) -> Step {
        let mut tallies = lock(&self.tallies);
        let tally = match tallies.get_mut(principal) {
            Some(tally) => tally,
            None => tallies.entry(principal.to_owned()).or_default(),
        };
        let Some(ended) = tally.read_at.and(tally.read_ended) else {
            if may_read {
                return Step::Read;
            }
            // The read just made was dropped for a newer one, still to be stored.
            return Step::Done(Taken { taken: 0, held: 0 });
        };
        let stale = !tally.refreshing && ended.elapsed() >= REFRESH;
        let count = tally.count(kind);
        let held = count.held();
        let room = max.saturating_sub(held);
        let taken = match (whole, n <= room) {
            (_, true) => n,
            (true, false) => 0,
            (false, false) => room,
        };
        if taken < n && stale && may_read {
            tally.refreshing = true;
            return Step::Read;
        }
        count.admitted += taken;
        let done = Taken { taken, held };
        if stale && taken > 0 {
            tally.refreshing = true;
            return Step::DoneAndRead(done);
        }
        Step::Done(done)
    }
}

impl Totals {
    /// `n` items of `kind` that `take` let in for `principal` have been written, or
    /// have failed: their call ended.
    pub(super) fn completed(&self, principal: &str, kind: Kind, n: u64) {
        if let Some(tally) = lock(&self.tallies).get_mut(principal) {
            let count = tally.count(kind);
            count.completed = (count.completed + n).min(count.admitted);
        }
    }
}

/// Reads `principal`'s totals into its tally: what was let in since the read began,
/// or was still being written when it began, stays counted on top. A read that
/// began before the tally's latest is dropped.
async fn read(
    store: &Store,
    tallies: &Mutex<HashMap<String, Tally>>,
    principal: &str,
) -> Result<(), StoreError> {
    let began = Instant::now();
    let written = lock(tallies)
        .entry(principal.to_owned())
        .or_default()
        .written();
    let _reading = Reading { tallies, principal };
    let totals: PrincipalTotals = store.principal_totals(principal).await?;
    store_read(tallies, principal, began, written, totals);
    Ok(())
}

/// Puts a read's `totals` in the principal's tally, unless a later read is there:
/// it began at `began`, when `written` (jobs, schedules) of what was let in had
/// been written.
fn store_read(
    tallies: &Mutex<HashMap<String, Tally>>,
    principal: &str,
    began: Instant,
    written: (u64, u64),
    totals: PrincipalTotals,
) {
    let mut tallies = lock(tallies);
    let tally = tallies.entry(principal.to_owned()).or_default();
    tally.read_ended = Some(Instant::now());
    if tally.read_at.is_none_or(|at| at <= began) {
        tally.read_at = Some(began);
        tally.jobs.base = totals.jobs;
        tally.jobs.at_read = written.0;
        tally.schedules.base = totals.schedules;
        tally.schedules.at_read = written.1;
    }
}

/// Clears the tally's `refreshing` when its read ends, whether it finished, failed or
/// was dropped with its call.
struct Reading<'a> {
    tallies: &'a Mutex<HashMap<String, Tally>>,
    principal: &'a str,
}

impl Drop for Reading<'_> {
    fn drop(&mut self) {
        if let Some(tally) = lock(self.tallies).get_mut(self.principal) {
            tally.refreshing = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use super::{store_read, Kind, Taken, Tally, Totals};
    use crate::{store::PrincipalTotals, sync::lock};

    /// Totals whose tally for "p" was read and held `jobs` jobs, with a read under
    /// way (so however long the test takes, no call starts another).
    fn read_just_now(jobs: u64) -> Totals {
        let totals = Totals::new(crate::testing::offline_context().store);
        let mut tally = Tally {
            read_at: Some(Instant::now()),
            read_ended: Some(Instant::now()),
            refreshing: true,
            ..Tally::default()
        };
        tally.jobs.base = jobs;
        lock(&totals.tallies).insert("p".into(), tally);
        totals
    }

    /// Pins (issue 29 item 5): on a fresh tally calls are decided with no Redis
    /// command (the store here reaches no Redis): what fits is let in and counted,
    /// whole calls take all or none, partial ones what is left, and schedules are
    /// counted apart from jobs.
    #[tokio::test]
    async fn a_fresh_tally_decides_locally() {
        let totals = read_just_now(3);
        let take = |kind, n, whole| totals.take("p", kind, n, 6, whole);
        let taken = take(Kind::Jobs, 2, true).await.expect("local");
        assert_eq!(taken, Taken { taken: 2, held: 3 });
        let taken = take(Kind::Jobs, 2, true).await.expect("local");
        assert_eq!(taken, Taken { taken: 0, held: 5 }, "whole: all or none");
        let taken = take(Kind::Jobs, 2, false).await.expect("local");
        assert_eq!(taken, Taken { taken: 1, held: 5 }, "partial: what is left");
        let taken = take(Kind::Jobs, 1, false).await.expect("local");
        assert_eq!(taken, Taken { taken: 0, held: 6 });
        let taken = take(Kind::Schedules, 1, true).await.expect("local");
        assert_eq!(taken, Taken { taken: 1, held: 0 });
    }

    /// Pins (issue 29 item 5): jobs let in but still being written when a read
    /// begins stay counted on top of what it read (it may have missed them), until
    /// a read that begins after they were written; jobs written before a read
    /// began are counted by it alone.
    #[tokio::test]
    async fn jobs_being_written_when_a_read_begins_stay_counted() {
        let totals = read_just_now(0);
        let take = |n| totals.take("p", Kind::Jobs, n, 10, true);
        assert_eq!(take(4).await.expect("local").taken, 4);
        let written = || lock(&totals.tallies)["p"].written();
        // A read begins while the 4 are written, and misses them.
        let (began, written_then) = (Instant::now(), written());
        let missed = PrincipalTotals {
            jobs: 0,
            schedules: 0,
        };
        store_read(&totals.tallies, "p", began, written_then, missed);
        assert_eq!(take(0).await.expect("local").held, 4, "still counted");
        totals.completed("p", Kind::Jobs, 4);
        // A read that begins after they were written sees them.
        let (began, written_then) = (Instant::now(), written());
        let seen = PrincipalTotals {
            jobs: 4,
            schedules: 0,
        };
        store_read(&totals.tallies, "p", began, written_then, seen);
        assert_eq!(take(0).await.expect("local").held, 4, "counted once");
    }
}
