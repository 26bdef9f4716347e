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

/// Pins: the jobs page's form enqueues a job as typed (Enqueue as the viewer) and
/// opens its page; a bad queue name is refused by the RPC (400) and nothing is
/// stored; a reader gets no form and its forged post is refused (403).
#[tokio::test]
async fn a_job_is_enqueued_from_the_jobs_page() {
    let console = Console::with_auth().await;
    console.enqueue("shop", "emails", "{}").await;
    let admin = console.sign_in("admin").await;
    let page = console
        .http
        .get("/ns/shop/jobs?queue=emails", Some(&admin))
        .await;
    assert!(page.body.contains("Enqueue a job"), "{}", page.body);
    let form = "queue=emails&name=hello&payload=%7B%22a%22%3A1%7D";
    let answer = console
        .http
        .post_form("/ns/shop/enqueue", form, Some(&admin))
        .await;
    assert_eq!(answer.status, 303, "{answer:?}");
    let to = answer
        .header("location")
        .expect("the job's page")
        .to_owned();
    let id = to
        .trim_start_matches("/ns/shop/jobs/")
        .split('?')
        .next()
        .expect("an id")
        .to_owned();
    let job = console.job("shop", &id).await.expect("stored");
    assert_eq!(
        (job.name.as_str(), job.payload.as_slice()),
        ("hello", &b"{\"a\":1}"[..])
    );
    let before = console
        .queue("shop", "emails")
        .await
        .expect("listed")
        .pending;
    let bad = console
        .http
        .post_form("/ns/shop/enqueue", "queue=&name=x", Some(&admin))
        .await;
    assert_eq!(bad.status, 400, "{bad:?}");
    let reader = console.sign_in("reader").await;
    let page = console
        .http
        .get("/ns/shop/jobs?queue=emails", Some(&reader))
        .await;
    assert!(!page.body.contains("Enqueue a job"), "{}", page.body);
    let forged = console
        .http
        .post_form("/ns/shop/enqueue", "queue=emails&name=x", Some(&reader))
        .await;
    assert_eq!(forged.status, 403, "{forged:?}");
    let after = console
        .queue("shop", "emails")
        .await
        .expect("listed")
        .pending;
    assert_eq!(before, after, "nothing stored by the refused calls");
}

/// Pins: each failed attempt keeps the worker that held it (JobErrorEntry.worker_id),
/// and the job's page shows it in the timeline.
#[tokio::test]
async fn the_timeline_names_each_attempts_worker() {
    let console = Console::open().await;
    let id = console
        .dead_job("shop", "emails", "{}", "smtp refused")
        .await;
    let job = console.job("shop", &id).await.expect("kept");
    let entry = job.errors.first().expect("an error entry");
    assert!(!entry.worker_id.is_empty(), "{entry:?}");
    let page = console.http.get(&format!("/ns/shop/jobs/{id}"), None).await;
    assert!(
        page.body.contains(&format!(
            "on <span class=\"mono\">{}</span> failed",
            entry.worker_id
        )),
        "{}",
        page.body
    );
}
