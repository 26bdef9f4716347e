//! The console's actions on queues and jobs, each checked through the RPCs.

use super::*;

/// Pins: a purge without the queue's name typed is 400 naming `confirm` and deletes
/// nothing; with it, the state's jobs are gone; Retry all dead makes every dead job
/// pending again.
#[tokio::test]
async fn purge_needs_the_typed_name_and_retry_all_dead_retries_them_all() {
    let console = Console::open().await;
    for n in 0..3 {
        console
            .dead_job("shop", "emails", "{}", &format!("boom {n}"))
            .await;
    }
    console.enqueue("shop", "emails", "{}").await;
    console.enqueue("shop", "emails", "{}").await;

    for form in [
        "state=pending&confirm=email",
        "state=pending",
        "state=pending&confirm=EMAILS",
    ] {
        let answer = console
            .http
            .post_form("/ns/shop/queues/emails/purge", form, None)
            .await;
        assert_eq!(answer.status, 400, "{form}: {answer:?}");
        assert!(answer.body.contains("confirm"), "{}", answer.body);
    }
    let bad_state = console
        .http
        .post_form(
            "/ns/shop/queues/emails/purge",
            "state=active&confirm=emails",
            None,
        )
        .await;
    assert_eq!(bad_state.status, 400, "{bad_state:?}");
    let info = console.queue("shop", "emails").await.expect("listed");
    assert_eq!((info.pending, info.dead), (2, 3), "nothing deleted");

    let purge = console
        .http
        .post_form(
            "/ns/shop/queues/emails/purge",
            "state=pending&confirm=emails",
            None,
        )
        .await;
    assert_eq!(purge.status, 303, "{purge:?}");
    let info = console.queue("shop", "emails").await.expect("listed");
    assert_eq!((info.pending, info.dead), (0, 3), "the pending jobs purged");

    let retry = console
        .http
        .post_form("/ns/shop/queues/emails/retry-dead", "", None)
        .await;
    assert_eq!(retry.status, 303, "{retry:?}");
    assert!(
        retry
            .header("location")
            .expect("back")
            .contains("Retried%203%20dead"),
        "{retry:?}"
    );
    let info = console.queue("shop", "emails").await.expect("listed");
    assert_eq!((info.pending, info.dead), (3, 0), "every dead job retried");

    let resume_unknown = console
        .http
        .post_form("/ns/shop/queues/emails/explode", "", None)
        .await;
    assert_eq!(resume_unknown.status, 404, "{resume_unknown:?}");
}

fn state_of(job: &proto::Job) -> proto::JobState {
    proto::JobState::try_from(job.state).expect("a known state")
}

/// Pins: a job's page retries a dead job, cancels a pending one, deletes one, and
/// clones one (a new job, same queue and payload).
#[tokio::test]
async fn job_actions_retry_cancel_delete_and_clone() {
    use proto::JobState;
    let console = Console::open().await;
    let dead = console.dead_job("shop", "emails", "{}", "boom").await;
    let pending = console.enqueue("shop", "emails", r#"{"to":"ann"}"#).await;
    let doomed = console.enqueue("shop", "emails", "{}").await;
    let act = |id: &str, action: &str| format!("/ns/shop/jobs/{id}/{action}");

    let page = console
        .http
        .get(&format!("/ns/shop/jobs/{dead}"), None)
        .await;
    assert!(page.body.contains(">Retry<"), "{}", page.body);
    let retry = console.http.post_form(&act(&dead, "retry"), "", None).await;
    assert_eq!(retry.status, 303, "{retry:?}");
    let job = console.job("shop", &dead).await.expect("the retried job");
    assert_eq!(state_of(&job), JobState::Pending);

    let cancel = console
        .http
        .post_form(&act(&pending, "cancel"), "", None)
        .await;
    assert_eq!(cancel.status, 303, "{cancel:?}");
    let job = console
        .job("shop", &pending)
        .await
        .expect("the cancelled job");
    assert_eq!(state_of(&job), JobState::Cancelled);

    let delete = console
        .http
        .post_form(&act(&doomed, "delete"), "", None)
        .await;
    assert_eq!(delete.status, 303, "{delete:?}");
    assert!(console.job("shop", &doomed).await.is_none(), "deleted");

    let clone = console
        .http
        .post_form(&act(&pending, "clone"), "", None)
        .await;
    assert_eq!(clone.status, 303, "{clone:?}");
    let location = clone.header("location").expect("to the copy");
    let copy = location
        .strip_prefix("/ns/shop/jobs/")
        .and_then(|rest| rest.split('?').next())
        .expect("the copy's page");
    assert_ne!(copy, pending);
    let copy = console.job("shop", copy).await.expect("the copy");
    assert_eq!(copy.payload, br#"{"to":"ann"}"#);
    assert_eq!(copy.queue, "emails");
    assert_eq!(state_of(&copy), JobState::Pending);

    let gone = console
        .http
        .post_form(&act("no-such-job", "retry"), "", None)
        .await;
    assert_eq!(gone.status, 404, "{gone:?}");
}
