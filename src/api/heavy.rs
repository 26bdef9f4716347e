//! Redis-heavy reads (issue 29): GetJob and a ListJobs page of the full view carry
//! payloads (up to `--max-payload-size` each, a page up to `--max-message-size`), so
//! each costs Redis and the network far more than a summary.
//!
//! Two bounds, per principal (the one class of callers without an auth file counts
//! as one):
//!
//! - Count: a few at a time, [`PER_CALLER`] each, [`TOTAL`] for all principals
//!   together (the gate of `super::cpu`, per caller under a total). One principal's
//!   reads beyond its permits queue behind its own, never in front of another's.
//! - Bytes: `--heavy-read-rate` bytes a second of replies (`super::budget`), charged
//!   after each read by what its reply carried. A principal paging through megabyte
//!   jobs is slowed to its rate, so it cannot keep Redis's one thread and the
//!   service's cores busy copying megabytes while another tenant's small GetJob
//!   waits behind them. The budget holds only while the auth file in force names
//!   more than one principal (alone, a caller has the whole server, as with the
//!   shares of `crate::shares`), and `--heavy-read-rate 0` turns it off.
//!
//! A read takes one of its principal's own permits, then waits out its principal's
//! debt (holding only its own permit, so no one else waits for it), then takes one
//! of the total.

use std::{sync::Arc, time::Duration};

use tonic::metadata::MetadataMap;

use super::{
    budget::{Budget, Overdrawn, MAX_WAIT},
    cpu::{Gate, Pass},
    deadline, ApiError,
};
use crate::{
    auth::{AuthFile, Caller},
    error::Error,
};

/// Heavy reads one principal may have at Redis at once.
const PER_CALLER: usize = 4;

/// Heavy reads all principals together may have at Redis at once.
const TOTAL: usize = 16;

/// The gate and the byte budgets of the heavy reads.
#[derive(Debug)]
pub(crate) struct HeavyReads {
    gate: Gate,
    /// `--heavy-read-rate` (None: 0, no budget).
    budget: Option<Budget>,
    /// The principals in force, whose number says whether the budget holds.
    principals: Option<Arc<AuthFile>>,
}

/// What a heavy read holds while it runs; [`Heavy::charge`] it what its reply
/// carried (dropped uncharged, its [`Account`] gives back what it reserved).
pub(super) struct Heavy<'a> {
    _pass: Pass,
    account: Option<Account<'a>>,
}

/// The budget a heavy read is charged to, its principal, and what it reserved.
struct Account<'a> {
    budget: &'a Budget,
    caller: Caller,
    reserved: i128,
}

impl HeavyReads {
    /// Heavy reads with `rate` bytes a second per principal (0: no byte budget) while
    /// `principals` names more than one.
    pub(crate) fn new(rate: u64, principals: Option<Arc<AuthFile>>) -> HeavyReads {
        HeavyReads {
            gate: Gate::new(PER_CALLER, TOTAL),
            budget: (rate > 0).then(|| Budget::new(rate)),
            principals,
        }
    }

    /// Waits for one of `caller`'s heavy-read permits and for its budget (no caller
    /// in the request: the class of callers without an auth file); RESOURCE_EXHAUSTED
    /// at once if its budget would not let it start within the call's deadline.
    pub(super) async fn enter(
        &self,
        caller: Option<&Caller>,
        allowed: Duration,
    ) -> Result<Heavy<'_>, ApiError> {
        let cancelled = || ApiError::App(Error::Cancelled);
        let name = caller.map_or(Caller::Unrestricted.name(), Caller::name);
        let own = self.gate.own(name).await.ok_or_else(cancelled)?;
        let account = match self.budget_of(caller) {
            Some(budget) => {
                let (wait, reserved) = budget
                    .wait(name, allowed)
                    .map_err(|over| overdrawn(name, budget.rate(), over))?;
                let account = caller.cloned().map(|caller| Account {
                    budget,
                    caller,
                    reserved,
                });
                if !wait.is_zero() {
                    repay(wait).await;
                }
                account
            }
            None => None,
        };
        let pass = self.gate.total(own).await.ok_or_else(cancelled)?;
        Ok(Heavy {
            _pass: pass,
            account,
        })
    }

    /// The budget `caller`'s reads are charged to: none without one, or while the
    /// auth file names one principal (or there is none).
    fn budget_of(&self, caller: Option<&Caller>) -> Option<&Budget> {
        let budget = self.budget.as_ref()?;
        let principals = self.principals.as_ref()?;
        match caller {
            Some(Caller::Principal(_)) if principals.current().count() > 1 => Some(budget),
            _ => None,
        }
    }
}

/// How long a heavy read may wait for its principal's budget: [`MAX_WAIT`], or less
/// if the client's deadline comes sooner.
pub(super) fn allowed_wait(metadata: &MetadataMap) -> Duration {
    deadline::effective_wait(MAX_WAIT, MAX_WAIT, metadata)
}

impl Heavy<'_> {
    /// Charges the read's principal the bytes its reply carried, `bytes()` (worked
    /// out only when a budget holds: a lone principal's read pays nothing for it).
    pub(super) fn charge(mut self, bytes: impl FnOnce() -> usize) {
        if let Some(mut account) = self.account.take() {
            let reserved = std::mem::take(&mut account.reserved);
            account
                .budget
                .charge(account.caller.name(), bytes(), reserved);
        }
    }
}

impl Drop for Account<'_> {
    /// A read that ends uncharged (it failed, or its call was dropped, perhaps
    /// while it waited) gives back what it reserved.
    fn drop(&mut self) {
        if self.reserved != 0 {
            self.budget.refund(self.caller.name(), self.reserved);
        }
    }
}

/// Waits out a principal's debt: real time, the rate its budget refills at.
async fn repay(wait: Duration) {
    #[allow(clippy::disallowed_methods)]
    tokio::time::sleep(wait).await;
}

fn overdrawn(principal: &str, rate: u64, over: Overdrawn) -> ApiError {
    ApiError::OverQuota(format!(
        "principal {principal:?} has read more than its --heavy-read-rate of {rate} bytes \
         a second of GetJob and full-view ListJobs replies (each principal's budget when \
         the auth file names more than one): its next such read could start in {}, later \
         than this call may wait; retry then, or list with the summary view",
        humantime::format_duration(round_up_to_ms(over.wait))
    ))
}

fn round_up_to_ms(wait: Duration) -> Duration {
    let ms = wait.as_nanos().div_ceil(1_000_000);
    Duration::from_millis(u64::try_from(ms).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use futures::FutureExt;

    use super::{HeavyReads, PER_CALLER};

    /// Pins (issue 29): one principal's heavy reads, beyond its permits, wait for its
    /// own; another principal's heavy read is let through at once.
    #[tokio::test]
    async fn one_principals_heavy_reads_leave_another_its_own() {
        let heavy = HeavyReads::new(0, None);
        let gate = &heavy.gate;
        let mut held = Vec::new();
        for _ in 0..PER_CALLER {
            held.push(gate.enter("heavy-a").await.expect("a's permit"));
        }
        let mut next = Box::pin(gate.enter("heavy-a"));
        assert!((&mut next).now_or_never().is_none(), "a's next waits for a");
        let other = gate.enter("heavy-b").now_or_never().flatten();
        assert!(other.is_some(), "b is not queued behind a");
        held.pop();
        assert!(next.await.is_some(), "a's next once one of a's is done");
    }
}
