//! Long-lived multiplexed Redis connections, handed out without a round trip, to a
//! standalone Redis, a Redis Cluster, or the master a set of Redis Sentinels names.
//!
//! deadpool-redis recycles a connection with a PING on every `get()`, which measured at
//! roughly a tenth of the throughput of a shared multiplexed connection. A multiplexed
//! connection already pipelines many concurrent requests, so we keep `pool_size` of
//! them and spread requests round-robin. A connection that fails with an I/O error is
//! dropped and replaced on next use: from the deadpool pool (standalone), from the
//! redis crate's cluster client (cluster: one connection per node, routing each
//! command by its first key's slot and following MOVED and ASK), or from the master
//! the sentinels name at that moment (sentinel, so a failover is followed).
//!
//! One reconnect attempt runs at a time (an outage must not become a connect storm),
//! and a caller that waited for an attempt takes its outcome: when it failed, the
//! caller fails at once with its error instead of making an attempt of its own. So
//! against a hung Redis every caller fails within about one `--redis-timeout`, where
//! waiters taking turns failed one timeout after another (the Nth after N timeouts).
//!
//! A call followed by a `WAIT` (`--redis-wait-replicas`) does not share its
//! connection: Redis blocks a connection on `WAIT` until the replicas answer or the
//! `WAIT` times out, and every call multiplexed behind it waits as long. While a
//! master has no replica in sync (a failover), each `WAIT` runs out its timeout, so
//! calls queued behind a few of them timed out in turn, the give-back of a claim the
//! replicas did not confirm among them (issue 29 item 11). So those calls take a
//! connection of their own, lent to one call at a time ([`Connections::lend`]): at
//! most [`LENT_PER_SHARED`] × `--pool-size` of them, made on first need from the same
//! connector (in cluster mode, each is a cluster connection of its own), and a call
//! that finds them all lent waits at most `--redis-timeout` for one, then fails
//! `UNAVAILABLE` without having sent anything. Calls without a `WAIT` (the default:
//! `--redis-wait-replicas 0` never lends one) keep the shared connections.

use std::{
    sync::{
        atomic::{AtomicU64, AtomicUsize, Ordering},
        Mutex,
    },
    time::Duration,
};

use deadpool_redis::{
    redis::{
        aio::{ConnectionLike, MultiplexedConnection},
        cluster::{ClusterClient, ClusterClientBuilder},
        cluster_async::ClusterConnection,
        cluster_routing::{Route, RoutingInfo, SingleNodeRoutingInfo, Slot, SlotAddr},
        sentinel::{SentinelClient, SentinelClientBuilder, SentinelServerType},
        AsyncConnectionConfig, Cmd, ConnectionAddr, ConnectionInfo, IntoConnectionInfo, Pipeline,
        RedisFuture, RedisResult, TlsMode, Value,
    },
    Manager, Pool, Runtime,
};

use tokio::sync::{Semaphore, SemaphorePermit};

use super::{
    tls::{self, RedisTls},
    StoreError,
};
use crate::sync::lock;

/// How many connections may be lent to calls followed by a `WAIT`, per shared
/// connection (`--pool-size`): more than the shared connections carried such calls
/// at once before (one `WAIT` at a time each), so confirmed writes are not slower.
pub(super) const LENT_PER_SHARED: usize = 4;

/// Which kind of Redis deployment `--redis-url` names (`--redis-mode`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) enum Topology {
    /// One Redis (or whatever one address reaches).
    #[default]
    Standalone,
    /// A Redis Cluster; the URL lists one or more seed nodes, comma-separated.
    Cluster,
    /// The master that Redis Sentinels watch under `master`; the URL lists the
    /// sentinels, comma-separated.
    Sentinel { master: String },
}

/// Where connections come from.
enum Connector {
    Pool(Pool),
    Cluster(ClusterClient),
    Sentinel {
        client: tokio::sync::Mutex<SentinelClient>,
        config: AsyncConnectionConfig,
    },
}

/// One multiplexed connection of whichever kind: what the store sends commands on.
#[derive(Clone)]
pub(crate) enum Conn {
    /// To one Redis (standalone, or the master the sentinels named).
    Single(MultiplexedConnection),
    /// To every node of a cluster, routing each command by its keys.
    Cluster(ClusterConnection),
}

impl Conn {
    /// Sends `cmd` to the master of `key`'s slot (cluster), or to the one Redis: for
    /// commands without keys that must reach that node (a SCAN of one slot). (A
    /// script's SCRIPT LOAD and WAIT go in its own pipeline instead: exec.rs.)
    pub(crate) async fn query_at_key(&mut self, key: &[u8], cmd: &Cmd) -> RedisResult<Value> {
        match self {
            Conn::Single(conn) => cmd.query_async(conn).await,
            Conn::Cluster(conn) => {
                let route = Route::with_slot(Slot::for_key(key), SlotAddr::Master);
                conn.route_command(
                    cmd.clone(),
                    RoutingInfo::SingleNode(SingleNodeRoutingInfo::SpecificNode(route)),
                )
                .await
            }
        }
    }

    /// Sends `cmd` to the node at `host:port` (cluster), or to the one Redis.
    pub(crate) async fn query_at_node(
        &mut self,
        host: &str,
        port: u16,
        cmd: &Cmd,
    ) -> RedisResult<Value> {
        match self {
            Conn::Single(conn) => cmd.query_async(conn).await,
            Conn::Cluster(conn) => {
                conn.route_command(
                    cmd.clone(),
                    RoutingInfo::SingleNode(SingleNodeRoutingInfo::ByAddress {
                        host: host.to_owned(),
                        port,
                    }),
                )
                .await
            }
        }
    }

    pub(crate) fn is_cluster(&self) -> bool {
        matches!(self, Conn::Cluster(_))
    }
}

impl ConnectionLike for Conn {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Conn::Single(conn) => conn.req_packed_command(cmd),
            Conn::Cluster(conn) => conn.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Conn::Single(conn) => conn.req_packed_commands(pipeline, offset, count),
            Conn::Cluster(conn) => conn.req_packed_commands(pipeline, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Conn::Single(conn) => conn.get_db(),
            Conn::Cluster(conn) => conn.get_db(),
        }
    }
}

pub(super) struct Connections {
    connector: Connector,
    timeout: Duration,
    slots: Vec<Mutex<Option<Conn>>>,
    next: AtomicUsize,
    /// The Redis URL without its password, for error messages.
    display_url: String,
    /// Serialises reconnection; holds the error of the latest attempt, if it failed.
    connect_lock: tokio::sync::Mutex<Option<StoreError>>,
    /// How many reconnect attempts have finished, so a caller can tell whether one
    /// finished while it waited for the lock.
    attempts: AtomicU64,
    /// The connections lent to one call at a time ([`Connections::lend`]).
    lent: Lendable,
}

/// Connections for calls followed by a `WAIT`, each used by one call at a time.
struct Lendable {
    /// One permit per connection there may be; a call holds one while it is lent one.
    permits: Semaphore,
    /// How many permits there are, for the error when none is free.
    size: usize,
    /// The connections no call holds.
    idle: Mutex<Vec<Conn>>,
}

/// A connection lent to one call ([`Connections::lend`]): back among the idle ones
/// when dropped after [`Lent::keep`], closed otherwise (the call failed, or was
/// dropped with its reply, perhaps a WAIT's, still to come).
pub(super) struct Lent<'a> {
    conn: Conn,
    keep: bool,
    idle: &'a Mutex<Vec<Conn>>,
    // Released after `drop` has put the connection back.
    _permit: SemaphorePermit<'a>,
}

impl Lent<'_> {
    pub(super) fn conn(&mut self) -> &mut Conn {
        &mut self.conn
    }

    /// Puts the connection back among the idle ones when dropped: its call was
    /// answered, so nothing of it is still on its way.
    pub(super) fn keep(&mut self) {
        self.keep = true;
    }
}

impl Drop for Lent<'_> {
    fn drop(&mut self) {
        if self.keep {
            lock(self.idle).push(self.conn.clone());
        }
    }
}

impl Connections {
    pub(super) fn new(
        url: &str,
        tls: &RedisTls,
        topology: &Topology,
        size: usize,
        timeout: Duration,
    ) -> Result<Self, StoreError> {
        let display_url = match topology {
            Topology::Standalone => redact(url),
            Topology::Cluster | Topology::Sentinel { .. } => {
                urls(url).map(redact).collect::<Vec<_>>().join(",")
            }
        };
        let config = AsyncConnectionConfig::new()
            .set_connection_timeout(Some(timeout))
            .set_response_timeout(Some(timeout));
        let unavailable = |reason: String| StoreError::Unavailable {
            url: display_url.clone(),
            reason,
        };
        let connector = match topology {
            Topology::Standalone => {
                let info = tls::connection_info(url, tls).map_err(unavailable)?;
                let manager = Manager::new_with_config(info, config)
                    .map_err(|e| unavailable(format!("invalid Redis URL: {e}")))?;
                let pool = Pool::builder(manager)
                    .max_size(size)
                    .runtime(Runtime::Tokio1)
                    .create_timeout(Some(timeout))
                    .wait_timeout(Some(timeout))
                    .build()
                    .map_err(|e| unavailable(e.to_string()))?;
                Connector::Pool(pool)
            }
            Topology::Cluster => {
                Connector::Cluster(cluster_client(url, tls, timeout).map_err(unavailable)?)
            }
            Topology::Sentinel { master } => Connector::Sentinel {
                client: tokio::sync::Mutex::new(
                    sentinel_client(url, tls, master).map_err(unavailable)?,
                ),
                config,
            },
        };
        Ok(Self {
            connector,
            timeout,
            slots: (0..size.max(1)).map(|_| Mutex::new(None)).collect(),
            next: AtomicUsize::new(0),
            display_url,
            connect_lock: tokio::sync::Mutex::new(None),
            attempts: AtomicU64::new(0),
            lent: Lendable {
                permits: Semaphore::new(size.max(1) * LENT_PER_SHARED),
                size: size.max(1) * LENT_PER_SHARED,
                idle: Mutex::new(Vec::new()),
            },
        })
    }

    pub(super) fn display_url(&self) -> &str {
        &self.display_url
    }

    /// A connection handle (cheap clone of a multiplexed connection) and its slot.
    pub(super) async fn get(&self) -> Result<(usize, Conn), StoreError> {
        let slot = self.next.fetch_add(1, Ordering::Relaxed) % self.slots.len();
        if let Some(conn) = self.cached(slot) {
            return Ok((slot, conn));
        }
        let conn = self.reconnect(|| self.cached(slot)).await?;
        *lock(&self.slots[slot]) = Some(conn.clone());
        Ok((slot, conn))
    }

    /// A connection of its own for one call followed by a `WAIT`, until the [`Lent`]
    /// is dropped: an idle one, or a new one. Waits at most `--redis-timeout` for one
    /// of the [`LENT_PER_SHARED`] × `--pool-size` to be free; `Err`: nothing was sent.
    pub(super) async fn lend(&self) -> Result<Lent<'_>, StoreError> {
        let lendable = &self.lent;
        let busy = || StoreError::Unavailable {
            url: self.display_url.clone(),
            reason: format!(
                "all {} connections for calls that wait for replicas \
                 (--redis-wait-replicas) stayed busy for {:?}; nothing was sent",
                lendable.size, self.timeout
            ),
        };
        let permit = tokio::time::timeout(self.timeout, lendable.permits.acquire())
            .await
            .map_err(|_| busy())?
            .map_err(|_| busy())?;
        let idle = || lock(&lendable.idle).pop();
        let conn = match idle() {
            Some(conn) => conn,
            None => self.reconnect(idle).await?,
        };
        Ok(Lent {
            conn,
            keep: false,
            idle: &lendable.idle,
            _permit: permit,
        })
    }

    /// A new connection, one attempt at a time: `found` first, in case one turned up
    /// while this caller waited its turn; an attempt that failed while it waited is
    /// its answer too.
    async fn reconnect(&self, found: impl Fn() -> Option<Conn>) -> Result<Conn, StoreError> {
        let seen = self.attempts.load(Ordering::Acquire);
        let mut last_failure = self.connect_lock.lock().await;
        if let Some(conn) = found() {
            return Ok(conn);
        }
        if self.attempts.load(Ordering::Acquire) != seen {
            if let Some(failure) = &*last_failure {
                // An attempt made while we waited failed: ours would fail the same way,
                // one timeout later.
                return Err(failure.clone());
            }
        }
        let attempt = self
            .connect()
            .await
            .map_err(|reason| StoreError::Unavailable {
                url: self.display_url.clone(),
                reason,
            });
        *last_failure = attempt.as_ref().err().cloned();
        self.attempts.fetch_add(1, Ordering::Release);
        attempt
    }

    /// A new connection from the connector.
    async fn connect(&self) -> Result<Conn, String> {
        match &self.connector {
            Connector::Pool(pool) => {
                let conn = pool.get().await.map_err(|e| e.to_string())?;
                Ok(Conn::Single(deadpool_redis::Connection::take(conn)))
            }
            Connector::Cluster(client) => {
                let conn = tokio::time::timeout(self.timeout, client.get_async_connection())
                    .await
                    .map_err(|_| format!("no cluster connection within {:?}", self.timeout))?
                    .map_err(|e| e.to_string())?;
                Ok(Conn::Cluster(conn))
            }
            Connector::Sentinel { client, config } => {
                let connect = async {
                    let mut client = client.lock().await;
                    client.get_async_connection_with_config(config).await
                };
                let conn = tokio::time::timeout(self.timeout, connect)
                    .await
                    .map_err(|_| {
                        format!(
                            "no connection to the sentinels' master within {:?}",
                            self.timeout
                        )
                    })?
                    .map_err(|e| e.to_string())?;
                Ok(Conn::Single(conn))
            }
        }
    }

    /// Forget a slot's connection after it failed, so the next use reconnects.
    pub(super) fn discard(&self, slot: usize) {
        if let Some(slot) = self.slots.get(slot) {
            *lock(slot) = None;
        }
    }

    fn cached(&self, slot: usize) -> Option<Conn> {
        lock(&self.slots[slot]).clone()
    }
}

/// The comma-separated URLs of a cluster's seed nodes or of the sentinels.
pub(super) fn urls(url: &str) -> impl Iterator<Item = &str> {
    url.split(',').map(str::trim).filter(|u| !u.is_empty())
}

/// The cluster client for the seed nodes in `url`, with their TLS files and
/// credentials (every node's, as the first seed's).
fn cluster_client(url: &str, tls: &RedisTls, timeout: Duration) -> Result<ClusterClient, String> {
    let seeds = urls(url)
        .map(|u| tls::connection_info(u, tls))
        .collect::<Result<Vec<ConnectionInfo>, String>>()?;
    if seeds.is_empty() {
        return Err("--redis-url names no cluster node".into());
    }
    let mut builder = ClusterClientBuilder::new(seeds)
        .connection_timeout(timeout)
        .response_timeout(timeout);
    if let Some(certificates) = tls.certificates_if_any()? {
        builder = builder.certs(certificates);
    }
    builder
        .build()
        .map_err(|e| format!("invalid cluster URL: {e}"))
}

/// The sentinel client for the sentinels in `url`, asking them for `master`. The
/// URL's credentials and database are those of the Redis master (sentinels usually
/// run without a password); a rediss:// URL means TLS to both, with the TLS files.
pub(super) fn sentinel_client(
    url: &str,
    tls: &RedisTls,
    master: &str,
) -> Result<SentinelClient, String> {
    let infos = urls(url)
        .map(|u| {
            u.into_connection_info()
                .map_err(|e| format!("invalid sentinel URL: {e}"))
        })
        .collect::<Result<Vec<ConnectionInfo>, String>>()?;
    let Some(first) = infos.first().cloned() else {
        return Err("--redis-url names no sentinel".into());
    };
    let is_tls = matches!(first.addr(), ConnectionAddr::TcpTls { .. });
    if !is_tls && tls.certificates_if_any()?.is_some() {
        return Err(
            "--redis-tls-ca, --redis-tls-cert and --redis-tls-key apply to rediss:// \
             URLs only; REDIS_URL's are not"
                .into(),
        );
    }
    let addrs: Vec<ConnectionAddr> = infos.iter().map(|i| i.addr().clone()).collect();
    let mut builder = SentinelClientBuilder::new(addrs, master, SentinelServerType::Master)
        .map_err(|e| e.to_string())?
        .set_client_to_redis_db(first.redis_settings().db());
    if let Some(username) = first.redis_settings().username() {
        builder = builder.set_client_to_redis_username(username);
    }
    if let Some(password) = first.redis_settings().password() {
        builder = builder.set_client_to_redis_password(password);
    }
    if is_tls {
        tls::install_crypto_provider();
        builder = builder
            .set_client_to_redis_tls_mode(TlsMode::Secure)
            .set_client_to_sentinel_tls_mode(TlsMode::Secure);
        if let Some(certificates) = tls.certificates_if_any()? {
            builder = builder
                .set_client_to_redis_certificates(certificates.clone())
                .set_client_to_sentinel_certificates(certificates);
        }
    }
    builder
        .build()
        .map_err(|e| format!("invalid sentinel setup: {e}"))
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

    /// Pins issue 29 item 11: the connections lent to calls followed by a WAIT
    /// are bounded and each carries one call at a time: LENT_PER_SHARED per shared
    /// connection, each a connection of its own (its own CLIENT ID); with all lent,
    /// one more is refused UNAVAILABLE saying nothing was sent; one kept (its call
    /// answered) is lent again, and one not kept (failed, or dropped mid-call) is
    /// not.
    #[tokio::test]
    async fn lent_connections_are_bounded_and_each_lent_to_one_call() {
        use std::collections::HashSet;

        use deadpool_redis::redis;

        use super::{Connections, Topology, LENT_PER_SHARED};
        use crate::{store::StoreError, testing::TestRedis};

        let redis = TestRedis::start().await;
        let timeout = std::time::Duration::from_millis(300);
        let conns = Connections::new(
            redis.url(),
            &Default::default(),
            &Topology::Standalone,
            1,
            timeout,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let id = |conn: &mut super::Conn| {
            let mut conn = conn.clone();
            async move {
                redis::cmd("CLIENT")
                    .arg("ID")
                    .query_async::<i64>(&mut conn)
                    .await
                    .unwrap_or_else(|e| panic!("CLIENT ID: {e}"))
            }
        };
        let mut lent = Vec::new();
        let mut ids = HashSet::new();
        for _ in 0..LENT_PER_SHARED {
            let mut one = conns.lend().await.unwrap_or_else(|e| panic!("{e}"));
            ids.insert(id(one.conn()).await);
            lent.push(one);
        }
        assert_eq!(ids.len(), LENT_PER_SHARED, "each lent its own connection");
        match conns.lend().await {
            Err(StoreError::Unavailable { reason, .. }) => {
                assert!(reason.contains("nothing was sent"), "{reason}");
                assert!(reason.contains("--redis-wait-replicas"), "{reason}");
            }
            Err(other) => panic!("{other:?}"),
            Ok(_) => panic!("lent more than {LENT_PER_SHARED} connections"),
        }
        let mut given_back = lent.pop().unwrap_or_else(|| panic!("lent none"));
        let back = id(given_back.conn()).await;
        given_back.keep();
        drop(given_back);
        let mut again = conns.lend().await.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            id(again.conn()).await,
            back,
            "the idle connection is lent again"
        );
        // Not kept: its call failed, or was dropped before its answer.
        drop(again);
        let mut fresh = conns.lend().await.unwrap_or_else(|e| panic!("{e}"));
        let fresh = id(fresh.conn()).await;
        assert!(
            !ids.contains(&fresh),
            "a connection not kept is not lent again"
        );
    }

    /// Every seed node's and sentinel's password is masked in what errors show.
    #[test]
    fn redacts_every_url_of_a_cluster_or_sentinel_list() {
        use super::{Connections, Topology};
        let urls = "redis://u:hunter2@h1:7000, redis://u:hunter2@h2:7001";
        for topology in [Topology::Cluster, Topology::Sentinel { master: "m".into() }] {
            let conns = Connections::new(
                urls,
                &Default::default(),
                &topology,
                1,
                std::time::Duration::from_secs(1),
            )
            .unwrap_or_else(|e| panic!("{topology:?}: {e}"));
            assert_eq!(
                conns.display_url(),
                "redis://u:***@h1:7000,redis://u:***@h2:7001",
                "{topology:?}"
            );
        }
    }
}
