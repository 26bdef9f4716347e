//! Long-poll wake-ups: one timer per namespace per instance, never one poll per waiter.
//!
//! Waiters park on a `Notify`. The namespace's timer task sleeps until the earliest
//! known due time (or a bounded re-check, so schedules written through other replicas
//! are seen), then asks Redis once how many entries are due and wakes that many
//! waiters — no more. A waiter that claims something while more is due passes the
//! baton to one more waiter. Upserts and claims on this instance report the earliest
//! due time they saw, which re-arms the timer without a Redis call. An idle namespace
//! costs one `peek_due` per re-check interval, however many workers wait on it.

use std::{
    collections::HashMap,
    sync::{
        atomic::{AtomicI64, AtomicUsize, Ordering},
        Arc, Mutex,
    },
    time::Duration,
};

use tokio::{sync::Notify, time::Instant};
use tokio_util::sync::CancellationToken;

use crate::{clock::Clock, store::Store};

/// A timer with no waiters for this long exits and forgets its namespace.
const IDLE_EXIT: Duration = Duration::from_secs(300);

pub struct Wakers {
    namespaces: Mutex<HashMap<String, Arc<NamespaceWaker>>>,
    store: Arc<Store>,
    clock: Arc<Clock>,
    recheck: Duration,
    shutdown: CancellationToken,
}

pub struct NamespaceWaker {
    waiting: AtomicUsize,
    /// Waiters park here; the timer and the baton wake them one at a time.
    wake: Notify,
    /// Re-arms the timer: a new earliest due time, or the first waiter arrived.
    poke: Notify,
    /// Earliest due time known to this instance, epoch ms (i64::MAX: none known).
    earliest_ms: AtomicI64,
}

/// Why a wait ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Woken {
    Notified,
    Deadline,
    Shutdown,
}

impl Wakers {
    pub fn new(
        store: Arc<Store>,
        clock: Arc<Clock>,
        recheck: Duration,
        shutdown: CancellationToken,
    ) -> Arc<Self> {
        Arc::new(Self {
            namespaces: Mutex::new(HashMap::new()),
            store,
            clock,
            recheck,
            shutdown,
        })
    }

    /// The namespace's waker; starts its timer task on first use.
    pub fn waker(self: &Arc<Self>, namespace: &str) -> Arc<NamespaceWaker> {
        let mut map = match self.namespaces.lock() {
            Ok(map) => map,
            Err(poisoned) => poisoned.into_inner(),
        };
        if let Some(waker) = map.get(namespace) {
            return waker.clone();
        }
        let waker = Arc::new(NamespaceWaker {
            waiting: AtomicUsize::new(0),
            wake: Notify::new(),
            poke: Notify::new(),
            earliest_ms: AtomicI64::new(i64::MAX),
        });
        map.insert(namespace.to_owned(), waker.clone());
        tokio::spawn(self.clone().run_timer(namespace.to_owned(), waker.clone()));
        waker
    }

    /// Reports an earliest due time seen by an upsert or claim on this instance.
    pub fn observe(&self, namespace: &str, earliest_ms: Option<i64>) {
        let Some(earliest) = earliest_ms else { return };
        let waker = match self.namespaces.lock() {
            Ok(map) => map.get(namespace).cloned(),
            Err(poisoned) => poisoned.into_inner().get(namespace).cloned(),
        };
        if let Some(waker) = waker {
            if waker.earliest_ms.fetch_min(earliest, Ordering::AcqRel) > earliest {
                waker.poke.notify_one();
            }
        }
    }

    pub fn shutdown_token(&self) -> &CancellationToken {
        &self.shutdown
    }

    async fn run_timer(self: Arc<Self>, namespace: String, waker: Arc<NamespaceWaker>) {
        loop {
            if waker.waiting.load(Ordering::Acquire) == 0 {
                tokio::select! {
                    _ = waker.poke.notified() => {}
                    _ = tokio::time::sleep(IDLE_EXIT) => {
                        if self.retire(&namespace, &waker) { return; }
                        continue;
                    }
                    _ = self.shutdown.cancelled() => return,
                }
                if waker.waiting.load(Ordering::Acquire) == 0 {
                    continue;
                }
            }
            match self.store.peek_due(&namespace).await {
                Ok((now_ms, due, earliest)) => {
                    let waiting = waker.waiting.load(Ordering::Acquire) as u64;
                    for _ in 0..due.min(waiting) {
                        waker.wake.notify_one();
                    }
                    // Entries due now were handed to waiters; what they claim reports the rest.
                    let later = earliest.filter(|&e| e > now_ms).unwrap_or(i64::MAX);
                    waker.earliest_ms.store(later, Ordering::Release);
                }
                Err(error) => {
                    tracing::debug!(%namespace, %error, "wake timer could not peek the due index");
                    waker.earliest_ms.store(i64::MAX, Ordering::Release);
                }
            }
            // Sleep until the earliest known due time or the re-check, re-arming on pokes.
            loop {
                let recheck_at = Instant::now() + self.recheck;
                let target = match waker.earliest_ms.load(Ordering::Acquire) {
                    i64::MAX => recheck_at,
                    due_ms => {
                        // +1 ms so we do not arrive a hair before Redis's clock says due.
                        let in_ms = (due_ms - self.clock.now_ms() + 1).max(0);
                        let due_at = Instant::now() + Duration::from_millis(in_ms as u64);
                        due_at.min(recheck_at)
                    }
                };
                tokio::select! {
                    _ = tokio::time::sleep_until(target) => break,
                    _ = waker.poke.notified() => {
                        if waker.waiting.load(Ordering::Acquire) == 0 { break; }
                    }
                    _ = self.shutdown.cancelled() => return,
                }
            }
        }
    }

    /// Removes an idle namespace's waker; false if a waiter arrived meanwhile.
    fn retire(&self, namespace: &str, waker: &Arc<NamespaceWaker>) -> bool {
        let mut map = match self.namespaces.lock() {
            Ok(map) => map,
            Err(poisoned) => poisoned.into_inner(),
        };
        // The map and this task hold the only references when nobody uses it.
        if waker.waiting.load(Ordering::Acquire) == 0 && Arc::strong_count(waker) <= 2 {
            map.remove(namespace);
            return true;
        }
        false
    }
}

impl NamespaceWaker {
    /// Parks until woken, the deadline, or shutdown.
    pub async fn wait(&self, deadline: Instant, shutdown: &CancellationToken) -> Woken {
        if self.waiting.fetch_add(1, Ordering::AcqRel) == 0 {
            self.poke.notify_one();
        }
        // Counted out on drop too: a call whose client went away is dropped mid-wait,
        // and a leaked count would keep the timer polling Redis for it forever.
        let _waiting = Waiting(&self.waiting);
        tokio::select! {
            _ = self.wake.notified() => Woken::Notified,
            _ = tokio::time::sleep_until(deadline) => Woken::Deadline,
            _ = shutdown.cancelled() => Woken::Shutdown,
        }
    }

    /// More is due than was handed out: wake one more waiter.
    pub fn pass_baton(&self) {
        if self.waiting.load(Ordering::Acquire) > 0 {
            self.wake.notify_one();
        }
    }

    pub fn waiting(&self) -> usize {
        self.waiting.load(Ordering::Acquire)
    }
}

/// One parked waiter; leaving the count on drop, however the wait ends.
struct Waiting<'a>(&'a AtomicUsize);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}
