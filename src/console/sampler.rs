//! One sampler per namespace that someone is looking at: it reads the namespace's
//! queues (ListQueues) and overdue schedules (ListSchedules) every few seconds and
//! publishes a snapshot that every open page and live stream of that namespace
//! shares, so ten viewers cost Redis what one does. Rates come from the queues'
//! totals kept in a small in-process ring (a point every 5 minutes for the last
//! hour). A sampler nobody has looked at for a minute stops; at most
//! [`MAX_SAMPLERS`] run, the least recently viewed giving way.

use std::{
    collections::{HashMap, VecDeque},
    sync::{Arc, Mutex},
    time::Duration,
};

use tokio::{sync::watch, time::Instant};
use tokio_util::sync::CancellationToken;

use super::{grpc::rpc, Grpc};
use crate::{auth::Caller, proto};

/// Most namespaces sampled at once.
const MAX_SAMPLERS: usize = 1_000;
/// Most queues of one namespace a sample reads.
pub(crate) const MAX_QUEUES: usize = 5_000;
/// The shortest pause between two samples; a slow read lengthens it (10x its time).
const MIN_INTERVAL: Duration = Duration::from_secs(2);
/// A sampler nobody viewed or streamed for this long stops.
const IDLE: Duration = Duration::from_secs(60);
/// The ring's resolution and span.
const RING_STEP_MS: i64 = 5 * 60_000;
const RING_SPAN_MS: i64 = 60 * 60_000;
/// How late an active schedule must be to count as overdue.
pub(crate) const OVERDUE_AFTER: Duration = Duration::from_secs(30);
/// Most overdue schedules counted (the page says "100+").
pub(crate) const MAX_OVERDUE: u32 = 100;

/// What a sample found.
#[derive(Debug, Default)]
pub(crate) struct Snapshot {
    /// The Redis clock of the read (ms).
    pub(crate) read_ms: i64,
    pub(crate) queues: Vec<QueueRow>,
    /// More queues than [`MAX_QUEUES`]: the rest are not shown.
    pub(crate) truncated: bool,
    /// Active schedules overdue by [`OVERDUE_AFTER`] (at most [`MAX_OVERDUE`]).
    pub(crate) overdue: u32,
    /// How late the most overdue schedule is (ms); 0 when none is.
    pub(crate) lateness_ms: i64,
    /// Why the last read failed (the rows are the read before it), if it did.
    pub(crate) error: Option<String>,
}

#[derive(Debug, Clone)]
pub(crate) struct QueueRow {
    pub(crate) info: proto::QueueInfo,
    /// Per minute, over the ring's span (up to the last hour).
    pub(crate) enqueue_rate: f64,
    pub(crate) complete_rate: f64,
    pub(crate) fail_rate: f64,
}

impl QueueRow {
    pub(crate) fn oldest_pending_ms(&self) -> i64 {
        self.info
            .oldest_pending_age
            .as_ref()
            .map_or(0, |d| d.seconds * 1000 + i64::from(d.nanos / 1_000_000))
    }

    /// Failed attempts per attempt that ended, over the ring's span (0..=1).
    pub(crate) fn failure_ratio(&self) -> f64 {
        let ended = self.complete_rate + self.fail_rate;
        if ended > 0.0 {
            self.fail_rate / ended
        } else {
            0.0
        }
    }
}

type Shared = watch::Sender<Option<Arc<Snapshot>>>;

struct Sampler {
    tx: Shared,
    viewed: Mutex<Instant>,
}

type Map = Arc<Mutex<HashMap<String, Arc<Sampler>>>>;

/// The samplers, by namespace.
pub(crate) struct Samplers {
    grpc: Grpc,
    map: Map,
    cancel: CancellationToken,
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Samplers {
    pub(crate) fn new(grpc: Grpc, cancel: CancellationToken) -> Samplers {
        Samplers {
            grpc,
            map: Map::default(),
            cancel,
        }
    }

    /// The snapshots of `namespace` (its sampler starts if it is not running). The
    /// caller has checked that its viewer may read the namespace.
    pub(crate) fn watch(&self, namespace: &str) -> watch::Receiver<Option<Arc<Snapshot>>> {
        let mut map = lock(&self.map);
        if let Some(sampler) = map.get(namespace) {
            *lock(&sampler.viewed) = Instant::now();
            return sampler.tx.subscribe();
        }
        if map.len() >= MAX_SAMPLERS {
            let stalest = map
                .iter()
                .min_by_key(|(_, s)| *lock(&s.viewed))
                .map(|(ns, _)| ns.clone());
            if let Some(ns) = stalest {
                map.remove(&ns);
            }
        }
        let (tx, rx) = watch::channel(None);
        let sampler = Arc::new(Sampler {
            tx,
            viewed: Mutex::new(Instant::now()),
        });
        map.insert(namespace.to_owned(), sampler.clone());
        let run = Run {
            grpc: self.grpc.clone(),
            map: self.map.clone(),
            namespace: namespace.to_owned(),
            sampler,
        };
        tokio::spawn(run.run(self.cancel.clone()));
        rx
    }

    /// The latest snapshot of `namespace`, waiting (a few seconds at most) for the
    /// first one of a sampler that just started.
    pub(crate) async fn snapshot(&self, namespace: &str) -> Option<Arc<Snapshot>> {
        let mut rx = self.watch(namespace);
        let first =
            tokio::time::timeout(Duration::from_secs(5), rx.wait_for(Option::is_some)).await;
        match first {
            Ok(Ok(snapshot)) => snapshot.clone(),
            _ => None,
        }
    }
}

/// One sampler's task.
struct Run {
    grpc: Grpc,
    map: Map,
    namespace: String,
    sampler: Arc<Sampler>,
}

impl Run {
    async fn run(self, cancel: CancellationToken) {
        let mut ring = Ring::default();
        let mut last: Option<Arc<Snapshot>> = None;
        loop {
            let started = Instant::now();
            let snapshot = Arc::new(self.sample(&mut ring, last.as_deref()).await);
            last = Some(snapshot.clone());
            self.sampler.tx.send_replace(Some(snapshot));
            if self.retired() {
                return;
            }
            let pause = MIN_INTERVAL.max(started.elapsed() * 10);
            tokio::select! {
                _ = cancel.cancelled() => return,
                // The sampling interval: real time between two reads.
                () = pause_for(pause) => {}
            }
        }
    }

    /// Whether this sampler is done: replaced, or idle (no stream, not viewed).
    fn retired(&self) -> bool {
        let mut map = lock(&self.map);
        let current = map
            .get(&self.namespace)
            .is_some_and(|s| Arc::ptr_eq(s, &self.sampler));
        if !current {
            return true;
        }
        let idle =
            self.sampler.tx.receiver_count() == 0 && lock(&self.sampler.viewed).elapsed() > IDLE;
        if idle {
            map.remove(&self.namespace);
        }
        idle
    }

    async fn sample(&self, ring: &mut Ring, last: Option<&Snapshot>) -> Snapshot {
        let queues = self.queues().await;
        let read_ms = queues.as_ref().map_or(0, |(read_ms, _, _)| *read_ms);
        let overdue = self.overdue(read_ms).await;
        match (queues, overdue) {
            (Ok((read_ms, infos, truncated)), Ok((overdue, lateness_ms))) => {
                ring.record(read_ms, &infos);
                let queues = infos
                    .into_iter()
                    .map(|info| ring.row(read_ms, info))
                    .collect();
                Snapshot {
                    read_ms,
                    queues,
                    truncated,
                    overdue,
                    lateness_ms,
                    error: None,
                }
            }
            (Err(status), _) | (_, Err(status)) => Snapshot {
                read_ms: last.map_or(0, |l| l.read_ms),
                queues: last.map(|l| l.queues.clone()).unwrap_or_default(),
                truncated: last.is_some_and(|l| l.truncated),
                overdue: last.map_or(0, |l| l.overdue),
                lateness_ms: last.map_or(0, |l| l.lateness_ms),
                error: Some(format!("{:?}: {}", status.code(), status.message())),
            },
        }
    }

    async fn queues(&self) -> Result<(i64, Vec<proto::QueueInfo>, bool), tonic::Status> {
        let client = &self.grpc;
        let (mut infos, mut token, mut read_ms) = (Vec::new(), String::new(), 0);
        loop {
            let message = proto::ListQueuesRequest {
                namespace: self.namespace.clone(),
                page_size: 1000,
                page_token: token,
            };
            let page = client
                .call(&Caller::Unrestricted, rpc::LIST_QUEUES, message)
                .await?;
            read_ms = super::html::ms_of(page.read_time.as_ref()).unwrap_or(read_ms);
            infos.extend(page.queues);
            token = page.next_page_token;
            if token.is_empty() || infos.len() >= MAX_QUEUES {
                let truncated = !token.is_empty();
                infos.truncate(MAX_QUEUES);
                return Ok((read_ms, infos, truncated));
            }
        }
    }

    /// The overdue schedules, and how late the latest is at `now_ms`.
    async fn overdue(&self, now_ms: i64) -> Result<(u32, i64), tonic::Status> {
        let message = proto::ListSchedulesRequest {
            namespace: self.namespace.clone(),
            page_size: MAX_OVERDUE,
            overdue_by: prost_types::Duration::try_from(OVERDUE_AFTER).ok(),
            ..Default::default()
        };
        let page = self
            .grpc
            .call(&Caller::Unrestricted, rpc::LIST_SCHEDULES, message)
            .await?;
        let count = u32::try_from(page.schedules.len()).unwrap_or(MAX_OVERDUE);
        let lateness = page
            .schedules
            .first()
            .and_then(|s| super::html::ms_of(s.next_run_time.as_ref()))
            .map_or(0, |due| (now_ms - due).max(0));
        Ok((count, lateness))
    }
}

/// Waits out real time: the pause between two samples.
#[allow(clippy::disallowed_methods)]
async fn pause_for(pause: Duration) {
    tokio::time::sleep(pause).await;
}

/// The queues' totals (enqueued, completed, failed) every [`RING_STEP_MS`] over the
/// last [`RING_SPAN_MS`].
#[derive(Default)]
struct Ring {
    points: VecDeque<(i64, HashMap<String, [u64; 3]>)>,
}

fn totals(info: &proto::QueueInfo) -> [u64; 3] {
    [info.enqueued_total, info.completed_total, info.failed_total]
}

impl Ring {
    fn record(&mut self, read_ms: i64, infos: &[proto::QueueInfo]) {
        let due = self
            .points
            .back()
            .is_none_or(|(at, _)| read_ms - at >= RING_STEP_MS);
        if due {
            let point = infos.iter().map(|i| (i.queue.clone(), totals(i))).collect();
            self.points.push_back((read_ms, point));
        }
        while self
            .points
            .front()
            .is_some_and(|(at, _)| read_ms - at > RING_SPAN_MS)
        {
            self.points.pop_front();
        }
    }

    /// The queue's row: its rates per minute from the oldest point that has it.
    fn row(&self, read_ms: i64, info: proto::QueueInfo) -> QueueRow {
        let now = totals(&info);
        let from = self
            .points
            .iter()
            .find_map(|(at, point)| point.get(&info.queue).map(|t| (*at, *t)));
        let rate = |i: usize| match from {
            Some((at, then)) if read_ms - at >= 1000 => {
                // Per minute; totals only grow (a reset reads as 0).
                now[i].saturating_sub(then[i]) as f64 * 60_000.0 / (read_ms - at) as f64
            }
            _ => 0.0,
        };
        QueueRow {
            enqueue_rate: rate(0),
            complete_rate: rate(1),
            fail_rate: rate(2),
            info,
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::proto::QueueInfo;

    fn info(queue: &str, enqueued: u64, completed: u64, failed: u64) -> QueueInfo {
        QueueInfo {
            queue: queue.into(),
            enqueued_total: enqueued,
            completed_total: completed,
            failed_total: failed,
            ..Default::default()
        }
    }

    #[test]
    fn rates_are_per_minute_from_the_oldest_point_of_the_hour() {
        let mut ring = super::Ring::default();
        ring.record(0, &[info("a", 100, 50, 5)]);
        // Points are kept every 5 minutes only: this read adds none.
        ring.record(60_000, &[info("a", 160, 80, 5)]);
        let row = ring.row(120_000, info("a", 220, 110, 9));
        assert!((row.enqueue_rate - 60.0).abs() < 1e-9, "{row:?}");
        assert!((row.complete_rate - 30.0).abs() < 1e-9, "{row:?}");
        assert!((row.fail_rate - 2.0).abs() < 1e-9, "{row:?}");
        // A queue new since the oldest point has no rate yet.
        assert_eq!(ring.row(120_000, info("b", 10, 0, 0)).enqueue_rate, 0.0);
        // After an hour the first point is gone.
        ring.record(5 * 60_000, &[info("a", 400, 200, 9)]);
        ring.record(66 * 60_000, &[info("a", 1_000, 500, 9)]);
        assert_eq!(
            ring.points.len(),
            1,
            "only the point within the hour is kept"
        );
    }
}
