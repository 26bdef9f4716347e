//! What every part of the bench's environment shares: the key prefix of what it
//! writes through dueq, how it finds a free local port, and the pause of its polling
//! loops. A leaf, so `env`, `own_redis` and `service` can all use them without
//! importing each other.

use std::{net::TcpListener, time::Duration};

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
