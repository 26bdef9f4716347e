//! `dueq health`, the container's HEALTHCHECK: exit 0 only when the service answers
//! SERVING; otherwise one line saying why, and a non-zero exit.

use std::process::{Command, Output};

use crate::common::*;

fn health(addr: &str) -> Output {
    tokio::task::block_in_place(|| {
        Command::new(env!("CARGO_BIN_EXE_dueq"))
            .args(["health", "--addr", addr])
            .output()
            .expect("run dueq health")
    })
}

fn one_line(out: &Output) -> String {
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(err.trim().lines().count(), 1, "one line:\n{err}");
    err
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_exits_zero_when_the_service_is_serving() {
    let redis = Redis::start().await;
    let service = Service::start(&redis.url()).await;
    let out = health(&service.endpoint());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_exits_non_zero_when_the_service_has_no_redis() {
    let nowhere = format!("redis://127.0.0.1:{}", free_port());
    let service = Service::start_unready(config(&nowhere)).await;
    let out = health(&service.endpoint());
    assert!(!out.status.success());
    assert!(one_line(&out).contains("NOT_SERVING"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_exits_non_zero_when_nothing_listens() {
    let addr = format!("http://127.0.0.1:{}", free_port());
    let out = health(&addr);
    assert!(!out.status.success());
    let err = one_line(&out);
    assert!(
        err.contains("cannot connect") && err.contains(&addr),
        "{err}"
    );
}

/// Pins: `dueq health` speaks TLS with the operator commands' flags: against an
/// mTLS service it exits 0 with --tls-ca and a client certificate, and non-zero
/// without the certificate or without trusting the CA.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_checks_a_tls_service() {
    let redis = Redis::start().await;
    let certs = Certs::generate();
    let mut config = config(&redis.url());
    config.tls_cert = Some(certs.server_cert.clone());
    config.tls_key = Some(certs.server_key.clone());
    config.tls_client_ca = Some(certs.ca.clone());
    let service = Service::start_unready(config).await;
    let addr = format!("https://{}", service.addr);
    let ca = certs.ca.to_str().unwrap();
    let run = |extra: &[&str]| {
        let mut args = vec!["health", "--addr", addr.as_str()];
        args.extend(extra);
        tokio::task::block_in_place(|| {
            Command::new(env!("CARGO_BIN_EXE_dueq"))
                .args(&args)
                .output()
                .expect("run dueq health")
        })
    };
    let mtls = [
        "--tls-ca",
        ca,
        "--tls-cert",
        certs.client_cert.to_str().unwrap(),
        "--tls-key",
        certs.client_key.to_str().unwrap(),
    ];
    let patience = Patience::new("dueq health to pass over mTLS");
    while !run(&mtls).status.success() {
        patience.wait().await;
    }
    let without_cert = run(&["--tls-ca", ca]);
    assert!(!without_cert.status.success());
    one_line(&without_cert);
    let untrusted = run(&[]);
    assert!(!untrusted.status.success());
    assert!(one_line(&untrusted).contains("cannot connect"));
}
