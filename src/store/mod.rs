//! The store layer: owns the Redis key layout, the scripts and the connections.
//! Everything above it speaks in domain types and typed operations (`ops`): a use
//! case builds an operation and [`Store::run`]s it; nothing above this module sees a
//! Redis value, a key or a SCAN cursor.

mod conn;
mod error;
pub(crate) mod keys;
pub(crate) mod ops;
mod prune_due;
mod records;
mod registry;
mod reply;
mod script;
mod tls;
mod walk;

#[cfg(test)]
mod pins;

use std::time::{Duration, Instant};

use deadpool_redis::redis::{self, Value};

pub(crate) use error::StoreError;
pub(crate) use script::{Call, Operation, Prelude};
pub(crate) use tls::RedisTls;
pub(crate) use walk::{LegacyJobWalk, NamespaceWalk};

use conn::Connections;
use keys::NamespaceKeys;
use reply::Reply;

/// The store's instance id, as [`Store::instance_id`] found it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum InstanceId {
    /// Stored before this call.
    Found(String),
    /// There was none: this call stored it.
    Written(String),
}

impl InstanceId {
    pub(crate) fn id(&self) -> &str {
        match self {
            InstanceId::Found(id) | InstanceId::Written(id) => id,
        }
    }
}

/// Handle to the Redis store. Cheap to share behind an `Arc`.
pub(crate) struct Store {
    conns: Connections,
    prefix: String,
}

impl Store {
    /// Builds the store; does not connect yet (the service must start without Redis).
    pub(crate) fn new(
        url: &str,
        tls: &RedisTls,
        prefix: &str,
        pool_size: usize,
        timeout: Duration,
    ) -> Result<Self, StoreError> {
        Ok(Self {
            conns: Connections::new(url, tls, pool_size, timeout)?,
            prefix: prefix.to_owned(),
        })
    }

    fn keys(&self, namespace: &str) -> NamespaceKeys {
        NamespaceKeys::new(&self.prefix, namespace)
    }

    pub(crate) fn display_url(&self) -> &str {
        self.conns.display_url()
    }

    /// Runs one operation's script for `namespace` with EVALSHA (loading it on
    /// NOSCRIPT) and decodes its reply.
    pub(crate) async fn run<O: Operation>(
        &self,
        namespace: &str,
        op: &O,
    ) -> Result<O::Output, StoreError> {
        let def = op.script();
        let cmd = self.command(namespace, op);
        let (slot, mut conn) = self.conns.get().await?;
        let value = match cmd.query_async::<Value>(&mut conn).await {
            // Redis restarted or its script cache was flushed: load and run again.
            Err(e) if e.kind() == redis::ErrorKind::Server(redis::ServerErrorKind::NoScript) => {
                def.script()
                    .prepare_invoke()
                    .load_async(&mut conn)
                    .await
                    .map_err(|e| self.fail(slot, namespace, e))?;
                cmd.query_async::<Value>(&mut conn).await
            }
            other => other,
        }
        .map_err(|e| self.fail(slot, namespace, e))?;
        op.decode(Reply::new(value, def.name))
    }

    /// The EVALSHA command that runs `op` for `namespace`.
    fn command<O: Operation>(&self, namespace: &str, op: &O) -> redis::Cmd {
        Self::command_for(&self.prefix, namespace, op)
    }

    /// The EVALSHA command that runs `op` for `namespace` under `prefix`.
    pub(crate) fn command_for<O: Operation>(prefix: &str, namespace: &str, op: &O) -> redis::Cmd {
        let def = op.script();
        let mut call = Call::default();
        op.encode(&NamespaceKeys::new(prefix, namespace), &mut call);
        // Every call a test makes is checked against the script's declared arity
        // (which a library test checks against the script's header).
        let (keys, args) = call.counts();
        debug_assert!(
            def.keys.admits(keys) && def.argv.admits(args),
            "{}: {keys} keys and {args} args do not fit its declaration",
            def.name
        );
        call.evalsha(def.script().get_hash())
    }

    /// Loads every script (SCRIPT LOAD), so the first call of each is an EVALSHA hit.
    pub(crate) async fn load_scripts(&self) -> Result<(), StoreError> {
        let (slot, mut conn) = self.conns.get().await?;
        for def in ops::SCRIPTS {
            if let Err(e) = def.script().prepare_invoke().load_async(&mut conn).await {
                return Err(self.fail(slot, "", e));
            }
        }
        Ok(())
    }

    /// Redis's clock in epoch ms, and the round trip it took.
    pub(crate) async fn time(&self) -> Result<(i64, Duration), StoreError> {
        let started = Instant::now();
        let (secs, micros): (i64, i64) = self.query(redis::cmd("TIME")).await?;
        Ok((secs * 1000 + micros / 1000, started.elapsed()))
    }

    /// The store's instance id: the one stored, or `candidate` when none was (it is
    /// stored then). One `SET ... NX GET`.
    pub(crate) async fn instance_id(&self, candidate: &str) -> Result<InstanceId, StoreError> {
        let key = keys::PrefixKeys::new(&self.prefix).instance();
        let previous: Option<String> = self
            .query(
                redis::cmd("SET")
                    .arg(&key)
                    .arg(candidate)
                    .arg("NX")
                    .arg("GET")
                    .to_owned(),
            )
            .await?;
        Ok(match previous {
            Some(id) => InstanceId::Found(id),
            None => InstanceId::Written(candidate.to_owned()),
        })
    }

    /// A Redis setting (CONFIG GET); `None` when Redis does not report it.
    pub(crate) async fn config_value(&self, name: &str) -> Result<Option<String>, StoreError> {
        let pairs: Vec<String> = self
            .query(redis::cmd("CONFIG").arg("GET").arg(name).to_owned())
            .await?;
        Ok(pairs.into_iter().nth(1))
    }

    async fn query<T: redis::FromRedisValue>(&self, cmd: redis::Cmd) -> Result<T, StoreError> {
        let (slot, mut conn) = self.conns.get().await?;
        cmd.query_async(&mut conn)
            .await
            .map_err(|e| self.fail(slot, "", e))
    }

    fn fail(&self, slot: usize, namespace: &str, err: redis::RedisError) -> StoreError {
        let err = StoreError::from_redis(self.conns.display_url(), namespace, err);
        if err.is_unavailable() {
            self.conns.discard(slot);
        }
        err
    }
}
