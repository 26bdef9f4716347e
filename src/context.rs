//! What the schedule and job use cases both work with: the store, Redis's clock, the
//! namespace registry, the long-poll wake-ups, the metrics and the shutdown signal. Built once by
//! the server; cheap to clone (every part is shared).

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::{
    clock::Clock, longpoll::Wakers, metrics::Metrics, namespaces::Namespaces, store::Store,
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
}
