//! WatchJob's hub (issue 30): the job changes this replica follows, shared by every
//! stream that follows them, and the cancels its Work streams must hear.
//!
//! No watcher polls. The replica holds one subscription to the job-changes channels
//! (`Store::listen`, started with the first watcher or Work stream). Each watched job
//! has one follower task, whatever the number of its watchers: it reads the job with
//! `watch_job.lua` (which marks the record watched, so its writes are announced for
//! [`WATCH_MS`]) when a change is announced, after every (re)subscription (what
//! changed meanwhile was not heard), and every [`RENEW_EVERY`] (which renews the mark
//! before it lapses, and notices a change whose announcement was lost). What it read
//! goes into a `tokio::sync::watch` slot its watchers look at: the latest read wins,
//! a slow watcher skips to it, and memory per watcher is one receiver whatever the
//! rate of changes. One read per wake per job, not per watcher.
//!
//! The hub also counts the open WatchJob streams against `--max-watches`, and passes
//! an announced cancel (an active job whose cancel was asked, with its lease token)
//! to the Work streams of its namespace on this replica; the one holding that lease
//! tells its worker.

use std::{
    collections::HashMap,
    sync::{
        atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering},
        Arc, Mutex, Once,
    },
    time::Duration,
};

use tokio::sync::{mpsc, watch, Notify};
use tokio_util::sync::CancellationToken;

use crate::{
    domain::{JobRecord, Namespace},
    error::{Error, Missing},
    longpoll::Wakers,
    metrics::Metrics,
    store::{ops::watch_job::WatchJob, Notice, Store, StoreError},
    sync::lock,
};

/// How long a read marks the record watched: its writes are announced until then.
pub(crate) const WATCH_MS: i64 = 120_000;
/// How often a watched job is read even when nothing was announced: well within
/// WATCH_MS (the script renews the mark when under half of it is left).
const RENEW_EVERY: Duration = Duration::from_secs(45);
/// How soon a read that failed (Redis away) is tried again.
const RETRY_AFTER: Duration = Duration::from_secs(1);
/// Cancels buffered for one Work stream; more are dropped (the worker still learns
/// of the cancel in the reply to its next extend).
const CANCELS_BUFFERED: usize = 64;

/// What a watched job's watchers see: the latest read.
#[derive(Debug, Clone)]
pub(crate) enum Seen {
    /// Not read yet.
    Unread,
    Job(Arc<JobRecord>),
    /// The job does not exist (never did, or was pruned or purged).
    Gone,
    /// The first read failed.
    Failed(StoreError),
}

/// One watched job: its latest read, and what wakes its follower.
struct Followed {
    latest: watch::Sender<Seen>,
    wake: Notify,
    /// The highest version announced.
    announced: AtomicU64,
    /// Read whatever the version: a deletion, or a (re)subscription.
    reread: AtomicBool,
}

type Key = (Namespace, String);

/// A lease's cancel for a Work stream: (job id, lease token).
pub(crate) type Cancel = (String, String);

/// A Work stream's id and where its cancels go.
type CancelSink = (u64, mpsc::Sender<Cancel>);

pub(crate) struct Hub {
    store: Arc<Store>,
    metrics: Arc<Metrics>,
    shutdown: CancellationToken,
    /// `--max-watches`.
    max_watches: usize,
    open: Arc<AtomicUsize>,
    followed: Mutex<HashMap<Key, Arc<Followed>>>,
    /// Work streams by namespace: their id and where their cancels go.
    streams: Mutex<HashMap<Namespace, Vec<CancelSink>>>,
    next_stream: AtomicU64,
    listening: Once,
    /// The long-polls' wake-ups, told what the subscription hears of claimable work.
    wakers: Arc<Wakers>,
}

/// An open WatchJob stream's place under `--max-watches`, and its view of the job.
pub(crate) struct Watcher {
    pub(crate) seen: watch::Receiver<Seen>,
    open: Arc<AtomicUsize>,
    metrics: Arc<Metrics>,
}

impl Drop for Watcher {
    fn drop(&mut self) {
        self.open.fetch_sub(1, Ordering::AcqRel);
        self.metrics.watch_streams(-1);
    }
}

/// A Work stream's cancels, until it is dropped.
pub(crate) struct CancelFeed {
    pub(crate) cancels: mpsc::Receiver<Cancel>,
    hub: Arc<Hub>,
    namespace: Namespace,
    id: u64,
}

impl Drop for CancelFeed {
    fn drop(&mut self) {
        let mut streams = lock(&self.hub.streams);
        if let Some(list) = streams.get_mut(&self.namespace) {
            list.retain(|(id, _)| *id != self.id);
            if list.is_empty() {
                streams.remove(&self.namespace);
            }
        }
    }
}

impl Hub {
    pub(crate) fn new(
        store: Arc<Store>,
        metrics: Arc<Metrics>,
        shutdown: CancellationToken,
        max_watches: usize,
        wakers: Arc<Wakers>,
    ) -> Arc<Self> {
        Arc::new(Self {
            wakers,
            store,
            metrics,
            shutdown,
            max_watches,
            open: Arc::default(),
            followed: Mutex::default(),
            streams: Mutex::default(),
            next_stream: AtomicU64::new(0),
            listening: Once::new(),
        })
    }

    /// Starts the replica's subscription, once: at startup (the long-polls' wake-ups
    /// need it from the first waiter), and again harmlessly by the first watcher.
    pub(crate) fn listen(self: &Arc<Self>) {
        self.listening.call_once(|| {
            let hub = self.clone();
            let stop = self.shutdown.clone();
            tokio::spawn(async move {
                let store = hub.store.clone();
                store.listen(|notice| hub.hear(&notice), stop).await;
            });
        });
    }

    /// What the subscription heard.
    fn hear(&self, notice: &Notice<'_>) {
        self.wakers.hear(notice);
        match *notice {
            Notice::Subscribed => {
                for followed in lock(&self.followed).values() {
                    followed.reread.store(true, Ordering::Release);
                    followed.wake.notify_one();
                }
            }
            Notice::Changed {
                namespace,
                id,
                version,
                cancel_token,
            } => {
                let Ok(namespace) = Namespace::parse(namespace) else {
                    return;
                };
                if let Some(token) = cancel_token {
                    self.cancel(&namespace, id, token);
                }
                let key = (namespace, id.to_owned());
                if let Some(followed) = lock(&self.followed).get(&key) {
                    if version == 0 {
                        followed.reread.store(true, Ordering::Release);
                    }
                    followed.announced.fetch_max(version, Ordering::AcqRel);
                    followed.wake.notify_one();
                }
            }
            // Claimable work: the wake-ups' (above).
            Notice::Ready { .. } | Notice::Everything { .. } => {}
        }
    }

    /// Passes a cancel to the namespace's Work streams here (the one holding the
    /// lease acts on it).
    fn cancel(&self, namespace: &Namespace, id: &str, token: &str) {
        if let Some(list) = lock(&self.streams).get(namespace) {
            for (_, sender) in list {
                let _ = sender.try_send((id.to_owned(), token.to_owned()));
            }
        }
    }

    /// A Work stream's feed of the cancels announced in its namespace.
    pub(crate) fn cancels(self: &Arc<Self>, namespace: &Namespace) -> CancelFeed {
        self.listen();
        let (sender, cancels) = mpsc::channel(CANCELS_BUFFERED);
        let id = self.next_stream.fetch_add(1, Ordering::Relaxed);
        lock(&self.streams)
            .entry(namespace.clone())
            .or_default()
            .push((id, sender));
        CancelFeed {
            cancels,
            hub: self.clone(),
            namespace: namespace.clone(),
            id,
        }
    }

    /// Opens a watch of job `id`: its place under `--max-watches` and its view of
    /// the job, once the job was read. NOT_FOUND when there is no such job.
    pub(crate) async fn watch(
        self: &Arc<Self>,
        namespace: &Namespace,
        id: &str,
    ) -> Result<Watcher, Error> {
        if self.open.fetch_add(1, Ordering::AcqRel) >= self.max_watches {
            self.open.fetch_sub(1, Ordering::AcqRel);
            return Err(Error::Busy(format!(
                "{} WatchJob streams are open on this server (--max-watches); retry with \
                 backoff, or on another replica",
                self.max_watches
            )));
        }
        self.metrics.watch_streams(1);
        let mut watcher = Watcher {
            seen: self.follow(namespace, id),
            open: self.open.clone(),
            metrics: self.metrics.clone(),
        };
        self.listen();
        let first = watcher
            .seen
            .wait_for(|seen| !matches!(seen, Seen::Unread))
            .await
            .map(|seen| seen.clone());
        match first {
            Ok(Seen::Job(_)) => Ok(watcher),
            Ok(Seen::Failed(error)) => Err(error.into()),
            Ok(Seen::Gone | Seen::Unread) | Err(_) => {
                Err(Error::NotFound(Missing::Job(id.to_owned())))
            }
        }
    }

    /// A receiver of the job's reads, starting its follower when it has none.
    fn follow(self: &Arc<Self>, namespace: &Namespace, id: &str) -> watch::Receiver<Seen> {
        let key = (namespace.clone(), id.to_owned());
        let mut followed = lock(&self.followed);
        if let Some(existing) = followed.get(&key) {
            return existing.latest.subscribe();
        }
        let (latest, seen) = watch::channel(Seen::Unread);
        let entry = Arc::new(Followed {
            latest,
            wake: Notify::new(),
            announced: AtomicU64::new(0),
            reread: AtomicBool::new(false),
        });
        followed.insert(key.clone(), entry.clone());
        tokio::spawn(self.clone().run_follower(key, entry));
        seen
    }

    /// One watched job's follower: reads it when woken, until it has no watchers or
    /// is gone.
    async fn run_follower(self: Arc<Self>, key: Key, followed: Arc<Followed>) {
        let mut version = 0;
        loop {
            // Boxed: the read's future is several KiB, which the task of every watched
            // job would otherwise hold while it waits (10,000 watched jobs: 75 MB).
            let wait = match Box::pin(self.read(&key)).await {
                Ok(Some(job)) => {
                    version = job.version;
                    followed.latest.send_replace(Seen::Job(Arc::new(job)));
                    RENEW_EVERY
                }
                Ok(None) => {
                    followed.latest.send_replace(Seen::Gone);
                    self.unfollow(&key, &followed, true);
                    return;
                }
                Err(error) => {
                    tracing::debug!(namespace = %key.0, job_id = %key.1, %error, "could not read a watched job; retrying");
                    if matches!(*followed.latest.borrow(), Seen::Unread) {
                        followed.latest.send_replace(Seen::Failed(error));
                    }
                    RETRY_AFTER
                }
            };
            if !self.next_wake(&key, &followed, version, wait).await {
                return;
            }
        }
    }

    /// Waits until the job should be read again (true), or has no watchers left or
    /// the service stops (false).
    async fn next_wake(
        &self,
        key: &Key,
        followed: &Followed,
        version: u64,
        wait: Duration,
    ) -> bool {
        // A timer that waits out the renewal period (real time), not a fixed sleep.
        #[allow(clippy::disallowed_methods)]
        let timer = tokio::time::sleep(wait);
        tokio::pin!(timer);
        loop {
            tokio::select! {
                () = followed.wake.notified() => {
                    let reread = followed.reread.swap(false, Ordering::AcqRel);
                    if reread || followed.announced.load(Ordering::Acquire) > version {
                        return true;
                    }
                }
                () = &mut timer => return true,
                () = followed.latest.closed() => {
                    if self.unfollow(key, followed, false) {
                        return false;
                    }
                }
                () = self.shutdown.cancelled() => return false,
            }
        }
    }

    /// Forgets a followed job when it is gone, or when no watcher is left (false when
    /// one joined meanwhile).
    fn unfollow(&self, key: &Key, followed: &Followed, gone: bool) -> bool {
        let mut map = lock(&self.followed);
        if !gone && followed.latest.receiver_count() > 0 {
            return false;
        }
        if map
            .get(key)
            .is_some_and(|entry| std::ptr::eq(Arc::as_ptr(entry), followed))
        {
            map.remove(key);
        }
        true
    }

    /// One read of a watched job, renewing its mark.
    async fn read(&self, (namespace, id): &Key) -> Result<Option<JobRecord>, StoreError> {
        self.metrics.watch_read();
        self.store
            .run(
                namespace,
                &WatchJob {
                    id,
                    watch_ms: WATCH_MS,
                },
            )
            .await
    }
}

#[cfg(test)]
mod tests {
    /// A watched job's follower task holds little while it waits: its read (several
    /// KiB of future) is boxed, so 10,000 watched jobs do not cost 75 MB.
    #[tokio::test]
    async fn a_followers_task_is_small() {
        let cx = crate::testing::offline_context();
        let key = (crate::testing::namespace("ns"), "j".to_owned());
        let (latest, _seen) = tokio::sync::watch::channel(super::Seen::Unread);
        let entry = std::sync::Arc::new(super::Followed {
            latest,
            wake: tokio::sync::Notify::new(),
            announced: std::sync::atomic::AtomicU64::new(0),
            reread: std::sync::atomic::AtomicBool::new(false),
        });
        let follower = cx.hub.clone().run_follower(key, entry);
        assert!(
            std::mem::size_of_val(&follower) <= 1024,
            "{} bytes",
            std::mem::size_of_val(&follower)
        );
    }
}
