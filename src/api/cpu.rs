//! CPU-bound request work (cron validation, previews) runs on tokio's blocking pool,
//! a few calls at a time, so a burst of expensive requests queues here instead of
//! stalling the async workers that every other call (and every long-poll wake-up)
//! needs.

use tokio::sync::Semaphore;

use super::ApiError;
use crate::error::Error;

/// Blocking threads lent to request CPU work at once. Two cores are the common
/// deployment; more threads than cores only adds switching.
const PERMITS: usize = 2;

static GATE: Semaphore = Semaphore::const_new(PERMITS);

/// Runs `work` off the async workers.
pub(super) async fn run<T, F>(work: F) -> Result<T, ApiError>
where
    T: Send + 'static,
    F: FnOnce() -> Result<T, ApiError> + Send + 'static,
{
    // The gate is never closed, so acquiring only waits.
    let Ok(_permit) = GATE.acquire().await else {
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

    use super::*;

    /// On a single-threaded runtime, work that waits for another task can only
    /// finish if it runs off the async worker: inline, it would block the one thread
    /// the other task needs, and give up after its wait.
    #[tokio::test]
    async fn work_runs_off_the_async_worker() {
        let (tx, rx) = std::sync::mpsc::channel();
        let work = run(move || Ok(rx.recv_timeout(Duration::from_secs(30)).is_ok()));
        let other_task = async move {
            // Lets the work start first, whichever the join polls first.
            tokio::task::yield_now().await;
            let _ = tx.send(());
        };
        let (done, ()) = tokio::join!(work, other_task);
        assert!(matches!(done, Ok(true)), "{done:?}");
    }
}
