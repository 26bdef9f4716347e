//! The pages without an auth file: the overview, a namespace's queues, a job, a
//! schedule, and the live stream.

use super::*;

/// Pins: the overview lists a namespace that holds jobs, the queue page shows the
/// queue's counts by state, and a job's page shows its payload as pretty-printed
/// JSON and its errors, attempt by attempt.
#[tokio::test]
async fn the_pages_show_namespaces_queue_counts_and_a_job() {
    let console = Console::open().await;
    // Dead first: its claim takes the oldest pending job.
    let dead = console
        .dead_job(
            "shop",
            "emails",
            r#"{"order":42,"items":["a","b"]}"#,
            "smtp: 550 mailbox unavailable",
        )
        .await;
    for n in 0..3 {
        console
            .enqueue("shop", "emails", &format!("{{\"n\":{n}}}"))
            .await;
    }

    let overview = console.http.get("/", None).await;
    assert_eq!(overview.status, 200, "{overview:?}");
    assert!(
        overview.body.contains("href=\"/ns/shop\""),
        "{}",
        overview.body
    );
    let empty = console.http.get("/", None).await;
    assert!(!empty.body.contains("href=\"/ns/other\""));

    let queues = console
        .page_until("/ns/shop", None, "data-queue=\"emails\"")
        .await;
    let cells = queue_row(&queues.body, "emails");
    // Queue, pending, delayed, active, waiting, dead.
    assert_eq!(
        &cells[..6],
        ["emails", "3", "0", "0", "0", "1"],
        "{cells:?}"
    );
    assert_eq!(card(&queues.body, "total-pending"), "3");
    assert_eq!(card(&queues.body, "total-dead"), "1");

    let job = console
        .http
        .get(&format!("/ns/shop/jobs/{dead}"), None)
        .await;
    assert_eq!(job.status, 200, "{job:?}");
    let shown = text(&job.body);
    assert!(
        shown.contains("{\n  \"items\": [\n    \"a\",\n    \"b\"\n  ],\n  \"order\": 42\n}"),
        "the payload, pretty-printed: {shown}"
    );
    assert!(
        shown.contains("attempt 1 on test-worker failed: smtp: 550 mailbox unavailable"),
        "the error history: {shown}"
    );

    let missing = console.http.get("/ns/shop/jobs/no-such-job", None).await;
    assert_eq!(missing.status, 404, "{missing:?}");
}

/// Pins: the dead jobs of a queue are listed by state, each linked to its page.
#[tokio::test]
async fn the_jobs_list_filters_by_state() {
    let console = Console::open().await;
    let dead = console.dead_job("shop", "emails", "{}", "boom").await;
    let pending = console.enqueue("shop", "emails", "{}").await;
    let list = console
        .http
        .get("/ns/shop/jobs?queue=emails&state=dead", None)
        .await;
    assert_eq!(list.status, 200, "{list:?}");
    assert!(
        list.body.contains(&format!("data-job=\"{dead}\"")),
        "{}",
        list.body
    );
    assert!(
        !list.body.contains(&format!("data-job=\"{pending}\"")),
        "{}",
        list.body
    );
    let bad = console
        .http
        .get("/ns/shop/jobs?queue=emails&state=sleeping", None)
        .await;
    assert_eq!(bad.status, 400, "{bad:?}");
    assert!(bad.body.contains("state"), "{}", bad.body);
}

/// Pins: the queues' live stream sends `update` events with the page's content, and a
/// later event carries the count after more jobs were enqueued.
#[tokio::test]
async fn the_live_stream_carries_new_counts() {
    let console = Console::open().await;
    console.enqueue("shop", "emails", "{}").await;
    let mut events = console.http.events("/ns/shop/live", None).await;
    let (event, data) = events.next().await;
    assert_eq!(event, "update");
    assert!(data.contains("data-queue=\"emails\""), "{data}");
    for _ in 0..4 {
        console.enqueue("shop", "emails", "{}").await;
    }
    loop {
        let (event, data) = events.next().await;
        assert_eq!(event, "update");
        if card(&data, "total-pending") == "5" {
            assert_eq!(queue_row(&data, "emails")[1], "5");
            break;
        }
    }
}

/// Pins: a schedule's page lists its next fire times; Trigger now makes an occurrence
/// a claim gets; Pause with a note shows the note; a backfill with a bad date is 400
/// naming the field.
#[tokio::test]
async fn the_schedule_page_lists_fire_times_and_acts() {
    let console = Console::open().await;
    let mut client = console.service.client().await;
    upsert(&mut client, "ns", every("nightly", 3600)).await;

    let page = console.http.get("/ns/ns/schedules", None).await;
    assert_eq!(page.status, 200, "{page:?}");
    assert!(
        page.body.contains("data-schedule=\"nightly\""),
        "{}",
        page.body
    );

    let detail = console.http.get("/ns/ns/schedules/nightly", None).await;
    assert_eq!(detail.status, 200, "{detail:?}");
    let fires = &detail.body[detail
        .body
        .find("table class=\"fires\"")
        .expect("fire times")..];
    let fires = &fires[..fires.find("</table>").expect("table end")];
    assert_eq!(
        fires.matches("<tr").count(),
        1 + 10,
        "a head and 10 fire times: {fires}"
    );

    let trigger = console
        .http
        .post_form("/ns/ns/schedules/nightly/trigger", "", None)
        .await;
    assert_eq!(trigger.status, 303, "{trigger:?}");
    let occurrence = claim(&mut client, "ns", LONG_POLL_MS)
        .await
        .expect("the triggered occurrence");
    let location = trigger.header("location").expect("back to the page");
    assert!(
        text(&url_decode(location)).contains(&occurrence.occurrence_id),
        "{location} names {}",
        occurrence.occurrence_id
    );

    let pause = console
        .http
        .post_form(
            "/ns/ns/schedules/nightly/pause",
            "note=db+migration+until+noon",
            None,
        )
        .await;
    assert_eq!(pause.status, 303, "{pause:?}");
    assert!(get(&mut client, "ns", "nightly").await.paused);
    let paused = console.http.get("/ns/ns/schedules/nightly", None).await;
    assert!(
        text(&paused.body).contains("db migration until noon"),
        "{}",
        paused.body
    );

    let backfill = console
        .http
        .post_form(
            "/ns/ns/schedules/nightly/backfill",
            "start=yesterday&end=2026-01-02T00%3A00",
            None,
        )
        .await;
    assert_eq!(backfill.status, 400, "{backfill:?}");
    assert!(backfill.body.contains("start"), "{}", backfill.body);
}

fn url_decode(text: &str) -> String {
    url::form_urlencoded::parse(text.split_once('?').map_or("", |(_, q)| q).as_bytes())
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join("&")
}
