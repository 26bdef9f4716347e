//! The gauges read from Redis when /metrics is scraped: one O(log N) script call per
//! namespace (`schedule_gauges`), for the namespaces this instance has labelled or
//! serves, at most `--metrics-max-series` of them. A refresh serves every scrape for
//! `SCRAPE_CACHE`, so many scrapers (or one scraping each of many replicas) do not
//! multiply the load on Redis; scrapes wait for one another's refresh.

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use tokio::sync::Mutex;

use super::{Metrics, NamespaceLabels, StatusLabels, OTHER};
use crate::{
    namespaces::Namespaces,
    store::{ops::schedule_gauges::ScheduleGauges, Store},
};

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
    fn scraped_namespaces(&self, sources: &Sources) -> Vec<String> {
        let mut names = self.bound.namespaces();
        for entry in sources.namespaces.all() {
            let name = self.bound.namespace(entry.name());
            if name != OTHER && !names.contains(&name) {
                names.push(name);
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
        for namespace in self.scraped_namespaces(sources) {
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
}
