//! What one tenant's abuse costs another (issue 29 item 4): tenant B's GetJob of a
//! small job, one call at a time, alone and then while tenant A pages full-view
//! ListJobs over 1 MiB jobs from 16 connections (one caller each, as 16 processes
//! would); the target holds B's p99 meanwhile to at most twice its p99 alone.
//!
//! Both are principals of an auth file naming two, on a second `dueq serve` started
//! with that file and the server's defaults otherwise, so each holds only its own
//! shares and budgets. A's callers page on and on, starting over at the end of the
//! queue; a refusal (RESOURCE_EXHAUSTED) is counted and the caller calls again, as
//! an abusive client would.

use std::{
    ffi::OsString,
    net::SocketAddr,
    path::Path,
    sync::{
        atomic::{AtomicBool, AtomicU64, Ordering},
        Arc,
    },
    time::{Duration, Instant},
};

use dueq::proto::{self, queue_service_client::QueueServiceClient};
use prost::Message;
use sha2::{Digest, Sha256};
use tonic::{metadata::AsciiMetadataValue, transport::Channel, Code, Request};

use crate::{
    env::{free_port, Client, Env},
    load::{drive, Stats},
    local::pause,
    plan::Plan,
    report::{Report, Row},
    service::Service,
    Result,
};

const S: &str = "tenants";
const NS_A: &str = "tenant-a";
const NS_B: &str = "tenant-b";
const QUEUE: &str = "big";

/// Row names (the target check, report/targets.rs, reads LOADED's ratio by name).
const ALONE: &str = "tenant B GetJob p99 alone";
const LOADED: &str = "tenant B GetJob p99 while A pages 1 MiB jobs";

/// How A abuses the service: callers, jobs and their payload's size.
struct Abuse {
    callers: usize,
    jobs: usize,
    payload: usize,
}

impl Abuse {
    fn of(plan: &Plan) -> Abuse {
        if plan.smoke {
            Abuse {
                callers: 4,
                jobs: 8,
                payload: 64 * 1024,
            }
        } else {
            Abuse {
                callers: 16,
                jobs: 32,
                payload: 1024 * 1024,
            }
        }
    }
}

/// One tenant: its client and its bearer token.
#[derive(Clone)]
struct Tenant {
    client: Client,
    token: AsciiMetadataValue,
}

impl Tenant {
    fn request<T>(&self, message: T) -> Request<T> {
        let mut request = Request::new(message);
        request
            .metadata_mut()
            .insert("authorization", self.token.clone());
        request
    }
}

pub(crate) async fn run(plan: &Plan, env: &Env, report: &mut Report) -> Result<()> {
    let dir = std::env::temp_dir().join(format!("dueq-bench-tenants-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let result = start_and_measure(plan, env, &dir, report).await;
    let _ = std::fs::remove_dir_all(&dir);
    result
}

async fn start_and_measure(plan: &Plan, env: &Env, dir: &Path, report: &mut Report) -> Result<()> {
    let auth_file = dir.join("auth.toml");
    std::fs::write(&auth_file, auth_toml())?;
    let addr: SocketAddr = format!("127.0.0.1:{}", free_port()?).parse()?;
    let extra: Vec<OsString> = vec!["--auth-file".into(), auth_file.into()];
    let mut service = Service::start_with(&env.dueq_bin, addr, &env.redis_url, &extra)?;
    let result = measure(plan, addr, &mut service, report).await;
    service.stop();
    result
}

async fn measure(
    plan: &Plan,
    addr: SocketAddr,
    service: &mut Service,
    report: &mut Report,
) -> Result<()> {
    let abuse = Abuse::of(plan);
    let b = Tenant {
        client: serving_client(addr, service).await?,
        token: bearer("b")?,
    };
    let mut a = Vec::with_capacity(abuse.callers);
    for _ in 0..abuse.callers {
        a.push(Tenant {
            client: client(addr).await?,
            token: bearer("a")?,
        });
    }
    seed_a(&a[0], &abuse).await?;
    let job_id = seed_b(&b).await?;
    let alone = b_gets(plan, &b, &job_id).await?;
    let paging = Paging::start(a);
    paging.wait_for_pages(abuse.callers as u64).await?;
    let loaded = b_gets(plan, &b, &job_id).await;
    let pages = paging.stop().await?;
    push(report, &alone, &loaded?, &pages, &abuse);
    Ok(())
}

/// B's GetJob of its small job, one call at a time, for the phase's duration.
async fn b_gets(plan: &Plan, b: &Tenant, job_id: &str) -> Result<Stats> {
    let b = b.clone();
    let job_id = job_id.to_owned();
    drive(1, plan.duration, move |_| {
        let b = b.clone();
        let job_id = job_id.clone();
        move || {
            let mut client = b.client.clone();
            let request = b.request(proto::GetJobRequest {
                namespace: NS_B.into(),
                job_id: job_id.clone(),
            });
            async move {
                client.get_job(request).await?;
                Ok(1)
            }
        }
    })
    .await
}

/// What A's callers read while B was measured.
#[derive(Debug, Default)]
struct Pages {
    pages: u64,
    bytes: u64,
    refused: u64,
    secs: f64,
}

/// A's callers, paging until stopped.
struct Paging {
    stop: Arc<AtomicBool>,
    counts: Arc<[AtomicU64; 3]>,
    tasks: Vec<tokio::task::JoinHandle<Result<()>>>,
    started: Instant,
}

impl Paging {
    fn start(callers: Vec<Tenant>) -> Paging {
        let stop = Arc::new(AtomicBool::new(false));
        let counts: Arc<[AtomicU64; 3]> = Arc::new(Default::default());
        let tasks = callers
            .into_iter()
            .map(|a| tokio::spawn(page_on(a, stop.clone(), counts.clone())))
            .collect();
        Paging {
            stop,
            counts,
            tasks,
            started: Instant::now(),
        }
    }

    /// Until A's callers have read `pages` pages between them (each is under way).
    async fn wait_for_pages(&self, pages: u64) -> Result<()> {
        for _ in 0..6_000 {
            if self.counts[0].load(Ordering::Relaxed) >= pages {
                return Ok(());
            }
            if self.tasks.iter().any(tokio::task::JoinHandle::is_finished) {
                return Err("one of tenant A's callers stopped before B was measured".into());
            }
            pause(Duration::from_millis(10)).await;
        }
        Err("tenant A's callers read no pages within a minute".into())
    }

    async fn stop(self) -> Result<Pages> {
        self.stop.store(true, Ordering::Relaxed);
        let secs = self.started.elapsed().as_secs_f64();
        for task in self.tasks {
            task.await??;
        }
        let count = |i: usize| self.counts[i].load(Ordering::Relaxed);
        Ok(Pages {
            pages: count(0),
            bytes: count(1),
            refused: count(2),
            secs,
        })
    }
}

/// One of A's callers: full-view pages of A's queue, over and over, until `stop`.
/// Counts pages, their bytes and refusals in `counts`.
async fn page_on(a: Tenant, stop: Arc<AtomicBool>, counts: Arc<[AtomicU64; 3]>) -> Result<()> {
    let mut client = a.client.clone();
    let mut token = String::new();
    while !stop.load(Ordering::Relaxed) {
        let request = a.request(proto::ListJobsRequest {
            namespace: NS_A.into(),
            queue: QUEUE.into(),
            page_size: 100,
            page_token: std::mem::take(&mut token),
            view: proto::JobView::Full as i32,
            ..Default::default()
        });
        match client.list_jobs(request).await {
            Ok(reply) => {
                let reply = reply.into_inner();
                counts[0].fetch_add(1, Ordering::Relaxed);
                counts[1].fetch_add(reply.encoded_len() as u64, Ordering::Relaxed);
                token = reply.next_page_token;
            }
            Err(status) if status.code() == Code::ResourceExhausted => {
                counts[2].fetch_add(1, Ordering::Relaxed);
            }
            Err(status) => return Err(status.into()),
        }
    }
    Ok(())
}

fn push(report: &mut Report, alone: &Stats, loaded: &Stats, pages: &Pages, abuse: &Abuse) {
    report.push(
        Row::latency(S, ALONE, alone)
            .note("GetJob of a small job, one call at a time, no other tenant calling"),
    );
    let ratio = (alone.p99_ms > 0.0).then(|| loaded.p99_ms / alone.p99_ms);
    let mib_s = pages.bytes as f64 / (1024.0 * 1024.0) / pages.secs.max(1e-9);
    report.push(
        Row::latency(S, LOADED, loaded)
            .with("ratio_to_alone", ratio)
            .with("a_pages", pages.pages)
            .with("a_mib_per_s", mib_s)
            .with("a_refused", pages.refused)
            .note(format!(
                "p99 {:.2}x alone; A: {} callers on {} connections paging full-view \
                 ListJobs over {} jobs of {} KiB: {} pages, {mib_s:.1} MiB/s, {} refused",
                ratio.unwrap_or(0.0),
                abuse.callers,
                abuse.callers,
                abuse.jobs,
                abuse.payload / 1024,
                pages.pages,
                pages.refused
            )),
    );
    report.note(
        S,
        "two principals of one auth file on a second `dueq serve` with default caps; \
         ratio = B's p99 while A pages / B's p99 alone",
    );
}

/// A's queue: `abuse.jobs` jobs of `abuse.payload` bytes.
async fn seed_a(a: &Tenant, abuse: &Abuse) -> Result<()> {
    let mut client = a.client.clone();
    for i in 0..abuse.jobs {
        let mut payload = vec![b'x'; abuse.payload];
        payload[..8].copy_from_slice(&(i as u64).to_be_bytes());
        client
            .enqueue(a.request(proto::EnqueueRequest {
                namespace: NS_A.into(),
                queue: QUEUE.into(),
                name: "big".into(),
                payload,
                ..Default::default()
            }))
            .await?;
    }
    Ok(())
}

/// B's one small job; its id.
async fn seed_b(b: &Tenant) -> Result<String> {
    let reply = b
        .client
        .clone()
        .enqueue(b.request(proto::EnqueueRequest {
            namespace: NS_B.into(),
            queue: "small".into(),
            name: "small".into(),
            payload: b"{\"n\":1}".to_vec(),
            ..Default::default()
        }))
        .await?;
    Ok(reply.into_inner().job_id)
}

/// A client on a connection of its own to the service at `addr`.
async fn client(addr: SocketAddr) -> Result<Client> {
    let channel = Channel::from_shared(format!("http://{addr}"))?
        .connect()
        .await?;
    Ok(QueueServiceClient::new(channel)
        .max_decoding_message_size(64 * 1024 * 1024)
        .max_encoding_message_size(64 * 1024 * 1024))
}

/// A client, once the service at `addr` accepts connections.
async fn serving_client(addr: SocketAddr, service: &mut Service) -> Result<Client> {
    for _ in 0..1_000 {
        if let Some(status) = service.exited() {
            return Err(format!("the tenants service exited: {status}").into());
        }
        if let Ok(client) = client(addr).await {
            return Ok(client);
        }
        pause(Duration::from_millis(20)).await;
    }
    Err("the tenants service did not accept connections within 20s".into())
}

fn token(name: &str) -> String {
    format!("dueq-bench-tenant-{name}")
}

fn bearer(name: &str) -> Result<AsciiMetadataValue> {
    Ok(format!("Bearer {}", token(name)).parse()?)
}

/// Two principals, each a producer (and so a reader) of its own namespace.
fn auth_toml() -> String {
    let principal = |name: &str, ns: &str| {
        let hash: String = Sha256::digest(token(name).as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        format!(
            "[[principal]]\nname = \"{name}\"\nroles = [\"producer\"]\n\
             namespaces = [\"{ns}\"]\ntoken_sha256 = \"{hash}\"\n\n"
        )
    };
    principal("a", NS_A) + &principal("b", NS_B)
}
