//! The Redis cost of one /metrics scrape: a second service with `--metrics-listen`
//! serves 10 namespaces of 10 queues each (100 queues, one job and one schedule
//! per namespace); one scrape's Redis commands and command time come from INFO
//! commandstats over a window holding that scrape, less an equal window without
//! one (the background's share). A second scrape within the gauges' cache costs
//! nothing in Redis; it is measured the same way. The service runs with its
//! background work put off, so the windows hold little but the scrape.

use std::{net::SocketAddr, time::Duration};

use deadpool_redis::redis::aio::MultiplexedConnection;
use dueq::proto::{self, queue_service_client::QueueServiceClient};
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::TcpStream,
    time::Instant,
};
use tonic_health::pb::{
    health_check_response::ServingStatus, health_client::HealthClient, HealthCheckRequest,
};

use crate::{
    env::{free_port, Env},
    redis_info::info,
    report::{Report, Row},
    seed,
    service::Service,
    Result,
};

const S: &str = "metrics";
const NAMESPACES: usize = 10;
const QUEUES_PER_NAMESPACE: usize = 10;
/// Each measured window: long enough to hold a scrape on a loaded box.
const WINDOW: Duration = Duration::from_secs(1);

pub(crate) async fn run(env: &Env, report: &mut Report) -> Result<()> {
    let addr: SocketAddr = format!("127.0.0.1:{}", free_port()?).parse()?;
    let metrics = format!("127.0.0.1:{}", free_port()?);
    let extra = [
        "--metrics-listen",
        metrics.as_str(),
        "--recheck-interval",
        "1h",
        "--check-interval",
        "1h",
        "--job-prune-interval",
        "1h",
    ]
    .map(Into::into);
    let mut service = Service::start_with(&env.dueq_bin, addr, &env.redis_url, &extra)?;
    let result = measure(env, &mut service, addr, &metrics, report).await;
    service.stop();
    result
}

async fn measure(
    env: &Env,
    service: &mut Service,
    addr: SocketAddr,
    metrics: &str,
    report: &mut Report,
) -> Result<()> {
    let mut client = serving(service, addr).await?;
    for n in 0..NAMESPACES {
        let namespace = format!("metrics{n}");
        client
            .upsert_schedule(proto::UpsertScheduleRequest {
                namespace: namespace.clone(),
                schedule: Some(seed::every_1h("anchor")),
            })
            .await?;
        let jobs = (0..QUEUES_PER_NAMESPACE)
            .map(|q| proto::EnqueueRequest {
                queue: format!("q{q}"),
                name: "bench".into(),
                ..Default::default()
            })
            .collect();
        client
            .enqueue_batch(proto::EnqueueBatchRequest { namespace, jobs })
            .await?;
    }
    let mut conn = env.conn().await?;
    let idle = window(&mut conn, None).await?;
    let first = window(&mut conn, Some(metrics)).await?;
    let cached = window(&mut conn, Some(metrics)).await?;
    let queues = NAMESPACES * QUEUES_PER_NAMESPACE;
    for (name, w) in [("first scrape", &first), ("cached scrape", &cached)] {
        let calls = w.calls.saturating_sub(idle.calls);
        let usec = w.usec.saturating_sub(idle.usec);
        report.push(
            Row::new(
                S,
                format!("{name}, {queues} queues in {NAMESPACES} namespaces"),
            )
            .with("redis_commands", calls)
            .with("redis_usec", usec)
            .with("response_bytes", w.bytes as u64)
            .with("scrape_ms", w.scrape_ms)
            .note(format!(
                "{calls} Redis commands, {usec} µs of Redis time; {} bytes in {:.1} ms",
                w.bytes, w.scrape_ms
            )),
        );
    }
    report.note(
        S,
        format!(
            "INFO commandstats over a {WINDOW:?} window with the scrape, less one without \
             ({} commands, {} µs: the background's share); gauges cached 5 s",
            idle.calls, idle.usec
        ),
    );
    Ok(())
}

/// What one window held.
struct Window {
    calls: u64,
    usec: u64,
    bytes: usize,
    scrape_ms: f64,
}

/// Commands and command time in Redis over `WINDOW`, scraping `metrics` at its
/// start when given. The INFO calls themselves are left out.
async fn window(conn: &mut MultiplexedConnection, metrics: Option<&str>) -> Result<Window> {
    let before = info(conn, "commandstats").await?;
    let started = Instant::now();
    let (bytes, scrape_ms) = match metrics {
        Some(addr) => {
            let body = scrape(addr).await?;
            (body.len(), started.elapsed().as_secs_f64() * 1000.0)
        }
        None => (0, 0.0),
    };
    tokio::time::sleep_until(started + WINDOW).await;
    let after = info(conn, "commandstats").await?;
    let (calls_before, usec_before) = totals(&before);
    let (calls_after, usec_after) = totals(&after);
    Ok(Window {
        calls: calls_after.saturating_sub(calls_before),
        usec: usec_after.saturating_sub(usec_before),
        bytes,
        scrape_ms,
    })
}

/// Calls and usec summed over every command but INFO.
fn totals(commandstats: &str) -> (u64, u64) {
    let field = |rest: &str, name: &str| {
        rest.split(',')
            .find_map(|kv| kv.strip_prefix(name))
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0)
    };
    commandstats
        .lines()
        .filter(|line| line.starts_with("cmdstat_") && !line.starts_with("cmdstat_info:"))
        .filter_map(|line| line.split_once(':'))
        .fold((0, 0), |(calls, usec), (_, rest)| {
            (calls + field(rest, "calls="), usec + field(rest, "usec="))
        })
}

/// GET /metrics over HTTP/1.1; the body.
async fn scrape(addr: &str) -> Result<String> {
    let mut stream = TcpStream::connect(addr).await?;
    let request = format!("GET /metrics HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await?;
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).await?;
    let text = String::from_utf8(raw)?;
    let (head, body) = text
        .split_once("\r\n\r\n")
        .ok_or("metrics: no end of headers")?;
    if !head.starts_with("HTTP/1.1 200") {
        return Err(format!("metrics: {}", head.lines().next().unwrap_or("")).into());
    }
    Ok(body.to_owned())
}

/// A client of the service once it answers SERVING.
async fn serving(
    service: &mut Service,
    addr: SocketAddr,
) -> Result<QueueServiceClient<tonic::transport::Channel>> {
    let endpoint = format!("http://{addr}");
    for _ in 0..500 {
        if let Some(status) = service.exited() {
            return Err(format!("the metrics service exited: {status}").into());
        }
        if let Ok(channel) = tonic::transport::Channel::from_shared(endpoint.clone())?
            .connect()
            .await
        {
            let check = HealthClient::new(channel.clone())
                .check(HealthCheckRequest {
                    service: "dueq.v1.QueueService".into(),
                })
                .await;
            if check.is_ok_and(|r| r.get_ref().status == ServingStatus::Serving as i32) {
                return Ok(QueueServiceClient::new(channel));
            }
        }
        crate::local::pause(Duration::from_millis(20)).await;
    }
    Err("the metrics service did not become SERVING".into())
}
