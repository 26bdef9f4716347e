//! The one registry of per-namespace in-memory state: the wake-up timers of both
//! long-polls, the Enqueue grouping lane, the monitor's last finding, the
//! needs-Migrate notice, and whether finished jobs still await pruning.
//!
//! One eviction rule covers all of it: an entry goes once no call has used its
//! namespace for [`IDLE_AFTER`], nothing holds it (no long-poll waits on it, no
//! grouped Enqueue is in flight) and the pruner found no finished jobs left to prune.
//! Evicting it stops its timers. So memory and background work follow the namespaces
//! in use, not every namespace this instance ever saw; a namespace used again simply
//! gets a fresh entry.

use std::{
    collections::HashMap,
    sync::{
        atomic::{AtomicU64, Ordering},
        Arc, Mutex, OnceLock,
    },
    time::Duration,
};

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::{domain::Finding, jobs::Lane, longpoll::Timer, sync::lock};

/// How long an unused namespace's state is kept.
pub(crate) const IDLE_AFTER: Duration = Duration::from_secs(3600);

/// Finished jobs kept is not known until the pruner has looked.
const UNKNOWN: u64 = u64::MAX;

/// The in-memory state of one namespace.
pub(crate) struct Entry {
    name: String,
    last_used: Mutex<Instant>,
    /// Cancelled when the entry is evicted (or the service stops): ends its timers.
    retired: CancellationToken,
    pub(crate) schedule_timer: OnceLock<Arc<Timer>>,
    pub(crate) job_timer: OnceLock<Arc<Timer>>,
    pub(crate) lane: Arc<Mutex<Lane>>,
    /// The monitor's last finding and when it was last logged.
    pub(crate) health: Mutex<(Finding, Option<Instant>)>,
    /// When a refused call last logged that the namespace needs Migrate.
    pub(crate) migrate_notice: Mutex<Option<Instant>>,
    /// Finished jobs the last prune left (UNKNOWN before the first prune of a
    /// namespace that served job calls).
    finished_kept: AtomicU64,
}

impl Entry {
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// Ends when the entry is evicted or the service stops.
    pub(crate) fn retired(&self) -> &CancellationToken {
        &self.retired
    }

    /// Marks that job calls used the namespace: the pruner visits it from now on.
    pub(crate) fn serves_jobs(&self) {
        let _ =
            self.finished_kept
                .compare_exchange(0, UNKNOWN, Ordering::AcqRel, Ordering::Acquire);
    }

    /// Whether the pruner should visit it.
    pub(crate) fn has_jobs(&self) -> bool {
        self.finished_kept.load(Ordering::Acquire) != 0
    }

    /// Records how many finished jobs a prune left.
    pub(crate) fn pruned(&self, kept: u64) {
        self.finished_kept.store(kept, Ordering::Release);
    }

    fn evictable(&self, now: Instant) -> bool {
        now.duration_since(*lock(&self.last_used)) >= IDLE_AFTER
            && self.finished_kept.load(Ordering::Acquire) == 0
            && lock(&self.lane).is_idle()
    }
}

/// The registry.
pub(crate) struct Namespaces {
    entries: Mutex<HashMap<String, Arc<Entry>>>,
    shutdown: CancellationToken,
}

impl Namespaces {
    pub(crate) fn new(shutdown: CancellationToken) -> Arc<Self> {
        Arc::new(Namespaces {
            entries: Mutex::new(HashMap::new()),
            shutdown,
        })
    }

    /// The entry of a (validated) namespace, created on first use; marks it used.
    pub(crate) fn entry(&self, name: &str) -> Arc<Entry> {
        let mut entries = lock(&self.entries);
        // Look up before inserting: the key is allocated only for a new entry.
        if let Some(entry) = entries.get(name) {
            *lock(&entry.last_used) = Instant::now();
            return entry.clone();
        }
        let entry = Arc::new(Entry {
            name: name.to_owned(),
            last_used: Mutex::new(Instant::now()),
            retired: self.shutdown.child_token(),
            schedule_timer: OnceLock::new(),
            job_timer: OnceLock::new(),
            lane: Arc::new(Mutex::new(Lane::default())),
            health: Mutex::new((Finding::Healthy, None)),
            migrate_notice: Mutex::new(None),
            finished_kept: AtomicU64::new(0),
        });
        entries.insert(name.to_owned(), entry.clone());
        entry
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

    #[tokio::test(start_paused = true)]
    async fn an_entry_goes_once_idle_unheld_and_without_retention_work() {
        let namespaces = Namespaces::new(CancellationToken::new());
        let quiet = namespaces.entry("quiet");
        let retired = quiet.retired().clone();
        let held = namespaces.entry("held");
        let jobs = namespaces.entry("jobs");
        jobs.serves_jobs();
        drop((quiet, jobs));

        assert_eq!(namespaces.sweep(), 0, "nothing is idle yet");
        tokio::time::advance(IDLE_AFTER).await;
        assert_eq!(namespaces.sweep(), 1, "only the quiet one goes");
        assert!(retired.is_cancelled(), "its timers are told to stop");
        assert_eq!(namespaces.len(), 2);

        // Retention work keeps an entry until a prune finds nothing left.
        namespaces.entry("jobs").pruned(3);
        tokio::time::advance(IDLE_AFTER).await;
        assert_eq!(namespaces.sweep(), 0);
        namespaces.all().iter().for_each(|e| e.pruned(0));
        tokio::time::advance(IDLE_AFTER).await;
        assert_eq!(
            namespaces.sweep(),
            1,
            "the job namespace goes, the held one stays"
        );
        drop(held);
        assert_eq!(namespaces.sweep(), 1);
        assert_eq!(namespaces.len(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn a_used_namespace_is_kept() {
        let namespaces = Namespaces::new(CancellationToken::new());
        namespaces.entry("a");
        tokio::time::advance(IDLE_AFTER / 2).await;
        namespaces.entry("a");
        tokio::time::advance(IDLE_AFTER / 2).await;
        assert_eq!(namespaces.sweep(), 0, "used within the idle time");
    }
}
