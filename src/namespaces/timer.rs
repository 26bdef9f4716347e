//! A namespace's long-poll timer state, one per kind of work: its waiters by group,
//! the earliest due time this instance knows, what re-arms it. The namespace's
//! entry in the table owns it (so an evicted namespace's timers stop with it); the timer task and the
//! waiters that use it are `crate::longpoll`.

use std::{
    collections::HashMap,
    future::Future,
    sync::{
        atomic::{AtomicI64, AtomicUsize, Ordering},
        Arc, Mutex,
    },
};

use tokio::sync::Notify;

/// What a timer watches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum Work {
    Schedules,
    Jobs,
}

/// Waiters of one group: the same queue set (schedules have a single group).
pub(crate) struct Group {
    pub(crate) queues: Vec<String>,
    pub(crate) waiting: AtomicUsize,
    pub(crate) wake: Notify,
}

/// One namespace's timer for one kind of work.
pub(crate) struct Timer {
    pub(crate) work: Work,
    /// Waiters of all groups.
    pub(crate) waiting: AtomicUsize,
    pub(crate) groups: Mutex<HashMap<Vec<String>, Arc<Group>>>,
    /// Re-arms the timer: a new earliest due time, or the first waiter arrived.
    pub(crate) poke: Notify,
    /// Earliest due time known to this instance, epoch ms (i64::MAX: none known).
    pub(crate) earliest_ms: AtomicI64,
    /// The last queue a job tick peeked when it could not peek them all: the next
    /// tick starts after it.
    pub(crate) cursor: Mutex<Option<String>>,
}

impl Timer {
    pub(crate) fn new(work: Work) -> Timer {
        Timer {
            work,
            waiting: AtomicUsize::new(0),
            groups: Mutex::new(HashMap::new()),
            poke: Notify::new(),
            earliest_ms: AtomicI64::new(i64::MAX),
            cursor: Mutex::new(None),
        }
    }

    /// Takes a due time seen on this instance; pokes the timer when it is earlier
    /// than any it knew.
    pub(crate) fn observe(&self, earliest: i64) {
        if self.earliest_ms.fetch_min(earliest, Ordering::AcqRel) > earliest {
            self.poke.notify_one();
        }
    }

    /// Replaces what the timer knows with what `peek` (one tick's Redis peek) answers,
    /// keeping any earlier due time observed while the peek was in flight.
    ///
    /// What was known is forgotten *before* the peek: it was reported after its write
    /// reached Redis, so the peek sees it (or it has been claimed since and must not
    /// keep waking the timer). The peek's answer is then merged with `fetch_min`, not
    /// stored: an enqueue that lands after the peek read Redis reports its due time
    /// here meanwhile, and a store would overwrite it, leaving its waiters asleep
    /// until the re-check (a lost wake-up).
    pub(crate) async fn relearn_earliest(&self, peek: impl Future<Output = Option<i64>>) {
        self.earliest_ms.store(i64::MAX, Ordering::Release);
        let later = peek.await.unwrap_or(i64::MAX);
        self.earliest_ms.fetch_min(later, Ordering::AcqRel);
    }
}
