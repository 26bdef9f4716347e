//! The console's dead-letter groups, job filters, bulk actions and flow graph, each
//! checked through the RPCs.

use super::*;

/// Pins: dead jobs whose errors differ only in numbers and ids are one group on the
/// dead-letters page; "Retry group" retries that group and no other.
#[tokio::test]
async fn dead_letters_are_grouped_by_error_and_a_group_is_retried_alone() {
    let console = Console::open().await;
    let mut timeouts = Vec::new();
    for n in 0..3 {
        let error = format!("timeout after {}s on mx{n}", 30 + n);
        timeouts.push(console.dead_job("shop", "emails", "{}", &error).await);
    }
    let full = console.dead_job("shop", "emails", "{}", "disk full").await;
    let page = console.http.get("/ns/shop/dead", None).await;
    assert_eq!(page.status, 200, "{page:?}");
    let groups = page.body.matches("data-fingerprint=").count();
    assert_eq!(groups, 2, "{}", page.body);
    assert!(
        page.body.contains(">3</td>"),
        "the timeout group counts 3: {}",
        page.body
    );
    let start = page.body.find("timeout after").expect("the timeout group");
    let row = &page.body[..start];
    let fp_at = row.rfind("data-fingerprint=\"").expect("its row") + "data-fingerprint=\"".len();
    let fingerprint: String = row[fp_at..].chars().take_while(|c| *c != '"').collect();
    let retry = console
        .http
        .post_form(
            &format!("/ns/shop/dead/emails/{fingerprint}/retry"),
            "",
            None,
        )
        .await;
    assert_eq!(retry.status, 303, "{retry:?}");
    for id in &timeouts {
        let job = console.job("shop", id).await.expect("kept");
        assert_eq!(job.state, proto::JobState::Pending as i32, "{id} retried");
    }
    let job = console.job("shop", &full).await.expect("kept");
    assert_eq!(
        job.state,
        proto::JobState::Dead as i32,
        "the other group untouched"
    );
}

/// Pins: the jobs page's filter lists only the matching jobs and says how many it
/// examined; "Cancel selected" cancels the checked jobs and no other.
#[tokio::test]
async fn a_filter_narrows_the_listing_and_a_selection_is_acted_on() {
    let console = Console::open().await;
    let smtp = console
        .dead_job("shop", "emails", "{}", "SMTP refused")
        .await;
    let other = console
        .dead_job("shop", "emails", "{}", "bad address")
        .await;
    let page = console
        .http
        .get("/ns/shop/jobs?queue=emails&state=dead&error=smtp", None)
        .await;
    assert_eq!(page.status, 200, "{page:?}");
    assert!(
        page.body.contains(&format!("data-job=\"{smtp}\"")),
        "{}",
        page.body
    );
    assert!(
        !page.body.contains(&format!("data-job=\"{other}\"")),
        "{}",
        page.body
    );
    assert!(page.body.contains("examined"), "{}", page.body);
    let bad = console
        .http
        .get("/ns/shop/jobs?queue=emails&after=yesterday", None)
        .await;
    assert_eq!(bad.status, 400, "a bad time names its field: {bad:?}");
    assert!(bad.body.contains("after"), "{}", bad.body);

    let a = console.enqueue("shop", "emails", "{}").await;
    let b = console.enqueue("shop", "emails", "{}").await;
    let keep = console.enqueue("shop", "emails", "{}").await;
    let form = format!("queue=emails&action=cancel&id={a}&id={b}");
    let cancel = console.http.post_form("/ns/shop/bulk", &form, None).await;
    assert_eq!(cancel.status, 303, "{cancel:?}");
    for id in [&a, &b] {
        let job = console.job("shop", id).await.expect("kept");
        assert_eq!(job.state, proto::JobState::Cancelled as i32, "{id}");
    }
    let job = console.job("shop", &keep).await.expect("kept");
    assert_eq!(job.state, proto::JobState::Pending as i32, "not selected");
}

/// Pins: "Retry all matching" runs server-side to the end of the listing (its page
/// reports it finished) and retries every match and nothing else; a reader sees no
/// such button and its forged start is refused (403) and retries nothing.
#[tokio::test]
async fn everything_a_filter_matches_is_retried_by_a_run_a_reader_cannot_start() {
    let console = Console::with_auth().await;
    let mut matching = Vec::new();
    for n in 0..5 {
        matching.push(
            console
                .dead_job("shop", "emails", "{}", &format!("quota {n}"))
                .await,
        );
    }
    let other = console
        .dead_job("shop", "emails", "{}", "bad address")
        .await;
    let form = "scope=matching&queue=emails&state=dead&error=quota&action=retry";

    let reader = console.sign_in("reader").await;
    let page = console
        .http
        .get(
            "/ns/shop/jobs?queue=emails&state=dead&error=quota",
            Some(&reader),
        )
        .await;
    assert!(!page.body.contains("Retry all matching"), "{}", page.body);
    let forged = console
        .http
        .post_form("/ns/shop/bulk", form, Some(&reader))
        .await;
    assert_eq!(forged.status, 403, "{forged:?}");
    let job = console.job("shop", &matching[0]).await.expect("kept");
    assert_eq!(
        job.state,
        proto::JobState::Dead as i32,
        "the reader retried nothing"
    );

    let admin = console.sign_in("admin").await;
    let page = console
        .http
        .get(
            "/ns/shop/jobs?queue=emails&state=dead&error=quota",
            Some(&admin),
        )
        .await;
    assert!(page.body.contains("Retry all matching"), "{}", page.body);
    let start = console
        .http
        .post_form("/ns/shop/bulk", form, Some(&admin))
        .await;
    assert_eq!(start.status, 303, "{start:?}");
    let run = start.header("location").expect("the run's page").to_owned();
    let done = console
        .page_until(&run, Some(&admin), "data-finished=\"true\"")
        .await;
    assert!(done.body.contains("finished"), "{}", done.body);
    for id in &matching {
        let job = console.job("shop", id).await.expect("kept");
        assert_eq!(job.state, proto::JobState::Pending as i32, "{id} retried");
    }
    let job = console.job("shop", &other).await.expect("kept");
    assert_eq!(
        job.state,
        proto::JobState::Dead as i32,
        "no match, no retry"
    );
}

/// Pins: a flow's page draws each node (by ref) and an edge per dependency, and
/// links a node to its job.
#[tokio::test]
async fn a_flow_is_drawn_as_a_graph() {
    let console = Console::open().await;
    let message = super::upload_flow("upload-1");
    let mut client = console.service.client().await;
    let flow = client
        .enqueue_flow(console.req(message))
        .await
        .expect("EnqueueFlow")
        .into_inner();
    let page = console.http.get("/ns/shop/flows/upload-1", None).await;
    assert_eq!(page.status, 200, "{page:?}");
    for r in ["fetch", "resize", "scan", "publish"] {
        assert!(
            page.body.contains(&format!("data-ref=\"{r}\"")),
            "{r}: {}",
            page.body
        );
    }
    assert_eq!(
        page.body.matches("class=\"edge\"").count(),
        4,
        "{}",
        page.body
    );
    let fetch = &flow.job_ids["fetch"];
    assert!(
        page.body.contains(&format!("/ns/shop/jobs/{fetch}")),
        "{}",
        page.body
    );
    let missing = console.http.get("/ns/shop/flows/nope", None).await;
    assert_eq!(missing.status, 404, "{missing:?}");
}
