//! The gauges read from Redis when /metrics is scraped, for the namespaces this
//! instance has labelled or serves and those in the namespace registry, at most
//! `--metrics-max-series` of them: per namespace one O(log N) script call for the
//! schedules (`schedule_gauges`) and one per page of 1000 queues for the queues
//! (`Store::queue_stats`, O(1) per queue), at most `--metrics-max-series` queues in
//! all; for each of those queues that has a flow policy, two more calls for its top
//! [`TOP_FLOW_KEYS`] keys by leased and by ready jobs. A refresh serves every scrape for `SCRAPE_CACHE`, so many scrapers (or one
//! scraping each of many replicas) do not multiply the load on Redis; scrapes wait
//! for one another's refresh.

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use tokio::sync::Mutex;

use super::{
    FlowKeyLabels, Metrics, NamespaceLabels, QueueLabels, QueueStateLabels, StatusLabels, OTHER,
};
use crate::{
    namespaces::Namespaces,
    store::{
        ops::{
            list_flow_keys::{FlowKeyOrder, ListFlowKeys},
            schedule_gauges::ScheduleGauges,
        },
        Store,
    },
};

/// How many keys of a queue the flow-key gauges show, by each measure: the bound on
/// the series a queue adds (the queues themselves are bounded by
/// `--metrics-max-series`).
pub(crate) const TOP_FLOW_KEYS: u32 = 10;

/// How long one refresh of the Redis-read gauges serves scrapes.
pub(crate) const SCRAPE_CACHE: Duration = Duration::from_secs(5);

/// When the gauges were last read; held through a refresh and the encoding after it.
#[derive(Debug, Default)]
pub(crate) struct Cache(Mutex<Option<Instant>>);

/// Where the scrape-time gauges come from.
#[derive(Clone)]
pub(crate) struct Sources {
    pub(crate) store: Arc<Store>,
    pub(crate) namespaces: Arc<Namespaces>,
}

impl Metrics {
    /// The namespaces whose gauges a scrape reads: those labelled so far and those
    /// this instance serves, as far as the bound admits them.
    async fn scraped_namespaces(&self, sources: &Sources) -> Vec<String> {
        let mut names = self.bound.namespaces();
        let mut admit = |name: &str| {
            let name = self.bound.namespace(name);
            if name != OTHER && !names.contains(&name) {
                names.push(name);
            }
        };
        for entry in sources.namespaces.all() {
            admit(entry.name());
        }
        // The registry, as far as the bound can still admit names from it.
        let mut after = String::new();
        while self.bound.namespaces().len() < self.bound.max() {
            let page = match sources
                .store
                .list_namespaces(&after, self.bound.max())
                .await
            {
                Ok(page) => page,
                Err(error) => {
                    tracing::debug!(%error, "metrics: could not list namespaces");
                    break;
                }
            };
            for name in &page.namespaces {
                admit(name);
            }
            match page.next_after {
                Some(next) => after = next,
                None => break,
            }
        }
        names.sort();
        names
    }

    /// Encodes every metric, in OpenMetrics or the Prometheus text format, after
    /// reading the gauges from Redis if the last read is older than `SCRAPE_CACHE`.
    pub(crate) async fn render(&self, sources: &Sources, openmetrics: bool) -> String {
        let mut last = self.scrape.0.lock().await;
        if last.is_none_or(|at| at.elapsed() >= SCRAPE_CACHE) {
            self.refresh(sources).await;
            *last = Some(Instant::now());
        }
        let mut out = String::new();
        let encoded = if openmetrics {
            prometheus_client::encoding::text::encode(&mut out, &self.registry)
        } else {
            prometheus_client::encoding::prometheus_text::encode(&mut out, &self.registry)
        };
        if let Err(error) = encoded {
            // Writing to a String cannot fail; a metric's own encoder could.
            tracing::warn!(%error, "could not encode the metrics");
        }
        out
    }

    async fn refresh(&self, sources: &Sources) {
        let op = ScheduleGauges {
            overdue_after: self.overdue_after,
        };
        self.schedules.clear();
        self.schedules_overdue.clear();
        self.queue_jobs.clear();
        self.queue_oldest.clear();
        self.queue_paused.clear();
        self.queue_removed.clear();
        self.flow_key_running.clear();
        self.flow_key_backlog.clear();
        let mut queue_budget = self.bound.max();
        for namespace in self.scraped_namespaces(sources).await {
            self.refresh_queues(sources, &namespace, &mut queue_budget)
                .await;
            let counts = match sources.store.run(&namespace, &op).await {
                Ok(counts) => counts,
                Err(error) => {
                    tracing::debug!(%namespace, %error, "metrics: could not read schedule gauges");
                    continue;
                }
            };
            let status = |status| StatusLabels {
                namespace: namespace.clone(),
                status,
            };
            let active = i64::try_from(counts.active).unwrap_or(i64::MAX);
            let stored = i64::try_from(counts.stored).unwrap_or(i64::MAX);
            self.schedules.get_or_create(&status("active")).set(active);
            self.schedules
                .get_or_create(&status("inactive"))
                .set(stored.saturating_sub(active).max(0));
            self.schedules_overdue
                .get_or_create(&NamespaceLabels {
                    namespace: namespace.clone(),
                })
                .set(i64::try_from(counts.overdue).unwrap_or(i64::MAX));
        }
    }

    /// The queue gauges of `namespace`, reading at most `budget` queues (which it
    /// lowers by the queues read).
    async fn refresh_queues(&self, sources: &Sources, namespace: &str, budget: &mut usize) {
        let mut after = String::new();
        while *budget > 0 {
            let page = match sources
                .store
                .queue_stats(namespace, &after, (*budget).min(1000))
                .await
            {
                Ok(page) => page,
                Err(error) => {
                    tracing::debug!(%namespace, %error, "metrics: could not read queue gauges");
                    return;
                }
            };
            *budget = budget.saturating_sub(page.queues.len().max(1));
            for stats in &page.queues {
                let (labelled, queue) = self.bound.queue(namespace, &stats.queue);
                if queue == OTHER {
                    continue;
                }
                if stats.policy.is_some() {
                    self.refresh_flow_keys(sources, namespace, &labelled, &queue)
                        .await;
                }
                let namespace = labelled;
                let count = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
                let mut states = vec![("delayed", stats.delayed), ("active", stats.active)];
                // Until Migrate recounts a store older than the counts, they are unknown.
                if stats.counted {
                    states.extend([
                        ("pending", stats.pending),
                        ("dead", stats.dead),
                        ("waiting", stats.waiting),
                    ]);
                }
                for (state, n) in states {
                    self.queue_jobs
                        .get_or_create(&QueueStateLabels {
                            namespace: namespace.clone(),
                            queue: queue.clone(),
                            state,
                        })
                        .set(count(n));
                }
                let labels = QueueLabels { namespace, queue };
                let age_ms = stats.oldest_pending_age_ms(page.now_ms);
                self.queue_oldest
                    .get_or_create(&labels)
                    .set(age_ms as f64 / 1000.0);
                self.queue_paused
                    .get_or_create(&labels)
                    .set(i64::from(stats.paused));
                self.queue_removed
                    .get_or_create(&labels)
                    .set(count(stats.removed));
            }
            match page.next_after {
                Some(next) => after = next,
                None => return,
            }
        }
    }

    /// The flow-key gauges of one queue with a policy: its top keys by leased jobs
    /// and by ready jobs, one bounded script call each. `labelled`: the namespace's
    /// label value.
    async fn refresh_flow_keys(
        &self,
        sources: &Sources,
        namespace: &str,
        labelled: &str,
        queue: &str,
    ) {
        let gauges = [
            (FlowKeyOrder::Running, &self.flow_key_running),
            (FlowKeyOrder::Backlog, &self.flow_key_backlog),
        ];
        for (order, family) in gauges {
            let op = ListFlowKeys {
                queue,
                order,
                offset: 0,
                limit: TOP_FLOW_KEYS,
            };
            let page = match sources.store.run(namespace, &op).await {
                Ok(page) => page,
                Err(error) => {
                    tracing::debug!(%namespace, %queue, %error, "metrics: could not read flow keys");
                    return;
                }
            };
            for key in page.keys {
                let n = match order {
                    FlowKeyOrder::Running => key.running,
                    _ => key.backlog,
                };
                // A key of the other measure's top comes along with 0: not shown.
                if n == 0 {
                    continue;
                }
                family
                    .get_or_create(&FlowKeyLabels {
                        namespace: labelled.to_owned(),
                        queue: queue.to_owned(),
                        key: key.key,
                    })
                    .set(i64::try_from(n).unwrap_or(i64::MAX));
            }
        }
    }
}
