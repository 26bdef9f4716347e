//! Long-lived multiplexed Redis connections, handed out without a round trip.
//!
//! deadpool-redis recycles a connection with a PING on every `get()`, which measured at
//! roughly a tenth of the throughput of a shared multiplexed connection. A multiplexed
//! connection already pipelines many concurrent requests, so we check out `pool_size`
//! of them from the pool once, keep them, and spread requests round-robin. A connection
//! that fails with an I/O error is dropped and replaced from the pool on next use; the
//! pool remains the one place connections are created and configured.
//!
//! One reconnect attempt runs at a time (an outage must not become a connect storm),
//! and a caller that waited for an attempt takes its outcome: when it failed, the
//! caller fails at once with its error instead of making an attempt of its own. So
//! against a hung Redis every caller fails within about one `--redis-timeout`, where
//! waiters taking turns failed one timeout after another (the Nth after N timeouts).

use std::{
    sync::{
        atomic::{AtomicU64, AtomicUsize, Ordering},
        Mutex,
    },
    time::Duration,
};

use deadpool_redis::{
    redis::{aio::MultiplexedConnection, AsyncConnectionConfig},
    Manager, Pool, Runtime,
};

use super::{
    tls::{self, RedisTls},
    StoreError,
};
use crate::sync::lock;

pub(super) struct Connections {
    pool: Pool,
    slots: Vec<Mutex<Option<MultiplexedConnection>>>,
    next: AtomicUsize,
    /// The Redis URL without its password, for error messages.
    display_url: String,
    /// Serialises reconnection; holds the error of the latest attempt, if it failed.
    connect_lock: tokio::sync::Mutex<Option<StoreError>>,
    /// How many reconnect attempts have finished, so a caller can tell whether one
    /// finished while it waited for the lock.
    attempts: AtomicU64,
}

impl Connections {
    pub(super) fn new(
        url: &str,
        tls: &RedisTls,
        size: usize,
        timeout: Duration,
    ) -> Result<Self, StoreError> {
        let display_url = redact(url);
        let config = AsyncConnectionConfig::new()
            .set_connection_timeout(Some(timeout))
            .set_response_timeout(Some(timeout));
        let unavailable = |reason: String| StoreError::Unavailable {
            url: display_url.clone(),
            reason,
        };
        let info = tls::connection_info(url, tls).map_err(unavailable)?;
        let manager = Manager::new_with_config(info, config)
            .map_err(|e| unavailable(format!("invalid Redis URL: {e}")))?;
        let pool = Pool::builder(manager)
            .max_size(size)
            .runtime(Runtime::Tokio1)
            .create_timeout(Some(timeout))
            .wait_timeout(Some(timeout))
            .build()
            .map_err(|e| StoreError::Unavailable {
                url: display_url.clone(),
                reason: e.to_string(),
            })?;
        Ok(Self {
            pool,
            slots: (0..size.max(1)).map(|_| Mutex::new(None)).collect(),
            next: AtomicUsize::new(0),
            display_url,
            connect_lock: tokio::sync::Mutex::new(None),
            attempts: AtomicU64::new(0),
        })
    }

    pub(super) fn display_url(&self) -> &str {
        &self.display_url
    }

    /// A connection handle (cheap clone of a multiplexed connection) and its slot.
    pub(super) async fn get(&self) -> Result<(usize, MultiplexedConnection), StoreError> {
        let slot = self.next.fetch_add(1, Ordering::Relaxed) % self.slots.len();
        if let Some(conn) = self.cached(slot) {
            return Ok((slot, conn));
        }
        let seen = self.attempts.load(Ordering::Acquire);
        let mut last_failure = self.connect_lock.lock().await;
        if let Some(conn) = self.cached(slot) {
            return Ok((slot, conn));
        }
        if self.attempts.load(Ordering::Acquire) != seen {
            if let Some(failure) = &*last_failure {
                // An attempt made while we waited failed: ours would fail the same way,
                // one timeout later.
                return Err(failure.clone());
            }
        }
        let attempt = self.pool.get().await.map_err(|e| StoreError::Unavailable {
            url: self.display_url.clone(),
            reason: e.to_string(),
        });
        *last_failure = attempt.as_ref().err().cloned();
        self.attempts.fetch_add(1, Ordering::Release);
        let conn = deadpool_redis::Connection::take(attempt?);
        *lock(&self.slots[slot]) = Some(conn.clone());
        Ok((slot, conn))
    }

    /// Forget a slot's connection after it failed, so the next use reconnects.
    pub(super) fn discard(&self, slot: usize) {
        if let Some(slot) = self.slots.get(slot) {
            *lock(slot) = None;
        }
    }

    fn cached(&self, slot: usize) -> Option<MultiplexedConnection> {
        lock(&self.slots[slot]).clone()
    }
}

/// What logs and statuses show of a URL that does not parse: where its password would
/// be cannot be told, so none of it.
const UNPARSABLE: &str = "(a Redis URL that does not parse; not shown, as it may hold a password)";

/// The URL as logs, errors and statuses show it: `redis://user:secret@host` ->
/// `redis://user:***@host`, `unix:///s.sock?pass=secret` -> `unix:///s.sock?pass=***`.
pub(crate) fn redact(url: &str) -> String {
    let Ok(mut parsed) = url::Url::parse(url) else {
        return UNPARSABLE.to_owned();
    };
    if parsed.password().is_some() && parsed.set_password(Some("***")).is_err() {
        return UNPARSABLE.to_owned();
    }
    // The redis crate reads a unix socket URL's password from its `pass` parameter.
    let secret =
        |key: &str| key.eq_ignore_ascii_case("pass") || key.eq_ignore_ascii_case("password");
    if parsed.query_pairs().any(|(key, _)| secret(&key)) {
        let pairs: Vec<(String, String)> = parsed
            .query_pairs()
            .map(|(key, value)| {
                let value = if secret(&key) {
                    "***".into()
                } else {
                    value.into_owned()
                };
                (key.into_owned(), value)
            })
            .collect();
        parsed.query_pairs_mut().clear().extend_pairs(pairs);
    }
    parsed.to_string()
}

#[cfg(test)]
mod tests {
    #[test]
    fn redacts_passwords() {
        assert_eq!(
            super::redact("redis://u:hunter2@h:6379/0"),
            "redis://u:***@h:6379/0"
        );
        assert_eq!(super::redact("redis://h:1"), "redis://h:1");
        assert_eq!(
            super::redact("rediss://u:hunter2@h:6380"),
            "rediss://u:***@h:6380"
        );
        assert_eq!(
            super::redact("unix:///run/redis.sock?db=2&user=u&pass=hunter2"),
            "unix:///run/redis.sock?db=2&user=u&pass=***"
        );
        let unparsable = super::redact("redis://:hunter2@h:notaport");
        assert!(!unparsable.contains("hunter2"), "{unparsable}");
    }
}
