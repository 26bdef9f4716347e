//! Bounded waiting. Tests assert what happens, never how fast: these bounds only keep
//! a broken build from hanging, so they are far beyond anything a loaded 2-core CI
//! box needs.

use std::{future::Future, time::Duration};

use tokio::time::Instant;

/// The longest a test waits for something that should happen soon.
pub const PATIENCE: Duration = Duration::from_secs(30);

/// The wait of a long-poll that expects work: far beyond when the work comes due, so
/// it arrives within the wait however slow the box. It costs nothing when it does.
pub const LONG_POLL_MS: u64 = 20_000;

/// How often a waiting loop checks its condition again.
const POLL: Duration = Duration::from_millis(20);

/// A bounded wait for a condition: check, then `wait()`, until it holds.
pub struct Patience {
    what: String,
    give_up_at: Instant,
}

impl Patience {
    /// Starts waiting for `what` (named in the failure).
    pub fn new(what: impl Into<String>) -> Patience {
        Patience {
            what: what.into(),
            give_up_at: Instant::now() + PATIENCE,
        }
    }

    /// Sleeps a moment before the next check; fails once PATIENCE has run out.
    // The pause of the tests' polling loops: the one sleep that waits on a fact.
    #[allow(clippy::disallowed_methods)]
    pub async fn wait(&self) {
        assert!(
            Instant::now() < self.give_up_at,
            "gave up after {PATIENCE:?} waiting for {}",
            self.what
        );
        tokio::time::sleep(POLL).await;
    }
}

/// Awaits `call`, failing if it is not answered within PATIENCE: for calls that must
/// be answered (or refused) at once rather than sit out a wait longer than that.
pub async fn within_patience<T>(what: &str, call: impl Future<Output = T>) -> T {
    tokio::time::timeout(PATIENCE, call)
        .await
        .unwrap_or_else(|_| panic!("{what}: no answer within {PATIENCE:?}"))
}
