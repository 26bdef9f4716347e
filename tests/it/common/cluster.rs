//! Redis Cluster and Redis Sentinel setups of real redis-server processes, each test's
//! own: a cluster of 3 masters and 3 replicas (`redis-cli --cluster create`), and one
//! master, one replica and three sentinels. Short timeouts (`cluster-node-timeout`,
//! `down-after-milliseconds`) so a killed master is failed over within seconds. Both
//! also come TLS-only (every node, bus, replication link and sentinel).

use std::{collections::BTreeMap, process::Command};

use deadpool_redis::redis::{self, aio::MultiplexedConnection};

use super::{certs::Certs, patience::Patience, raw::cmd, redis_server::Redis};

/// How long a cluster node may be unreachable before its replica takes over.
const NODE_TIMEOUT_MS: u32 = 1500;

/// A 3-master Redis Cluster on free ports (3 replicas too unless TLS-only); every
/// process killed on drop.
pub struct Cluster {
    pub nodes: Vec<Redis>,
    password: Option<String>,
    /// "rediss" for a TLS-only cluster, else "redis".
    scheme: &'static str,
}

fn s(args: &[&str]) -> Vec<String> {
    args.iter().map(|a| (*a).to_owned()).collect()
}

impl Cluster {
    /// Starts the cluster and waits until every node reports `cluster_state:ok` and
    /// every replica is in sync with its master.
    pub async fn start() -> Cluster {
        Cluster::start_with_password(None).await
    }

    /// The cluster with `requirepass` (and `masterauth`) `password` on every node.
    pub async fn start_with_password(password: Option<&str>) -> Cluster {
        Cluster::start_as(None, password, 1).await
    }

    /// A TLS-only cluster of 3 masters and no replicas (what the TLS tests need, in
    /// half the processes): clients, the cluster bus and replication all over TLS
    /// with `certs`, client certificates optional; `requirepass` `password` on every
    /// node when given.
    pub async fn start_tls(certs: &Certs, password: Option<&str>) -> Cluster {
        Cluster::start_as(Some(certs), password, 0).await
    }

    async fn start_as(
        certs: Option<&Certs>,
        password: Option<&str>,
        replicas_per_master: usize,
    ) -> Cluster {
        let timeout = NODE_TIMEOUT_MS.to_string();
        let mut args = s(&[
            "--cluster-enabled",
            "yes",
            "--cluster-node-timeout",
            &timeout,
            // A replica whose master was away long takes over all the same: the test
            // kills a master on purpose.
            "--cluster-replica-validity-factor",
            "0",
        ]);
        if let Some(password) = password {
            args.extend(s(&["--requirepass", password, "--masterauth", password]));
        }
        if certs.is_some() {
            args.extend(s(&["--tls-cluster", "yes", "--tls-replication", "yes"]));
        }
        let mut nodes = Vec::new();
        for _ in 0..3 * (1 + replicas_per_master) {
            nodes.push(match certs {
                Some(certs) => Redis::start_tls_with_args(certs, "optional", &args, password).await,
                None => Redis::start_with_args(&args, password).await,
            });
        }
        let mut create = Command::new("redis-cli");
        if let Some(certs) = certs {
            create
                .arg("--tls")
                .arg("--cacert")
                .arg(&certs.ca)
                .arg("--cert")
                .arg(&certs.client_cert)
                .arg("--key")
                .arg(&certs.client_key);
        }
        create.arg("--cluster").arg("create");
        for node in &nodes {
            create.arg(format!("127.0.0.1:{}", node.port));
        }
        create.args([
            "--cluster-replicas",
            &replicas_per_master.to_string(),
            "--cluster-yes",
        ]);
        if let Some(password) = password {
            create.args(["-a", password, "--no-auth-warning"]);
        }
        let out = tokio::task::spawn_blocking(move || create.output())
            .await
            .expect("join")
            .expect("run redis-cli --cluster create");
        assert!(
            out.status.success(),
            "redis-cli --cluster create failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let cluster = Cluster {
            nodes,
            password: password.map(str::to_owned),
            scheme: if certs.is_some() { "rediss" } else { "redis" },
        };
        cluster.wait_healthy().await;
        cluster
    }

    /// The seed URLs as dueq takes them: comma-separated, every node.
    pub fn url(&self) -> String {
        self.url_with_password(self.password.as_deref())
    }

    /// The seed URLs with `password` (or none) in each.
    pub fn url_with_password(&self, password: Option<&str>) -> String {
        let scheme = self.scheme;
        self.nodes
            .iter()
            .filter(|n| n.is_running())
            .map(|n| match password {
                Some(p) => format!("{scheme}://:{p}@127.0.0.1:{}", n.port),
                None => format!("{scheme}://127.0.0.1:{}", n.port),
            })
            .collect::<Vec<_>>()
            .join(",")
    }

    /// Waits until every running node says `cluster_state:ok`, agrees on the masters,
    /// and every replica's link to its master is up.
    pub async fn wait_healthy(&self) {
        let patience = Patience::new("the cluster to be healthy");
        while !self.is_healthy().await {
            patience.wait().await;
        }
    }

    async fn is_healthy(&self) -> bool {
        let mut masters_seen = Vec::new();
        for node in self.nodes.iter().filter(|n| n.is_running()) {
            let Ok(mut conn) = node_conn(node).await else {
                return false;
            };
            let info: String = match cmd("CLUSTER").arg("INFO").query_async(&mut conn).await {
                Ok(info) => info,
                Err(_) => return false,
            };
            if !info.contains("cluster_state:ok") {
                return false;
            }
            let replication: String =
                match cmd("INFO").arg("replication").query_async(&mut conn).await {
                    Ok(info) => info,
                    Err(_) => return false,
                };
            if replication.contains("role:slave") && !replication.contains("master_link_status:up")
            {
                return false;
            }
            let Ok(masters) = masters_of(&mut conn).await else {
                return false;
            };
            masters_seen.push(masters);
        }
        // Every node sees the same masters, each of them running.
        let running: Vec<u16> = self
            .nodes
            .iter()
            .filter(|n| n.is_running())
            .map(|n| n.port)
            .collect();
        masters_seen.windows(2).all(|w| w[0] == w[1])
            && masters_seen
                .first()
                .is_some_and(|m| m.len() == 3 && m.iter().all(|p| running.contains(p)))
    }

    /// The ports of the masters, as the first running node sees them.
    pub async fn master_ports(&self) -> Vec<u16> {
        let node = self.nodes.iter().find(|n| n.is_running()).expect("a node");
        let mut conn = node.conn().await;
        masters_of(&mut conn).await.expect("CLUSTER NODES")
    }

    /// The node (index into `nodes`) on `port`.
    pub fn index_of(&self, port: u16) -> usize {
        self.nodes
            .iter()
            .position(|n| n.port == port)
            .expect("a node on that port")
    }

    /// A direct connection to the node on `port`.
    pub async fn conn_to(&self, port: u16) -> MultiplexedConnection {
        self.nodes[self.index_of(port)].conn().await
    }

    /// Every key on each master (KEYS *), by master port.
    pub async fn keys_by_master(&self) -> BTreeMap<u16, Vec<String>> {
        let mut out = BTreeMap::new();
        for port in self.master_ports().await {
            let mut conn = self.conn_to(port).await;
            let keys: Vec<String> = cmd("KEYS")
                .arg("*")
                .query_async(&mut conn)
                .await
                .expect("KEYS");
            out.insert(port, keys);
        }
        out
    }

    /// Kills (SIGKILL) the master that holds `key`'s slot; returns its port.
    pub async fn kill_master_of(&mut self, key: &str) -> u16 {
        let port = self.master_of(key).await;
        let index = self.index_of(port);
        self.nodes[index].kill();
        port
    }

    /// The port of the master serving `key`'s slot.
    pub async fn master_of(&self, key: &str) -> u16 {
        self.try_master_of(key)
            .await
            .unwrap_or_else(|| panic!("no master serves the slot of {key}"))
    }

    /// The port of the master serving `key`'s slot, if one does (not while its
    /// master is failing).
    pub async fn try_master_of(&self, key: &str) -> Option<u16> {
        let node = self.nodes.iter().find(|n| n.is_running()).expect("a node");
        let mut conn = node.conn().await;
        let slot: u16 = cmd("CLUSTER")
            .arg("KEYSLOT")
            .arg(key)
            .query_async(&mut conn)
            .await
            .expect("CLUSTER KEYSLOT");
        let nodes: String = cmd("CLUSTER")
            .arg("NODES")
            .query_async(&mut conn)
            .await
            .expect("CLUSTER NODES");
        for line in nodes.lines() {
            let fields: Vec<&str> = line.split_whitespace().collect();
            if fields.len() < 9 || !fields[2].contains("master") || fields[2].contains("fail") {
                continue;
            }
            for range in &fields[8..] {
                let (lo, hi) = match range.split_once('-') {
                    Some((lo, hi)) => (lo.parse().ok(), hi.parse().ok()),
                    None => (range.parse().ok(), range.parse().ok()),
                };
                if let (Some(lo), Some(hi)) = (lo, hi) {
                    if (lo..=hi).contains(&slot) {
                        return Some(port_of(fields[1]));
                    }
                }
            }
        }
        None
    }
}

impl Cluster {
    /// The port of the replica of the master on `master` (every master has one in
    /// a cluster started with replicas).
    pub async fn replica_of(&self, master: u16) -> u16 {
        let node = self.nodes.iter().find(|n| n.is_running()).expect("a node");
        let mut conn = node.conn().await;
        let nodes: String = cmd("CLUSTER")
            .arg("NODES")
            .query_async(&mut conn)
            .await
            .expect("CLUSTER NODES");
        let lines: Vec<Vec<&str>> = nodes
            .lines()
            .map(|l| l.split_whitespace().collect())
            .filter(|f: &Vec<&str>| f.len() >= 8)
            .collect();
        let id = lines
            .iter()
            .find(|f| port_of(f[1]) == master)
            .map(|f| f[0])
            .unwrap_or_else(|| panic!("no node on port {master}"));
        lines
            .iter()
            .find(|f| f[2].contains("slave") && f[3] == id)
            .map(|f| port_of(f[1]))
            .unwrap_or_else(|| panic!("the master on {master} has no replica"))
    }
}

/// A connection for a health probe: a node that does not answer within 2 s is not
/// healthy yet.
async fn node_conn(node: &Redis) -> redis::RedisResult<MultiplexedConnection> {
    node.try_conn_within(std::time::Duration::from_secs(2))
        .await
}

/// `127.0.0.1:port@cport` -> port.
fn port_of(address: &str) -> u16 {
    address
        .split('@')
        .next()
        .and_then(|a| a.rsplit(':').next())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("a node address: {address}"))
}

/// The ports of the masters that serve slots and are not failed, sorted.
async fn masters_of(conn: &mut MultiplexedConnection) -> redis::RedisResult<Vec<u16>> {
    let nodes: String = cmd("CLUSTER").arg("NODES").query_async(conn).await?;
    let mut ports: Vec<u16> = nodes
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .filter(|f| f.len() >= 9 && f[2].contains("master") && !f[2].contains("fail"))
        .map(|f| port_of(f[1]))
        .collect();
    ports.sort_unstable();
    Ok(ports)
}

/// One master, one replica and three sentinels watching them under the name `MASTER`.
pub struct Sentinels {
    pub master: Redis,
    pub replica: Redis,
    pub sentinels: Vec<Redis>,
    /// "rediss" when every process speaks TLS only, else "redis".
    scheme: &'static str,
    _conf: tempfile::TempDir,
}

/// The master name the sentinels watch.
pub const SENTINEL_MASTER: &str = "dueqmaster";

impl Sentinels {
    /// Starts the setup and waits until every sentinel knows the master, the replica
    /// and the other two sentinels.
    pub async fn start() -> Sentinels {
        Sentinels::start_with_password(None).await
    }

    /// The setup with `requirepass` (and `masterauth`) `password` on master and
    /// replica; the sentinels know it (`auth-pass`) and need none themselves.
    pub async fn start_with_password(password: Option<&str>) -> Sentinels {
        Sentinels::start_as(None, password).await
    }

    /// The setup TLS-only: master, replica and sentinels serve TLS alone, and the
    /// replication link and the sentinels' links to master and replica are TLS too,
    /// with `certs` (client certificates optional).
    pub async fn start_tls(certs: &Certs) -> Sentinels {
        Sentinels::start_as(Some(certs), None).await
    }

    async fn start_as(certs: Option<&Certs>, password: Option<&str>) -> Sentinels {
        let mut args = match password {
            Some(p) => s(&["--requirepass", p, "--masterauth", p]),
            None => Vec::new(),
        };
        if certs.is_some() {
            args.extend(s(&["--tls-replication", "yes"]));
        }
        let start = |args: Vec<String>| async move {
            match certs {
                Some(certs) => Redis::start_tls_with_args(certs, "optional", &args, password).await,
                None => Redis::start_with_args(&args, password).await,
            }
        };
        let master = start(args.clone()).await;
        let mut replica_args = s(&["--replicaof", "127.0.0.1", &master.port.to_string()]);
        replica_args.extend(args.iter().cloned());
        let replica = start(replica_args).await;
        let conf = tempfile::tempdir().expect("temp dir");
        let mut sentinels = Vec::new();
        for i in 0..3 {
            // A sentinel rewrites its config file, so each has its own.
            let path = conf.path().join(format!("sentinel{i}.conf"));
            std::fs::write(
                &path,
                format!(
                    "sentinel monitor {SENTINEL_MASTER} 127.0.0.1 {} 2\n\
                     sentinel down-after-milliseconds {SENTINEL_MASTER} 1000\n\
                     sentinel failover-timeout {SENTINEL_MASTER} 5000\n\
                     sentinel parallel-syncs {SENTINEL_MASTER} 1\n{}",
                    master.port,
                    password
                        .map(|p| format!("sentinel auth-pass {SENTINEL_MASTER} {p}\n"))
                        .unwrap_or_default()
                ),
            )
            .expect("write sentinel.conf");
            let path = path.to_string_lossy().into_owned();
            // The config file must come first: redis-server <file> --sentinel ...
            sentinels.push(match certs {
                Some(certs) => Redis::start_sentinel_tls(&path, certs).await,
                None => Redis::start_sentinel(&path).await,
            });
        }
        let setup = Sentinels {
            master,
            replica,
            sentinels,
            scheme: if certs.is_some() { "rediss" } else { "redis" },
            _conf: conf,
        };
        setup.wait_healthy().await;
        setup
    }

    /// `redis+sentinel`-free form dueq takes: the sentinels, comma-separated.
    pub fn url(&self) -> String {
        let scheme = self.scheme;
        self.sentinels
            .iter()
            .map(|s| format!("{scheme}://127.0.0.1:{}", s.port))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// Waits until each sentinel sees a master with one replica in sync and two other
    /// sentinels.
    pub async fn wait_healthy(&self) {
        let patience = Patience::new("the sentinels to know master, replica and each other");
        loop {
            let mut ok = true;
            for sentinel in &self.sentinels {
                let Ok(mut conn) = node_conn(sentinel).await else {
                    ok = false;
                    break;
                };
                let fields: redis::RedisResult<Vec<String>> = cmd("SENTINEL")
                    .arg("MASTER")
                    .arg(SENTINEL_MASTER)
                    .query_async(&mut conn)
                    .await;
                let Ok(fields) = fields else {
                    ok = false;
                    break;
                };
                let map: BTreeMap<&str, &str> = fields
                    .chunks(2)
                    .filter_map(|c| Some((c.first()?.as_str(), c.get(1)?.as_str())))
                    .collect();
                if map.get("flags") != Some(&"master")
                    || map.get("num-slaves") != Some(&"1")
                    || map.get("num-other-sentinels") != Some(&"2")
                {
                    ok = false;
                    break;
                }
            }
            if ok {
                let master = self.master_port().await;
                let replica = if self.master.port == master {
                    &self.replica
                } else {
                    &self.master
                };
                // A node the sentinels are reconfiguring drops its clients (CLIENT
                // KILL on a role change): a refused connection or reply is "not yet".
                if let Ok(mut conn) = replica
                    .try_conn_within(std::time::Duration::from_secs(2))
                    .await
                {
                    let info: redis::RedisResult<String> =
                        cmd("INFO").arg("replication").query_async(&mut conn).await;
                    if info.is_ok_and(|info| info.contains("master_link_status:up")) {
                        return;
                    }
                }
            }
            patience.wait().await;
        }
    }

    /// The port of the master every sentinel names now, if they all agree (a sentinel
    /// that cannot be asked does not agree).
    pub async fn master_port_agreed(&self) -> Option<u16> {
        let mut agreed = None;
        for sentinel in &self.sentinels {
            let mut conn = node_conn(sentinel).await.ok()?;
            let (_, port): (String, u16) = cmd("SENTINEL")
                .arg("GET-MASTER-ADDR-BY-NAME")
                .arg(SENTINEL_MASTER)
                .query_async(&mut conn)
                .await
                .ok()?;
            if agreed.is_some_and(|p| p != port) {
                return None;
            }
            agreed = Some(port);
        }
        agreed
    }

    /// The port of the master the sentinels name now.
    pub async fn master_port(&self) -> u16 {
        let mut conn = self.sentinels[0].conn().await;
        let (_, port): (String, u16) = cmd("SENTINEL")
            .arg("GET-MASTER-ADDR-BY-NAME")
            .arg(SENTINEL_MASTER)
            .query_async(&mut conn)
            .await
            .expect("SENTINEL GET-MASTER-ADDR-BY-NAME");
        port
    }
}
