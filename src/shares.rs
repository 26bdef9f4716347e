//! Each principal's share of a cap (issue 29): the in-flight caps
//! (`crate::layers::shed`) and `--max-connections` (`crate::connections`). With
//! more than one class of caller (the principals of the auth file in force), one
//! may hold at most half of a cap, rounded up; alone, the whole cap.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
};

use crate::sync::lock;

/// The share of a cap one principal (or the one class of callers without an auth
/// file) may hold: half the cap, rounded up, when there are `classes` > 1 of them;
/// the whole cap otherwise.
pub(crate) fn share_of(cap: usize, classes: usize) -> usize {
    if classes > 1 {
        cap.div_ceil(2)
    } else {
        cap
    }
}

/// What each principal holds of one cap: an entry only while it holds a slot, so
/// the table is bounded by the principals calling.
#[derive(Debug, Default)]
pub(crate) struct Shares {
    /// Keyed by an `Arc` its `Held`s share: a principal that holds a slot already
    /// takes another without allocating.
    held: Mutex<HashMap<Arc<str>, usize>>,
}

/// One slot of a principal's share, given back when dropped.
#[derive(Debug)]
pub(crate) struct Held {
    shares: Arc<Shares>,
    principal: Arc<str>,
}

impl Shares {
    /// One more slot for `principal`, if it holds fewer than `share`.
    pub(crate) fn take(shares: &Arc<Shares>, principal: &str, share: usize) -> Option<Held> {
        let mut held = lock(&shares.held);
        let key = match held.get_key_value(principal) {
            Some((key, _)) => key.clone(),
            None => Arc::from(principal),
        };
        let count = held.entry(key.clone()).or_default();
        if *count >= share {
            if *count == 0 {
                held.remove(principal);
            }
            return None;
        }
        *count += 1;
        Some(Held {
            shares: shares.clone(),
            principal: key,
        })
    }

    #[cfg(test)]
    fn holders(&self) -> usize {
        lock(&self.held).len()
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        let mut held = lock(&self.shares.held);
        if let Some(count) = held.get_mut(&*self.principal) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                held.remove(&*self.principal);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::{share_of, Shares};

    /// Pins (issue 29): with more than one principal each holds at most half of a
    /// cap, so one holding all its share leaves room for another; alone (one
    /// principal, or no auth file) a caller keeps the whole cap. The table forgets a
    /// principal once it holds nothing.
    #[test]
    fn each_principal_holds_at_most_its_share() {
        assert_eq!(share_of(10, 1), 10);
        assert_eq!(share_of(10, 2), 5);
        assert_eq!(share_of(3, 5), 2);
        assert_eq!(share_of(1, 2), 1);
        let shares = Arc::new(Shares::default());
        let a1 = Shares::take(&shares, "a", 2).expect("a's first");
        let a2 = Shares::take(&shares, "a", 2).expect("a's second");
        assert!(Shares::take(&shares, "a", 2).is_none(), "a holds its share");
        let b = Shares::take(&shares, "b", 2).expect("b is not held back by a");
        assert_eq!(shares.holders(), 2);
        drop(a1);
        let a3 = Shares::take(&shares, "a", 2).expect("a's slot came back");
        drop((a2, a3, b));
        assert_eq!(shares.holders(), 0, "nobody holds anything");
        assert!(Shares::take(&shares, "c", 0).is_none());
        assert_eq!(shares.holders(), 0, "a refusal leaves no entry");
    }

    #[test]
    fn a_principal_holding_a_slot_takes_another_without_copying_its_name() {
        let shares = Arc::new(Shares::default());
        let a1 = Shares::take(&shares, "a", 2).expect("a's first");
        let a2 = Shares::take(&shares, "a", 2).expect("a's second");
        assert!(Arc::ptr_eq(&a1.principal, &a2.principal));
    }
}
