//! Test harness: a real redis-server on a free port and the real service in-process
//! on another, talked to over real gRPC. No mocks.
#![allow(dead_code)]

use std::{
    net::TcpListener as StdListener,
    path::PathBuf,
    process::{Child, Command, Stdio},
    time::Duration,
};

use deadpool_redis::redis::{self, aio::MultiplexedConnection};
use dueq::{config::ServeConfig, proto::queue_service_client::QueueServiceClient};
use tokio::{net::TcpListener, sync::oneshot, task::JoinHandle};
use tonic::transport::Channel;

pub use dueq::proto;

pub type Client = QueueServiceClient<Channel>;

fn free_port() -> u16 {
    StdListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("no free port on 127.0.0.1")
}

/// A redis-server child process, killed on drop.
pub struct Redis {
    pub port: u16,
    child: Option<Child>,
    dir: tempfile::TempDir,
}

fn redis_server_binary() -> PathBuf {
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|p| p.join("redis-server"))
            .find(|p| p.is_file())
    });
    match found {
        Some(path) => path,
        None => panic!(
            "redis-server not found on PATH: install it (Debian/Ubuntu: apt-get install -y redis-server; macOS: brew install redis)"
        ),
    }
}

impl Redis {
    pub async fn start() -> Redis {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut redis = Redis {
            port: free_port(),
            child: None,
            dir,
        };
        redis.spawn().await;
        redis
    }

    async fn spawn(&mut self) {
        let child = Command::new(redis_server_binary())
            .args(["--port", &self.port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no", "--protected-mode", "no"])
            .arg("--dir")
            .arg(self.dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start redis-server");
        self.child = Some(child);
        for _ in 0..200 {
            if let Ok(mut conn) = self.try_conn().await {
                let pong: Result<String, _> = redis::cmd("PING").query_async(&mut conn).await;
                if pong.is_ok() {
                    return;
                }
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!("redis-server did not start on port {}", self.port);
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    async fn try_conn(&self) -> redis::RedisResult<MultiplexedConnection> {
        redis::Client::open(self.url())?
            .get_multiplexed_async_connection()
            .await
    }

    /// A direct connection, for tests that inspect or corrupt the store.
    pub async fn conn(&self) -> MultiplexedConnection {
        self.try_conn().await.expect("connect to test redis")
    }

    /// Kills redis-server (SIGKILL: nothing is saved).
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts redis-server again on the same port, empty.
    pub async fn restart(&mut self) {
        self.kill();
        self.spawn().await;
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The dueq service running in-process on a free port.
pub struct Service {
    pub addr: std::net::SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    handle: Option<JoinHandle<()>>,
}

pub fn config(redis_url: &str) -> ServeConfig {
    let mut config = ServeConfig::for_redis(redis_url);
    config.health_interval = Duration::from_millis(200);
    config
}

impl Service {
    pub async fn start(redis_url: &str) -> Service {
        Service::start_with(config(redis_url)).await
    }

    pub async fn start_with(config: ServeConfig) -> Service {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("local addr");
        let (stop, stopped) = oneshot::channel::<()>();
        let handle = tokio::spawn(async move {
            let shutdown = async {
                let _ = stopped.await;
            };
            if let Err(e) = dueq::server::run(config, listener, shutdown).await {
                panic!("service failed: {e}");
            }
        });
        let service = Service {
            addr,
            stop: Some(stop),
            handle: Some(handle),
        };
        service.wait_serving().await;
        service
    }

    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub async fn client(&self) -> Client {
        let channel = Channel::from_shared(self.endpoint())
            .expect("endpoint")
            .connect()
            .await
            .expect("connect to service");
        QueueServiceClient::new(channel)
            .max_decoding_message_size(64 * 1024 * 1024)
            .max_encoding_message_size(64 * 1024 * 1024)
    }

    pub async fn health(&self) -> i32 {
        let channel = Channel::from_shared(self.endpoint())
            .expect("endpoint")
            .connect()
            .await
            .expect("connect");
        let mut health = tonic_health::pb::health_client::HealthClient::new(channel);
        match health
            .check(tonic_health::pb::HealthCheckRequest {
                service: "dueq.v1.QueueService".into(),
            })
            .await
        {
            Ok(r) => r.into_inner().status,
            Err(_) => -1,
        }
    }

    /// Waits until the service reports SERVING (Redis reachable, scripts loaded).
    pub async fn wait_serving(&self) {
        for _ in 0..250 {
            if let Ok(channel) = Channel::from_shared(self.endpoint())
                .expect("endpoint")
                .connect()
                .await
            {
                let mut health = tonic_health::pb::health_client::HealthClient::new(channel);
                if let Ok(r) = health
                    .check(tonic_health::pb::HealthCheckRequest {
                        service: "dueq.v1.QueueService".into(),
                    })
                    .await
                {
                    if r.into_inner().status
                        == tonic_health::pb::health_check_response::ServingStatus::Serving as i32
                    {
                        return;
                    }
                }
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!("service on {} never became SERVING", self.addr);
    }

    /// Graceful shutdown, as on SIGTERM; waits for the server task to end.
    pub async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(handle) = self.handle.take() {
            let _ = tokio::time::timeout(Duration::from_secs(15), handle).await;
        }
    }

    /// Simulates a crash: the task is aborted mid-flight, nothing drains.
    pub fn kill(mut self) {
        if let Some(handle) = self.handle.take() {
            handle.abort();
        }
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        if let Some(handle) = self.handle.take() {
            handle.abort();
        }
    }
}

// ---- request builders ----

pub fn every(id: &str, secs: i64) -> proto::Schedule {
    proto::Schedule {
        id: id.into(),
        timing: Some(proto::schedule::Timing::Every(prost_types::Duration {
            seconds: secs,
            nanos: 0,
        })),
        job_name: "job".into(),
        ..Default::default()
    }
}

pub fn cron(id: &str, expr: &str, tz: &str) -> proto::Schedule {
    proto::Schedule {
        id: id.into(),
        timing: Some(proto::schedule::Timing::Cron(expr.into())),
        timezone: tz.into(),
        job_name: "job".into(),
        ..Default::default()
    }
}

pub fn ts(ms: i64) -> prost_types::Timestamp {
    prost_types::Timestamp {
        seconds: ms.div_euclid(1000),
        nanos: (ms.rem_euclid(1000) * 1_000_000) as i32,
    }
}

pub fn ms(ts: &Option<prost_types::Timestamp>) -> i64 {
    let ts = ts.as_ref().expect("timestamp set");
    ts.seconds * 1000 + i64::from(ts.nanos) / 1_000_000
}

pub fn wait(ms: u64) -> Option<prost_types::Duration> {
    Some(prost_types::Duration {
        seconds: (ms / 1000) as i64,
        nanos: ((ms % 1000) * 1_000_000) as i32,
    })
}

pub async fn upsert(
    client: &mut Client,
    ns: &str,
    schedule: proto::Schedule,
) -> proto::UpsertScheduleResponse {
    client
        .upsert_schedule(proto::UpsertScheduleRequest {
            namespace: ns.into(),
            schedule: Some(schedule),
        })
        .await
        .expect("upsert")
        .into_inner()
}

pub async fn claim(client: &mut Client, ns: &str, wait_ms: u64) -> Option<proto::Occurrence> {
    client
        .claim_due_schedule(proto::ClaimDueScheduleRequest {
            namespace: ns.into(),
            worker_id: "test".into(),
            wait: wait(wait_ms),
            lease: None,
        })
        .await
        .expect("claim")
        .into_inner()
        .occurrence
}

pub async fn get(client: &mut Client, ns: &str, id: &str) -> proto::Schedule {
    client
        .get_schedule(proto::GetScheduleRequest {
            namespace: ns.into(),
            id: id.into(),
        })
        .await
        .expect("get")
        .into_inner()
        .schedule
        .expect("schedule")
}

/// Redis's clock, in epoch ms.
pub async fn redis_now(conn: &mut MultiplexedConnection) -> i64 {
    let (s, us): (i64, i64) = redis::cmd("TIME").query_async(conn).await.expect("TIME");
    s * 1000 + us / 1000
}

/// Makes a stored schedule due now by rewriting its record and its index score, as a
/// clock jump would. Tests use it instead of sleeping for minutes.
pub async fn force_due(conn: &mut MultiplexedConnection, ns: &str, id: &str, next_ms: i64) {
    dueq::probe::set_next_run(conn, &dueq::probe::Keys::new("dueq", ns), id, next_ms)
        .await
        .expect("force due");
}

/// The leaf boundaries of schema 3's schedule listing, in order.
async fn listing_boundaries(conn: &mut MultiplexedConnection, ns: &str) -> Vec<String> {
    redis::cmd("ZRANGE")
        .arg(format!("dueq:{{{ns}}}:lt"))
        .arg(0)
        .arg(-1)
        .query_async(conn)
        .await
        .expect("ZRANGE lt")
}

/// The ids of schema 3's schedule listing (`lt` boundaries, `lk:<boundary>` leaves),
/// in listing order, with the leaves they sit in; checks the listing's shape as it
/// goes: no leaf empty or over its bound, every id within its leaf's range.
pub async fn listed_schedule_ids(conn: &mut MultiplexedConnection, ns: &str) -> Vec<String> {
    let boundaries = listing_boundaries(conn, ns).await;
    let mut out: Vec<String> = Vec::new();
    for (i, b) in boundaries.iter().enumerate() {
        let ids: Vec<String> = redis::cmd("ZRANGE")
            .arg(format!("dueq:{{{ns}}}:lk:{b}"))
            .arg(0)
            .arg(-1)
            .query_async(conn)
            .await
            .expect("ZRANGE leaf");
        assert!(
            !ids.is_empty() && ids.len() <= 120,
            "leaf {b:?}: {} ids",
            ids.len()
        );
        let next = boundaries.get(i + 1);
        for id in &ids {
            assert!(id.as_bytes() >= b.as_bytes(), "{id:?} below its leaf {b:?}");
            assert!(
                next.is_none_or(|n| id.as_bytes() < n.as_bytes()),
                "{id:?} at or past the next leaf {next:?}"
            );
        }
        out.extend(ids);
    }
    out
}

/// Turns a namespace written by this dueq into schema 2: the same schedules as
/// hashes, listed in one `:ids` zset, meta `schema` 2.
pub async fn to_schema_2(conn: &mut MultiplexedConnection, ns: &str) {
    let ids = listed_schedule_ids(conn, ns).await;
    schedule_layout(conn, ns, RecordOp::ToHash, &ids).await;
    let boundaries = listing_boundaries(conn, ns).await;
    let mut pipe = redis::pipe();
    pipe.cmd("DEL").arg(format!("dueq:{{{ns}}}:lt")).ignore();
    for b in &boundaries {
        pipe.cmd("DEL")
            .arg(format!("dueq:{{{ns}}}:lk:{b}"))
            .ignore();
    }
    for id in &ids {
        pipe.cmd("ZADD")
            .arg(format!("dueq:{{{ns}}}:ids"))
            .arg(0)
            .arg(id)
            .ignore();
    }
    pipe.cmd("HSET")
        .arg(format!("dueq:{{{ns}}}:meta"))
        .arg("schema")
        .arg("2")
        .ignore();
    pipe.cmd("HDEL")
        .arg(format!("dueq:{{{ns}}}:meta"))
        .arg("listed")
        .ignore();
    let _: () = pipe.query_async(conn).await.expect("to schema 2");
}

pub use dueq::probe::RecordOp;

/// Runs `op` on the records of `ids` in `ns`; returns each record's fields as text
/// (after the op).
pub async fn schedule_layout(
    conn: &mut MultiplexedConnection,
    ns: &str,
    op: RecordOp,
    ids: &[String],
) -> Vec<std::collections::HashMap<String, String>> {
    dueq::probe::schedule_records(conn, &dueq::probe::Keys::new("dueq", ns), op, ids)
        .await
        .expect("schedule layout tool")
        .into_iter()
        .map(|fields| fields.into_iter().collect())
        .collect()
}

// ---- fault-injection helpers (tests/faults.rs) ----

impl Redis {
    /// Starts redis-server on a given port, e.g. one a service was already pointed at.
    pub async fn start_on(port: u16) -> Redis {
        let mut redis = Redis {
            port,
            child: None,
            dir: tempfile::tempdir().expect("temp dir"),
        };
        redis.spawn().await;
        redis
    }

    /// A port with nothing listening on it (yet).
    pub fn free_port() -> u16 {
        free_port()
    }
}

impl Service {
    /// Starts the service without waiting for SERVING (Redis may be unreachable).
    pub async fn start_unready(config: ServeConfig) -> Service {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("local addr");
        let (stop, stopped) = oneshot::channel::<()>();
        let handle = tokio::spawn(async move {
            let shutdown = async {
                let _ = stopped.await;
            };
            if let Err(e) = dueq::server::run(config, listener, shutdown).await {
                panic!("service failed: {e}");
            }
        });
        Service {
            addr,
            stop: Some(stop),
            handle: Some(handle),
        }
    }

    /// The health status of one health-service name ("" is the whole server).
    pub async fn health_of(&self, service: &str) -> i32 {
        let Ok(channel) = Channel::from_shared(self.endpoint())
            .expect("endpoint")
            .connect()
            .await
        else {
            return -1;
        };
        let mut health = tonic_health::pb::health_client::HealthClient::new(channel);
        match health
            .check(tonic_health::pb::HealthCheckRequest {
                service: service.into(),
            })
            .await
        {
            Ok(r) => r.into_inner().status,
            Err(_) => -1,
        }
    }
}
// ---- job helpers ----

pub fn job(queue: &str, name: &str) -> proto::EnqueueRequest {
    proto::EnqueueRequest {
        namespace: "ns".into(),
        queue: queue.into(),
        name: name.into(),
        ..Default::default()
    }
}

pub fn dur(ms: u64) -> prost_types::Duration {
    prost_types::Duration {
        seconds: (ms / 1000) as i64,
        nanos: ((ms % 1000) * 1_000_000) as i32,
    }
}

pub async fn enqueue(client: &mut Client, req: proto::EnqueueRequest) -> proto::EnqueueResponse {
    client.enqueue(req).await.expect("enqueue").into_inner()
}

pub fn claim_req(queues: &[&str], wait_ms: u64, lease_ms: Option<u64>) -> proto::ClaimJobRequest {
    proto::ClaimJobRequest {
        namespace: "ns".into(),
        queues: queues.iter().map(|q| q.to_string()).collect(),
        worker_id: "test-worker".into(),
        wait: wait(wait_ms),
        lease: lease_ms.map(dur),
        max_jobs: 1,
    }
}

/// Claims at most one job from `queues`.
pub async fn claim_job(
    client: &mut Client,
    queues: &[&str],
    wait_ms: u64,
    lease_ms: Option<u64>,
) -> Option<proto::ClaimedJob> {
    client
        .claim_job(claim_req(queues, wait_ms, lease_ms))
        .await
        .expect("claim job")
        .into_inner()
        .jobs
        .pop()
}

pub async fn ack_job(
    client: &mut Client,
    id: &str,
    token: &str,
) -> Result<proto::AckJobResponse, tonic::Status> {
    client
        .ack_job(proto::AckJobRequest {
            namespace: "ns".into(),
            job_id: id.into(),
            lease_token: token.into(),
        })
        .await
        .map(|r| r.into_inner())
}

pub async fn fail_job(
    client: &mut Client,
    id: &str,
    token: &str,
    error: &str,
) -> Result<proto::FailJobResponse, tonic::Status> {
    client
        .fail_job(proto::FailJobRequest {
            namespace: "ns".into(),
            job_id: id.into(),
            lease_token: token.into(),
            error: error.into(),
            ..Default::default()
        })
        .await
        .map(|r| r.into_inner())
}

pub async fn get_job(client: &mut Client, id: &str) -> proto::Job {
    client
        .get_job(proto::GetJobRequest {
            namespace: "ns".into(),
            job_id: id.into(),
        })
        .await
        .expect("get job")
        .into_inner()
        .job
        .expect("job")
}

pub fn state(job: &proto::Job) -> proto::JobState {
    proto::JobState::try_from(job.state).expect("known state")
}

/// Every key and its full contents (type-aware), to prove a call wrote nothing.
pub async fn snapshot(conn: &mut MultiplexedConnection) -> Vec<(String, String)> {
    let mut keys: Vec<String> = redis::cmd("KEYS")
        .arg("*")
        .query_async(conn)
        .await
        .expect("KEYS");
    keys.sort();
    let mut out = Vec::new();
    for key in keys {
        let dump: Option<Vec<u8>> = redis::cmd("DUMP")
            .arg(&key)
            .query_async(conn)
            .await
            .expect("DUMP");
        out.push((key, format!("{dump:?}")));
    }
    out
}

pub async fn dbsize(conn: &mut MultiplexedConnection) -> i64 {
    redis::cmd("DBSIZE")
        .query_async(conn)
        .await
        .expect("DBSIZE")
}

/// The job ids a queue's listing holds, in enqueue order, read straight from its
/// listing buckets (`lb:<n/64>:<queue>`, field n mod 64), as ListJobs walks them.
#[allow(dead_code)]
pub async fn listed_job_ids(
    conn: &mut MultiplexedConnection,
    ns: &str,
    queue: &str,
) -> Vec<String> {
    let last: Option<i64> = redis::cmd("HGET")
        .arg(format!("dueq:{{{ns}}}:meta"))
        .arg(format!("n:{queue}"))
        .query_async(conn)
        .await
        .expect("HGET");
    let mut ids = Vec::new();
    for bucket in 0..=last.unwrap_or(0) / 64 {
        let entries: Vec<(i64, String)> = redis::cmd("HGETALL")
            .arg(format!("dueq:{{{ns}}}:lb:{bucket}:{queue}"))
            .query_async(conn)
            .await
            .expect("HGETALL");
        let mut entries = entries;
        entries.sort();
        ids.extend(entries.into_iter().map(|(_, id)| id));
    }
    ids
}
