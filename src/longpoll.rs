//! Long-polls: one loop serves both claim RPCs, and one timer per namespace (per
//! kind of work) wakes their waiters — never one Redis poll per waiter.
//!
//! Waiters park on a `Notify`. A namespace's timer task sleeps until the earliest
//! known due time, then asks Redis once how much is claimable and wakes that many
//! waiters — no more. A waiter that claims something while more is claimable passes
//! the baton to one more waiter. Writes and claims on this instance report the
//! earliest due time they saw, which re-arms the timer without a Redis call; writes
//! through other replicas arrive as announcements (`crate::announce`) that do the
//! same. So an idle namespace costs no Redis work while it waits, however many
//! workers wait on it; the only periodic work is the replica's safety net
//! ([`Wakers::run_recheck`]): [`RECHECK_BATCH`] waiting timers per
//! `--recheck-interval`, in turn, whatever the number of namespaces.
//!
//! Schedules and jobs of a namespace have a timer each (they peek different indexes).
//! Job waiters are grouped by the set of queues they claim from: the job timer peeks
//! the queues waiters are interested in, [`MAX_PEEK_QUEUES`] per script call, and
//! wakes in each group as many waiters as jobs are claimable in that group's queues.
//! A tick peeks at most [`MAX_PEEK_CALLS`] batches; with more queues waited on than
//! that covers, ticks take turns round the queues (a cursor), so every waiter's queue
//! is peeked within a bounded number of ticks however many other queues have waiters.
//! Timers live in the namespace's entry of the namespace table and stop when it is evicted.

use std::{
    collections::{BTreeSet, HashMap},
    future::Future,
    sync::{
        atomic::{AtomicUsize, Ordering},
        Arc, Mutex,
    },
    time::Duration,
};

use tokio::{sync::Notify, time::Instant};
use tokio_util::sync::CancellationToken;

use crate::{
    announce::{self, Announcer},
    clock::Clock,
    domain::Namespace,
    namespaces::{Entry, Group, Namespaces, Timer, Work},
    store::{
        ops::{peek_due::PeekDue, peek_jobs::PeekJobs},
        Notice, Store,
    },
    sync::lock,
};

/// Most distinct queues one job peek script covers (bounds the script's work).
const MAX_PEEK_QUEUES: usize = 256;
/// Most job peek calls one timer tick makes (bounds a tick's work); queues beyond
/// them are peeked by the next ticks, in turn.
const MAX_PEEK_CALLS: usize = 4;
/// Attempts in a row that find claimable work but claim none (all heads stale)
/// before a long-poll parks instead of trying again at once.
const MAX_EMPTY_RETRIES: usize = 8;
/// Waiting timers the safety net re-reads per `--recheck-interval` (in turn).
pub(crate) const RECHECK_BATCH: usize = 8;

/// Starts timers and hands out waiters.
pub(crate) struct Wakers {
    store: Arc<Store>,
    clock: Arc<Clock>,
    recheck: Duration,
    namespaces: Arc<Namespaces>,
    announcer: Arc<Announcer>,
    /// The last timer the safety net re-read: the next interval starts after it.
    recheck_cursor: Mutex<Option<(Namespace, Work)>>,
}

/// A handle to park on: one timer and one group of it. It holds the namespace's
/// entry in the namespace table, so a namespace with a waiter is never evicted.
pub(crate) struct Waiter {
    _entry: Arc<Entry>,
    timer: Arc<Timer>,
    group: Arc<Group>,
}

/// Why a wait ended.
#[derive(Debug, PartialEq, Eq)]
enum Woken {
    Notified,
    Deadline,
    Shutdown,
}

impl Wakers {
    pub(crate) fn new(
        store: Arc<Store>,
        clock: Arc<Clock>,
        recheck: Duration,
        namespaces: Arc<Namespaces>,
    ) -> Arc<Self> {
        Arc::new(Self {
            announcer: Announcer::new(store.clone()),
            store,
            clock,
            recheck,
            namespaces,
            recheck_cursor: Mutex::new(None),
        })
    }

    /// Sends this replica's announcements until `stop`.
    pub(crate) async fn run_announcer(self: Arc<Self>, stop: CancellationToken) {
        self.announcer.clone().run(stop).await;
    }

    /// The namespace's timer for `work`, started on first use.
    fn timer(self: &Arc<Self>, entry: &Arc<Entry>, work: Work) -> Arc<Timer> {
        let slot = match work {
            Work::Schedules => &entry.schedule_timer,
            Work::Jobs => &entry.job_timer,
        };
        slot.get_or_init(|| {
            let timer = Arc::new(Timer::new(work));
            tokio::spawn(self.clone().run_timer(
                entry.name().clone(),
                timer.clone(),
                entry.retired().clone(),
            ));
            timer
        })
        .clone()
    }

    /// A waiter for the namespace's due schedules.
    pub(crate) fn schedule_waiter(self: &Arc<Self>, entry: &Arc<Entry>) -> Waiter {
        self.waiter(entry, Work::Schedules, Vec::new())
    }

    /// A waiter for jobs of `queues` (sorted, without duplicates) in the namespace.
    pub(crate) fn job_waiter(self: &Arc<Self>, entry: &Arc<Entry>, queues: &[String]) -> Waiter {
        self.waiter(entry, Work::Jobs, queues.to_vec())
    }

    fn waiter(self: &Arc<Self>, entry: &Arc<Entry>, work: Work, queues: Vec<String>) -> Waiter {
        let timer = self.timer(entry, work);
        let group = lock(&timer.groups)
            .entry(queues.clone())
            .or_insert_with(|| {
                Arc::new(Group {
                    queues,
                    waiting: AtomicUsize::new(0),
                    wake: Notify::new(),
                })
            })
            .clone();
        Waiter {
            _entry: entry.clone(),
            timer,
            group,
        }
    }

    /// Reports work of a namespace this instance wrote that is claimable at
    /// `earliest_ms` (an upsert's next run, an enqueued job, a claim's earliest): to
    /// this instance's waiters, and announced to the other replicas'.
    pub(crate) fn ready(&self, entry: &Entry, work: Work, earliest_ms: Option<i64>) {
        self.observe(entry, work, earliest_ms);
        if let Some(earliest) = earliest_ms {
            self.announcer.announce(entry.name(), work, earliest);
        }
    }

    /// What the replica's subscription heard: another replica's announcement
    /// re-arms the namespace's timer when this instance has one; a (re)subscription,
    /// or a replica that dropped announcements, wakes every waiting timer to read
    /// Redis once.
    pub(crate) fn hear(&self, notice: &Notice<'_>) {
        match *notice {
            Notice::Ready {
                from,
                namespace,
                work,
                earliest_ms,
            } if from != self.announcer.replica() => {
                let Ok(namespace) = Namespace::parse(namespace) else {
                    return;
                };
                if let Some(entry) = self.namespaces.get(&namespace) {
                    self.observe(&entry, announce::work(work), Some(earliest_ms));
                }
            }
            Notice::Subscribed => self.reread(usize::MAX),
            Notice::Everything { from } if from != self.announcer.replica() => {
                self.reread(usize::MAX)
            }
            _ => {}
        }
    }

    /// The safety net: every `--recheck-interval`, [`RECHECK_BATCH`] waiting timers
    /// read Redis, in turn. It catches an announcement that was never sent; it is
    /// not how waiters usually learn of work.
    pub(crate) async fn run_recheck(self: Arc<Self>, stop: CancellationToken) {
        loop {
            // The safety net's interval: real time between two rounds.
            #[allow(clippy::disallowed_methods)]
            let round = tokio::time::sleep(self.recheck);
            tokio::select! {
                () = round => {}
                () = stop.cancelled() => return,
            }
            self.reread(RECHECK_BATCH);
        }
    }

    /// Makes at most `most` waiting timers, after the cursor and wrapping round, read
    /// Redis now.
    fn reread(&self, most: usize) {
        let mut waiting: Vec<((Namespace, Work), Arc<Timer>)> = Vec::new();
        for entry in self.namespaces.all() {
            for (work, slot) in [
                (Work::Schedules, &entry.schedule_timer),
                (Work::Jobs, &entry.job_timer),
            ] {
                if let Some(timer) = slot.get() {
                    if timer.waiting.load(Ordering::Acquire) > 0 {
                        waiting.push(((entry.name().clone(), work), timer.clone()));
                    }
                }
            }
        }
        waiting.sort_by(|a, b| a.0.cmp(&b.0));
        let mut cursor = lock(&self.recheck_cursor);
        let start = cursor
            .as_ref()
            .map_or(0, |c| waiting.partition_point(|(key, _)| key <= c));
        let now = self.clock.now_ms();
        let count = most.min(waiting.len());
        for i in 0..count {
            let (key, timer) = &waiting[(start + i) % waiting.len()];
            timer.observe(now);
            if i + 1 == count {
                *cursor = Some(key.clone());
            }
        }
    }

    /// Re-arms the namespace's timer for work claimable at `earliest_ms`.
    fn observe(&self, entry: &Entry, work: Work, earliest_ms: Option<i64>) {
        let Some(earliest) = earliest_ms else { return };
        let slot = match work {
            Work::Schedules => &entry.schedule_timer,
            Work::Jobs => &entry.job_timer,
        };
        if let Some(timer) = slot.get() {
            timer.observe(earliest);
        }
    }

    /// Asks Redis what is claimable and wakes that many waiters; returns the earliest
    /// future due time, if known.
    async fn peek_and_wake(&self, namespace: &Namespace, timer: &Timer) -> Option<i64> {
        let groups: Vec<Arc<Group>> = {
            let mut groups = lock(&timer.groups);
            // Forget groups nobody waits on or holds any more. A held group whose
            // waiters are all between a claim and parking is still woken (see `wake`).
            groups.retain(|_, g| g.waiting.load(Ordering::Acquire) > 0 || Arc::strong_count(g) > 1);
            groups.values().cloned().collect()
        };
        let result = match timer.work {
            Work::Schedules => self.store.run(namespace, &PeekDue).await.map(|peek| {
                for group in &groups {
                    wake(group, peek.due);
                }
                (peek.now_ms, peek.earliest_ms)
            }),
            Work::Jobs => self.peek_jobs(namespace, timer, &groups).await,
        };
        match result {
            // Entries due now were handed to waiters; what they claim reports the rest.
            Ok((now_ms, earliest)) => earliest.filter(|&e| e > now_ms),
            // Tried again after the re-check interval (Redis being away is the
            // health check's to report).
            Err(error) => {
                tracing::debug!(%namespace, %error, "wake timer could not peek");
                Some(
                    self.clock.now_ms()
                        + i64::try_from(self.recheck.as_millis()).unwrap_or(i64::MAX / 2),
                )
            }
        }
    }

    async fn peek_jobs(
        &self,
        namespace: &str,
        timer: &Timer,
        groups: &[Arc<Group>],
    ) -> Result<(i64, Option<i64>), crate::store::StoreError> {
        let waited_on: BTreeSet<&String> = groups.iter().flat_map(|g| g.queues.iter()).collect();
        let queues = {
            let mut cursor = lock(&timer.cursor);
            let (queues, next) = this_turn(&waited_on, cursor.as_deref());
            *cursor = next;
            queues
        };
        let mut claimable: HashMap<&String, u64> = HashMap::with_capacity(queues.len());
        let (mut now_ms, mut earliest_ms) = (0, None::<i64>);
        for batch in queues.chunks(MAX_PEEK_QUEUES) {
            let peek = self
                .store
                .run(namespace, &PeekJobs { queues: batch })
                .await?;
            claimable.extend(batch.iter().zip(peek.claimable.iter().copied()));
            now_ms = now_ms.max(peek.now_ms);
            earliest_ms = match (earliest_ms, peek.earliest_ms) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
        }
        for group in groups {
            let n = group
                .queues
                .iter()
                .map(|q| claimable.get(q).copied().unwrap_or(0))
                .sum();
            wake(group, n);
        }
        Ok((now_ms, earliest_ms))
    }

    async fn run_timer(
        self: Arc<Self>,
        namespace: Namespace,
        timer: Arc<Timer>,
        stop: CancellationToken,
    ) {
        loop {
            if timer.waiting.load(Ordering::Acquire) == 0 {
                tokio::select! {
                    _ = timer.poke.notified() => {}
                    _ = stop.cancelled() => return,
                }
                if timer.waiting.load(Ordering::Acquire) == 0 {
                    continue;
                }
            }
            timer
                .relearn_earliest(self.peek_and_wake(&namespace, &timer))
                .await;
            if !self.sleep_until_due(&timer, &stop).await {
                return;
            }
        }
    }

    /// Sleeps until the earliest known due time (none known: until poked),
    /// re-arming on pokes; false when the timer must stop.
    async fn sleep_until_due(&self, timer: &Timer, stop: &CancellationToken) -> bool {
        loop {
            let due = match timer.earliest_ms.load(Ordering::Acquire) {
                i64::MAX => None,
                due_ms => {
                    // +1 ms so we do not arrive a hair before Redis's clock says due.
                    let in_ms = (due_ms - self.clock.now_ms() + 1).max(0);
                    Some(Instant::now() + Duration::from_millis(in_ms as u64))
                }
            };
            let sleep = async {
                match due {
                    Some(at) => tokio::time::sleep_until(at).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                _ = sleep => return true,
                _ = timer.poke.notified() => {
                    if timer.waiting.load(Ordering::Acquire) == 0 { return true; }
                }
                _ = stop.cancelled() => return false,
            }
        }
    }
}

/// The queues one job tick peeks: all of them when they fit in its calls, else the
/// next ones after `cursor`, wrapping round; and the cursor for the next tick (`None`
/// when this one covered them all).
fn this_turn(waited_on: &BTreeSet<&String>, cursor: Option<&str>) -> (Vec<String>, Option<String>) {
    let most = MAX_PEEK_QUEUES * MAX_PEEK_CALLS;
    if waited_on.len() <= most {
        return (waited_on.iter().map(|q| (*q).clone()).collect(), None);
    }
    // `most` is under the set's size, so wrapping round never reaches the cursor again.
    let queues: Vec<String> = waited_on
        .iter()
        .filter(|q| cursor.is_none_or(|c| q.as_str() > c))
        .chain(waited_on.iter())
        .take(most)
        .map(|q| (*q).clone())
        .collect();
    let next = queues.last().cloned();
    (queues, next)
}

/// Wakes up to `due` of a group's waiters, and at least one when anything is due.
///
/// A waiter whose claim found nothing counts itself in only when it parks; work that
/// lands in between is peeked while it is not counted. Waking one anyway leaves a
/// permit on the group's `Notify` (it keeps one at most), which that waiter takes as
/// it parks and claims again at once, instead of sleeping to the re-check (a lost
/// wake-up). The cost is at most one spare claim per tick.
fn wake(group: &Group, due: u64) {
    if due == 0 {
        return;
    }
    let waiting = group.waiting.load(Ordering::Acquire) as u64;
    for _ in 0..due.min(waiting).max(1) {
        group.wake.notify_one();
    }
}

impl Waiter {
    /// Parks until woken, the deadline, or shutdown.
    async fn wait(&self, deadline: Instant, shutdown: &CancellationToken) -> Woken {
        self.group.waiting.fetch_add(1, Ordering::AcqRel);
        if self.timer.waiting.fetch_add(1, Ordering::AcqRel) == 0 {
            self.timer.poke.notify_one();
        }
        // Counted out on drop too: a call whose client went away is dropped mid-wait,
        // and a leaked count would keep the timer polling Redis for it forever.
        let _waiting = (Waiting(&self.timer.waiting), Waiting(&self.group.waiting));
        tokio::select! {
            _ = self.group.wake.notified() => Woken::Notified,
            _ = tokio::time::sleep_until(deadline) => Woken::Deadline,
            _ = shutdown.cancelled() => Woken::Shutdown,
        }
    }

    /// Parks until woken (true) or shutdown (false), with no deadline: a Work stream
    /// waits for as long as it is open.
    pub(crate) async fn park(&self, shutdown: &CancellationToken) -> bool {
        // A deadline far beyond any stream's life (tokio's own "far future").
        let never = Instant::now() + Duration::from_secs(86_400 * 365 * 30);
        self.wait(never, shutdown).await == Woken::Notified
    }

    /// More is claimable than was handed out: wake one more waiter of this group.
    fn pass_baton(&self) {
        if self.group.waiting.load(Ordering::Acquire) > 0 {
            self.group.wake.notify_one();
        }
    }
}

/// One parked waiter; leaving the count on drop, however the wait ends.
struct Waiting<'a>(&'a AtomicUsize);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// What one claim attempt found.
pub(crate) struct Attempt<T> {
    pub(crate) found: Option<T>,
    /// More was claimable when the attempt ran (even if it claimed nothing: every
    /// head it met was stale).
    pub(crate) more: bool,
}

/// The long-poll loop of both claim RPCs: attempts a claim; returns what it found;
/// otherwise parks on `waiter` (none: do not wait) until woken, then tries again, up
/// to `deadline` or shutdown, when it answers `None`.
pub(crate) async fn long_poll<T, E, F, Fut>(
    waiter: Option<Waiter>,
    deadline: Instant,
    shutdown: &CancellationToken,
    mut attempt: F,
) -> Result<Option<T>, E>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<Attempt<T>, E>>,
{
    let mut empty_retries = 0;
    loop {
        // Boxed: the Redis call's future is several KB, and a long-poll that held its
        // space inline would keep it for the whole wait (10k waiters: ~80 MB).
        let Attempt { found, more } = Box::pin(attempt()).await?;
        if let Some(found) = found {
            if more {
                if let Some(waiter) = &waiter {
                    waiter.pass_baton();
                }
            }
            return Ok(Some(found));
        }
        let Some(waiter) = &waiter else {
            return Ok(None);
        };
        if Instant::now() >= deadline || shutdown.is_cancelled() {
            return Ok(None);
        }
        if more && empty_retries < MAX_EMPTY_RETRIES {
            empty_retries += 1;
            continue;
        }
        empty_retries = 0;
        match waiter.wait(deadline, shutdown).await {
            Woken::Notified => continue,
            Woken::Deadline | Woken::Shutdown => return Ok(None),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::{
        collections::BTreeSet,
        sync::atomic::{AtomicUsize, Ordering},
    };

    use futures::FutureExt;
    use tokio::sync::Notify;

    use super::{this_turn, wake, Group, Timer, Work, MAX_PEEK_CALLS, MAX_PEEK_QUEUES};

    /// Pins the lost wake-up fix: a due time observed while a tick's peek is in flight
    /// (an enqueue the peek did not see) survives the peek's later answer, and the
    /// timer is poked to re-arm for it.
    #[tokio::test]
    async fn a_due_time_observed_during_the_peek_survives_its_answer() {
        let timer = Timer::new(Work::Jobs);
        timer.observe(5_000);
        timer.poke.notified().await; // the poke of that first observation
        timer
            .relearn_earliest(async {
                // Redis answered "earliest at 10 s"; then, before the answer is
                // stored, an enqueue through this instance reports a job due at 1 s.
                timer.observe(1_000);
                Some(10_000)
            })
            .await;
        assert_eq!(timer.earliest_ms.load(Ordering::Acquire), 1_000);
        // The poke is pending, so the sleeping timer re-reads the earliest due time.
        assert!(
            timer.poke.notified().now_or_never().is_some(),
            "the observation poked the timer"
        );
    }

    /// Pins the other half: what the timer knew before the peek (work since claimed)
    /// does not outlive the peek; its answer replaces it, and "nothing due" is
    /// nothing due.
    #[tokio::test]
    async fn the_peeks_answer_replaces_what_was_known_before_it() {
        let timer = Timer::new(Work::Schedules);
        timer.observe(5_000);
        timer.relearn_earliest(async { Some(10_000) }).await;
        assert_eq!(timer.earliest_ms.load(Ordering::Acquire), 10_000);
        timer.relearn_earliest(async { None }).await;
        assert_eq!(timer.earliest_ms.load(Ordering::Acquire), i64::MAX);
    }

    /// Pins the other lost wake-up: work peeked while the group's only waiter is
    /// between its empty claim and parking (not counted in) still leaves it a wake-up
    /// to take as it parks; nothing due leaves none.
    #[test]
    fn work_peeked_before_its_waiter_parks_still_wakes_it() {
        let group = Group {
            queues: vec!["q".into()],
            waiting: AtomicUsize::new(0),
            wake: Notify::new(),
        };
        wake(&group, 0);
        assert!(
            group.wake.notified().now_or_never().is_none(),
            "nothing due: no wake-up"
        );
        wake(&group, 3);
        assert!(
            group.wake.notified().now_or_never().is_some(),
            "the waiter parking after the peek is woken at once"
        );
    }

    #[test]
    fn ticks_take_turns_round_more_queues_than_one_tick_peeks() {
        let most = MAX_PEEK_QUEUES * MAX_PEEK_CALLS;
        let names: Vec<String> = (0..most * 2 + 7).map(|i| format!("q{i:05}")).collect();
        let waited_on: BTreeSet<&String> = names.iter().collect();
        let mut cursor = None;
        let mut seen = BTreeSet::new();
        for _ in 0..3 {
            let (queues, next) = this_turn(&waited_on, cursor.as_deref());
            assert_eq!(queues.len(), most, "a tick peeks a bounded number");
            let distinct: BTreeSet<&String> = queues.iter().collect();
            assert_eq!(distinct.len(), most, "no queue twice in a tick");
            seen.extend(queues);
            cursor = next;
        }
        assert_eq!(seen.len(), names.len(), "three ticks cover every queue");

        let few: Vec<String> = (0..10).map(|i| format!("q{i}")).collect();
        let (queues, next) = this_turn(&few.iter().collect(), Some("q5"));
        assert_eq!(
            (queues.len(), next),
            (10, None),
            "what fits is peeked whole"
        );
    }
}
