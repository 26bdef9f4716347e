//! SIGHUP re-reads the TLS files of the running binary: new connections get the new
//! certificate, open ones carry on, and a bad file keeps the certificate in use.

use std::net::SocketAddr;

use super::{check, health_over, pki, serving_channel, Ca, ServerFiles, SERVING};
use crate::{common::*, tools::binary::Binary};

/// Pins: after the certificate files are replaced and SIGHUP sent, a new connection
/// is served the new certificate (a client trusting only the new CA connects, one
/// trusting only the old CA does not) while a connection opened before keeps being
/// answered; a reload from a bad file, or of a certificate with no subjectAltName,
/// logs an ERROR and keeps the certificate.
#[tokio::test]
async fn sighup_reloads_the_certificate_and_keeps_open_connections() {
    let redis = Redis::start().await;
    let (old_ca, new_ca) = (Ca::new("old CA"), Ca::new("new CA"));
    let files = ServerFiles::new(&old_ca.server("old server"), None);
    let port = free_port();
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().expect("addr");
    let (cert, key) = (
        files.cert.to_str().expect("path"),
        files.key.to_str().expect("path"),
    );
    let mut dueq = Binary::spawn_with(
        &addr.to_string(),
        &redis.url(),
        "info",
        &["--tls-cert", cert, "--tls-key", key],
    );
    let open = serving_channel(addr, &old_ca.pem(), None).await;

    files.replace(&new_ca.server("new server"));
    dueq.hangup();
    dueq.line_with(&["INFO", "TLS certificates reloaded"]).await;
    assert_eq!(health_over(addr, &new_ca.pem(), None).await, Ok(SERVING));
    let old = health_over(addr, &old_ca.pem(), None).await;
    assert!(
        old.is_err(),
        "a new connection got the old certificate: {old:?}"
    );
    // The channel would reconnect if its connection had been dropped, and then fail:
    // it trusts only the old CA.
    assert_eq!(
        check(open.clone()).await,
        Ok(SERVING),
        "the open connection"
    );

    pki::write(&files.cert, "not a certificate\n");
    dueq.hangup();
    dueq.line_with(&["ERROR", "TLS reload failed"]).await;
    assert_eq!(health_over(addr, &new_ca.pem(), None).await, Ok(SERVING));
    assert_eq!(
        check(open.clone()).await,
        Ok(SERVING),
        "the open connection"
    );

    // A certificate naming its host only in its CN is refused too (issue 29 item 17).
    files.replace(&old_ca.cn_only_server("localhost"));
    dueq.hangup();
    dueq.line_with(&["ERROR", "TLS reload failed", "clients ignore the CN"])
        .await;
    assert_eq!(health_over(addr, &new_ca.pem(), None).await, Ok(SERVING));
    assert_eq!(check(open).await, Ok(SERVING), "the open connection");
    drop(dueq);
}
