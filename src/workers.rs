//! Worker sessions (issue 33): every open Work stream and every waiting long-poll
//! (ClaimJob, ClaimDueSchedule with a wait) of this replica, published per namespace
//! to Redis so that any replica can list them (ListWorkers).
//!
//! A session is registered when its call starts waiting ([`Sessions::open`]) and
//! leaves the table when its guard drops. One background task per replica
//! ([`Sessions::run`]) publishes every `--worker-refresh-interval`: one script call
//! per namespace that has sessions, or had one end since the last publish (it writes
//! the live ones with the Redis clock as their last-seen time and removes the ended
//! ones); nothing for the others. A replica publishes at most
//! [`MAX_SESSIONS_PER_NAMESPACE`] sessions per namespace (those beyond it are served
//! but not listed). Readers treat a session last seen more than
//! [`STALE_INTERVALS`] intervals ago as its replica's leftover (a replica that died)
//! and remove it.

use std::{
    collections::HashMap,
    sync::{
        atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering},
        Arc, Mutex,
    },
    time::Duration,
};

use tokio_util::sync::CancellationToken;

use crate::{
    clock::Clock,
    store::{
        ops::publish_workers::{PublishWorkers, SessionKind, SessionRecord},
        Store,
    },
    sync::lock,
};

/// Most sessions one replica publishes per namespace.
pub(crate) const MAX_SESSIONS_PER_NAMESPACE: usize = 1000;

/// Refresh intervals after which a session not published again is stale.
pub(crate) const STALE_INTERVALS: u32 = 3;

/// What a session is, as it opens.
pub(crate) struct Opening<'a> {
    pub(crate) kind: SessionKind,
    pub(crate) worker: &'a str,
    pub(crate) queues: &'a [String],
    pub(crate) capacity: u32,
}

/// What one namespace's publish writes: session id -> record, `None` to remove it.
type Published = Vec<(String, Option<SessionRecord>)>;

/// One live session.
struct Live {
    record: SessionRecord,
    in_flight: AtomicU32,
    /// Whether it was written to Redis (only then does its end need a removal).
    published: AtomicBool,
}

/// One namespace's sessions on this replica.
#[derive(Default)]
struct Table {
    live: HashMap<u64, Arc<Live>>,
    /// Sessions published and ended since the last publish.
    ended: Vec<u64>,
}

/// This replica's sessions, by namespace.
pub(crate) struct Sessions {
    /// This replica's part of every session id.
    replica: String,
    /// Where this replica serves (for the record).
    address: String,
    clock: Arc<Clock>,
    interval: Duration,
    next: AtomicU64,
    tables: Mutex<HashMap<String, Table>>,
}

/// A registered session; it ends when this drops.
pub(crate) struct Session {
    sessions: Arc<Sessions>,
    namespace: String,
    /// None: over the bound, not published.
    id: Option<u64>,
    live: Option<Arc<Live>>,
}

impl Session {
    /// Jobs the worker holds now (a Work stream).
    pub(crate) fn set_in_flight(&self, n: usize) {
        if let Some(live) = &self.live {
            live.in_flight
                .store(u32::try_from(n).unwrap_or(u32::MAX), Ordering::Relaxed);
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let Some(id) = self.id else {
            return;
        };
        let mut tables = lock(&self.sessions.tables);
        if let Some(table) = tables.get_mut(&self.namespace) {
            if let Some(live) = table.live.remove(&id) {
                if live.published.load(Ordering::Acquire) {
                    table.ended.push(id);
                }
            }
            if table.live.is_empty() && table.ended.is_empty() {
                tables.remove(&self.namespace);
            }
        }
    }
}

impl Sessions {
    /// `interval`: `--worker-refresh-interval`.
    pub(crate) fn new(address: String, clock: Arc<Clock>, interval: Duration) -> Arc<Self> {
        Arc::new(Sessions {
            replica: uuid::Uuid::new_v4().simple().to_string()[..12].to_owned(),
            address,
            clock,
            interval: interval.max(Duration::from_millis(10)),
            next: AtomicU64::new(1),
            tables: Mutex::default(),
        })
    }

    /// How old a last-seen time may be before readers drop the session.
    pub(crate) fn stale_after(&self) -> Duration {
        self.interval * STALE_INTERVALS
    }

    /// Registers a session of `namespace` until the returned guard drops.
    pub(crate) fn open(self: &Arc<Self>, namespace: &str, opening: Opening<'_>) -> Session {
        let mut tables = lock(&self.tables);
        let table = tables.entry(namespace.to_owned()).or_default();
        let (id, live) = if table.live.len() < MAX_SESSIONS_PER_NAMESPACE {
            let id = self.next.fetch_add(1, Ordering::Relaxed);
            let live = Arc::new(Live {
                record: SessionRecord {
                    worker: opening.worker.to_owned(),
                    kind: opening.kind,
                    queues: opening.queues.to_vec(),
                    capacity: opening.capacity,
                    in_flight: 0,
                    since_ms: self.clock.now_ms(),
                    replica: self.address.clone(),
                },
                in_flight: AtomicU32::new(0),
                published: AtomicBool::new(false),
            });
            table.live.insert(id, live.clone());
            (Some(id), Some(live))
        } else {
            (None, None)
        };
        Session {
            sessions: self.clone(),
            namespace: namespace.to_owned(),
            id,
            live,
        }
    }

    fn field(&self, id: u64) -> String {
        format!("{}-{id}", self.replica)
    }

    /// What to publish now, per namespace: the live sessions (marked published) and
    /// the ended ones (taken).
    fn snapshot(&self) -> Vec<(String, Published)> {
        let mut tables = lock(&self.tables);
        let mut out = Vec::with_capacity(tables.len());
        tables.retain(|namespace, table| {
            let mut sessions = Vec::with_capacity(table.live.len() + table.ended.len());
            for (id, live) in &table.live {
                let mut record = live.record.clone();
                record.in_flight = live.in_flight.load(Ordering::Relaxed);
                live.published.store(true, Ordering::Release);
                sessions.push((self.field(*id), Some(record)));
            }
            for id in table.ended.drain(..) {
                sessions.push((self.field(id), None));
            }
            if !sessions.is_empty() {
                out.push((namespace.clone(), sessions));
            }
            !table.live.is_empty()
        });
        out
    }

    /// Publishes every interval until `stop`.
    pub(crate) async fn run(self: Arc<Self>, store: Arc<Store>, stop: CancellationToken) {
        let ttl_ms = u64::try_from(self.stale_after().as_millis()).unwrap_or(u64::MAX);
        let mut ticks = tokio::time::interval(self.interval);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = ticks.tick() => {}
                () = stop.cancelled() => return,
            }
            for (namespace, sessions) in self.snapshot() {
                let op = PublishWorkers {
                    ttl_ms,
                    sessions: &sessions,
                };
                if let Err(error) = store.run(&namespace, &op).await {
                    tracing::debug!(%namespace, %error, "could not publish worker sessions");
                }
            }
        }
    }
}
