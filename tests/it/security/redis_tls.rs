//! TLS to Redis (`rediss://`) against a TLS-only redis-server the harness starts with
//! certificates made per test: the CA flag, a client certificate Redis requires, and
//! a Redis ACL user.

use dueq::config::ServeConfig;
use tonic::{Code, Status};
use tonic_health::pb::health_check_response::ServingStatus;

use crate::common::*;

/// The CA of `certs` trusted for Redis's certificate.
fn trusting(url: &str, certs: &Certs) -> ServeConfig {
    let mut config = config(url);
    config.redis_tls_ca = Some(certs.ca.clone());
    config
}

/// Enqueues a job and claims it back: the service reads and writes through Redis.
async fn round_trip(service: &Service) {
    let mut client = service.client().await;
    let enqueued = enqueue(&mut client, job("q", "over-tls")).await;
    let claimed = claim_job(&mut client, &["q"], 0, None)
        .await
        .expect("the job just enqueued");
    assert_eq!(claimed.job_id, enqueued.job_id);
}

/// An Enqueue that the service cannot take to Redis.
async fn refused_enqueue(service: &Service) -> Status {
    let mut client = service.client().await;
    let status = client
        .enqueue(job("q", "refused"))
        .await
        .expect_err("Enqueue without a usable Redis connection");
    assert_eq!(status.code(), Code::Unavailable, "{status:?}");
    status
}

/// Pins: `rediss://` with `--redis-tls-ca` serves end to end (Enqueue, ClaimJob);
/// without the CA, Redis's certificate is not trusted and calls fail UNAVAILABLE.
#[tokio::test]
async fn rediss_with_the_ca_serves_end_to_end() {
    let certs = Certs::generate();
    let redis = Redis::start_tls(&certs, "optional").await;

    let untrusting = Service::start_unready(config(&redis.url())).await;
    let status = refused_enqueue(&untrusting).await;
    assert!(status.message().contains("certificate"), "{status:?}");
    assert_ne!(untrusting.health().await, ServingStatus::Serving as i32);

    let service = Service::start_with(trusting(&redis.url(), &certs)).await;
    round_trip(&service).await;
}

/// Pins: a Redis with `tls-auth-clients yes` refuses the service without a client
/// certificate (UNAVAILABLE, not SERVING) and serves it with
/// `--redis-tls-cert`/`--redis-tls-key`.
#[tokio::test]
async fn a_redis_that_requires_client_certificates_takes_ours() {
    let certs = Certs::generate();
    let redis = Redis::start_tls(&certs, "yes").await;

    let anonymous = Service::start_unready(trusting(&redis.url(), &certs)).await;
    let status = refused_enqueue(&anonymous).await;
    assert!(
        status.message().contains("CertificateRequired"),
        "{status:?}"
    );
    assert_ne!(anonymous.health().await, ServingStatus::Serving as i32);

    let mut config = trusting(&redis.url(), &certs);
    config.redis_tls_cert = Some(certs.client_cert.clone());
    config.redis_tls_key = Some(certs.client_key.clone());
    let service = Service::start_with(config).await;
    round_trip(&service).await;
}

/// Pins: a Redis ACL user's `user:password` in the URL works (over TLS); a wrong
/// password is refused UNAVAILABLE with Redis's reason, which quotes neither password.
#[tokio::test]
async fn an_acl_user_with_its_password_is_let_in_and_a_wrong_one_is_not() {
    const RIGHT: &str = "acl-right-5d1c";
    const WRONG: &str = "acl-wrong-9e2b";
    let certs = Certs::generate();
    let redis = Redis::start_tls(&certs, "optional").await;
    let _: () = cmd("ACL")
        .arg(
            &[
                "SETUSER",
                "worker",
                "on",
                &format!(">{RIGHT}"),
                "~*",
                "&*",
                "+@all",
            ][..],
        )
        .query_async(&mut redis.conn().await)
        .await
        .expect("ACL SETUSER");
    // Only the ACL user: the default user cannot stand in for it.
    let _: () = cmd("ACL")
        .arg(&["SETUSER", "default", "off"][..])
        .query_async(&mut redis.conn().await)
        .await
        .expect("ACL SETUSER default off");
    let url = |password: &str| format!("rediss://worker:{password}@127.0.0.1:{}", redis.port);

    let refused = Service::start_unready(trusting(&url(WRONG), &certs)).await;
    let status = refused_enqueue(&refused).await;
    let shown = format!("{status:?}");
    assert!(
        shown.contains("WRONGPASS") || shown.contains("authentication"),
        "{shown}"
    );
    assert!(!shown.contains(WRONG) && !shown.contains(RIGHT), "{shown}");
    assert!(shown.contains("worker:***@"), "{shown}");
    assert_ne!(refused.health().await, ServingStatus::Serving as i32);

    let service = Service::start_with(trusting(&url(RIGHT), &certs)).await;
    round_trip(&service).await;
}

/// Pins: TLS files with a URL that is not rediss://, a client certificate without
/// its key, and a CA file that cannot be read are refused at startup, naming the flag.
#[tokio::test]
async fn tls_files_that_cannot_apply_are_refused_at_startup() {
    let certs = Certs::generate();
    let missing = certs.ca.with_file_name("missing-ca.pem");
    let plain = config("redis://127.0.0.1:1");
    let tls = "rediss://127.0.0.1:1";
    let cases = [
        (
            ServeConfig {
                redis_tls_ca: Some(certs.ca.clone()),
                ..plain.clone()
            },
            "apply to a rediss:// URL only",
        ),
        (
            ServeConfig {
                redis_tls_cert: Some(certs.client_cert.clone()),
                ..config(tls)
            },
            "--redis-tls-cert needs --redis-tls-key",
        ),
        (
            ServeConfig {
                redis_tls_ca: Some(missing.clone()),
                ..config(tls)
            },
            "--redis-tls-ca",
        ),
    ];
    for (config, expected) in cases {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let error = within_patience("startup to refuse", async {
            dueq::server::run(config, listener, std::future::pending())
                .await
                .expect_err("refused at startup")
        })
        .await
        .to_string();
        assert!(error.contains(expected), "{expected}: {error}");
    }
}
