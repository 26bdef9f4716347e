//! Redis-heavy reads (issue 29): GetJob and a ListJobs page of the full view carry
//! payloads (up to `--max-payload-size` each, a page up to `--max-message-size`), so
//! each costs Redis and the network far more than a summary. They run a few at a
//! time per principal: [`PER_CALLER`] each, [`TOTAL`] for all principals together
//! (the gate of `super::cpu`, per caller under a total). One principal paging
//! through megabyte jobs queues behind its own permits, and another principal's
//! reads take their own instead of waiting in that queue.

use std::sync::LazyLock;

use super::{
    cpu::{Gate, Pass},
    ApiError,
};
use crate::{auth::Caller, error::Error};

/// Heavy reads one principal may have at Redis at once.
const PER_CALLER: usize = 4;

/// Heavy reads all principals together may have at Redis at once.
const TOTAL: usize = 16;

static GATE: LazyLock<Gate> = LazyLock::new(|| Gate::new(PER_CALLER, TOTAL));

/// Waits for one of `caller`'s heavy-read permits (no caller in the request: the
/// class of callers without an auth file); held until the returned pass is dropped.
pub(super) async fn enter(caller: Option<&Caller>) -> Result<Pass, ApiError> {
    let name = caller.map_or(Caller::Unrestricted.name(), Caller::name);
    GATE.enter(name)
        .await
        .ok_or(ApiError::App(Error::Cancelled))
}

#[cfg(test)]
mod tests {
    use futures::FutureExt;

    use super::{GATE, PER_CALLER};

    /// Pins (issue 29): one principal's heavy reads, beyond its permits, wait for its
    /// own; another principal's heavy read is let through at once.
    #[tokio::test]
    async fn one_principals_heavy_reads_leave_another_its_own() {
        let mut held = Vec::new();
        for _ in 0..PER_CALLER {
            held.push(GATE.enter("heavy-a").await.expect("a's permit"));
        }
        let mut next = Box::pin(GATE.enter("heavy-a"));
        assert!((&mut next).now_or_never().is_none(), "a's next waits for a");
        let other = GATE.enter("heavy-b").now_or_never().flatten();
        assert!(other.is_some(), "b is not queued behind a");
        held.pop();
        assert!(next.await.is_some(), "a's next once one of a's is done");
    }
}
