//! Sign-in, cookies, roles and CSRF: who gets in, what each principal sees, and
//! which requests are refused before anything changes.

use super::*;

/// Pins: with an auth file a page without a session redirects to sign-in; a wrong
/// token is 401 and sets no cookie; a right one sets an HttpOnly, SameSite=Strict
/// session cookie (not Secure over plain HTTP) with which pages load.
#[tokio::test]
async fn signing_in_takes_a_principals_token() {
    let console = Console::with_auth().await;
    console.enqueue("shop", "emails", "{}").await;

    let anonymous = console.http.get("/ns/shop", None).await;
    assert_eq!(anonymous.status, 303, "{anonymous:?}");
    assert_eq!(
        anonymous.header("location"),
        Some("/login?next=%2Fns%2Fshop")
    );
    let forged = console
        .http
        .get("/ns/shop", Some("dueq_session=made-up"))
        .await;
    assert_eq!(forged.status, 303, "{forged:?}");

    let wrong = console
        .http
        .post_form("/login", "token=t-nobody&next=%2F", None)
        .await;
    assert_eq!(wrong.status, 401, "{wrong:?}");
    assert_eq!(wrong.header("set-cookie"), None);

    let right = console
        .http
        .post_form("/login", "token=t-admin&next=%2Fns%2Fshop", None)
        .await;
    assert_eq!(right.status, 303, "{right:?}");
    assert_eq!(right.header("location"), Some("/ns/shop"));
    let cookie = right.header("set-cookie").expect("a session cookie");
    assert!(cookie.starts_with("dueq_session="), "{cookie}");
    assert!(cookie.contains("HttpOnly"), "{cookie}");
    assert!(cookie.contains("SameSite=Strict"), "{cookie}");
    assert!(!cookie.contains("Secure"), "plain HTTP: {cookie}");

    let session = cookie.split(';').next().expect("name=value");
    let page = console
        .page_until("/ns/shop", Some(session), "data-queue=\"emails\"")
        .await;
    assert!(page.body.contains("admin"), "the bar names the principal");
    let overview = console.http.get("/", Some(session)).await;
    assert_eq!(overview.status, 200, "{overview:?}");
    assert!(
        overview.body.contains("href=\"/ns/shop\""),
        "{}",
        overview.body
    );
}

/// Pins: a console served over TLS (the gRPC listener's certificate) marks its
/// session cookie Secure.
#[tokio::test]
async fn over_tls_the_session_cookie_is_secure() {
    let redis = Redis::start().await;
    let certs = Certs::generate();
    let dir = tempfile::tempdir().expect("tempdir");
    let addr = console_addr();
    let mut config = config(&redis.url());
    config.console_listen = Some(addr.to_string());
    config.auth_file = Some(write_auth_file(dir.path()));
    config.tls_cert = Some(certs.server_cert.clone());
    config.tls_key = Some(certs.server_key.clone());
    let _service = Service::start_unready(config).await;
    let http = Http::tls(addr, &certs.ca);
    let patience = Patience::new("the TLS console to listen");
    while tokio::net::TcpStream::connect(addr).await.is_err() {
        patience.wait().await;
    }
    let answer = http
        .post_form("/login", "token=t-admin&next=%2F", None)
        .await;
    assert_eq!(answer.status, 303, "{answer:?}");
    let cookie = answer.header("set-cookie").expect("a session cookie");
    for part in ["HttpOnly", "SameSite=Strict", "Secure"] {
        assert!(cookie.contains(part), "{part} in {cookie}");
    }
    let session = cookie.split(';').next().expect("name=value");
    let page = http.get("/", Some(session)).await;
    assert_eq!(page.status, 200, "{page:?}");
}

/// Pins: a reader sees no Pause, Retry or Purge buttons, and its forged pause (same
/// origin) is refused 403 with the queue still running; an admin's pause works.
#[tokio::test]
async fn a_reader_cannot_act_and_an_admin_can() {
    let console = Console::with_auth().await;
    console.dead_job("shop", "emails", "{}", "boom").await;
    let reader = console.sign_in("reader").await;
    let page = console
        .page_until("/ns/shop", Some(&reader), "data-queue=\"emails\"")
        .await;
    let queue = console
        .http
        .get("/ns/shop/queues/emails", Some(&reader))
        .await;
    assert_eq!(queue.status, 200, "{queue:?}");
    assert!(queue.body.contains("Queue emails"), "{}", queue.body);
    for page in [&page, &queue] {
        for button in [">Pause<", ">Retry all dead<", ">Purge<", "/queues/emails/"] {
            assert!(
                !page.body.contains(button),
                "a reader sees {button}: {}",
                page.body
            );
        }
    }
    let dead = console
        .http
        .get("/ns/shop/jobs?queue=emails&state=dead", Some(&reader))
        .await;
    let id = dead
        .body
        .split("data-job=\"")
        .nth(1)
        .and_then(|s| s.split('"').next())
        .expect("a dead job");
    let job = console
        .http
        .get(&format!("/ns/shop/jobs/{id}"), Some(&reader))
        .await;
    assert_eq!(job.status, 200, "{job:?}");
    assert!(!job.body.contains(">Retry<"), "{}", job.body);

    let forged = console
        .http
        .post_form("/ns/shop/queues/emails/pause", "", Some(&reader))
        .await;
    assert_eq!(forged.status, 403, "{forged:?}");
    assert!(
        forged.body.contains("reader"),
        "names the principal: {}",
        forged.body
    );
    assert!(
        !console
            .queue("shop", "emails")
            .await
            .expect("listed")
            .paused
    );
    let retry = console
        .http
        .post_form(&format!("/ns/shop/jobs/{id}/retry"), "", Some(&reader))
        .await;
    assert_eq!(retry.status, 403, "{retry:?}");

    let admin = console.sign_in("admin").await;
    let page = console
        .http
        .get("/ns/shop/queues/emails", Some(&admin))
        .await;
    for button in [">Pause<", ">Retry all dead<", ">Purge<"] {
        assert!(page.body.contains(button), "{button}: {}", page.body);
    }
    let pause = console
        .http
        .post_form("/ns/shop/queues/emails/pause", "", Some(&admin))
        .await;
    assert_eq!(pause.status, 303, "{pause:?}");
    assert!(
        console
            .queue("shop", "emails")
            .await
            .expect("listed")
            .paused
    );
}

/// Pins: a reader of namespace `a` neither sees namespace `b` on the overview nor
/// opens its pages (403).
#[tokio::test]
async fn a_reader_of_one_namespace_sees_only_that_one() {
    let console = Console::with_auth().await;
    console.enqueue("a", "emails", "{}").await;
    let job_b = console.enqueue("b", "secret", "{}").await;
    let cookie = console.sign_in("reader-a").await;
    // ListNamespaces needs a principal of `*`; the overview of `reader-a` lists the
    // namespace it names instead, and B is not on it.
    let overview = console.http.get("/", Some(&cookie)).await;
    assert_eq!(overview.status, 200, "{overview:?}");
    assert!(
        overview.body.contains("href=\"/ns/a\""),
        "{}",
        overview.body
    );
    assert!(!overview.body.contains("/ns/b"), "{}", overview.body);
    let everyone = console.sign_in("reader").await;
    let overview = console.http.get("/", Some(&everyone)).await;
    assert_eq!(overview.status, 200, "{overview:?}");
    assert!(
        overview.body.contains("href=\"/ns/b\""),
        "a reader of * sees b"
    );
    let page_a = console.http.get("/ns/a", Some(&cookie)).await;
    assert_eq!(page_a.status, 200, "{page_a:?}");
    for path in [
        "/ns/b".to_owned(),
        "/ns/b/jobs?queue=secret".to_owned(),
        format!("/ns/b/jobs/{job_b}"),
        "/ns/b/schedules".to_owned(),
    ] {
        let page = console.http.get(&path, Some(&cookie)).await;
        assert_eq!(page.status, 403, "{path}: {page:?}");
        assert!(!page.body.contains("secret"), "{path}: {}", page.body);
    }
    let mut events = console.http.events("/ns/a/live", Some(&cookie)).await;
    assert_eq!(events.next().await.0, "update");
    let stream_b = console.http.get("/ns/b/live", Some(&cookie)).await;
    assert_eq!(stream_b.status, 403, "{stream_b:?}");
}

/// Pins: a POST with an admin's session is refused (403) and changes nothing when it
/// has no Origin, when Sec-Fetch-Site says cross-site, or when its Origin is another
/// host.
#[tokio::test]
async fn cross_site_posts_are_refused() {
    let console = Console::with_auth().await;
    console.enqueue("shop", "emails", "{}").await;
    let cookie = console.sign_in("admin").await;
    let own = console.http.origin();
    let form = ("Content-Type", "application/x-www-form-urlencoded");
    let cases: [Vec<(&str, &str)>; 4] = [
        vec![form],
        vec![form, ("Origin", &own), ("Sec-Fetch-Site", "cross-site")],
        vec![form, ("Origin", "http://evil.example")],
        vec![
            form,
            ("Origin", "http://evil.example"),
            ("Sec-Fetch-Site", "same-origin"),
        ],
    ];
    for mut headers in cases {
        headers.push(("Cookie", &cookie));
        for path in [
            "/ns/shop/queues/emails/pause",
            "/ns/shop/queues/emails/purge",
        ] {
            let body = "state=pending&confirm=emails";
            let answer = console.http.request("POST", path, &headers, body).await;
            assert_eq!(answer.status, 403, "{path} {headers:?}: {answer:?}");
        }
    }
    let info = console.queue("shop", "emails").await.expect("listed");
    assert!(!info.paused);
    assert_eq!(info.pending, 1, "nothing purged");
}
