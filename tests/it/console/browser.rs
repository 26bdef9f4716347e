//! The console in a real browser: Debian's Chromium driven by playwright-core from
//! tests/browser/ (`node --test`), against the service this test starts. It saves
//! the screenshots of docs/console/*.png as it goes.

use std::{path::Path, time::Duration};

use super::*;

/// The browser the Node tests drive: DUEQ_CHROMIUM, else Debian's.
fn chromium() -> String {
    let path = std::env::var("DUEQ_CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into());
    let works = std::process::Command::new(&path)
        .arg("--version")
        .output()
        .is_ok_and(|out| out.status.success());
    assert!(
        works,
        "this test needs Chromium at {path}: apt-get install chromium (or set DUEQ_CHROMIUM)"
    );
    path
}

/// Namespace `shop`: dead and pending jobs of `emails`, pending `reports`, and the
/// schedule `nightly`.
async fn populate(console: &Console) {
    let errors = [
        "smtp: 550 mailbox unavailable",
        "smtp: connection reset by peer",
        "template welcome.html: missing variable first_name",
    ];
    for (n, error) in errors.iter().enumerate() {
        let payload =
            format!(r#"{{"to":"user{n}@example.com","template":"welcome","locale":"en"}}"#);
        console.dead_job("shop", "emails", &payload, error).await;
    }
    for n in 0..12 {
        console
            .enqueue(
                "shop",
                "emails",
                &format!(r#"{{"to":"user{n}@example.com"}}"#),
            )
            .await;
    }
    for n in 0..4 {
        console
            .enqueue(
                "shop",
                "reports",
                &format!(r#"{{"report":"daily","day":{n}}}"#),
            )
            .await;
    }
    console
        .enqueue("billing", "invoices", r#"{"invoice":1}"#)
        .await;
    let mut client = console.service.client().await;
    let mut nightly = cron("nightly", "0 2 * * *", "Europe/Berlin");
    nightly.job_name = "reports.nightly".into();
    let message = proto::UpsertScheduleRequest {
        namespace: "shop".into(),
        schedule: Some(nightly),
    };
    client
        .upsert_schedule(console.req(message))
        .await
        .expect("upsert nightly");
    let flow = super::upload_flow("upload-42");
    client
        .enqueue_flow(console.req(flow))
        .await
        .expect("enqueue the flow");
}

/// Pins, in Chromium: sign-in; a queue's count rising live while jobs are enqueued;
/// dead jobs filtered by state and one opened; Retry all dead with its confirmation;
/// Trigger now; a reader without the retry button whose same-origin forged POST is
/// 403; a POST without the CSRF proof refused. Saves docs/console/*.png.
#[tokio::test]
#[ignore = "needs chromium and node (tests/browser: npm ci)"]
async fn the_console_works_in_chromium() {
    tools::require("node");
    let browser = chromium();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    assert!(
        root.join("tests/browser/node_modules/playwright-core")
            .is_dir(),
        "run `npm ci --prefix tests/browser` first (and build clients/typescript: \
         `npm ci --prefix clients/typescript && npm run --prefix clients/typescript build`)"
    );
    let console = Console::with_auth().await;
    populate(&console).await;
    let out = tokio::process::Command::new("node")
        .args(["--test", "--test-reporter=spec", "tests/browser/"])
        .current_dir(root)
        .env("DUEQ_CONSOLE_URL", console.http.origin())
        .env("DUEQ_GRPC_ADDR", console.service.endpoint())
        .env("DUEQ_ADMIN_TOKEN", "t-admin")
        .env("DUEQ_READER_TOKEN", "t-reader")
        .env("DUEQ_NAMESPACE", "shop")
        .env("DUEQ_SCREENSHOTS", root.join("docs/console"))
        .env("DUEQ_CHROMIUM", browser)
        .env("PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD", "1")
        .kill_on_drop(true)
        .output();
    // A bound that only keeps a hung browser from hanging the suite.
    let out = tokio::time::timeout(Duration::from_secs(600), out)
        .await
        .expect("node --test tests/browser/ ended within 10 minutes")
        .expect("run node");
    assert!(
        out.status.success(),
        "node --test tests/browser/ failed ({}):\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
