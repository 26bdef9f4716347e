//! Prometheus metrics (`--metrics-listen`): one registry per service, the families
//! whose names and labels are the contract (docs/operations.md, Observability), and the bound on
//! their cardinality.
//!
//! Counters and histograms are updated where the outcome is learnt: RPCs in the
//! tower layer (`crate::layers::metrics`), jobs in `crate::jobs`, schedule
//! claims in `crate::schedules`, Redis script calls in `crate::store`. Gauges of what
//! is stored are read from Redis when scraped (`scrape`), at most once per
//! `SCRAPE_CACHE`. No id is ever a label; namespace and queue labels are bounded by
//! `--metrics-max-series` (`bound`): the rest fold into `_other`.

mod bound;
mod http;
mod process;
mod scrape;

use std::{
    sync::{
        atomic::{AtomicI64, AtomicU64},
        Arc,
    },
    time::Duration,
};

use prometheus_client::{
    encoding::EncodeLabelSet,
    metrics::{
        counter::Counter,
        family::{Family, MetricConstructor},
        gauge::Gauge,
        histogram::Histogram,
        info::Info,
    },
    registry::Registry,
};

pub(crate) use bound::OTHER;
pub(crate) use http::{bind, serve};
pub(crate) use scrape::Sources;

use bound::Bound;

/// Labels of the RPC families (go-grpc-prometheus's names), from the RPC table's
/// line, so labelling a call allocates nothing.
#[derive(Debug, Clone, Copy, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct RpcLabels {
    pub(crate) grpc_service: &'static str,
    pub(crate) grpc_method: &'static str,
}

#[derive(Debug, Clone, Copy, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct HandledLabels {
    pub(crate) grpc_service: &'static str,
    pub(crate) grpc_method: &'static str,
    pub(crate) grpc_code: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct NamespaceLabels {
    pub(crate) namespace: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct QueueLabels {
    pub(crate) namespace: String,
    pub(crate) queue: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct FailedLabels {
    pub(crate) namespace: String,
    pub(crate) queue: String,
    /// `retry` or `dead`.
    pub(crate) outcome: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct QueueStateLabels {
    pub(crate) namespace: String,
    pub(crate) queue: String,
    /// `pending`, `delayed`, `active` or `dead`.
    pub(crate) state: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct FlowReasonLabels {
    pub(crate) namespace: String,
    pub(crate) queue: String,
    /// `concurrency`, `rate`, `throttled`, `queue_running` or `queue_rate`.
    pub(crate) reason: &'static str,
}

/// One flow key of a queue (issue 32): only the top keys of a queue with a policy
/// (`scrape::TOP_FLOW_KEYS`), so a queue adds at most that many series.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct FlowKeyLabels {
    pub(crate) namespace: String,
    pub(crate) queue: String,
    pub(crate) key: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct SkipLabels {
    pub(crate) namespace: String,
    /// `catchup` (runs a late claim stepped over), `window`, `overlap`.
    pub(crate) reason: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct StatusLabels {
    pub(crate) namespace: String,
    pub(crate) status: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct KindLabels {
    /// `jobs` (ClaimJob) or `schedules` (ClaimDueSchedule).
    pub(crate) kind: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct VersionLabels {
    version: &'static str,
}

/// Buckets of a histogram family, made for each new label set.
#[derive(Clone, Copy)]
pub(crate) struct Buckets(&'static [f64]);

impl MetricConstructor<Histogram> for Buckets {
    fn new_metric(&self) -> Histogram {
        Histogram::new(self.0.iter().copied())
    }
}

/// RPC handling time: 0.5 ms to 10 s (go-grpc-prometheus's defaults, finer below 5 ms,
/// where dueq's calls are).
const RPC_BUCKETS: &[f64] = &[
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];
/// Waits and lateness: 10 ms to a day.
const WAIT_BUCKETS: &[f64] = &[
    0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0, 3600.0, 21600.0, 86400.0,
];
/// One Redis script call: 0.1 ms to 1 s.
const REDIS_BUCKETS: &[f64] = &[
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0,
];

/// gRPC's status codes as its Go code spells them (go-grpc-prometheus's `grpc_code`
/// values), by number.
pub(crate) const GRPC_CODES: [&str; 17] = [
    "OK",
    "Canceled",
    "Unknown",
    "InvalidArgument",
    "DeadlineExceeded",
    "NotFound",
    "AlreadyExists",
    "PermissionDenied",
    "ResourceExhausted",
    "FailedPrecondition",
    "Aborted",
    "OutOfRange",
    "Unimplemented",
    "Internal",
    "Unavailable",
    "DataLoss",
    "Unauthenticated",
];

/// Registers `metric` under `name`. The client library ends every HELP text with a
/// period of its own, so one at the end of `help` is dropped (else `..`).
fn register(
    r: &mut Registry,
    name: &str,
    help: &str,
    metric: impl prometheus_client::registry::Metric,
) {
    r.register(name, help.strip_suffix('.').unwrap_or(help), metric);
}

type Counters<L> = Family<L, Counter>;
type Histograms<L> = Family<L, Histogram, Buckets>;

/// The service's metrics. Shared (`Arc`) by the layer, the use cases, the store and
/// the HTTP endpoint.
pub(crate) struct Metrics {
    registry: Registry,
    bound: Bound,
    /// `--overdue-after`.
    overdue_after: Duration,
    scrape: scrape::Cache,

    pub(crate) rpc_started: Counters<RpcLabels>,
    pub(crate) rpc_handled: Counters<HandledLabels>,
    pub(crate) rpc_seconds: Histograms<RpcLabels>,

    jobs_enqueued: Counters<QueueLabels>,
    flows_enqueued: Counters<NamespaceLabels>,
    jobs_claimed: Counters<QueueLabels>,
    jobs_completed: Counters<QueueLabels>,
    jobs_failed: Counters<FailedLabels>,
    jobs_lease_expired: Counters<QueueLabels>,
    job_wait: Histograms<QueueLabels>,
    flow_throttled: Counters<FlowReasonLabels>,

    queue_jobs: Family<QueueStateLabels, Gauge>,
    queue_oldest: Family<QueueLabels, Gauge<f64, AtomicU64>>,
    queue_paused: Family<QueueLabels, Gauge>,
    queue_removed: Family<QueueLabels, Gauge>,
    flow_key_running: Family<FlowKeyLabels, Gauge>,
    flow_key_backlog: Family<FlowKeyLabels, Gauge>,

    occurrences: Counters<NamespaceLabels>,
    skipped_runs: Counters<SkipLabels>,
    lateness: Histograms<NamespaceLabels>,
    schedules: Family<StatusLabels, Gauge>,
    schedules_overdue: Family<NamespaceLabels, Gauge>,

    longpoll_waiters: Family<KindLabels, Gauge>,
    work_streams: Gauge,
    watch_streams: Gauge,
    watch_reads: Counter,
    audit_dropped: Counter,
    redis_up: Gauge<i64, AtomicI64>,
    redis_seconds: Histogram,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

fn counters<L: Clone + std::hash::Hash + Eq>() -> Counters<L> {
    Family::default()
}

fn histograms<L: Clone + std::hash::Hash + Eq>(buckets: &'static [f64]) -> Histograms<L> {
    Family::new_with_constructor(Buckets(buckets))
}

impl Metrics {
    /// `max_series`: `--metrics-max-series`; `overdue_after`: `--overdue-after`.
    pub(crate) fn new(max_series: usize, overdue_after: Duration) -> Arc<Self> {
        let metrics = Metrics {
            registry: Registry::default(),
            bound: Bound::new(max_series),
            overdue_after,
            scrape: scrape::Cache::default(),
            rpc_started: counters(),
            rpc_handled: counters(),
            rpc_seconds: histograms(RPC_BUCKETS),
            jobs_enqueued: counters(),
            flows_enqueued: counters(),
            jobs_claimed: counters(),
            jobs_completed: counters(),
            jobs_failed: counters(),
            jobs_lease_expired: counters(),
            job_wait: histograms(WAIT_BUCKETS),
            flow_throttled: counters(),
            queue_jobs: Family::default(),
            queue_oldest: Family::default(),
            queue_paused: Family::default(),
            queue_removed: Family::default(),
            flow_key_running: Family::default(),
            flow_key_backlog: Family::default(),
            occurrences: counters(),
            skipped_runs: counters(),
            lateness: histograms(WAIT_BUCKETS),
            schedules: Family::default(),
            schedules_overdue: Family::default(),
            longpoll_waiters: Family::default(),
            work_streams: Gauge::default(),
            watch_streams: Gauge::default(),
            watch_reads: Counter::default(),
            audit_dropped: Counter::default(),
            redis_up: Gauge::default(),
            redis_seconds: Histogram::new(REDIS_BUCKETS.iter().copied()),
        };
        Arc::new(metrics.registered())
    }

    /// Registers every family under its contract name (a counter's `_total` is added
    /// by the encoder), group by group in the order a scrape lists them.
    fn registered(mut self) -> Self {
        self.register_rpcs();
        self.register_jobs();
        self.register_queues();
        self.register_schedules();
        self.register_instance();
        self.registry.register_collector(Box::new(process::Process));
        // Present from the start, at zero (as go-grpc-prometheus does for its RPCs):
        // a rate() or an alert sees the series before the first event.
        for kind in ["jobs", "schedules"] {
            drop(self.longpoll_waiters.get_or_create(&KindLabels { kind }));
        }
        self
    }

    /// Zero-initialises the RPC families for every RPC the server answers: started,
    /// handled with each status code, and (for calls the histogram times) handling
    /// seconds.
    pub(crate) fn zero_rpcs<'a>(&self, rpcs: impl Iterator<Item = &'a crate::rpc::Rpc>) {
        for rpc in rpcs {
            let labels = RpcLabels {
                grpc_service: rpc.service,
                grpc_method: rpc.method,
            };
            drop(self.rpc_started.get_or_create(&labels));
            if !rpc.kind.is_long() {
                drop(self.rpc_seconds.get_or_create(&labels));
            }
            for grpc_code in GRPC_CODES {
                drop(self.rpc_handled.get_or_create(&HandledLabels {
                    grpc_service: rpc.service,
                    grpc_method: rpc.method,
                    grpc_code,
                }));
            }
        }
    }

    /// The RPC families: calls started and handled, and how long they took.
    fn register_rpcs(&mut self) {
        let r = &mut self.registry;
        register(
            r,
            "grpc_server_started",
            "RPCs started on the server.",
            self.rpc_started.clone(),
        );
        register(
            r,
            "grpc_server_handled",
            "RPCs completed on the server, whatever their status code.",
            self.rpc_handled.clone(),
        );
        register(
            r,
            "grpc_server_handling_seconds",
            "Time from an RPC's arrival to its status, in seconds; long-polls (ClaimJob, \
             ClaimDueSchedule) and streams (Migrate, health Watch, reflection) are left \
             out.",
            self.rpc_seconds.clone(),
        );
    }

    /// The job families: what became of jobs, and how long they waited for a claim.
    fn register_jobs(&mut self) {
        let r = &mut self.registry;
        register(
            r,
            "dueq_jobs_enqueued",
            "Jobs created by Enqueue, EnqueueBatch and EnqueueFlow (duplicates not counted).",
            self.jobs_enqueued.clone(),
        );
        register(
            r,
            "dueq_flows_enqueued",
            "Flows of jobs stored by EnqueueFlow (a flow id already stored not counted); \
             their nodes count in dueq_jobs_enqueued.",
            self.flows_enqueued.clone(),
        );
        register(
            r,
            "dueq_jobs_claimed",
            "Jobs leased to a worker by ClaimJob.",
            self.jobs_claimed.clone(),
        );
        register(
            r,
            "dueq_jobs_completed",
            "Jobs acked by their worker (AckJob).",
            self.jobs_completed.clone(),
        );
        register(
            r,
            "dueq_jobs_failed",
            "Failed attempts (FailJob), by what became of the job: retry or dead.",
            self.jobs_failed.clone(),
        );
        register(
            r,
            "dueq_jobs_lease_expired",
            "Job leases that expired unacked, found by a claim (the job is pending again, \
             or dead when out of attempts).",
            self.jobs_lease_expired.clone(),
        );
        register(
            r,
            "dueq_job_wait_seconds",
            "Time from when a job became claimable to its claim, in seconds.",
            self.job_wait.clone(),
        );
        register(
            r,
            "dueq_flow_throttled",
            "Times a claim passed over work held back by a flow limit (docs/flow.md), by \
             reason: concurrency, rate or throttled (a key's lane parked), queue_running \
             or queue_rate (the queue's own limit met).",
            self.flow_throttled.clone(),
        );
    }

    /// The queue families, read from Redis when scraped.
    fn register_queues(&mut self) {
        let r = &mut self.registry;
        register(
            r,
            "dueq_queue_jobs",
            "Jobs stored in a queue, by state (read from Redis when scraped).",
            self.queue_jobs.clone(),
        );
        register(
            r,
            "dueq_queue_oldest_pending_age_seconds",
            "Age of a queue's oldest pending job, in seconds (0 when none is pending).",
            self.queue_oldest.clone(),
        );
        register(
            r,
            "dueq_queue_paused",
            "1 when the queue is paused (claims skip it).",
            self.queue_paused.clone(),
        );
        register(
            r,
            "dueq_queue_jobs_removed",
            "Finished jobs of a queue removed so far, by their own retention rule or the \
             server's (read from Redis when scraped; ListQueues `removed`).",
            self.queue_removed.clone(),
        );
        register(
            r,
            "dueq_flow_key_running",
            "Jobs of a concurrency key leased now, for the 10 keys of a queue with a flow \
             policy that have the most (read from Redis when scraped; ListFlowKeys).",
            self.flow_key_running.clone(),
        );
        register(
            r,
            "dueq_flow_key_backlog",
            "Ready jobs carrying a flow key, for the 10 keys of a queue with a flow policy \
             that have the most (read from Redis when scraped; ListFlowKeys).",
            self.flow_key_backlog.clone(),
        );
    }

    /// The schedule families: occurrences handed out, runs skipped, lateness, and the
    /// stored schedules (read from Redis when scraped).
    fn register_schedules(&mut self) {
        let r = &mut self.registry;
        register(
            r,
            "dueq_schedule_occurrences",
            "Schedule occurrences handed out by ClaimDueSchedule.",
            self.occurrences.clone(),
        );
        register(r,
            "dueq_schedule_skipped_runs",
            "Schedule runs skipped, by reason (catchup: runs a late claim stepped over; window: older than catchup_window; overlap: held back while an earlier occurrence was outstanding).",
            self.skipped_runs.clone(),
        );
        register(
            r,
            "dueq_schedule_lateness_seconds",
            "Claim time minus due time of each occurrence handed out, in seconds.",
            self.lateness.clone(),
        );
        register(
            r,
            "dueq_schedules",
            "Schedules stored, by status: active, or inactive (paused or completed).",
            self.schedules.clone(),
        );
        register(
            r,
            "dueq_schedules_overdue",
            "Active schedules due more than --overdue-after ago and not yet claimed.",
            self.schedules_overdue.clone(),
        );
    }

    /// This instance's own families: its long-poll waiters, its view of Redis, its
    /// version.
    fn register_instance(&mut self) {
        let r = &mut self.registry;
        register(
            r,
            "dueq_longpoll_waiters",
            "Claims waiting for work on this instance, by kind (jobs, schedules).",
            self.longpoll_waiters.clone(),
        );
        register(
            r,
            "dueq_work_streams",
            "Work streams open on this instance (each also counts as a jobs long-poll in \
             dueq_longpoll_waiters while it is open).",
            self.work_streams.clone(),
        );
        register(
            r,
            "dueq_watch_streams",
            "WatchJob streams open on this instance (capped by --max-watches).",
            self.watch_streams.clone(),
        );
        register(
            r,
            "dueq_watch_reads",
            "Reads of watched jobs by this instance: one per announced change, \
             (re)subscription or renewal of a watched job, however many streams watch it.",
            self.watch_reads.clone(),
        );
        register(
            r,
            "dueq_audit_dropped",
            "Audit records this instance could not append to Redis (logged; the audited \
             calls were answered all the same).",
            self.audit_dropped.clone(),
        );
        register(
            r,
            "dueq_redis_up",
            "1 when this instance's last Redis health probe succeeded.",
            self.redis_up.clone(),
        );
        register(
            r,
            "dueq_redis_command_duration_seconds",
            "Round trip of one Lua script call to Redis (EVALSHA), in seconds.",
            self.redis_seconds.clone(),
        );
        register(
            r,
            "dueq_build",
            "The running dueq's version.",
            Info::new(VersionLabels {
                version: env!("CARGO_PKG_VERSION"),
            }),
        );
    }

    fn queue(&self, namespace: &str, queue: &str) -> QueueLabels {
        let (namespace, queue) = self.bound.queue(namespace, queue);
        QueueLabels { namespace, queue }
    }

    fn namespace(&self, namespace: &str) -> NamespaceLabels {
        NamespaceLabels {
            namespace: self.bound.namespace(namespace),
        }
    }

    pub(crate) fn job_enqueued(&self, namespace: &str, queue: &str) {
        self.jobs_enqueued
            .get_or_create(&self.queue(namespace, queue))
            .inc();
    }

    /// A flow of jobs stored (EnqueueFlow, issue 34).
    pub(crate) fn flow_enqueued(&self, namespace: &str) {
        self.flows_enqueued
            .get_or_create(&self.namespace(namespace))
            .inc();
    }

    /// A job leased after waiting `wait_ms` since it became claimable.
    pub(crate) fn job_claimed(&self, namespace: &str, queue: &str, wait_ms: i64) {
        let labels = self.queue(namespace, queue);
        self.jobs_claimed.get_or_create(&labels).inc();
        self.job_wait
            .get_or_create(&labels)
            .observe(seconds(wait_ms));
    }

    pub(crate) fn job_completed(&self, namespace: &str, queue: &str) {
        self.jobs_completed
            .get_or_create(&self.queue(namespace, queue))
            .inc();
    }

    /// A failed attempt; `dead`: the job will not run again.
    pub(crate) fn job_failed(&self, namespace: &str, queue: &str, dead: bool) {
        let QueueLabels { namespace, queue } = self.queue(namespace, queue);
        let outcome = if dead { "dead" } else { "retry" };
        self.jobs_failed
            .get_or_create(&FailedLabels {
                namespace,
                queue,
                outcome,
            })
            .inc();
    }

    pub(crate) fn leases_expired(&self, namespace: &str, queue: &str, count: u64) {
        if count > 0 {
            self.jobs_lease_expired
                .get_or_create(&self.queue(namespace, queue))
                .inc_by(count);
        }
    }

    /// A claim met a flow limit `count` times for `reason`.
    pub(crate) fn flow_throttled(
        &self,
        namespace: &str,
        queue: &str,
        reason: &'static str,
        count: u64,
    ) {
        if count > 0 {
            let QueueLabels { namespace, queue } = self.queue(namespace, queue);
            self.flow_throttled
                .get_or_create(&FlowReasonLabels {
                    namespace,
                    queue,
                    reason,
                })
                .inc_by(count);
        }
    }

    /// An occurrence handed out `lateness_ms` after its due time, having stepped over
    /// `skipped` runs.
    pub(crate) fn occurrence(&self, namespace: &str, lateness_ms: i64, skipped: u64) {
        let labels = self.namespace(namespace);
        self.occurrences.get_or_create(&labels).inc();
        self.lateness
            .get_or_create(&labels)
            .observe(seconds(lateness_ms));
        self.skipped(namespace, "catchup", skipped);
    }

    /// Runs skipped for `reason` (`catchup`, `window`, `overlap`).
    pub(crate) fn skipped(&self, namespace: &str, reason: &'static str, count: u64) {
        if count > 0 {
            let namespace = self.bound.namespace(namespace);
            self.skipped_runs
                .get_or_create(&SkipLabels { namespace, reason })
                .inc_by(count);
        }
    }

    /// Counts a waiting long-poll of `kind` until the guard drops.
    pub(crate) fn waiting(self: &Arc<Self>, kind: &'static str) -> Waiting {
        let gauge = self
            .longpoll_waiters
            .get_or_create_owned(&KindLabels { kind });
        gauge.inc();
        Waiting(gauge)
    }

    /// Counts an open Work stream until the guard drops.
    pub(crate) fn work_stream(&self) -> Waiting {
        self.work_streams.inc();
        Waiting(self.work_streams.clone())
    }

    /// WatchJob streams opened (1) or closed (-1).
    pub(crate) fn watch_streams(&self, delta: i64) {
        self.watch_streams.inc_by(delta);
    }

    /// Audit records that could not be appended.
    pub(crate) fn audit_dropped(&self, n: u64) {
        self.audit_dropped.inc_by(n);
    }

    /// One read of a watched job.
    pub(crate) fn watch_read(&self) {
        self.watch_reads.inc();
    }

    pub(crate) fn set_redis_up(&self, up: bool) {
        self.redis_up.set(i64::from(up));
    }

    /// The histogram of Redis script round trips (`Store` observes it).
    pub(crate) fn redis_seconds(&self) -> Histogram {
        self.redis_seconds.clone()
    }
}

/// A waiting long-poll, counted in `dueq_longpoll_waiters` while it lives.
pub(crate) struct Waiting(Gauge);

impl Drop for Waiting {
    fn drop(&mut self) {
        self.0.dec();
    }
}

fn seconds(ms: i64) -> f64 {
    ms.max(0) as f64 / 1000.0
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::Metrics;

    fn text(metrics: &Metrics) -> String {
        let mut out = String::new();
        prometheus_client::encoding::prometheus_text::encode(&mut out, &metrics.registry)
            .expect("encode");
        out
    }

    #[test]
    fn counters_carry_their_contract_names_and_labels() {
        let metrics = Metrics::new(10, Duration::from_secs(60));
        metrics.job_enqueued("ns", "q");
        metrics.job_failed("ns", "q", true);
        metrics.occurrence("ns", 1500, 2);
        let out = text(&metrics);
        for line in [
            "dueq_jobs_enqueued_total{namespace=\"ns\",queue=\"q\"} 1",
            "dueq_jobs_failed_total{namespace=\"ns\",queue=\"q\",outcome=\"dead\"} 1",
            "dueq_schedule_occurrences_total{namespace=\"ns\"} 1",
            "dueq_schedule_skipped_runs_total{namespace=\"ns\",reason=\"catchup\"} 2",
            "dueq_schedule_lateness_seconds_sum{namespace=\"ns\"} 1.5",
            "# TYPE dueq_build_info gauge",
        ] {
            assert!(out.contains(line), "{line} missing from\n{out}");
        }
        assert!(out.contains("dueq_build_info{version=\""), "{out}");
    }

    #[test]
    fn a_waiter_is_counted_while_it_waits() {
        let metrics = Metrics::new(10, Duration::from_secs(60));
        let line = "dueq_longpoll_waiters{kind=\"jobs\"}";
        let waiting = metrics.waiting("jobs");
        assert!(text(&metrics).contains(&format!("{line} 1")));
        drop(waiting);
        assert!(text(&metrics).contains(&format!("{line} 0")));
    }
}
