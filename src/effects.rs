//! What a script call did that this instance acts on afterwards, and the one step
//! that acts on it. A use case turns its operation's typed outcome into [`Effects`]
//! (jobs created, handed out, completed; leases found expired; the namespace stored
//! something; finished jobs to prune; work made ready) and hands them to
//! [`Context::apply`], which counts them in the metrics, records the namespace in the
//! store's namespace registry and the prune due-set, and tells this instance's
//! waiters. Only after the script succeeded: a refused call writes nothing
//! (invariant 8), so it has no effects.

use crate::{
    context::Context,
    namespaces::{Entry, Work},
};

/// Most drain_graph calls one drain makes (64 steps each: a 1,000-node flow's sweep
/// several times over) before it leaves the rest to the pruner.
const GRAPH_DRAIN_CALLS: usize = 64;

/// What one successful script call did, as far as this instance must act on it.
/// Empty by default: a use case sets what its operation's outcome says.
#[derive(Debug, Default)]
#[must_use = "effects do nothing until Context::apply applies them"]
pub(crate) struct Effects<'a> {
    /// Jobs created, by queue (a duplicate, replaced or extended job is not new).
    pub(crate) created: Vec<&'a str>,
    /// A flow of jobs was stored (EnqueueFlow; its nodes are in `created`).
    pub(crate) flow_created: bool,
    /// Jobs handed out: their queue and how long each waited to be (ms).
    pub(crate) claimed: Vec<(&'a str, i64)>,
    /// Jobs completed, by queue.
    pub(crate) completed: Vec<String>,
    /// A job failed: its queue, and whether it is dead now.
    pub(crate) failed: Option<(String, bool)>,
    /// Leases found expired (their jobs made claimable again), by queue.
    pub(crate) expired: Vec<(&'a str, u64)>,
    /// Flow limits a claim met (issue 32): queue, reason (the metric's label), times.
    pub(crate) throttled: Vec<(&'a str, &'static str, u64)>,
    /// Occurrences handed out, or target slots enqueued as jobs (issue 30).
    pub(crate) occurrences: Vec<HandedOut>,
    /// Runs skipped because an earlier occurrence was still leased (the overlap
    /// policy).
    pub(crate) overlap_skips: u64,
    /// The call stored something in the namespace: it belongs in the store's
    /// namespace registry.
    pub(crate) stored: bool,
    /// The call claimed or finished jobs; true when its script asked for the
    /// namespace to be put in the prune due-set.
    pub(crate) finished: Option<bool>,
    /// Work became claimable: the kind, and the earliest time now known for it.
    pub(crate) ready: Option<(Work, Ready)>,
}

/// An occurrence handed out: how late, and the runs skipped before it, by the
/// catch-up policy and by the schedule's window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct HandedOut {
    pub(crate) late_ms: i64,
    pub(crate) skipped_policy: u64,
    pub(crate) skipped_window: u64,
}

/// When work became claimable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ready {
    /// Now (Redis's now, as this instance knows it).
    Now,
    /// At this time, epoch ms; none: nothing is known to be due.
    At(Option<i64>),
}

impl<'a> Effects<'a> {
    /// Work of `work` became claimable `when`.
    pub(crate) fn ready(work: Work, when: Ready) -> Self {
        Effects {
            ready: Some((work, when)),
            ..Effects::default()
        }
    }

    /// The call claimed or finished jobs (see `finished`).
    pub(crate) fn finished(asked: bool) -> Self {
        Effects {
            finished: Some(asked),
            ..Effects::default()
        }
    }

    pub(crate) fn stored(mut self) -> Self {
        self.stored = true;
        self
    }

    pub(crate) fn and_ready(mut self, work: Work, when: Ready) -> Self {
        self.ready = Some((work, when));
        self
    }
}

impl Context {
    /// Acts on what a successful script call of `entry`'s namespace did.
    pub(crate) async fn apply(&self, entry: &Entry, effects: Effects<'_>) {
        let namespace = entry.name();
        for queue in effects.created {
            self.metrics.job_enqueued(namespace, queue);
        }
        if effects.flow_created {
            self.metrics.flow_enqueued(namespace);
        }
        for (queue, waited_ms) in effects.claimed {
            self.metrics.job_claimed(namespace, queue, waited_ms);
        }
        for queue in &effects.completed {
            self.metrics.job_completed(namespace, queue);
        }
        if let Some((queue, dead)) = &effects.failed {
            self.metrics.job_failed(namespace, queue, *dead);
        }
        for (queue, expired) in effects.expired {
            self.metrics.leases_expired(namespace, queue, expired);
        }
        for (queue, reason, count) in effects.throttled {
            self.metrics.flow_throttled(namespace, queue, reason, count);
        }
        for handed in effects.occurrences {
            self.metrics
                .occurrence(namespace, handed.late_ms, handed.skipped_policy);
            self.metrics
                .skipped(namespace, "window", handed.skipped_window);
        }
        self.metrics
            .skipped(namespace, "overlap", effects.overlap_skips);
        if effects.stored {
            self.register(entry).await;
        }
        if let Some(asked) = effects.finished {
            self.keep_for_pruning(entry, asked).await;
        }
        if let Some((work, when)) = effects.ready {
            let earliest = match when {
                Ready::Now => Some(self.clock.now_ms()),
                Ready::At(at) => at,
            };
            self.wakers.ready(entry, work, earliest);
        }
    }

    /// Puts the namespace in the prune due-set, due now (the pruner's visit schedules
    /// the real time), when the script asked, or when this is the first call that
    /// claimed or finished jobs the namespace's entry serves. The latter adopts stores
    /// written before the due-set existed and makes again a registration lost with a
    /// reply; the visit drops the namespace if nothing is kept. A failure is logged,
    /// not returned: the call succeeded, and the next request of a finished set
    /// (lib/job.lua `finish_entry`) or the namespace's next first use on a replica
    /// makes it again.
    async fn keep_for_pruning(&self, entry: &Entry, asked: bool) {
        let fresh = entry.first_job_call();
        if !(asked || fresh) {
            return;
        }
        let namespace = entry.name();
        if let Err(error) = self.store.prune_soon(namespace, self.clock.now_ms()).await {
            tracing::warn!(%namespace, %error, "could not put finished jobs up for pruning");
        }
        if asked {
            // Graph work a script left queued (issue 34) continues now, with this
            // replica's claims woken for what it readies; the pruner is the backstop.
            let cx = self.clone();
            let entry = self.namespaces.entry(entry.name());
            tokio::spawn(async move { cx.drain_graph(&entry).await });
        }
    }

    /// Takes the namespace's queued graph work (lua/lib/graph.lua "Bounded work") in
    /// at most `GRAPH_DRAIN_CALLS` script calls, waking this replica's claims when a
    /// node became pending; true when work is left (the pruner takes it). A failure
    /// is logged: the work stays queued in Redis.
    pub(crate) async fn drain_graph(&self, entry: &Entry) -> bool {
        use crate::store::ops::drain_graph::DrainGraph;
        for _ in 0..GRAPH_DRAIN_CALLS {
            match self.store.run(entry.name(), &DrainGraph).await {
                Ok(drained) => {
                    if drained.woke {
                        self.wakers
                            .ready(entry, Work::Jobs, Some(self.clock.now_ms()));
                    }
                    if drained.register {
                        let namespace = entry.name();
                        if let Err(error) =
                            self.store.prune_soon(namespace, self.clock.now_ms()).await
                        {
                            tracing::warn!(%namespace, %error, "could not put a finished flow up for pruning");
                        }
                    }
                    if !drained.more {
                        return false;
                    }
                }
                Err(error) => {
                    let namespace = entry.name();
                    tracing::debug!(%namespace, %error, "graph work left to the pruner");
                    return true;
                }
            }
        }
        true
    }
}
