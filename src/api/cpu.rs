//! CPU-bound request work (cron validation, previews) runs on tokio's blocking pool,
//! a few calls at a time, so a burst of expensive requests queues here instead of
//! stalling the async workers that every other call (and every long-poll wake-up)
//! needs.
//!
//! The gate is per caller (issue 29): each principal (and the one class of callers
//! without an auth file) has [`PER_CALLER`] permits of its own, and all of them
//! together at most [`TOTAL`]. A principal's burst (PreviewSchedule is open to
//! readers) queues behind its own permits; another principal's UpsertSchedule takes
//! its own, and never waits in that queue. A principal's permits wait for the total
//! only once it has its own, so one principal is at most [`PER_CALLER`] places of
//! the total's queue. Principals come from `--auth-file`, so the table of gates is
//! as bounded as that file.

use std::{
    collections::HashMap,
    sync::{Arc, LazyLock, Mutex},
};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::ApiError;
use crate::{auth::Caller, error::Error, sync::lock};

/// Blocking threads one caller may hold at once. Two cores are the common
/// deployment; more threads than cores only adds switching.
const PER_CALLER: usize = 2;

/// Blocking threads all callers together may hold at once: room for a few callers'
/// bursts side by side.
const TOTAL: usize = 8;

static GATE: LazyLock<Gate> = LazyLock::new(|| Gate::new(PER_CALLER, TOTAL));

/// Permits per caller, under a total.
#[derive(Debug)]
pub(super) struct Gate {
    per_caller: usize,
    total: Arc<Semaphore>,
    callers: Mutex<HashMap<String, Arc<Semaphore>>>,
}

/// What a caller holds while its work runs.
pub(super) struct Pass {
    _own: OwnedSemaphorePermit,
    _total: OwnedSemaphorePermit,
}

impl Gate {
    pub(super) fn new(per_caller: usize, total: usize) -> Gate {
        Gate {
            per_caller,
            total: Arc::new(Semaphore::new(total)),
            callers: Mutex::new(HashMap::new()),
        }
    }

    /// Waits for one of `caller`'s permits, then one of the total. The semaphores
    /// are never closed, so acquiring only waits; None would mean they were.
    pub(super) async fn enter(&self, caller: &str) -> Option<Pass> {
        let own = self.own(caller).await?;
        self.total(own).await
    }

    /// Waits for one of `caller`'s own permits.
    pub(super) async fn own(&self, caller: &str) -> Option<OwnedSemaphorePermit> {
        let own = {
            let mut callers = lock(&self.callers);
            match callers.get(caller) {
                Some(own) => own.clone(),
                None => callers
                    .entry(caller.to_owned())
                    .or_insert_with(|| Arc::new(Semaphore::new(self.per_caller)))
                    .clone(),
            }
        };
        own.acquire_owned().await.ok()
    }

    /// With one of a caller's own permits, waits for one of the total.
    pub(super) async fn total(&self, own: OwnedSemaphorePermit) -> Option<Pass> {
        let total = self.total.clone().acquire_owned().await.ok()?;
        Some(Pass {
            _own: own,
            _total: total,
        })
    }
}

/// Runs `work` off the async workers, under `caller`'s permits (no caller in the
/// request: the class of callers without an auth file).
pub(super) async fn run<T, F>(caller: Option<&Caller>, work: F) -> Result<T, ApiError>
where
    T: Send + 'static,
    F: FnOnce() -> Result<T, ApiError> + Send + 'static,
{
    let name = caller.map_or(Caller::Unrestricted.name(), Caller::name);
    let Some(_pass) = GATE.enter(name).await else {
        return Err(ApiError::App(Error::Cancelled));
    };
    match tokio::task::spawn_blocking(work).await {
        Ok(result) => result,
        // A panic stays a panic, as if the work had run inline.
        Err(error) if error.is_panic() => std::panic::resume_unwind(error.into_panic()),
        // Only when the runtime shuts down under the call.
        Err(_) => Err(ApiError::App(Error::Cancelled)),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use futures::FutureExt;

    use super::*;

    /// On a single-threaded runtime, work that waits for another task can only
    /// finish if it runs off the async worker: inline, it would block the one thread
    /// the other task needs, and give up after its wait.
    #[tokio::test]
    async fn work_runs_off_the_async_worker() {
        let (tx, rx) = std::sync::mpsc::channel();
        let work = run(None, move || {
            Ok(rx.recv_timeout(Duration::from_secs(30)).is_ok())
        });
        let other_task = async move {
            // Lets the work start first, whichever the join polls first.
            tokio::task::yield_now().await;
            let _ = tx.send(());
        };
        let (done, ()) = tokio::join!(work, other_task);
        assert!(matches!(done, Ok(true)), "{done:?}");
    }

    /// Pins (issue 29): a caller holding all its permits, with more of its calls
    /// queued, does not make another caller wait: the other's permit is there at
    /// once. The total still bounds all callers together.
    #[tokio::test]
    async fn one_callers_burst_leaves_another_callers_permits() {
        let gate = Gate::new(2, 3);
        let a1 = gate.enter("a").await.expect("a's first");
        let a2 = gate.enter("a").await.expect("a's second");
        let mut a3 = Box::pin(gate.enter("a"));
        assert!((&mut a3).now_or_never().is_none(), "a's third waits for a");
        let b = gate.enter("b").now_or_never().flatten();
        assert!(b.is_some(), "b is not queued behind a");
        let c = Box::pin(gate.enter("c")).now_or_never();
        assert!(c.is_none(), "the total (3) is taken");
        drop(a1);
        assert!(a3.await.is_some(), "a's third once a's first is done");
        drop((a2, b));
    }
}
