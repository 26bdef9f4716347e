//! The audit lines of console actions, read from the `dueq` binary's output.

use super::*;
use crate::tools::binary::Binary;

/// Pins: a console action is audited as the RPC it makes, with the signed-in
/// principal (`dueq::audit ... principal=admin ... PauseQueue`), and a failed
/// sign-in is an audit line too (ConsoleSignIn, UNAUTHENTICATED).
#[tokio::test]
async fn a_console_action_writes_an_audit_line() {
    let redis = Redis::start().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let auth = write_auth_file(dir.path());
    let listen = format!("127.0.0.1:{}", free_port());
    let console = console_addr().to_string();
    let auth = auth.to_str().expect("a UTF-8 path");
    let mut dueq = Binary::spawn_with(
        &listen,
        &redis.url(),
        "info",
        &["--auth-file", auth, "--console-listen", &console],
    );
    dueq.line_with(&["serving the web console"]).await;
    let http = Http::plain(console.parse().expect("an address"));

    let wrong = http.post_form("/login", "token=t-nobody", None).await;
    assert_eq!(wrong.status, 401, "{wrong:?}");
    dueq.line_with(&["dueq::audit", "ConsoleSignIn", "UNAUTHENTICATED"])
        .await;

    let signed_in = http.post_form("/login", "token=t-admin", None).await;
    assert_eq!(signed_in.status, 303, "{signed_in:?}");
    let cookie = signed_in.header("set-cookie").expect("a session cookie");
    let cookie = cookie.split(';').next().expect("name=value");
    let pause = http
        .post_form("/ns/shop/queues/emails/pause", "", Some(cookie))
        .await;
    assert_eq!(pause.status, 303, "{pause:?}");
    let line = dueq
        .line_with(&["dueq::audit", "principal=admin", "PauseQueue"])
        .await;
    assert!(line.contains("shop"), "the namespace in {line}");
}
