//! gRPC over TLS: served to clients that trust the CA, refused to plaintext ones;
//! with `--tls-client-ca`, only to clients with a certificate that CA signed; the
//! flags checked at startup; the files re-read on SIGHUP (reload.rs).

mod certs_command;
mod pki;
mod reload;

use std::{net::SocketAddr, process::Command};

use tonic::transport::{Certificate, Channel, ClientTlsConfig, Identity};
use tonic_health::pb::{
    health_check_response::ServingStatus, health_client::HealthClient, HealthCheckRequest,
};

use self::pki::{Ca, Leaf, ServerFiles};
use crate::{common::*, tools::binary::Binary};

const SERVING: i32 = ServingStatus::Serving as i32;

/// A TLS connection to `addr` (verified as 127.0.0.1) trusting only `ca`, showing
/// `identity` if given.
async fn tls_channel(
    addr: SocketAddr,
    ca: &str,
    identity: Option<&Leaf>,
) -> Result<Channel, String> {
    let mut tls = ClientTlsConfig::new().ca_certificate(Certificate::from_pem(ca));
    if let Some(leaf) = identity {
        tls = tls.identity(Identity::from_pem(&leaf.cert, &leaf.key));
    }
    Channel::from_shared(format!("https://{addr}"))
        .map_err(|e| e.to_string())?
        .tls_config(tls)
        .map_err(|e| e.to_string())?
        .connect()
        .await
        .map_err(|e| format!("{e:?}"))
}

/// The queue service's health status over `channel`.
async fn check(channel: Channel) -> Result<i32, String> {
    let request = HealthCheckRequest {
        service: "dueq.v1.QueueService".into(),
    };
    HealthClient::new(channel)
        .check(request)
        .await
        .map(|r| r.into_inner().status)
        .map_err(|e| format!("{e:?}"))
}

/// The health status over a new TLS connection.
async fn health_over(addr: SocketAddr, ca: &str, identity: Option<&Leaf>) -> Result<i32, String> {
    check(tls_channel(addr, ca, identity).await?).await
}

/// A TLS connection on which the service has answered SERVING.
async fn serving_channel(addr: SocketAddr, ca: &str, identity: Option<&Leaf>) -> Channel {
    let patience = Patience::new("SERVING over TLS");
    loop {
        if let Ok(channel) = tls_channel(addr, ca, identity).await {
            if check(channel.clone()).await == Ok(SERVING) {
                return channel;
            }
        }
        patience.wait().await;
    }
}

/// The service in-process over TLS with `files`, mTLS if `mtls`.
async fn start_tls(redis: &Redis, files: &ServerFiles, mtls: bool) -> Service {
    let mut config = config(&redis.url());
    config.tls_cert = Some(files.cert.clone());
    config.tls_key = Some(files.key.clone());
    if mtls {
        config.tls_client_ca = Some(files.client_ca.clone());
    }
    Service::start_unready(config).await
}

/// The health status over plaintext HTTP/2.
async fn health_plaintext(addr: SocketAddr) -> Result<i32, String> {
    let channel = Channel::from_shared(format!("http://{addr}"))
        .map_err(|e| e.to_string())?
        .connect()
        .await
        .map_err(|e| format!("{e:?}"))?;
    check(channel).await
}

/// Pins: with --tls-cert/--tls-key the service answers over TLS to a client that
/// trusts the signing CA (checking the IP SAN), with every service behind it; a
/// plaintext client and a client trusting another CA get no answer.
#[tokio::test]
async fn tls_serves_clients_that_trust_the_ca_and_refuses_plaintext() {
    let redis = Redis::start().await;
    let ca = Ca::new("dueq test CA");
    let files = ServerFiles::new(&ca.server("dueq server"), None);
    let service = start_tls(&redis, &files, false).await;
    let channel = serving_channel(service.addr, &ca.pem(), None).await;
    let mut client = dueq::proto::queue_service_client::QueueServiceClient::new(channel);
    upsert(&mut client, "ns", every("e", 60)).await;

    let plaintext = health_plaintext(service.addr).await;
    assert!(plaintext.is_err(), "plaintext answered: {plaintext:?}");
    let stranger = Ca::new("another CA");
    let untrusted = health_over(service.addr, &stranger.pem(), None).await;
    assert!(
        untrusted.is_err(),
        "a client trusting another CA connected: {untrusted:?}"
    );
}

/// Pins: with --tls-client-ca a client certificate signed by that CA is accepted;
/// no client certificate, or one from another CA, is refused.
#[tokio::test]
async fn mtls_accepts_certificates_of_the_client_ca_only() {
    let redis = Redis::start().await;
    let ca = Ca::new("dueq test CA");
    let files = ServerFiles::new(&ca.server("dueq server"), Some(&ca));
    let service = start_tls(&redis, &files, true).await;
    let client = ca.client("worker-1", &["worker-1.example"]);
    serving_channel(service.addr, &ca.pem(), Some(&client)).await;

    let without = health_over(service.addr, &ca.pem(), None).await;
    assert!(without.is_err(), "no client certificate, yet: {without:?}");
    let stranger = Ca::new("another CA").client("worker-1", &["worker-1.example"]);
    let foreign = health_over(service.addr, &ca.pem(), Some(&stranger)).await;
    assert!(
        foreign.is_err(),
        "a client certificate of another CA, yet: {foreign:?}"
    );
    let plaintext = health_plaintext(service.addr).await;
    assert!(plaintext.is_err(), "plaintext answered: {plaintext:?}");
}

/// `dueq serve` with `args` and `envs` that must fail at startup: its output.
fn refused_at_startup(args: &[&str], envs: &[(&str, &str)]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_dueq"))
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--redis-url",
            "redis://127.0.0.1:1",
        ])
        .args(args)
        .envs(envs.iter().copied())
        .output()
        .expect("run dueq");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        !out.status.success(),
        "started with {args:?} {envs:?}:\n{text}"
    );
    text
}

/// Pins (issue 29 item 7): an expired --tls-cert stops the service at startup naming
/// the flag and the date, instead of serving a certificate every client refuses.
/// (Watched through its output: a service that starts would not exit.)
#[tokio::test]
async fn an_expired_certificate_is_refused_at_startup() {
    let ca = Ca::new("dueq test CA");
    let files = ServerFiles::new(&ca.expired_server("dueq server"), None);
    let (cert, key) = (
        files.cert.to_str().expect("path"),
        files.key.to_str().expect("path"),
    );
    let listen = format!("127.0.0.1:{}", free_port());
    let tls = ["--tls-cert", cert, "--tls-key", key];
    let mut dueq = Binary::spawn_with(&listen, "redis://127.0.0.1:1", "info", &tls);
    let line = dueq.line_with(&["dueq failed", "--tls-cert"]).await;
    for needle in ["expired on", "2020", "renew it"] {
        assert!(line.contains(needle), "{needle:?} in:\n{line}");
    }
}

/// Pins (issue 29 item 17): a --tls-cert that names its host only in its CN (no
/// subjectAltName) stops the service at startup saying why and how to make one.
#[tokio::test]
async fn a_certificate_naming_its_host_only_in_its_cn_is_refused_at_startup() {
    let ca = Ca::new("dueq test CA");
    let files = ServerFiles::new(&ca.cn_only_server("localhost"), None);
    let (cert, key) = (
        files.cert.to_str().expect("path"),
        files.key.to_str().expect("path"),
    );
    let listen = format!("127.0.0.1:{}", free_port());
    let tls = ["--tls-cert", cert, "--tls-key", key];
    let mut dueq = Binary::spawn_with(&listen, "redis://127.0.0.1:1", "info", &tls);
    let line = dueq.line_with(&["dueq failed", "--tls-cert"]).await;
    for needle in [
        "no subjectAltName DNS name or IP address",
        "clients ignore the CN",
        "dueq certs --out DIR --host NAME",
    ] {
        assert!(line.contains(needle), "{needle:?} in:\n{line}");
    }
}

/// Pins: half of the TLS flags (also given as DUEQ_TLS_* variables), a file that
/// holds no certificate or key, or a key that is not the certificate's, stops the service at startup naming the flag.
#[test]
fn half_the_tls_flags_or_a_bad_file_is_refused_at_startup() {
    let ca = Ca::new("dueq test CA");
    let files = ServerFiles::new(&ca.server("dueq server"), Some(&ca));
    let (cert, key, client_ca) = (
        files.cert.to_str().expect("path"),
        files.key.to_str().expect("path"),
        files.client_ca.to_str().expect("path"),
    );
    let other = ServerFiles::new(&ca.server("another server"), None);
    let other_key = other.key.to_str().expect("path");
    type Case<'a> = (&'a [&'a str], &'a [(&'a str, &'a str)], &'a str);
    let cases: [Case; 6] = [
        (&["--tls-cert", cert], &[], "--tls-cert needs --tls-key"),
        (&[], &[("DUEQ_TLS_KEY", key)], "--tls-key needs --tls-cert"),
        (
            &[],
            &[("DUEQ_TLS_CLIENT_CA", client_ca)],
            "--tls-client-ca needs --tls-cert",
        ),
        // The key given as the certificate, and the other way round.
        (&["--tls-cert", key, "--tls-key", key], &[], "--tls-cert"),
        (&["--tls-cert", cert, "--tls-key", cert], &[], "--tls-key"),
        // A key that is not the certificate's.
        (
            &["--tls-cert", cert, "--tls-key", other_key],
            &[],
            "with --tls-key",
        ),
    ];
    for (args, envs, expected) in cases {
        let text = refused_at_startup(args, envs);
        assert!(
            text.contains(expected),
            "{args:?} {envs:?}: wanted {expected:?} in:\n{text}"
        );
        assert!(text.contains("ERROR"), "{text}");
    }
}

/// Runs `command` in `dir` against `addr`: whether it succeeded, and its output.
async fn run_in(dir: &std::path::Path, command: &str, addr: SocketAddr) -> (bool, String) {
    // Not a std Command: it would block the test's one runtime thread, which the
    // in-process service needs to answer.
    let out = tokio::process::Command::new("bash")
        .arg("-c")
        .arg(command.replace("localhost:50051", &addr.to_string()))
        .current_dir(dir)
        .output()
        .await
        .expect("bash");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

/// Pins: the grpcurl examples over TLS in docs/operations.md run: `-cacert` against a
/// TLS service, `-cert`/`-key` against an mTLS one (which refuses the former).
#[tokio::test]
#[ignore = "needs grpcurl"]
async fn tls_doc_grpcurl_examples_run() {
    tools::require("grpcurl");
    let commands = crate::doc_examples::commands_between("grpcurl-tls-examples");
    assert_eq!(commands.len(), 2, "{commands:?}");
    let redis = Redis::start().await;
    let ca = Ca::new("dueq test CA");
    let dir = tempfile::tempdir().expect("tempdir");
    let client = ca.client("worker-1", &["worker-1.example"]);
    pki::write(&dir.path().join("ca.pem"), &ca.pem());
    pki::write(&dir.path().join("client.pem"), &client.cert);
    pki::write(&dir.path().join("client-key.pem"), &client.key);
    let tls_files = ServerFiles::new(&ca.server("dueq server"), None);
    let tls = start_tls(&redis, &tls_files, false).await;
    let mtls_files = ServerFiles::new(&ca.server("dueq server"), Some(&ca));
    let mtls = start_tls(&redis, &mtls_files, true).await;
    serving_channel(tls.addr, &ca.pem(), None).await;
    serving_channel(mtls.addr, &ca.pem(), Some(&client)).await;

    let (ok, text) = run_in(dir.path(), &commands[0], tls.addr).await;
    assert!(
        ok && text.contains("dueq.v1.QueueService"),
        "{}\n{text}",
        commands[0]
    );
    let (ok, text) = run_in(dir.path(), &commands[1], mtls.addr).await;
    assert!(ok && text.contains("SERVING"), "{}\n{text}", commands[1]);
    // grpcurl retries a refused handshake until its dial timeout (10 s by default).
    let quick = commands[0].replace("grpcurl ", "grpcurl -connect-timeout 2 ");
    let (ok, text) = run_in(dir.path(), &quick, mtls.addr).await;
    assert!(!ok, "no client certificate, yet mTLS answered: {text}");
}

/// Pins: over mTLS a principal is known by its client certificate (`client_cert_subject`
/// matched against the certificate's SAN or CN) without any token: let in to its
/// roles and namespaces, PERMISSION_DENIED outside them; a certificate of the same
/// CA that names no principal is UNAUTHENTICATED.
#[tokio::test]
async fn an_mtls_client_certificate_names_its_principal() {
    let redis = Redis::start().await;
    let ca = Ca::new("dueq test CA");
    let files = ServerFiles::new(&ca.server("dueq server"), Some(&ca));
    let dir = tempfile::tempdir().expect("tempdir");
    let auth_file = dir.path().join("auth.toml");
    std::fs::write(
        &auth_file,
        "[[principal]]\nname = \"cert-producer\"\nroles = [\"producer\"]\n\
         namespaces = [\"ns\"]\nclient_cert_subject = \"producer-1.example\"\n",
    )
    .expect("write auth file");
    let mut config = config(&redis.url());
    config.tls_cert = Some(files.cert.clone());
    config.tls_key = Some(files.key.clone());
    config.tls_client_ca = Some(files.client_ca.clone());
    config.auth_file = Some(auth_file);
    let service = Service::start_unready(config).await;

    let known = ca.client("producer-1", &["producer-1.example"]);
    let channel = serving_channel(service.addr, &ca.pem(), Some(&known)).await;
    let mut client = dueq::proto::queue_service_client::QueueServiceClient::new(channel);
    client
        .enqueue(job("emails", "welcome"))
        .await
        .expect("the certificate's principal enqueues in its namespace");
    let mut elsewhere = job("emails", "welcome");
    elsewhere.namespace = "other".into();
    let denied = client
        .enqueue(elsewhere)
        .await
        .expect_err("outside its namespaces");
    assert_eq!(denied.code(), tonic::Code::PermissionDenied, "{denied:?}");
    assert!(
        denied.message().contains("cert-producer") && denied.message().contains("other"),
        "{denied:?}"
    );

    let unknown = ca.client("stranger", &["stranger.example"]);
    let channel = serving_channel(service.addr, &ca.pem(), Some(&unknown)).await;
    let mut client = dueq::proto::queue_service_client::QueueServiceClient::new(channel);
    let refused = client
        .enqueue(job("emails", "welcome"))
        .await
        .expect_err("no principal has this certificate");
    assert_eq!(refused.code(), tonic::Code::Unauthenticated, "{refused:?}");
}

/// A TLS connection to `addr` that completes its handshake (trusting `ca`, offering
/// h2) and then sends nothing: no HTTP/2 preface.
async fn silent_after_handshake(
    addr: SocketAddr,
    ca: &str,
) -> tokio_rustls::client::TlsStream<tokio::net::TcpStream> {
    use rustls_pki_types::{pem::PemObject, CertificateDer, ServerName};
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(ca.as_bytes()) {
        roots.add(cert.expect("CA pem")).expect("CA cert");
    }
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("protocol versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"h2".to_vec()];
    let connector = tokio_rustls::TlsConnector::from(std::sync::Arc::new(config));
    let tcp = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let name = ServerName::IpAddress(addr.ip().into());
    connector.connect(name, tcp).await.expect("TLS handshake")
}

/// Pins (issue 29): over TLS, --http2-header-timeout runs until the HTTP/2 preface
/// arrives after the handshake: clients that finish their handshake and then send
/// nothing are closed, and the --max-connections they held serve new clients. (It
/// used to count the ClientHello's bytes as the preface, so such clients held their
/// connections for ever.)
#[tokio::test]
async fn silent_clients_after_the_tls_handshake_are_closed() {
    use tokio::io::AsyncReadExt;
    let redis = Redis::start().await;
    let ca = Ca::new("dueq test CA");
    let files = ServerFiles::new(&ca.server("dueq server"), None);
    let mut config = config(&redis.url());
    config.tls_cert = Some(files.cert.clone());
    config.tls_key = Some(files.key.clone());
    config.max_connections = 2;
    config.http2_header_timeout = std::time::Duration::from_millis(500);
    let service = Service::start_unready(config).await;

    let mut silent = Vec::new();
    for _ in 0..2 {
        silent.push(silent_after_handshake(service.addr, &ca.pem()).await);
    }
    for mut tls in silent {
        let mut buf = [0u8; 1024];
        within_patience("the silent TLS connection to close", async {
            loop {
                // The server's SETTINGS may come first; then the connection must end.
                match tls.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(_) => continue,
                }
            }
        })
        .await;
    }
    serving_channel(service.addr, &ca.pem(), None).await;
}
