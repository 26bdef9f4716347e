//! Watches the namespaces this instance serves for an index that lost entries (deleted
//! by hand, evicted under `maxmemory`, a partial restore) or a layout that needs
//! Migrate, so neither stays silent.
//!
//! Every schedule script keeps, in the namespace meta, how many entries the due index
//! must hold; comparing it with ZCARD is O(1). This task does that for each namespace
//! seen since the last round, every `interval`, and logs what it finds: once when it
//! appears, again every `REPEAT` while it lasts, and once when it is repaired.
//! `AdminService.GetNamespaceStatus` reports the same facts on demand.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::Duration,
};

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::store::{
    keys::{JOBS_LAYOUT, SCHEMA_VERSION},
    Store,
};

/// A problem that lasts is logged again this often.
const REPEAT: Duration = Duration::from_secs(300);
/// A namespace not used for this long is no longer watched.
const FORGET_AFTER: Duration = Duration::from_secs(3600);

#[derive(Debug, Clone, PartialEq, Eq)]
enum Finding {
    Healthy,
    NeedsMigrate(String),
    /// The jobs are in this (older) job layout.
    JobsNeedMigrate(u32),
    /// Entries the index is missing.
    Damaged(u64),
}

struct Watched {
    last_used: Instant,
    finding: Finding,
    logged: Option<Instant>,
}

pub struct NamespaceMonitor {
    store: Arc<Store>,
    watched: Mutex<HashMap<String, Watched>>,
}

impl NamespaceMonitor {
    pub fn new(store: Arc<Store>) -> Arc<Self> {
        Arc::new(Self {
            store,
            watched: Mutex::new(HashMap::new()),
        })
    }

    /// Notes that a request used `namespace` (cheap: one map lookup).
    pub fn touch(&self, namespace: &str) {
        let mut watched = match self.watched.lock() {
            Ok(w) => w,
            Err(poisoned) => poisoned.into_inner(),
        };
        match watched.get_mut(namespace) {
            Some(w) => w.last_used = Instant::now(),
            None => {
                watched.insert(
                    namespace.to_owned(),
                    Watched {
                        last_used: Instant::now(),
                        finding: Finding::Healthy,
                        logged: None,
                    },
                );
            }
        }
    }

    pub async fn run(self: Arc<Self>, interval: Duration, cancel: CancellationToken) {
        loop {
            tokio::select! {
                _ = tokio::time::sleep(interval) => {}
                _ = cancel.cancelled() => return,
            }
            let namespaces: Vec<String> = {
                let mut watched = match self.watched.lock() {
                    Ok(w) => w,
                    Err(poisoned) => poisoned.into_inner(),
                };
                watched.retain(|_, w| w.last_used.elapsed() < FORGET_AFTER);
                watched.keys().cloned().collect()
            };
            for namespace in namespaces {
                self.check(&namespace).await;
            }
        }
    }

    async fn check(&self, namespace: &str) {
        let finding = match self.store.namespace_status(namespace).await {
            Ok(state) if state.needs_migrate() => {
                Finding::NeedsMigrate(state.schema_version().to_string())
            }
            Ok(state) if state.jobs_need_migrate() => {
                Finding::JobsNeedMigrate(state.jobs_layout_version())
            }
            Ok(state) => match state.missing_entries() {
                0 => Finding::Healthy,
                missing => Finding::Damaged(missing),
            },
            // Redis being away is reported by health; nothing to add per namespace.
            Err(_) => return,
        };
        let mut watched = match self.watched.lock() {
            Ok(w) => w,
            Err(poisoned) => poisoned.into_inner(),
        };
        let Some(w) = watched.get_mut(namespace) else {
            return;
        };
        let changed = w.finding != finding;
        let repeat = w.logged.is_none_or(|at| at.elapsed() >= REPEAT);
        match &finding {
            Finding::Healthy if changed => {
                tracing::info!(%namespace, "namespace store is healthy again");
            }
            Finding::Healthy => {}
            Finding::NeedsMigrate(found) if changed || repeat => {
                tracing::warn!(
                    %namespace,
                    schema = %found,
                    current = SCHEMA_VERSION,
                    "namespace needs Migrate: claims and upserts are refused until it runs (AdminService/Migrate)"
                );
                w.logged = Some(Instant::now());
            }
            Finding::JobsNeedMigrate(found) if changed || repeat => {
                tracing::warn!(
                    %namespace,
                    jobs_layout = found,
                    current = JOBS_LAYOUT,
                    "namespace needs Migrate: its jobs are in an older layout, and job calls are refused until it runs (AdminService/Migrate)"
                );
                w.logged = Some(Instant::now());
            }
            Finding::Damaged(missing) if changed || repeat => {
                tracing::error!(
                    %namespace,
                    missing_entries = missing,
                    "due index is missing entries (deleted or evicted?): those schedules will not fire until Migrate repairs the index (AdminService/Migrate)"
                );
                w.logged = Some(Instant::now());
            }
            _ => {}
        }
        w.finding = finding;
    }
}
