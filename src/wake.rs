//! Long-poll wake-ups: one timer per namespace per instance, never one poll per waiter.
//!
//! Waiters park on a `Notify`. The namespace's timer task sleeps until the earliest
//! known due time (or a bounded re-check, so writes through other replicas are seen),
//! then asks Redis once how much is due and wakes that many waiters — no more. A
//! waiter that claims something while more is due passes the baton to one more
//! waiter. Writes and claims on this instance report the earliest due time they saw,
//! which re-arms the timer without a Redis call. An idle namespace costs one peek per
//! re-check interval, however many workers wait on it.
//!
//! Schedules and jobs of a namespace have a timer each (they peek different indexes).
//! Job waiters are grouped by the set of queues they claim from: the job timer peeks
//! every queue any waiter is interested in with one script call, and wakes in each
//! group as many waiters as jobs are claimable in that group's queues.

use std::{
    collections::{BTreeSet, HashMap},
    sync::{
        atomic::{AtomicI64, AtomicUsize, Ordering},
        Arc, Mutex, MutexGuard,
    },
    time::Duration,
};

use tokio::{sync::Notify, time::Instant};
use tokio_util::sync::CancellationToken;

use crate::{clock::Clock, store::Store};

/// A timer with no waiters for this long exits and forgets its namespace.
const IDLE_EXIT: Duration = Duration::from_secs(300);
/// Most distinct queues one job timer peeks per call (bounds the script's work).
const MAX_PEEK_QUEUES: usize = 256;

/// What a timer watches.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Source {
    Schedules(String),
    Jobs(String),
}

impl Source {
    fn namespace(&self) -> &str {
        match self {
            Source::Schedules(ns) | Source::Jobs(ns) => ns,
        }
    }
}

pub struct Wakers {
    namespaces: Mutex<HashMap<Source, Arc<NamespaceWaker>>>,
    store: Arc<Store>,
    clock: Arc<Clock>,
    recheck: Duration,
    shutdown: CancellationToken,
}

/// Waiters of one group: the same queue set (schedules have a single group).
struct Group {
    queues: Vec<String>,
    waiting: AtomicUsize,
    wake: Notify,
}

pub struct NamespaceWaker {
    /// Waiters of all groups.
    waiting: AtomicUsize,
    groups: Mutex<HashMap<Vec<String>, Arc<Group>>>,
    /// Re-arms the timer: a new earliest due time, or the first waiter arrived.
    poke: Notify,
    /// Earliest due time known to this instance, epoch ms (i64::MAX: none known).
    earliest_ms: AtomicI64,
}

/// A handle to park on: one namespace timer and one group of it.
pub struct Waiter {
    namespace: Arc<NamespaceWaker>,
    group: Arc<Group>,
}

/// Why a wait ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Woken {
    Notified,
    Deadline,
    Shutdown,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    match m.lock() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    }
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

    /// The waiter for a namespace's due schedules; starts its timer on first use.
    pub fn waker(self: &Arc<Self>, namespace: &str) -> Waiter {
        self.waiter(Source::Schedules(namespace.to_owned()), Vec::new())
    }

    /// The waiter for jobs of `queues` in a namespace; starts its timer on first use.
    pub fn job_waker(self: &Arc<Self>, namespace: &str, queues: &[String]) -> Waiter {
        let set: BTreeSet<&String> = queues.iter().collect();
        let queues = set.into_iter().cloned().collect();
        self.waiter(Source::Jobs(namespace.to_owned()), queues)
    }

    fn waiter(self: &Arc<Self>, source: Source, queues: Vec<String>) -> Waiter {
        let namespace = {
            let mut map = lock(&self.namespaces);
            match map.get(&source) {
                Some(waker) => waker.clone(),
                None => {
                    let waker = Arc::new(NamespaceWaker {
                        waiting: AtomicUsize::new(0),
                        groups: Mutex::new(HashMap::new()),
                        poke: Notify::new(),
                        earliest_ms: AtomicI64::new(i64::MAX),
                    });
                    map.insert(source.clone(), waker.clone());
                    tokio::spawn(self.clone().run_timer(source, waker.clone()));
                    waker
                }
            }
        };
        let group = lock(&namespace.groups)
            .entry(queues.clone())
            .or_insert_with(|| {
                Arc::new(Group {
                    queues,
                    waiting: AtomicUsize::new(0),
                    wake: Notify::new(),
                })
            })
            .clone();
        Waiter { namespace, group }
    }

    /// Reports an earliest due time seen by an upsert or claim on this instance.
    pub fn observe(&self, namespace: &str, earliest_ms: Option<i64>) {
        self.observe_source(&Source::Schedules(namespace.to_owned()), earliest_ms);
    }

    /// Reports when jobs of a namespace become claimable (now, for an enqueue of a
    /// ready job), as seen by a write or claim on this instance.
    pub fn observe_jobs(&self, namespace: &str, earliest_ms: Option<i64>) {
        self.observe_source(&Source::Jobs(namespace.to_owned()), earliest_ms);
    }

    fn observe_source(&self, source: &Source, earliest_ms: Option<i64>) {
        let Some(earliest) = earliest_ms else { return };
        let waker = lock(&self.namespaces).get(source).cloned();
        if let Some(waker) = waker {
            if waker.earliest_ms.fetch_min(earliest, Ordering::AcqRel) > earliest {
                waker.poke.notify_one();
            }
        }
    }

    pub fn shutdown_token(&self) -> &CancellationToken {
        &self.shutdown
    }

    /// Asks Redis what is due and wakes that many waiters; returns the earliest
    /// future due time, if known.
    async fn peek_and_wake(&self, source: &Source, waker: &NamespaceWaker) -> Option<i64> {
        let namespace = source.namespace();
        let groups: Vec<Arc<Group>> = {
            let mut groups = lock(&waker.groups);
            // Forget groups nobody waits on or holds any more.
            groups.retain(|_, g| g.waiting.load(Ordering::Acquire) > 0 || Arc::strong_count(g) > 1);
            groups
                .values()
                .filter(|g| g.waiting.load(Ordering::Acquire) > 0)
                .cloned()
                .collect()
        };
        let result = match source {
            Source::Schedules(_) => {
                self.store
                    .peek_due(namespace)
                    .await
                    .map(|(now, due, earliest)| {
                        for group in &groups {
                            wake(group, due);
                        }
                        (now, earliest)
                    })
            }
            Source::Jobs(_) => {
                let queues: Vec<String> = groups
                    .iter()
                    .flat_map(|g| g.queues.iter().cloned())
                    .collect::<BTreeSet<_>>()
                    .into_iter()
                    .take(MAX_PEEK_QUEUES)
                    .collect();
                self.store.peek_jobs(namespace, &queues).await.map(|peek| {
                    let claimable: HashMap<&String, u64> =
                        queues.iter().zip(peek.claimable.iter().copied()).collect();
                    for group in &groups {
                        let n = group
                            .queues
                            .iter()
                            .map(|q| claimable.get(q).copied().unwrap_or(0))
                            .sum();
                        wake(group, n);
                    }
                    (peek.now_ms, peek.earliest_ms)
                })
            }
        };
        match result {
            // Entries due now were handed to waiters; what they claim reports the rest.
            Ok((now_ms, earliest)) => earliest.filter(|&e| e > now_ms),
            Err(error) => {
                tracing::debug!(%namespace, %error, "wake timer could not peek");
                None
            }
        }
    }

    async fn run_timer(self: Arc<Self>, source: Source, waker: Arc<NamespaceWaker>) {
        loop {
            if waker.waiting.load(Ordering::Acquire) == 0 {
                tokio::select! {
                    _ = waker.poke.notified() => {}
                    _ = tokio::time::sleep(IDLE_EXIT) => {
                        if self.retire(&source, &waker) { return; }
                        continue;
                    }
                    _ = self.shutdown.cancelled() => return,
                }
                if waker.waiting.load(Ordering::Acquire) == 0 {
                    continue;
                }
            }
            let later = self.peek_and_wake(&source, &waker).await;
            waker
                .earliest_ms
                .store(later.unwrap_or(i64::MAX), Ordering::Release);
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
    fn retire(&self, source: &Source, waker: &Arc<NamespaceWaker>) -> bool {
        let mut map = lock(&self.namespaces);
        // The map and this task hold the only references when nobody uses it.
        if waker.waiting.load(Ordering::Acquire) == 0 && Arc::strong_count(waker) <= 2 {
            map.remove(source);
            return true;
        }
        false
    }
}

/// Wakes up to `due` of a group's waiters.
fn wake(group: &Group, due: u64) {
    let waiting = group.waiting.load(Ordering::Acquire) as u64;
    for _ in 0..due.min(waiting) {
        group.wake.notify_one();
    }
}

impl Waiter {
    /// Parks until woken, the deadline, or shutdown.
    pub async fn wait(&self, deadline: Instant, shutdown: &CancellationToken) -> Woken {
        self.group.waiting.fetch_add(1, Ordering::AcqRel);
        if self.namespace.waiting.fetch_add(1, Ordering::AcqRel) == 0 {
            self.namespace.poke.notify_one();
        }
        // Counted out on drop too: a call whose client went away is dropped mid-wait,
        // and a leaked count would keep the timer polling Redis for it forever.
        let _waiting = (
            Waiting(&self.namespace.waiting),
            Waiting(&self.group.waiting),
        );
        tokio::select! {
            _ = self.group.wake.notified() => Woken::Notified,
            _ = tokio::time::sleep_until(deadline) => Woken::Deadline,
            _ = shutdown.cancelled() => Woken::Shutdown,
        }
    }

    /// More is due than was handed out: wake one more waiter of this group.
    pub fn pass_baton(&self) {
        if self.group.waiting.load(Ordering::Acquire) > 0 {
            self.group.wake.notify_one();
        }
    }

    /// Waiters parked in this waiter's group.
    pub fn waiting(&self) -> usize {
        self.group.waiting.load(Ordering::Acquire)
    }
}

/// One parked waiter; leaving the count on drop, however the wait ends.
struct Waiting<'a>(&'a AtomicUsize);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}
