//! What TLS and bearer-token auth cost: Enqueue and ClaimDueSchedule through the
//! plaintext service without auth (the one every family uses) and through a second
//! `dueq serve` on the same Redis with `--tls-cert/--tls-key` and `--auth-file`, in
//! one run, at the grpc family's concurrency; each TLS+auth row's ratio is its
//! ops/s over the plaintext row's.
//!
//! The certificates (a CA and a server certificate for 127.0.0.1) are made at run
//! time with the `openssl` command line, so the bench carries no certificate crate.

use std::{
    ffi::OsString,
    net::SocketAddr,
    path::{Path, PathBuf},
    process::Command,
    time::Duration,
};

use dueq::proto::{self, queue_service_client::QueueServiceClient};
use sha2::{Digest, Sha256};
use tonic::{
    metadata::AsciiMetadataValue,
    transport::{Certificate, Channel, ClientTlsConfig},
    Request,
};
use tonic_health::pb::{
    health_check_response::ServingStatus, health_client::HealthClient, HealthCheckRequest,
};

use crate::{
    binaries,
    env::{free_port, Client, Env},
    grpc::{connections, spread},
    load::{drive, Stats},
    plan::Plan,
    report::{Report, Row},
    seed,
    service::Service,
    Result,
};

const S: &str = "security";
const PLAIN_NS: &str = "secplain";
const TLS_NS: &str = "sectls";
const TOKEN: &str = "dueq-bench-token";
/// The name the server certificate carries and the client checks.
const SERVER_NAME: &str = "localhost";

pub(crate) async fn run(plan: &Plan, env: &Env, report: &mut Report) -> Result<()> {
    let dir = std::env::temp_dir().join(format!("dueq-bench-tls-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let result = measure(plan, env, &dir, report).await;
    let _ = std::fs::remove_dir_all(&dir);
    result
}

async fn measure(plan: &Plan, env: &Env, dir: &Path, report: &mut Report) -> Result<()> {
    let files = certificates(dir)?;
    let auth_file = dir.join("auth.toml");
    std::fs::write(&auth_file, auth_toml())?;
    let addr: SocketAddr = format!("127.0.0.1:{}", free_port()?).parse()?;
    let extra: Vec<OsString> = vec![
        "--tls-cert".into(),
        files.cert.clone().into(),
        "--tls-key".into(),
        files.key.clone().into(),
        "--auth-file".into(),
        auth_file.into(),
    ];
    let mut service = Service::start_with(&env.dueq_bin, addr, &env.redis_url, &extra)?;
    let result = async {
        let ca = Certificate::from_pem(std::fs::read(&files.ca)?);
        wait_serving(&mut service, addr, &ca).await?;
        let auth: AsciiMetadataValue = format!("Bearer {TOKEN}").parse()?;
        let plain = Side {
            callers: spread(plan.concurrency, env.client().await?, || env.client()).await?,
            auth: None,
            ns: PLAIN_NS,
        };
        let tls = Side {
            callers: spread(plan.concurrency, tls_client(addr, &ca).await?, || {
                tls_client(addr, &ca)
            })
            .await?,
            auth: Some(auth),
            ns: TLS_NS,
        };
        for side in [&plain, &tls] {
            let mut c = side.callers[0].clone();
            c.upsert_schedule(side.request(proto::UpsertScheduleRequest {
                namespace: side.ns.into(),
                schedule: Some(seed::every_1h("anchor")),
            }))
            .await?;
        }
        // Plaintext then TLS for each call, so both see the same machine moment.
        let p = enqueue(plan, &plain).await?;
        let t = enqueue(plan, &tls).await?;
        push(report, "Enqueue", &p, &t);
        let p = claim_due(plan, &plain).await?;
        let t = claim_due(plan, &tls).await?;
        push(report, "ClaimDueSchedule", &p, &t);
        Ok(())
    }
    .await;
    service.stop();
    report.note(
        S,
        format!(
            "concurrency {}, {} HTTP/2 connections per side; TLS 1.3 (rustls, ring) with a \
             P-256 server certificate, bearer token checked on every call; ratio = TLS+auth \
             ops/s / plaintext ops/s",
            plan.concurrency,
            connections(plan.concurrency)
        ),
    );
    result
}

/// One side of the comparison: its callers, the metadata each call carries, and
/// the namespace it works in.
#[derive(Clone)]
struct Side {
    callers: Vec<Client>,
    auth: Option<AsciiMetadataValue>,
    ns: &'static str,
}

impl Side {
    fn request<T>(&self, message: T) -> Request<T> {
        let mut request = Request::new(message);
        if let Some(auth) = &self.auth {
            request.metadata_mut().insert("authorization", auth.clone());
        }
        request
    }
}

async fn enqueue(plan: &Plan, side: &Side) -> Result<Stats> {
    drive(plan.concurrency, plan.duration, |i| {
        let c = side.callers[i].clone();
        let side = side.clone();
        move || {
            let mut c = c.clone();
            let request = side.request(proto::EnqueueRequest {
                namespace: side.ns.into(),
                queue: "work".into(),
                name: "bench".into(),
                payload: b"{\"n\":1}".to_vec(),
                ..Default::default()
            });
            async move {
                c.enqueue(request).await?;
                Ok(1)
            }
        }
    })
    .await
}

async fn claim_due(plan: &Plan, side: &Side) -> Result<Stats> {
    drive(plan.concurrency, plan.duration, |i| {
        let c = side.callers[i].clone();
        let side = side.clone();
        move || {
            let mut c = c.clone();
            let request = side.request(proto::ClaimDueScheduleRequest {
                namespace: side.ns.into(),
                worker_id: "bench".into(),
                wait: None,
                lease: None,
            });
            async move {
                c.claim_due_schedule(request).await?;
                Ok(1)
            }
        }
    })
    .await
}

fn push(report: &mut Report, call: &str, plain: &Stats, tls: &Stats) {
    report.push(Row::stats(S, format!("{call} plaintext"), plain).note("no TLS, no auth file"));
    let ratio = (plain.ops_s() > 0.0).then(|| tls.ops_s() / plain.ops_s());
    let mut row = Row::stats(S, format!("{call} TLS+auth"), tls);
    row.ratio = ratio;
    report.push(
        row.with("ratio_to_plaintext", ratio)
            .note("--tls-cert/--tls-key + --auth-file, bearer token; ratio to plaintext"),
    );
}

async fn tls_client(addr: SocketAddr, ca: &Certificate) -> Result<Client> {
    Ok(QueueServiceClient::new(tls_channel(addr, ca).await?))
}

async fn tls_channel(addr: SocketAddr, ca: &Certificate) -> Result<Channel> {
    let tls = ClientTlsConfig::new()
        .ca_certificate(ca.clone())
        .domain_name(SERVER_NAME);
    Ok(Channel::from_shared(format!("https://{addr}"))?
        .tls_config(tls)?
        .connect()
        .await?)
}

/// Waits until the TLS service answers SERVING (health needs no token).
async fn wait_serving(service: &mut Service, addr: SocketAddr, ca: &Certificate) -> Result<()> {
    let pid = service.pid();
    let mut last = String::new();
    for _ in 0..500 {
        match tls_channel(addr, ca).await {
            Ok(channel) => {
                let check = HealthClient::new(channel)
                    .check(HealthCheckRequest {
                        service: "dueq.v1.QueueService".into(),
                    })
                    .await;
                match check {
                    Ok(r) if r.get_ref().status == ServingStatus::Serving as i32 => return Ok(()),
                    Ok(r) => last = format!("status {}", r.get_ref().status),
                    Err(e) => last = e.to_string(),
                }
            }
            Err(e) => last = e.to_string(),
        }
        if let Some(status) = service.exited() {
            return Err(format!("dueq serve with TLS (pid {pid}) exited: {status}").into());
        }
        crate::local::pause(Duration::from_millis(20)).await;
    }
    Err(format!("dueq serve with TLS (pid {pid}) never became SERVING: {last}").into())
}

/// The auth file: one principal that may enqueue and claim in the TLS namespace,
/// known by the SHA-256 of its token.
fn auth_toml() -> String {
    let hash: String = Sha256::digest(TOKEN.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!(
        "[[principal]]\nname = \"bench\"\nroles = [\"producer\", \"worker\"]\n\
         namespaces = [\"{TLS_NS}\"]\ntoken_sha256 = \"{hash}\"\n"
    )
}

struct CertFiles {
    ca: PathBuf,
    cert: PathBuf,
    key: PathBuf,
}

/// A CA and a server certificate it signed, for `localhost` and 127.0.0.1, valid a day.
fn certificates(dir: &Path) -> Result<CertFiles> {
    let openssl = binaries::on_path("openssl")
        .ok_or("openssl not found on PATH (the security family makes its certificates with it)")?;
    let p = |name: &str| dir.join(name);
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
    ];
    let ext = p("server.ext");
    std::fs::write(
        &ext,
        "subjectAltName = DNS:localhost, IP:127.0.0.1\nbasicConstraints = CA:FALSE\n\
         keyUsage = digitalSignature\nextendedKeyUsage = serverAuth\n",
    )?;
    let steps: [Vec<OsString>; 3] = [
        args(&["req", "-x509", "-days", "1", "-subj", "/CN=dueq-bench CA"])
            .chain(args(&ec))
            .chain(args(&["-keyout"]))
            .chain([p("ca.key").into(), "-out".into(), p("ca.pem").into()])
            .collect(),
        args(&["req", "-subj", "/CN=localhost"])
            .chain(args(&ec))
            .chain(args(&["-keyout"]))
            .chain([
                p("server.key").into(),
                "-out".into(),
                p("server.csr").into(),
            ])
            .collect(),
        args(&["x509", "-req", "-days", "1", "-CAcreateserial", "-in"])
            .chain([p("server.csr").into(), "-CA".into(), p("ca.pem").into()])
            .chain(["-CAkey".into(), p("ca.key").into(), "-extfile".into()])
            .chain([ext.into(), "-out".into(), p("server.pem").into()])
            .collect(),
    ];
    for step in steps {
        let out = Command::new(&openssl).args(&step).output()?;
        if !out.status.success() {
            return Err(format!(
                "openssl {step:?} failed: {}",
                String::from_utf8_lossy(&out.stderr)
            )
            .into());
        }
    }
    Ok(CertFiles {
        ca: p("ca.pem"),
        cert: p("server.pem"),
        key: p("server.key"),
    })
}

fn args<'a>(list: &'a [&'a str]) -> impl Iterator<Item = OsString> + 'a {
    list.iter().map(OsString::from)
}
