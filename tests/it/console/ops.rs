//! The console's Workers and Audit pages.

use super::*;

/// Pins: an action taken in the console is on the Audit page with its principal,
/// target, outcome and `console` as where it came from.
#[tokio::test]
async fn a_console_action_shows_on_the_audit_page() {
    let console = Console::with_auth().await;
    console.enqueue("shop", "emails", "{}").await;
    let admin = console.sign_in("admin").await;
    let pause = console
        .http
        .post_form("/ns/shop/queues/emails/pause", "", Some(&admin))
        .await;
    assert_eq!(pause.status, 303, "{pause:?}");
    let page = console
        .page_until("/ns/shop/audit", Some(&admin), "PauseQueue")
        .await;
    let row = page
        .body
        .split("<tr")
        .find(|row| row.contains("PauseQueue"))
        .expect("the action's row");
    for part in ["admin", "queue:emails", "OK", "console"] {
        assert!(row.contains(part), "{part} in {row}");
    }
}

/// Pins: a worker waiting in a ClaimJob long-poll is on the Workers page, with its
/// queue.
#[tokio::test]
async fn a_waiting_worker_shows_on_the_workers_page() {
    let console = Console::open().await;
    let mut client = console.service.client().await;
    let mut claim = claim_req(&["emails"], 60_000, None);
    claim.namespace = "shop".into();
    claim.worker_id = "w-console".into();
    let waiting = tokio::spawn(async move { client.claim_job(claim).await });
    let page = console
        .page_until("/ns/shop/workers", None, "data-worker=\"w-console\"")
        .await;
    assert!(page.body.contains("ClaimJob long-poll"), "{}", page.body);
    assert!(page.body.contains("emails"), "{}", page.body);
    waiting.abort();
}
