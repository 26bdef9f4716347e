//! What the schedule and job use cases both work with: the store, Redis's clock, the
//! namespace table, the long-poll wake-ups, the metrics and the shutdown signal. Built once by
//! the server; cheap to clone (every part is shared).

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::{
    clock::Clock,
    giveback::GiveBacks,
    longpoll::Wakers,
    metrics::Metrics,
    namespaces::{Entry, Namespaces},
    store::Store,
    watch::Hub,
    workers::Sessions,
};

#[derive(Clone)]
pub(crate) struct Context {
    pub(crate) store: Arc<Store>,
    pub(crate) clock: Arc<Clock>,
    pub(crate) namespaces: Arc<Namespaces>,
    pub(crate) wakers: Arc<Wakers>,
    /// The counters the use cases update when they learn an outcome.
    pub(crate) metrics: Arc<Metrics>,
    /// Cancelled when the service stops: pending long-polls answer empty.
    pub(crate) shutdown: CancellationToken,
    /// The job changes this replica follows: WatchJob streams, Work streams' cancels.
    pub(crate) hub: Arc<Hub>,
    /// This replica's Work streams and waiting long-polls, published for ListWorkers
    /// (issue 33).
    pub(crate) sessions: Arc<Sessions>,
    /// Wakes this replica's dispatcher (`crate::dispatch`) when a schedule write here
    /// made a target slot due sooner than it knows.
    pub(crate) dispatch: Arc<tokio::sync::Notify>,
    /// Give-backs of unconfirmed claims being tried again (issue 29 item 11).
    pub(crate) give_backs: Arc<GiveBacks>,
}

impl Context {
    /// Puts the entry's namespace in the store's namespace registry after a write
    /// that stored something succeeded: one `ZADD NX` per process per namespace (the
    /// entry remembers it; a fresh entry after eviction registers again, which
    /// changes nothing). After, not before: a refused call writes nothing (invariant
    /// 8). The registry is outside the namespace's slot, so no script may write it;
    /// a registration that fails is logged and made by the next write (the entry is
    /// not marked), or by Migrate, which registers every namespace it meets.
    pub(crate) async fn register(&self, entry: &Entry) {
        if entry.registered() {
            return;
        }
        match self.store.register_namespace(entry.name()).await {
            Ok(()) => entry.mark_registered(),
            Err(error) => {
                tracing::warn!(namespace = %entry.name(), %error, "could not register the namespace");
            }
        }
    }
}
