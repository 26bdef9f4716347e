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

use super::StoreError;
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
    pub(super) fn new(url: &str, size: usize, timeout: Duration) -> Result<Self, StoreError> {
        let display_url = redact(url);
        let config = AsyncConnectionConfig::new()
            .set_connection_timeout(Some(timeout))
            .set_response_timeout(Some(timeout));
        let manager =
            Manager::new_with_config(url, config).map_err(|e| StoreError::Unavailable {
                url: display_url.clone(),
                reason: format!("invalid Redis URL: {e}"),
            })?;
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

/// `redis://user:secret@host` -> `redis://user:***@host`.
pub(crate) fn redact(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut parsed) if parsed.password().is_some() => {
            let _ = parsed.set_password(Some("***"));
            parsed.to_string()
        }
        _ => url.to_owned(),
    }
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
    }
}
