//! Each principal's byte budget for Redis-heavy reads (issue 29 item 4): at most
//! `--heavy-read-rate` bytes a second of GetJob and full-view ListJobs replies.
//!
//! A count of calls does not bound what they cost: one principal paging megabyte
//! jobs through its few heavy-read permits still kept Redis's one thread and the
//! service's cores busy copying megabytes, and another tenant's small GetJob waited
//! behind them (×14 its p99). So each read is charged, after it, the bytes its reply
//! actually carried; a principal in debt waits for its budget to refill before its
//! next heavy read, which slows it to its rate, and other principals, whose budgets
//! are their own, are not slowed by its debt.
//!
//! The account is a token bucket holding up to one second of the rate: a principal
//! that reads little never waits. A read starts when the balance is not negative,
//! reserving what the principal's last read carried, and is charged the rest (or
//! given back the difference) once its reply is known; the next waits until the
//! balance is back to zero. So a principal's reads that arrive together start one
//! after another, spaced by the rate: measured, 4 megabyte pages let through at
//! once whenever the balance came back cost another tenant's p99 more than the
//! same bytes spread out. A wait longer than the call may wait (the
//! client's deadline, at most [`MAX_WAIT`]) is refused RESOURCE_EXHAUSTED at once,
//! naming the principal and the flag, rather than held to fail later.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::Duration,
};

use tokio::time::Instant;

use crate::sync::lock;

/// The longest a heavy read waits for its principal's budget; beyond it the read
/// is refused at once.
pub(super) const MAX_WAIT: Duration = Duration::from_secs(5);

/// The accounts of the principals that made heavy reads, and the rate they refill
/// at. Principals come from the auth file, so the table is as bounded as that file.
#[derive(Debug)]
pub(super) struct Budget {
    /// Bytes a second, and the most a balance holds.
    rate: u64,
    accounts: Mutex<HashMap<Arc<str>, Account>>,
}

/// One principal's balance in bytes (negative: in debt), as of `at`, and what its
/// last heavy read carried.
#[derive(Debug, Clone, Copy)]
struct Account {
    balance: i128,
    at: Instant,
    estimate: i128,
}

/// Why a read may not start within the wait allowed: how long it would have to wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Overdrawn {
    pub(super) wait: Duration,
}

impl Budget {
    /// A budget of `rate` bytes a second per principal (at least 1).
    pub(super) fn new(rate: u64) -> Budget {
        Budget {
            rate: rate.max(1),
            accounts: Mutex::new(HashMap::new()),
        }
    }

    pub(super) fn rate(&self) -> u64 {
        self.rate
    }

    /// How long `principal` must wait before its next heavy read starts (zero when
    /// its balance is not negative), or [`Overdrawn`] if that is longer than
    /// `allowed`; with the bytes reserved for that read, taken from the balance
    /// at once. The reservation is what the principal's last heavy read carried, so
    /// its reads that arrive together start one after another, spaced by the rate,
    /// instead of all at once the moment the balance is back to zero.
    pub(super) fn wait(
        &self,
        principal: &str,
        allowed: Duration,
    ) -> Result<(Duration, i128), Overdrawn> {
        let now = Instant::now();
        let mut accounts = lock(&self.accounts);
        let Some(account) = accounts.get_mut(principal) else {
            return Ok((Duration::ZERO, 0));
        };
        self.refill(account, now);
        let debt = u128::try_from(account.balance.saturating_neg()).unwrap_or(0);
        let nanos = debt.saturating_mul(1_000_000_000) / u128::from(self.rate);
        let wait = Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX));
        if wait > allowed {
            return Err(Overdrawn { wait });
        }
        account.balance = account.balance.saturating_sub(account.estimate);
        Ok((wait, account.estimate))
    }

    /// Charges `bytes` to `principal`'s account, read by a heavy read that ended
    /// now, for which `reserved` bytes were taken when it started.
    pub(super) fn charge(&self, principal: &str, bytes: usize, reserved: i128) {
        let now = Instant::now();
        let full = i128::from(self.rate);
        let mut accounts = lock(&self.accounts);
        if !accounts.contains_key(principal) {
            accounts.insert(
                Arc::from(principal),
                Account {
                    balance: full,
                    at: now,
                    estimate: 0,
                },
            );
        }
        let Some(account) = accounts.get_mut(principal) else {
            return;
        };
        self.refill(account, now);
        let bytes = i128::try_from(bytes).unwrap_or(i128::MAX);
        account.balance = account
            .balance
            .saturating_sub(bytes)
            .saturating_add(reserved);
        account.estimate = bytes;
    }

    /// Gives back what was reserved for a heavy read that read nothing (it failed).
    pub(super) fn refund(&self, principal: &str, reserved: i128) {
        if let Some(account) = lock(&self.accounts).get_mut(principal) {
            account.balance = account.balance.saturating_add(reserved);
        }
    }

    /// What `account` gained since it was last brought up to date, up to a full one.
    fn refill(&self, account: &mut Account, now: Instant) {
        let elapsed = now.saturating_duration_since(account.at).as_nanos();
        let gained = elapsed.saturating_mul(u128::from(self.rate)) / 1_000_000_000;
        let gained = i128::try_from(gained).unwrap_or(i128::MAX);
        account.balance = account
            .balance
            .saturating_add(gained)
            .min(i128::from(self.rate));
        account.at = now;
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::{Budget, Overdrawn};

    /// Pins (issue 29): a principal that read more than its second's worth waits for
    /// its debt to be repaid, and is refused at once when that is longer than the
    /// call may wait; another principal's read starts at once meanwhile. On tokio's
    /// paused clock, so the refill is exact.
    #[tokio::test(start_paused = true)]
    async fn a_principal_in_debt_waits_and_another_does_not() {
        let budget = Budget::new(1000);
        let (a, b) = ("a", "b");
        let secs = Duration::from_secs;
        assert_eq!(budget.wait(a, Duration::ZERO), Ok((Duration::ZERO, 0)));
        budget.charge(a, 4000, 0);
        assert_eq!(budget.wait(a, secs(3)), Ok((secs(3), 4000)), "3000 in debt");
        budget.refund(a, 4000);
        assert_eq!(budget.wait(a, secs(1)), Err(Overdrawn { wait: secs(3) }));
        assert_eq!(budget.wait(b, Duration::ZERO), Ok((Duration::ZERO, 0)));
        tokio::time::advance(secs(2)).await;
        assert_eq!(budget.wait(a, secs(5)), Ok((secs(1), 4000)));
        budget.refund(a, 4000);
        tokio::time::advance(secs(1)).await;
        assert_eq!(budget.wait(a, Duration::ZERO), Ok((Duration::ZERO, 4000)));
        budget.refund(a, 4000);
        // A balance holds at most one second of the rate.
        tokio::time::advance(secs(60)).await;
        budget.charge(a, 2000, 0);
        assert_eq!(budget.wait(a, secs(5)), Ok((secs(1), 2000)));
    }

    /// Pins (issue 29): a principal's heavy reads that arrive together start one
    /// after another, each waiting for what the one before it reserved (what the
    /// principal's last read carried), not all at once when its balance is back.
    #[tokio::test(start_paused = true)]
    async fn reads_that_arrive_together_are_spaced_by_the_rate() {
        let budget = Budget::new(1000);
        let a = "a";
        budget.charge(a, 1000, 0);
        let mut waits = Vec::new();
        for _ in 0..3 {
            let (wait, reserved) = budget.wait(a, Duration::from_secs(5)).expect("within 5s");
            assert_eq!(reserved, 1000);
            waits.push(wait.as_secs());
        }
        assert_eq!(waits, [0, 1, 2]);
    }
}
