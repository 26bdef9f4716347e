//! What every part of the bench's environment shares: the key prefix of what it
//! writes through dueq, how it finds a free local port, and the pause of its polling
//! loops. A leaf, so `env`, `own_redis` and `service` can all use them without
//! importing each other.

use std::{
    net::TcpListener,
    sync::atomic::{AtomicU64, Ordering},
    time::Duration,
};

use crate::Result;

/// Key prefix of everything the bench writes through dueq.
pub(crate) const PREFIX: &str = "dueqbench";

/// A port free on 127.0.0.1 now (the OS picks it).
pub(crate) fn free_port() -> Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// The pause between two checks of a loop that polls for a fact (a process serving,
/// a value settled), each loop bounded by its own count or deadline.
// The bench's one polling sleep (clippy.toml: no fixed sleeps).
#[allow(clippy::disallowed_methods)]
pub(crate) async fn pause(between_checks: Duration) {
    tokio::time::sleep(between_checks).await;
}

/// How many times the bench has flushed its own Redis (`Env::reset`).
static RESETS: AtomicU64 = AtomicU64::new(0);

/// Flushes so far: a family that fills the same namespace again after a flush
/// names it after this count (see `consume::ns`).
pub(crate) fn resets() -> u64 {
    RESETS.load(Ordering::Relaxed)
}

/// Counts one flush.
pub(crate) fn count_reset() {
    RESETS.fetch_add(1, Ordering::Relaxed);
}
