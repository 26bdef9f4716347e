//! The namespace table: the one home of per-namespace in-memory state, the wake-up timers of both
//! long-polls (`timer`), the Enqueue and ClaimJob grouping lanes (`lane`), the monitor's last
//! finding, the needs-Migrate notice. The table owns these state types; the
//! modules that act on them (`longpoll`, `jobs::coalesce`, `jobs::claim_group`, `monitor`) import them
//! from here, and this module imports none of its users.
//!
//! One eviction rule covers all of it: an entry goes once no call has used its
//! namespace for [`IDLE_AFTER`] and nothing holds it (no long-poll waits on it, no
//! grouped Enqueue or claim is in flight). Evicting it stops its timers. Pruning keeps no
//! entry: it is driven by the prune due-set in Redis (`jobs::retention`). So memory and background work follow the namespaces
//! in use, not every namespace this instance ever saw; a namespace used again simply
//! gets a fresh entry.

use std::{
    collections::HashMap,
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc, Mutex, OnceLock,
    },
    time::Duration,
};

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

mod lane;
mod timer;

pub(crate) use lane::{ClaimLane, InFlight, Lane, Reply, WaitingClaim};
pub(crate) use timer::{Group, Timer, Work};

use crate::{
    domain::{Finding, Namespace},
    sync::lock,
};

/// How long an unused namespace's state is kept.
pub(crate) const IDLE_AFTER: Duration = Duration::from_secs(3600);

/// The in-memory state of one namespace.
pub(crate) struct Entry {
    name: Namespace,
    last_used: Mutex<Instant>,
    /// Cancelled when the entry is evicted (or the service stops): ends its timers.
    retired: CancellationToken,
    pub(crate) schedule_timer: OnceLock<Arc<Timer>>,
    pub(crate) job_timer: OnceLock<Arc<Timer>>,
    pub(crate) lane: Arc<Mutex<Lane>>,
    /// ClaimJob attempts waiting to be grouped into one claim call (issue 35).
    pub(crate) claims: Arc<Mutex<ClaimLane>>,
    /// The monitor's last finding and when it was last logged.
    pub(crate) health: Mutex<(Finding, Option<Instant>)>,
    /// When a refused call last logged that the namespace needs Migrate.
    pub(crate) migrate_notice: Mutex<Option<Instant>>,
    /// A job call has used this entry.
    served_jobs: AtomicBool,
    /// This process has put the namespace in the store's namespace registry.
    registered: AtomicBool,
}

impl Entry {
    pub(crate) fn name(&self) -> &Namespace {
        &self.name
    }

    /// Ends when the entry is evicted or the service stops.
    pub(crate) fn retired(&self) -> &CancellationToken {
        &self.retired
    }

    /// True the first time a job call served through this entry asks, false after.
    pub(crate) fn first_job_call(&self) -> bool {
        !self.served_jobs.swap(true, Ordering::AcqRel)
    }

    /// Whether this process already registered the namespace (`Context::register`).
    pub(crate) fn registered(&self) -> bool {
        self.registered.load(Ordering::Acquire)
    }

    pub(crate) fn mark_registered(&self) {
        self.registered.store(true, Ordering::Release);
    }

    /// When a call last used the namespace through this entry.
    pub(crate) fn last_used(&self) -> Instant {
        *lock(&self.last_used)
    }

    fn evictable(&self, now: Instant) -> bool {
        now.duration_since(*lock(&self.last_used)) >= IDLE_AFTER
            && lock(&self.lane).is_idle()
            && lock(&self.claims).is_idle()
    }
}

/// The namespace table (not to be confused with the store's namespace registry,
/// the set of namespace names in Redis).
pub(crate) struct Namespaces {
    entries: Mutex<HashMap<Namespace, Arc<Entry>>>,
    shutdown: CancellationToken,
}

impl Namespaces {
    pub(crate) fn new(shutdown: CancellationToken) -> Arc<Self> {
        Arc::new(Namespaces {
            entries: Mutex::new(HashMap::new()),
            shutdown,
        })
    }

    /// The entry of a namespace, created on first use; marks it used.
    pub(crate) fn entry(&self, name: &Namespace) -> Arc<Entry> {
        let mut entries = lock(&self.entries);
        if let Some(entry) = entries.get(name) {
            *lock(&entry.last_used) = Instant::now();
            return entry.clone();
        }
        let entry = Arc::new(Entry {
            name: name.clone(),
            last_used: Mutex::new(Instant::now()),
            retired: self.shutdown.child_token(),
            schedule_timer: OnceLock::new(),
            job_timer: OnceLock::new(),
            lane: Arc::new(Mutex::new(Lane::default())),
            claims: Arc::new(Mutex::new(ClaimLane::default())),
            health: Mutex::new((Finding::Healthy, None)),
            migrate_notice: Mutex::new(None),
            served_jobs: AtomicBool::new(false),
            registered: AtomicBool::new(false),
        });
        entries.insert(name.clone(), entry.clone());
        entry
    }

    /// The entry of a namespace if this instance holds one; does not mark it used.
    pub(crate) fn get(&self, name: &Namespace) -> Option<Arc<Entry>> {
        lock(&self.entries).get(name).cloned()
    }

    /// Every entry, for the background tasks that visit them.
    pub(crate) fn all(&self) -> Vec<Arc<Entry>> {
        lock(&self.entries).values().cloned().collect()
    }

    /// Drops the entries the eviction rule lets go; returns how many.
    pub(crate) fn sweep(&self) -> usize {
        let now = Instant::now();
        let mut entries = lock(&self.entries);
        let before = entries.len();
        entries.retain(|_, entry| {
            // The map's reference is the only one when no call or task holds it.
            let keep = Arc::strong_count(entry) > 1 || !entry.evictable(now);
            if !keep {
                entry.retired.cancel();
            }
            keep
        });
        before - entries.len()
    }

    /// Entries held now.
    pub(crate) fn len(&self) -> usize {
        lock(&self.entries).len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ns(name: &str) -> Namespace {
        Namespace::parse(name).expect("a namespace")
    }

    #[tokio::test(start_paused = true)]
    async fn an_entry_goes_once_idle_and_unheld() {
        let namespaces = Namespaces::new(CancellationToken::new());
        let quiet = namespaces.entry(&ns("quiet"));
        let retired = quiet.retired().clone();
        let held = namespaces.entry(&ns("held"));
        let jobs = namespaces.entry(&ns("jobs"));
        assert!(jobs.first_job_call());
        assert!(!jobs.first_job_call(), "only the first");
        drop((quiet, jobs));

        assert_eq!(namespaces.sweep(), 0, "nothing is idle yet");
        tokio::time::advance(IDLE_AFTER).await;
        assert_eq!(
            namespaces.sweep(),
            2,
            "the quiet one and the one that ran jobs go"
        );
        assert!(retired.is_cancelled(), "its timers are told to stop");
        assert_eq!(namespaces.len(), 1);
        drop(held);
        assert_eq!(namespaces.sweep(), 1);
        assert_eq!(namespaces.len(), 0);
        assert!(
            namespaces.entry(&ns("jobs")).first_job_call(),
            "a fresh entry registers again"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_used_namespace_is_kept() {
        let namespaces = Namespaces::new(CancellationToken::new());
        namespaces.entry(&ns("a"));
        tokio::time::advance(IDLE_AFTER / 2).await;
        namespaces.entry(&ns("a"));
        tokio::time::advance(IDLE_AFTER / 2).await;
        assert_eq!(namespaces.sweep(), 0, "used within the idle time");
    }
}
