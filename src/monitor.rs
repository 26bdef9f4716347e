//! Watches the namespaces this instance serves for an index that lost entries (deleted
//! by hand, evicted under `maxmemory`, a partial restore) or a layout that needs
//! Migrate, so neither stays silent; and sweeps the namespace table.
//!
//! Every schedule script keeps, in the namespace meta, how many entries the due index
//! must hold; comparing it with ZCARD is O(1). Every `interval` this task does that for
//! each namespace in the table and logs what it finds: once when it appears, again
//! every `REPEAT` while it lasts, and once when it is repaired.
//! `QueueService.GetNamespaceStatus` reports the same facts on demand.
//!
//! Idle namespaces cost (almost) nothing (issue 29): a look checks the namespaces
//! used since their last check, and of the others only [`IDLE_BATCH`] in turn, so
//! a replica that served 10,000 namespaces an hour ago runs a few scripts per
//! interval, not 10,000. A problem in an idle namespace is still found, within
//! (idle namespaces / [`IDLE_BATCH`]) intervals, or at its next call.
//!
//! It also remembers each namespace's job sequence, which only rises: one lower than
//! the last seen means the store went back in time under the service (a restore of
//! an older backup, a flush, a failover to a lagging replica), which is logged as an
//! ERROR, and the namespace's job calls are refused until Migrate rebuilds its job
//! metadata from the records (`distrust_jobs.lua`, issue 29): serving on would hand
//! out job numbers stored jobs may hold, and nobody would look at what was lost.
//! What it cannot see: a rollback between two checks that the namespace's writes
//! have already carried past the sequence seen, schedule-only namespaces
//! (schedules keep no counter that only rises), namespaces this replica does not
//! serve, and anything before the replica started.

use std::{
    collections::{HashMap, HashSet},
    sync::Arc,
    time::Duration,
};

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::{
    domain::Finding,
    namespaces::{Entry, Namespaces},
    store::{
        ops::{distrust_jobs::DistrustJobs, namespace_status::NamespaceStatus},
        Store,
    },
    sync::lock,
};

/// A problem that lasts is logged again this often.
const REPEAT: Duration = Duration::from_secs(300);
/// Namespaces unused since their last check that one look checks, in turn.
pub(crate) const IDLE_BATCH: usize = 8;

pub(crate) struct Monitor {
    store: Arc<Store>,
    namespaces: Arc<Namespaces>,
    /// The job sequence last seen per served namespace (forgotten with the namespace).
    sequences: HashMap<String, u64>,
    /// When each served namespace was last checked (forgotten with the namespace).
    checked: HashMap<String, Instant>,
    /// The last idle namespace checked: the next look's idle ones start after it.
    cursor: Option<String>,
}

impl Monitor {
    pub(crate) fn new(store: Arc<Store>, namespaces: Arc<Namespaces>) -> Self {
        Self {
            store,
            namespaces,
            sequences: HashMap::new(),
            checked: HashMap::new(),
            cursor: None,
        }
    }

    pub(crate) async fn run(mut self, interval: Duration, cancel: CancellationToken) {
        loop {
            // The monitor's interval: real time between two looks.
            #[allow(clippy::disallowed_methods)]
            let tick = tokio::time::sleep(interval);
            tokio::select! {
                _ = tick => {}
                _ = cancel.cancelled() => return,
            }
            let evicted = self.namespaces.sweep();
            if evicted > 0 {
                tracing::debug!(
                    evicted,
                    kept = self.namespaces.len(),
                    "idle namespaces forgotten"
                );
            }
            self.look().await;
        }
    }

    /// Checks the namespaces used since their last check and [`IDLE_BATCH`] of the
    /// others, in turn.
    async fn look(&mut self) {
        let entries = self.namespaces.all();
        let served: HashSet<&str> = entries.iter().map(|entry| entry.name().as_str()).collect();
        self.sequences
            .retain(|name, _| served.contains(name.as_str()));
        self.checked
            .retain(|name, _| served.contains(name.as_str()));
        let (used, mut idle): (Vec<_>, Vec<_>) = entries.iter().partition(|entry| {
            self.checked
                .get(entry.name().as_str())
                .is_none_or(|at| entry.last_used() >= *at)
        });
        idle.sort_by(|a, b| a.name().cmp(b.name()));
        let start = self.cursor.as_deref().map_or(0, |cursor| {
            idle.partition_point(|entry| entry.name().as_str() <= cursor)
        });
        let turn: Vec<_> = (0..IDLE_BATCH.min(idle.len()))
            .map(|i| idle[(start + i) % idle.len()])
            .collect();
        if let Some(last) = turn.last() {
            self.cursor = Some(last.name().to_string());
        }
        for entry in used.into_iter().chain(turn) {
            self.checked
                .insert(entry.name().to_string(), Instant::now());
            self.check(entry).await;
        }
    }

    async fn check(&mut self, entry: &Entry) {
        let finding = match self.store.run(entry.name(), &NamespaceStatus).await {
            Ok(mut health) => {
                if let Some(seen) = self.check_sequence(entry.name(), health.job_sequence) {
                    if self.distrust(entry, seen).await {
                        // Refused from now on, as the next look will find it.
                        health.jobs_layout = None;
                        health.jobs_held = true;
                    }
                }
                health.finding()
            }
            // Redis being away is reported by health; nothing to add per namespace.
            Err(_) => return,
        };
        let mut state = lock(&entry.health);
        let (last, logged) = &mut *state;
        let changed = *last != finding;
        let repeat = logged.is_none_or(|at| at.elapsed() >= REPEAT);
        if log(entry.name(), &finding, changed, repeat) {
            *logged = Some(Instant::now());
        }
        *last = finding;
    }
}

impl Monitor {
    /// Refuses the namespace's job calls until Migrate runs (its sequence went back
    /// from `seen`); whether it did (not when writes carried the sequence past
    /// `seen` meanwhile, or Redis is away: the next look tries again only if the
    /// sequence is still lower than the one it then remembers).
    async fn distrust(&self, entry: &Entry, seen: u64) -> bool {
        match self.store.run(entry.name(), &DistrustJobs { seen }).await {
            Ok(refused) => refused,
            Err(error) => {
                tracing::warn!(
                    namespace = %entry.name(),
                    %error,
                    "could not mark the rolled-back namespace for Migrate"
                );
                false
            }
        }
    }

    /// Logs an ERROR when a namespace's job sequence is lower than last seen, and
    /// returns the sequence seen before.
    fn check_sequence(&mut self, namespace: &str, now: u64) -> Option<u64> {
        let seen = self.sequences.insert(namespace.to_owned(), now);
        let seen = seen.filter(|seen| now < *seen)?;
        tracing::error!(
            %namespace,
            seen,
            now,
            "the namespace's job sequence went backwards: the store was rolled back \
             or its data deleted under the service (a restore of an older backup, \
             FLUSHALL, a failover to a lagging replica?); jobs enqueued after that \
             point are lost and jobs finished after it may run again; its job calls \
             are refused until Migrate rebuilds its job metadata (QueueService/Migrate)"
        );
        Some(seen)
    }
}

/// Logs a finding when it is new or due again; returns whether it logged a problem.
fn log(namespace: &str, finding: &Finding, changed: bool, repeat: bool) -> bool {
    match finding {
        Finding::Healthy => {
            if changed {
                tracing::info!(%namespace, "namespace store is healthy again");
            }
            false
        }
        _ if !(changed || repeat) => false,
        Finding::NeedsMigrate(needs) => {
            tracing::warn!(
                %namespace,
                "namespace needs Migrate: {needs}; its calls are refused until it runs (QueueService/Migrate)"
            );
            true
        }
        Finding::Damaged(missing) => {
            tracing::error!(
                %namespace,
                missing_entries = missing,
                "due index is missing entries (deleted or evicted?): those schedules will not fire until Migrate repairs the index (QueueService/Migrate)"
            );
            true
        }
    }
}
