//! Cross-replica wake-ups (issue 29): a long-poll waiting on one replica learns of
//! work another replica wrote from an announcement, not by polling Redis.
//!
//! Every write that makes work claimable (an enqueue, a retry, a freed slot, a
//! schedule's next run) is reported to this replica's waiters at once
//! ([`crate::longpoll::Wakers::ready`]) and also handed to the [`Announcer`]. The
//! announcer gathers what arrives while it lingers ([`LINGER`]) and while its last
//! message is in flight, keeps per namespace and kind of work only the earliest time,
//! and sends it as one PUBLISH on the ready channel (`Store::publish_ready`). So a
//! replica sends at most one message per linger whatever its write rate, and an idle
//! one sends none. Every replica's one subscription (`Store::listen`) hears them and
//! re-arms the timers of the namespaces it has waiters in.
//!
//! Pub/sub delivers at most once. A subscription that drops is re-made, and its
//! (re)subscription wakes every waiting timer to read Redis once. A message that
//! was never sent (its replica died between the write and the PUBLISH, or Redis
//! refused it until the entries overflowed) is what the safety net covers: each
//! `--recheck-interval` the replica re-reads a few waiting namespaces in turn
//! (`Wakers::run_recheck`), a fixed amount of Redis work however many namespaces
//! wait.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::Duration,
};

use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::{
    domain::Namespace,
    namespaces::Work,
    store::{Claimable, ReadyMessage, Store},
    sync::lock,
};

/// How long the announcer gathers after the first write before it sends.
const LINGER: Duration = Duration::from_millis(1);
/// Most namespace lines one message carries (a message stays a few tens of KB).
const MAX_LINES: usize = 512;
/// Most entries waiting to be sent; beyond them they are dropped and one
/// "everything" message tells every replica to read what its waiters wait on.
const MAX_PENDING: usize = 65_536;
/// The first and the longest wait before a failed PUBLISH is tried again.
const BACKOFF: (Duration, Duration) = (Duration::from_millis(50), Duration::from_secs(2));

/// What is waiting to be announced.
#[derive(Default)]
struct Pending {
    earliest: HashMap<(Namespace, Work), i64>,
    overflowed: bool,
}

/// Gathers this replica's announcements and sends them.
pub(crate) struct Announcer {
    store: Arc<Store>,
    /// This replica's name in its messages: its own are skipped when heard back.
    replica: String,
    pending: Mutex<Pending>,
    wake: Notify,
}

impl Announcer {
    pub(crate) fn new(store: Arc<Store>) -> Arc<Self> {
        Arc::new(Announcer {
            store,
            replica: uuid::Uuid::new_v4().simple().to_string(),
            pending: Mutex::default(),
            wake: Notify::new(),
        })
    }

    /// This replica's name in its messages.
    pub(crate) fn replica(&self) -> &str {
        &self.replica
    }

    /// Work of `work` in `namespace` is claimable at `earliest_ms` (Redis time).
    pub(crate) fn announce(&self, namespace: &Namespace, work: Work, earliest_ms: i64) {
        {
            let mut pending = lock(&self.pending);
            if pending.overflowed {
                return;
            }
            let key = (namespace.clone(), work);
            if let Some(known) = pending.earliest.get_mut(&key) {
                *known = (*known).min(earliest_ms);
            } else if pending.earliest.len() >= MAX_PENDING {
                pending.earliest.clear();
                pending.overflowed = true;
            } else {
                pending.earliest.insert(key, earliest_ms);
            }
        }
        self.wake.notify_one();
    }

    /// Sends what is announced until `stop`.
    pub(crate) async fn run(self: Arc<Self>, stop: CancellationToken) {
        let mut backoff = BACKOFF.0;
        loop {
            tokio::select! {
                () = self.wake.notified() => {}
                () = stop.cancelled() => return,
            }
            // Real time to gather what more arrives before one message goes.
            #[allow(clippy::disallowed_methods)]
            tokio::time::sleep(LINGER).await;
            let taken = std::mem::take(&mut *lock(&self.pending));
            match self.send(&taken).await {
                Ok(()) => backoff = BACKOFF.0,
                Err(error) => {
                    tracing::debug!(%error, "could not announce claimable work; trying again");
                    self.put_back(taken);
                    // A backoff: real time before Redis is tried again.
                    #[allow(clippy::disallowed_methods)]
                    let pause = tokio::time::sleep(backoff);
                    tokio::select! {
                        () = pause => {}
                        () = stop.cancelled() => return,
                    }
                    backoff = (backoff * 2).min(BACKOFF.1);
                }
            }
        }
    }

    /// Sends `taken` in messages of at most [`MAX_LINES`].
    async fn send(&self, taken: &Pending) -> Result<(), crate::store::StoreError> {
        if taken.overflowed {
            return self
                .store
                .publish_ready(ReadyMessage::everything(&self.replica))
                .await;
        }
        let lines: Vec<_> = taken.earliest.iter().collect();
        for chunk in lines.chunks(MAX_LINES) {
            let mut message = ReadyMessage::new(&self.replica);
            for ((namespace, work), earliest_ms) in chunk {
                message.push(claimable(*work), **earliest_ms, namespace);
            }
            self.store.publish_ready(message).await?;
        }
        Ok(())
    }

    /// Keeps what could not be sent for the next try (merged with what came since),
    /// and is woken for it.
    fn put_back(&self, taken: Pending) {
        {
            let mut pending = lock(&self.pending);
            pending.overflowed |= taken.overflowed;
            for (key, earliest_ms) in taken.earliest {
                if pending.overflowed || pending.earliest.len() >= MAX_PENDING {
                    pending.earliest.clear();
                    pending.overflowed = true;
                    break;
                }
                let known = pending.earliest.entry(key).or_insert(earliest_ms);
                *known = (*known).min(earliest_ms);
            }
        }
        self.wake.notify_one();
    }
}

/// The announced kind of `work`.
pub(crate) fn claimable(work: Work) -> Claimable {
    match work {
        Work::Jobs => Claimable::Jobs,
        Work::Schedules => Claimable::Schedules,
    }
}

/// The kind of work an announcement names.
pub(crate) fn work(claimable: Claimable) -> Work {
    match claimable {
        Claimable::Jobs => Work::Jobs,
        Claimable::Schedules => Work::Schedules,
    }
}
