//! The store layer: owns the Redis key layout, the scripts and the connections.
//! Everything above it speaks in domain types.

mod conn;
mod error;
pub mod jobs;
pub mod keys;
pub mod migrate;
pub mod migrate_jobs;
mod reply;
pub mod schedules;
pub mod scripts;

use std::time::{Duration, Instant};

use deadpool_redis::redis::{self, Script, Value};

pub use conn::redact;
pub use error::StoreError;
pub use keys::NamespaceKeys;
pub use reply::schedule as decode_schedule;

use conn::Connections;

/// Handle to the Redis store. Cheap to share behind an `Arc`.
pub struct Store {
    conns: Connections,
    prefix: String,
}

impl Store {
    /// Builds the store; does not connect yet (the service must start without Redis).
    pub fn new(
        url: &str,
        prefix: &str,
        pool_size: usize,
        timeout: Duration,
    ) -> Result<Self, StoreError> {
        Ok(Self {
            conns: Connections::new(url, pool_size, timeout)?,
            prefix: prefix.to_owned(),
        })
    }

    pub fn keys(&self, namespace: &str) -> NamespaceKeys {
        NamespaceKeys::new(&self.prefix, namespace)
    }

    pub fn display_url(&self) -> &str {
        self.conns.display_url()
    }

    /// Loads every script (SCRIPT LOAD), so the first call of each is an EVALSHA hit.
    pub async fn load_scripts(&self) -> Result<(), StoreError> {
        let (slot, mut conn) = self.conns.get().await?;
        for script in scripts::all() {
            if let Err(e) = script.prepare_invoke().load_async(&mut conn).await {
                return Err(self.fail(slot, e));
            }
        }
        Ok(())
    }

    /// Redis's clock in epoch ms, and the round trip it took.
    pub async fn time(&self) -> Result<(i64, Duration), StoreError> {
        let started = Instant::now();
        let (secs, micros): (i64, i64) = self.query(redis::cmd("TIME")).await?;
        Ok((secs * 1000 + micros / 1000, started.elapsed()))
    }

    pub async fn ping(&self) -> Result<(), StoreError> {
        let _: String = self.query(redis::cmd("PING")).await?;
        Ok(())
    }

    pub(crate) async fn query<T: redis::FromRedisValue>(
        &self,
        cmd: redis::Cmd,
    ) -> Result<T, StoreError> {
        let (slot, mut conn) = self.conns.get().await?;
        cmd.query_async(&mut conn)
            .await
            .map_err(|e| self.fail(slot, e))
    }

    /// One `SCAN cursor MATCH pattern COUNT count [TYPE kind]` step: the next cursor
    /// (0 when done) and the keys found.
    pub(crate) async fn scan_keys<T: redis::FromRedisValue>(
        &self,
        cursor: u64,
        pattern: &str,
        count: u32,
        kind: Option<&str>,
    ) -> Result<(u64, Vec<T>), StoreError> {
        let mut cmd = redis::cmd("SCAN");
        cmd.arg(cursor)
            .arg("MATCH")
            .arg(pattern)
            .arg("COUNT")
            .arg(count);
        if let Some(kind) = kind {
            cmd.arg("TYPE").arg(kind);
        }
        self.query(cmd).await
    }

    pub(crate) async fn query_pipe(&self, pipe: &redis::Pipeline) -> Result<(), StoreError> {
        let (slot, mut conn) = self.conns.get().await?;
        pipe.query_async::<()>(&mut conn)
            .await
            .map_err(|e| self.fail(slot, e))
    }

    /// A Redis setting (CONFIG GET); `None` when Redis does not report it.
    pub async fn config_value(&self, name: &str) -> Result<Option<String>, StoreError> {
        let pairs: Vec<String> = self
            .query(redis::cmd("CONFIG").arg("GET").arg(name).to_owned())
            .await?;
        Ok(pairs.into_iter().nth(1))
    }

    /// The SCARD of a set (an import source's index).
    pub async fn set_size(&self, key: &str) -> Result<u64, StoreError> {
        self.query(redis::cmd("SCARD").arg(key).to_owned()).await
    }

    /// Runs one script with EVALSHA (reloading it on NOSCRIPT).
    pub(crate) async fn eval(
        &self,
        script: &Script,
        keys: &[&[u8]],
        args: &[&[u8]],
    ) -> Result<Value, StoreError> {
        let mut invocation = script.prepare_invoke();
        for key in keys {
            invocation.key(*key);
        }
        for arg in args {
            invocation.arg(*arg);
        }
        let (slot, mut conn) = self.conns.get().await?;
        invocation
            .invoke_async(&mut conn)
            .await
            .map_err(|e| self.fail(slot, e))
    }

    fn fail(&self, slot: usize, err: redis::RedisError) -> StoreError {
        let err = StoreError::from_redis(self.conns.display_url(), err);
        if err.is_unavailable() {
            self.conns.discard(slot);
        }
        err
    }
}
