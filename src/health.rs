//! Keeps the health status current: pings Redis (with `TIME`, which also calibrates
//! the clock) every interval, reloads the scripts whenever Redis comes back, and warns
//! about Redis settings that lose work.

use std::{sync::Arc, time::Duration};

use tokio::time::Instant;

use tokio_util::sync::CancellationToken;
use tonic_health::{server::HealthReporter, ServingStatus};

use crate::{
    clock::Clock,
    store::{InstanceId, Store},
};

/// Health names reported; all of them need Redis.
const SERVICE_NAMES: [&str; 3] = ["", "dueq.v1.QueueService", "dueq.v1.AdminService"];

pub(crate) async fn set_status(reporter: &HealthReporter, status: ServingStatus) {
    for name in SERVICE_NAMES {
        reporter.set_service_status(name, status).await;
    }
}

/// Warns about Redis settings that lose work or waste memory. Best effort: managed
/// Redis services often refuse CONFIG, and then there is nothing to check.
async fn check_redis_settings(store: &Store) {
    match store.config_value("maxmemory-policy").await {
        Ok(Some(policy)) if policy != "noeviction" => tracing::warn!(
            maxmemory_policy = %policy,
            "Redis may evict keys under memory pressure, and an evicted job or schedule \
             is lost silently; set maxmemory-policy noeviction"
        ),
        Ok(_) => {}
        Err(error) => {
            tracing::debug!(%error, "cannot read Redis settings (CONFIG GET refused?)");
            return;
        }
    }
    // Without the append-only file Redis persists only snapshots: a Redis killed or
    // crashed comes back without what was acknowledged since the last one
    // (docs/operations.md, Durability).
    if let Ok(Some(appendonly)) = store.config_value("appendonly").await {
        if appendonly != "yes" {
            tracing::warn!(
                appendonly = %appendonly,
                "Redis has AOF off: if Redis is killed or crashes, the enqueues, acks and \
                 claims it acknowledged since its last RDB snapshot are lost, and jobs may \
                 run twice; set appendonly yes (appendfsync everysec or always), see \
                 Durability in docs/operations.md"
            );
        }
    }
}

/// While Redis stays unreachable (or refuses the password or the database), the
/// ERROR is repeated this often: once at startup is easy to miss in a scrolled log,
/// every health tick would flood it.
const UNAVAILABLE_REPEAT: Duration = Duration::from_secs(30);

/// Rate-limits the "redis is unavailable" ERROR: at once when it starts (at startup
/// or when a serving Redis goes away), then every [`UNAVAILABLE_REPEAT`].
#[derive(Default)]
struct Outage {
    logged_at: Option<Instant>,
}

impl Outage {
    fn due(&mut self) -> bool {
        let due = self
            .logged_at
            .is_none_or(|at| at.elapsed() >= UNAVAILABLE_REPEAT);
        if due {
            self.logged_at = Some(Instant::now());
        }
        due
    }

    fn over(&mut self) {
        self.logged_at = None;
    }
}

/// Whether Redis answers (and, when it just came back, took the scripts). The
/// probe's connection does what every call's does (connect, AUTH, SELECT), so a
/// refused port, a wrong password and a database out of range are each logged
/// with Redis's own reason; the URL in the message has its password masked.
async fn probe(store: &Store, clock: &Clock, serving: bool, outage: &mut Outage) -> bool {
    match store.time().await {
        Ok((redis_ms, rtt)) => {
            clock.observe(redis_ms, rtt);
            if serving {
                return true;
            }
            match store.load_scripts().await {
                Ok(()) => true,
                Err(error) => {
                    tracing::warn!(
                        %error,
                        "redis answers but scripts could not be loaded (dueq needs Redis 7.0 or later)"
                    );
                    false
                }
            }
        }
        Err(error) => {
            if serving {
                outage.over();
            }
            if outage.due() {
                tracing::error!(
                    %error,
                    "redis is unavailable; reporting NOT_SERVING and retrying (calls fail \
                     UNAVAILABLE until it answers)"
                );
            } else {
                tracing::debug!(%error, "redis still unavailable");
            }
            false
        }
    }
}

/// Notices a store flushed or replaced under the service: the instance id the store
/// holds (written once by the first replica to connect) must stay the one this
/// replica saw. FLUSHALL, FLUSHDB, a Redis restarted without persistence, or the URL
/// now reaching another Redis all change it. (A restore of a backup of this store
/// keeps it: the monitor's counter check covers that, src/monitor.rs.)
#[derive(Default)]
struct InstanceWatch {
    seen: Option<String>,
}

impl InstanceWatch {
    async fn check(&mut self, store: &Store) {
        let candidate = uuid::Uuid::new_v4().simple().to_string();
        let now = match store.instance_id(&candidate).await {
            Ok(now) => now,
            // Redis being away is reported by the probe.
            Err(_) => return,
        };
        if let Some(seen) = &self.seen {
            if seen != now.id() {
                let how = match now {
                    InstanceId::Written(_) => "its instance key is gone",
                    InstanceId::Found(_) => "its instance key changed",
                };
                tracing::error!(
                    redis = %store.display_url(),
                    "the Redis store was flushed or replaced under the service ({how}): \
                     jobs, schedules and leases stored before may be lost (FLUSHALL or \
                     FLUSHDB, a Redis restarted without persistence, a failover, or \
                     another Redis at this address?)"
                );
            }
        }
        self.seen = Some(now.id().to_owned());
    }
}

pub(crate) async fn watch_redis(
    store: Arc<Store>,
    clock: Arc<Clock>,
    reporter: HealthReporter,
    interval: Duration,
    metrics: Arc<crate::metrics::Metrics>,
    cancel: CancellationToken,
) {
    let mut serving = false;
    let mut outage = Outage::default();
    let mut instance = InstanceWatch::default();
    loop {
        let healthy = probe(&store, &clock, serving, &mut outage).await;
        metrics.set_redis_up(healthy);
        if healthy {
            instance.check(&store).await;
        }
        if healthy != serving {
            serving = healthy;
            if serving {
                outage.over();
                tracing::info!(redis = %store.display_url(), offset_ms = clock.offset_ms(), "redis is available; SERVING");
                check_redis_settings(&store).await;
                set_status(&reporter, ServingStatus::Serving).await;
            } else {
                set_status(&reporter, ServingStatus::NotServing).await;
            }
        }
        // The health interval: real time between probes of Redis.
        #[allow(clippy::disallowed_methods)]
        let tick = tokio::time::sleep(interval);
        tokio::select! {
            _ = tick => {}
            _ = cancel.cancelled() => {
                set_status(&reporter, ServingStatus::NotServing).await;
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn an_outage_is_logged_at_once_then_every_thirty_seconds() {
        let mut outage = Outage::default();
        assert!(outage.due(), "the first failure is logged");
        tokio::time::advance(Duration::from_secs(29)).await;
        assert!(!outage.due());
        tokio::time::advance(Duration::from_secs(1)).await;
        assert!(outage.due(), "repeated while it lasts");
        outage.over();
        assert!(outage.due(), "a new outage is logged at once");
    }
}
