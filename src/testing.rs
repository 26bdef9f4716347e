//! For the library's own tests that need Redis (the script contract, the rules Lua
//! and Rust share): a real redis-server child on a free port, killed on drop.

use std::{
    net::TcpListener,
    process::{Child, Command, Stdio},
    sync::Arc,
    time::Duration,
};

use deadpool_redis::redis::{self, aio::MultiplexedConnection};

use tokio_util::sync::CancellationToken;

use crate::{
    clock::Clock, context::Context, longpoll::Wakers, namespaces::Namespaces, store::Store,
};

pub(crate) struct TestRedis {
    child: Child,
    url: String,
    _dir: tempfile::TempDir,
}

impl TestRedis {
    // PINGs the redis-server it just started, before any Store is made over it, and
    // pauses between the PINGs until it answers.
    #[allow(clippy::disallowed_methods)]
    pub(crate) async fn start() -> TestRedis {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .unwrap_or_else(|e| panic!("no free port: {e}"));
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("temp dir: {e}"));
        let child = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .arg("--dir")
            .arg(dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("redis-server must be on PATH: {e}"));
        let redis = TestRedis {
            child,
            url: format!("redis://127.0.0.1:{port}"),
            _dir: dir,
        };
        for _ in 0..250 {
            if let Ok(mut conn) = redis.try_conn().await {
                let pong: redis::RedisResult<String> =
                    redis::cmd("PING").query_async(&mut conn).await;
                if pong.is_ok() {
                    return redis;
                }
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!("redis-server did not start on port {port}");
    }

    async fn try_conn(&self) -> redis::RedisResult<MultiplexedConnection> {
        redis::Client::open(self.url.as_str())?
            .get_multiplexed_async_connection()
            .await
    }

    pub(crate) fn url(&self) -> &str {
        &self.url
    }

    pub(crate) async fn conn(&self) -> MultiplexedConnection {
        self.try_conn()
            .await
            .unwrap_or_else(|e| panic!("connect to test redis: {e}"))
    }

    /// Zeroes Redis's command statistics (`CONFIG RESETSTAT`).
    #[allow(clippy::disallowed_methods, reason = "a test's view of Redis itself")]
    pub(crate) async fn reset_stats(&self) {
        let mut conn = self.conn().await;
        let reset: redis::RedisResult<()> = redis::cmd("CONFIG")
            .arg("RESETSTAT")
            .query_async(&mut conn)
            .await;
        reset.unwrap_or_else(|e| panic!("CONFIG RESETSTAT: {e}"));
    }

    /// How many times Redis ran `command` (lower case, as INFO commandstats names
    /// it) since the last reset.
    #[allow(clippy::disallowed_methods, reason = "a test's view of Redis itself")]
    pub(crate) async fn calls(&self, command: &str) -> u64 {
        let mut conn = self.conn().await;
        let info: redis::RedisResult<String> = redis::cmd("INFO")
            .arg("commandstats")
            .query_async(&mut conn)
            .await;
        let info = info.unwrap_or_else(|e| panic!("INFO commandstats: {e}"));
        let prefix = format!("cmdstat_{command}:calls=");
        info.lines()
            .find_map(|l| l.strip_prefix(prefix.as_str()))
            .and_then(|rest| rest.split(',').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or(0)
    }

    /// A store over this Redis, under the key prefix `dueq`.
    pub(crate) fn store(&self) -> Store {
        Store::new(
            &self.url,
            &Default::default(),
            "dueq",
            1,
            Duration::from_secs(5),
        )
        .unwrap_or_else(|e| panic!("store: {e}"))
    }
}

/// The use cases' context over a Redis that is never contacted (constructing a store
/// connects to nothing), for tests of what a call holds rather than what it does.
pub(crate) fn offline_context() -> Context {
    let store = Arc::new(
        Store::new(
            "redis://127.0.0.1:1",
            &Default::default(),
            "dueq",
            1,
            Duration::from_millis(100),
        )
        .unwrap_or_else(|e| panic!("store: {e}")),
    );
    let clock = Arc::new(Clock::new());
    let shutdown = CancellationToken::new();
    let metrics = crate::metrics::Metrics::new(100, Duration::from_secs(60));
    let sessions =
        crate::workers::Sessions::new("127.0.0.1:1".into(), clock.clone(), Duration::from_secs(5));
    let namespaces = Namespaces::new(shutdown.clone());
    let wakers = Wakers::new(
        store.clone(),
        clock.clone(),
        Duration::from_secs(1),
        namespaces.clone(),
    );
    Context {
        sessions,
        hub: crate::watch::Hub::new(
            store.clone(),
            metrics.clone(),
            shutdown.clone(),
            10,
            wakers.clone(),
        ),
        wakers,
        namespaces,
        metrics,
        store,
        clock,
        shutdown,
        dispatch: Default::default(),
        give_backs: Default::default(),
    }
}

impl Drop for TestRedis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `name` as a namespace, for tests that call a use case directly.
pub(crate) fn namespace(name: &str) -> crate::domain::Namespace {
    crate::domain::Namespace::parse(name).unwrap_or_else(|e| panic!("{name:?}: {e}"))
}
